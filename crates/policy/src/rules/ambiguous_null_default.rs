//! A new nullable field whose null can mean several things.

use crate::pair::Pair;
use covenant_engine::{Finding, NodeKind, RuleSpec, Severity};
use serde_json::Value;

pub static RULE: RuleSpec = RuleSpec {
    id: "AMBIGUOUS_NULL_DEFAULT",
    format: "any",
    category: "semantic",
    // Info: the change is the safe additive one; what is missing is documentation, so the
    // finding asks for it without blocking anything.
    default_severity: Severity::Info,
    summary: "A new nullable field defaults to null but its doc does not say what null means (unknown, not applicable, redacted, pending, not yet backfilled).",
    bad_example: "{\"name\": \"closureReason\", \"type\": [\"null\", \"string\"], \"default\": null}",
    good_example: "{\"name\": \"closureReason\", \"type\": [\"null\", \"string\"], \"default\": null,\n \"doc\": \"Why the case was closed; null while the case is open and for records written before v4.\"}",
    hint: "Document what null means for this field (unknown, not applicable, not collected, redacted, pending, not yet backfilled), and use separate fields or codes rather than one null with several meanings.",
    peers: &[],
};

/// Words that show a doc addresses absence.
const EXPLAINS_NULL: [&str; 12] = [
    "null",
    "absent",
    "missing",
    "unknown",
    "not applicable",
    "n/a",
    "redacted",
    "pending",
    "not yet",
    "unavailable",
    "not collected",
    "empty",
];

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for new in pair.added() {
        let node = new.node;
        if node.kind != NodeKind::Field || !node.nullable {
            continue;
        }
        if !(node.has_default && matches!(node.default, Some(Value::Null))) {
            continue;
        }
        let doc = node.doc.as_deref().unwrap_or("").to_lowercase();
        if EXPLAINS_NULL.iter().any(|w| doc.contains(w)) {
            continue;
        }
        let why = if doc.trim().is_empty() {
            "no doc says"
        } else {
            "its doc does not say"
        };
        findings.push(Finding::new(
            &RULE,
            node.path.clone(),
            format!(
                "Field '{}' was added with a null default, and {why} what null means.",
                node.name
            ),
        ));
    }
    findings
}

#[cfg(test)]
mod tests {
    use crate::rules::testkit::*;
    use serde_json::json;

    #[test]
    fn closure_reason_with_null_default_and_no_doc() {
        let old = avro("Case", vec![field("caseId", "string")]);
        let new = avro(
            "Case",
            vec![
                field("caseId", "string"),
                field("closureReason", "string")
                    .nullable()
                    .default(json!(null)),
            ],
        );
        let findings = run("AMBIGUOUS_NULL_DEFAULT", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "/fields/closureReason");
        assert_eq!(
            findings[0].message,
            "Field 'closureReason' was added with a null default, and no doc says what null means."
        );
    }

    #[test]
    fn documented_null_is_fine() {
        let old = avro("Case", vec![]);
        let new = avro(
            "Case",
            vec![
                field("closureReason", "string")
                    .nullable()
                    .default(json!(null))
                    .doc("Why the case was closed; null while the case is open."),
            ],
        );
        assert!(run("AMBIGUOUS_NULL_DEFAULT", &old, &new, &none()).is_empty());
    }

    #[test]
    fn doc_without_null_meaning_is_flagged() {
        let old = avro("Case", vec![]);
        let new = avro(
            "Case",
            vec![
                field("closureReason", "string")
                    .nullable()
                    .default(json!(null))
                    .doc("Why the case was closed."),
            ],
        );
        let findings = run("AMBIGUOUS_NULL_DEFAULT", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert!(findings[0].message.contains("its doc does not say"));
    }

    #[test]
    fn existing_fields_and_non_null_defaults_are_quiet() {
        let with_null = field("closureReason", "string")
            .nullable()
            .default(json!(null));
        let old = avro("Case", vec![with_null.clone()]);
        let new = avro(
            "Case",
            vec![
                with_null,
                field("priority", "string").nullable().default(json!("LOW")),
            ],
        );
        assert!(run("AMBIGUOUS_NULL_DEFAULT", &old, &new, &none()).is_empty());
    }
}
