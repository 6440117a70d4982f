//! Same name, same type, different meaning: the failure no structural check can see.

use crate::pair::{Pair, same_text};
use covenant_engine::{Finding, NodeKind, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "MEANING_CHANGED",
    format: "any",
    category: "semantic",
    // A warning: meaning changes deserve the presumption that they are breaking, but a doc
    // edit is more often a clarification than a redefinition, and only a person can tell.
    // Subjects that annotate units and clocks can raise it to an error.
    default_severity: Severity::Warning,
    summary: "A field or record kept its name and type but its documented meaning, unit, clock or logical type changed; every schema check passes while downstream logic quietly answers a different question.",
    bad_example: "v1: {\"name\": \"updatedAt\", \"type\": \"string\", \"doc\": \"Time the database row was last updated.\"}\nv2: {\"name\": \"updatedAt\", \"type\": \"string\", \"doc\": \"Time the business event happened.\"}",
    good_example: "v2: keep updatedAt with its old meaning (deprecated) and add\n    {\"name\": \"sourceUpdatedAt\", ...}, {\"name\": \"businessEventTime\", ...}, {\"name\": \"recordIngestedAt\", ...}",
    hint: "Keep the old field with its old meaning and add a new field whose name states the new meaning, unit or clock (sourceUpdatedAt, businessEventTime), then migrate consumers and run important reports side by side.",
    peers: &[],
};

fn clip(text: &str) -> String {
    let text = text.split_whitespace().collect::<Vec<_>>().join(" ");
    if text.chars().count() > 80 {
        format!("{}...", text.chars().take(77).collect::<String>())
    } else {
        text
    }
}

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (old, new) in pair.matched() {
        if !matches!(new.node.kind, NodeKind::Field | NodeKind::Record) {
            continue;
        }
        if old.node.kind != new.node.kind || old.node.type_name != new.node.type_name {
            continue;
        }
        let mut changes = Vec::new();
        if let (Some(a), Some(b)) = (&old.node.doc, &new.node.doc)
            && !same_text(a, b)
        {
            changes.push(format!(
                "its doc changed from '{}' to '{}'",
                clip(a),
                clip(b)
            ));
        }
        for (key, before) in &old.node.annotations {
            if key.starts_with("confluent:") {
                continue;
            }
            match new.node.annotations.get(key) {
                Some(after) if after != before => {
                    changes.push(format!("its '{key}' changed from '{before}' to '{after}'"))
                }
                None => changes.push(format!("its '{key}' ('{before}') was dropped")),
                _ => {}
            }
        }
        if old.node.logical_type != new.node.logical_type {
            let show = |l: &Option<String>| l.clone().unwrap_or_else(|| "none".to_string());
            changes.push(format!(
                "its logical type changed from '{}' to '{}'",
                show(&old.node.logical_type),
                show(&new.node.logical_type)
            ));
        }
        if changes.is_empty() {
            continue;
        }
        let what = if new.node.kind == NodeKind::Record {
            "Record"
        } else {
            "Field"
        };
        let name = if new.node.name.is_empty() {
            "(root)"
        } else {
            new.node.name.as_str()
        };
        let last = changes.pop().unwrap_or_default();
        let listed = if changes.is_empty() {
            last
        } else {
            format!("{} and {last}", changes.join(", "))
        };
        findings.push(Finding::new(
            &RULE,
            new.node.path.clone(),
            format!(
                "{what} '{name}' keeps its name and type '{}' but {listed}.",
                new.node.type_name
            ),
        ));
    }
    findings
}

#[cfg(test)]
mod tests {
    use crate::rules::testkit::*;

    #[test]
    fn updated_at_changes_from_database_to_business_time() {
        let old = avro(
            "Case",
            vec![field("updatedAt", "string").doc("Time the database row was last updated.")],
        );
        let new = avro(
            "Case",
            vec![field("updatedAt", "string").doc("Time the business event happened.")],
        );
        let findings = run("MEANING_CHANGED", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "/fields/updatedAt");
        assert_eq!(
            findings[0].message,
            "Field 'updatedAt' keeps its name and type 'string' but its doc changed from 'Time the database row was last updated.' to 'Time the business event happened.'."
        );
    }

    #[test]
    fn clock_unit_and_logical_type_changes() {
        let old = avro(
            "Case",
            vec![
                field("updatedAt", "long")
                    .logical("timestamp-millis")
                    .annotate("clock", "database"),
                field("duration", "long").annotate("unit", "seconds"),
            ],
        );
        let new = avro(
            "Case",
            vec![
                field("updatedAt", "long")
                    .logical("timestamp-micros")
                    .annotate("clock", "business"),
                field("duration", "long"),
            ],
        );
        let findings = run("MEANING_CHANGED", &old, &new, &none());
        assert_eq!(findings.len(), 2);
        assert_eq!(
            findings[0].message,
            "Field 'updatedAt' keeps its name and type 'long' but its 'clock' changed from 'database' to 'business' and its logical type changed from 'timestamp-millis' to 'timestamp-micros'."
        );
        assert!(
            findings[1]
                .message
                .contains("its 'unit' ('seconds') was dropped")
        );
    }

    #[test]
    fn record_doc_changes_cover_event_grain() {
        let old = avro("CaseAssigned", vec![]).with_doc("One event per case assignment.");
        let new = avro("CaseAssigned", vec![]).with_doc("One event per assignee role.");
        let findings = run("MEANING_CHANGED", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert!(findings[0].message.starts_with("Record 'CaseAssigned'"));
    }

    #[test]
    fn clarifications_new_docs_and_type_changes_are_not_meaning_changes() {
        let old = avro(
            "Case",
            vec![
                field("a", "string").doc("Time the row was updated"),
                field("b", "string"),
                field("c", "string").doc("x"),
            ],
        );
        let new = avro(
            "Case",
            vec![
                field("a", "string").doc("time the row  was updated."),
                field("b", "string").doc("Now documented."),
                field("c", "long").doc("y"),
            ],
        );
        assert!(run("MEANING_CHANGED", &old, &new, &none()).is_empty());
    }

    trait RootDoc {
        fn with_doc(self, doc: &str) -> Self;
    }
    impl RootDoc for covenant_engine::FieldTree {
        fn with_doc(mut self, doc: &str) -> Self {
            self.root.doc = Some(doc.into());
            self
        }
    }
}
