//! A new enum value: parsers accept it, consumers may not know what it means.

use crate::pair::{Pair, quoted_list};
use covenant_engine::{Finding, NodeKind, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "ENUM_VALUE_ADDED",
    format: "any",
    category: "semantic",
    // A warning: the change is compatible for the parser, but old consumers may throw in a
    // switch, map it to UNKNOWN, drop or misclassify the record, so it needs a review.
    default_severity: Severity::Warning,
    summary: "An enum gained a value; schema-compatible, but old consumers may reject, drop or misclassify records carrying it.",
    bad_example: "v1: {\"type\": \"enum\", \"name\": \"CaseStatus\", \"symbols\": [\"OPEN\", \"UNDER_REVIEW\", \"ESCALATED\", \"CLOSED\"]}\nv2: symbols [..., \"CLOSED\", \"SUSPENDED\"] released before consumers handle it",
    good_example: "1. consumers handle unknown values (a default symbol, an UNKNOWN branch, a metric)\n2. reports define how SUSPENDED is classified\n3. then v2 adds \"SUSPENDED\" and the producer starts emitting it",
    hint: "Before producers emit the new value, confirm every consumer has default or unknown handling, a metric for unknown values, and a decided classification in reports and dashboards.",
    peers: &["confluent:ENUM_ARRAY_EXTENDED"],
};

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (old, new) in pair.matched() {
        if old.node.enum_values.is_empty() || new.node.enum_values.is_empty() {
            continue;
        }
        // A set, not a scan: enums may hold tens of thousands of values.
        let known: foldhash::HashSet<&str> = old
            .node
            .enum_values
            .iter()
            .map(|o| o.name.as_str())
            .collect();
        let added: Vec<String> = new
            .node
            .enum_values
            .iter()
            .filter(|v| !known.contains(v.name.as_str()))
            .map(|v| v.name.clone())
            .collect();
        if added.is_empty() {
            continue;
        }
        let what = match new.node.kind {
            NodeKind::Enum => format!("Enum '{}'", new.node.name),
            _ => format!("Field '{}'", new.node.name),
        };
        let values = if added.len() == 1 { "value" } else { "values" };
        let consumers = pair.consumers_of(new);
        let who = if consumers.is_empty() {
            "no consumers are recorded for it, so review every reader".to_string()
        } else {
            format!("consumers known to read it: {}", quoted_list(&consumers))
        };
        findings.push(Finding::new(
            &RULE,
            new.node.path.clone(),
            format!(
                "{what} gained enum {values} {}; old consumers may reject, drop or misclassify it ({who}).",
                quoted_list(&added)
            ),
        ));
    }
    findings
}

#[cfg(test)]
mod tests {
    use crate::rules::testkit::*;

    const V1: [&str; 4] = ["OPEN", "UNDER_REVIEW", "ESCALATED", "CLOSED"];
    const V2: [&str; 5] = ["OPEN", "UNDER_REVIEW", "ESCALATED", "CLOSED", "SUSPENDED"];

    #[test]
    fn suspended_added_without_consumer_records() {
        let old = avro(
            "Case",
            vec![field("status", "enum:acme.CaseStatus").symbols(&V1)],
        );
        let new = avro(
            "Case",
            vec![field("status", "enum:acme.CaseStatus").symbols(&V2)],
        );
        let findings = run("ENUM_VALUE_ADDED", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "/fields/status");
        assert_eq!(
            findings[0].message,
            "Field 'status' gained enum value 'SUSPENDED'; old consumers may reject, drop or misclassify it (no consumers are recorded for it, so review every reader)."
        );
    }

    #[test]
    fn suspended_added_lists_known_consumers() {
        let old = avro(
            "Case",
            vec![field("status", "enum:acme.CaseStatus").symbols(&V1)],
        );
        let new = avro(
            "Case",
            vec![field("status", "enum:acme.CaseStatus").symbols(&V2)],
        );
        let mut context = none();
        context
            .consumers
            .insert("/fields/status".into(), vec!["sla-monitor".into()]);
        context.consumers.insert(
            "Case.status".into(),
            vec!["case-dashboard".into(), "sla-monitor".into()],
        );
        context
            .consumers
            .insert("caseId".into(), vec!["billing".into()]);
        let findings = run("ENUM_VALUE_ADDED", &old, &new, &context);
        assert!(
            findings[0]
                .message
                .contains("consumers known to read it: 'case-dashboard' and 'sla-monitor'"),
            "{}",
            findings[0].message
        );
    }

    #[test]
    fn protobuf_enum_consumers_come_from_the_fields_using_it() {
        let fields = vec![("status", "enum:acme.CaseStatus", 3)];
        let old = proto(vec![
            message("acme.Case", fields.clone()),
            proto_enum(
                "acme.CaseStatus",
                &[("CASE_STATUS_UNSPECIFIED", 0), ("CASE_STATUS_OPEN", 1)],
            ),
        ]);
        let new = proto(vec![
            message("acme.Case", fields),
            proto_enum(
                "acme.CaseStatus",
                &[
                    ("CASE_STATUS_UNSPECIFIED", 0),
                    ("CASE_STATUS_OPEN", 1),
                    ("CASE_STATUS_SUSPENDED", 5),
                ],
            ),
        ]);
        let mut context = none();
        context
            .consumers
            .insert("acme.Case.status".into(), vec!["reports".into()]);
        let findings = run("ENUM_VALUE_ADDED", &old, &new, &context);
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "/acme.CaseStatus");
        assert!(
            findings[0]
                .message
                .starts_with("Enum 'acme.CaseStatus' gained enum value 'CASE_STATUS_SUSPENDED'")
        );
        assert!(findings[0].message.contains("'reports'"));
    }

    #[test]
    fn removed_or_unchanged_values_are_not_this_rule() {
        let old = avro(
            "Case",
            vec![field("status", "enum:acme.CaseStatus").symbols(&V2)],
        );
        let new = avro(
            "Case",
            vec![field("status", "enum:acme.CaseStatus").symbols(&V1)],
        );
        assert!(run("ENUM_VALUE_ADDED", &old, &new, &none()).is_empty());
        assert!(run("ENUM_VALUE_ADDED", &old, &old, &none()).is_empty());
    }
}
