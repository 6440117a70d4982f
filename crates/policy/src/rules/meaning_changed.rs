//! Same name, same type, different meaning: the failure no structural check can see.

use crate::pair::{Pair, same_text};
use covenant_engine::{Finding, NodeKind, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "MEANING_CHANGED",
    format: "any",
    category: "semantic",
    // An error under the `covenant` preset: meaning changes deserve the presumption that they
    // are breaking (seeds Rule 3 and 4); a doc edit that only clarifies is accepted through
    // an approval. A doc added where there was none says what the field means (what null
    // is, its unit) and is info.
    default_severity: Severity::Error,
    summary: "A field or record kept its name and type but its documented meaning, unit (in its doc or name), clock or logical type changed, or a record's doc changed its event grain; every schema check passes while downstream logic quietly answers a different question. A doc added where there was none is info. Source: schema-evolution-rules Rule 3, Rule 4, §23.3.",
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

/// Units a doc or a name may state, by the words that say them, each with its canonical name.
const UNITS: &[(&[&str], &str)] = &[
    (&["nanoseconds", "nanosecond", "nanos", "ns"], "nanoseconds"),
    (&["microseconds", "microsecond", "micros"], "microseconds"),
    (
        &["milliseconds", "millisecond", "millis", "ms"],
        "milliseconds",
    ),
    (&["seconds", "second", "secs", "sec"], "seconds"),
    (&["minutes", "minute", "mins"], "minutes"),
    (&["hours", "hour", "hrs"], "hours"),
    (&["days", "day"], "days"),
    (&["cents", "cent", "minor"], "minor currency units"),
    (
        &["dollars", "dollar", "euros", "euro", "major"],
        "major currency units",
    ),
    (&["bytes", "byte"], "bytes"),
    (&["kilobytes", "kb", "kib"], "kilobytes"),
    (&["megabytes", "mb", "mib"], "megabytes"),
    (&["percent", "percentage", "pct"], "percent"),
    (&["bps", "basis"], "basis points"),
    (&["meters", "metres", "meter", "metre"], "meters"),
    (&["kilometers", "kilometres", "km"], "kilometers"),
    (&["miles", "mile"], "miles"),
];

/// The unit a text states, if it states exactly one.
fn unit_in(text: &str) -> Option<&'static str> {
    let mut found: Option<&'static str> = None;
    for word in crate::pair::words(text) {
        if let Some((_, unit)) = UNITS.iter().find(|(w, _)| w.contains(&word.as_str())) {
            match found {
                Some(f) if f != *unit => return None,
                _ => found = Some(unit),
            }
        }
    }
    found
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
        let mut unit_change = None;
        if let (Some(a), Some(b)) = (&old.node.doc, &new.node.doc)
            && !same_text(a, b)
        {
            changes.push(format!(
                "its doc changed from '{}' to '{}'",
                clip(a),
                clip(b)
            ));
            // The unit the field was read in: its old doc's, else its name's.
            let before = unit_in(a).or_else(|| unit_in(&old.node.name));
            if let (Some(before), Some(after)) = (before, unit_in(b))
                && before != after
            {
                unit_change = Some((before, after));
            }
        }
        for (key, before) in &old.node.annotations {
            if key.starts_with("confluent:") || key.starts_with("iceberg:") {
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
        let record = new.node.kind == NodeKind::Record;
        let what = if record { "Record" } else { "Field" };
        let name = if new.node.name.is_empty() {
            "(root)"
        } else {
            new.node.name.as_str()
        };
        if changes.is_empty() {
            // A doc where there was none says what the data means (what null is, its unit):
            // worth knowing, not a change of meaning.
            if let (None, Some(doc)) = (&old.node.doc, &new.node.doc) {
                findings.push(
                    Finding::new(
                        &RULE,
                        new.node.path.clone(),
                        format!(
                            "{what} '{name}' gained a doc where it had none: '{}'. Check that it describes the data already written, not a new meaning.",
                            clip(doc)
                        ),
                    )
                    .with_severity(Severity::Info)
                    .with_hint(
                        "A first doc is welcome; if it states a meaning, unit or null case the data written before does not have, add a new field for the new meaning instead.",
                    ),
                );
            }
            continue;
        }
        if let Some((before, after)) = unit_change {
            changes.insert(0, format!("its unit changed from {before} to {after}"));
        }
        let last = changes.pop().unwrap_or_default();
        let listed = if changes.is_empty() {
            last
        } else {
            format!("{} and {last}", changes.join(", "))
        };
        let (message, hint) = if record {
            (
                format!(
                    "Record '{name}' keeps its name and type '{}' but {listed}; a changed event meaning or grain (one event per assignment becoming one per assignee) breaks counts, dedupe, state stores and reports.",
                    new.node.type_name
                ),
                format!(
                    "Keep '{name}' with its old meaning and grain, and publish the new one as a new event type (a new record name and subject, or a major contract version): dual-publish, migrate consumers, then retire '{name}' after an explicit sunset."
                ),
            )
        } else {
            (
                format!(
                    "Field '{name}' keeps its name and type '{}' but {listed}.",
                    new.node.type_name
                ),
                format!(
                    "Keep '{name}' with its old meaning and add a new field whose name states the new meaning, unit or clock (sourceUpdatedAt, businessEventTime, durationSeconds), write both, migrate consumers and run important reports side by side, then deprecate '{name}'."
                ),
            )
        };
        findings.push(Finding::new(&RULE, new.node.path.clone(), message).with_hint(hint));
    }
    findings
}

#[cfg(test)]
mod tests {
    use crate::rules::testkit::*;
    use covenant_engine::Severity;

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
        assert!(findings[0].message.contains("grain"));
        assert!(findings[0].hint.contains("new event type"));
        assert!(findings[0].is_error());
    }

    #[test]
    fn a_unit_change_in_the_doc_is_named_and_points_to_a_new_field() {
        let old = avro(
            "Job",
            vec![field("timeoutMs", "long").doc("How long to wait before giving up.")],
        );
        let new = avro(
            "Job",
            vec![field("timeoutMs", "long").doc("How long to wait, in seconds.")],
        );
        let findings = run("MEANING_CHANGED", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert!(
            findings[0]
                .message
                .contains("its unit changed from milliseconds to seconds"),
            "{}",
            findings[0].message
        );
        assert!(findings[0].hint.contains("add a new field"));
        assert!(findings[0].is_error());
    }

    #[test]
    fn a_doc_added_where_there_was_none_is_info() {
        let old = avro("Case", vec![field("closureReason", "string")]);
        let new = avro(
            "Case",
            vec![field("closureReason", "string").doc("Null while the case is open.")],
        );
        let findings = run("MEANING_CHANGED", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].severity, Severity::Info);
        assert!(findings[0].message.contains("gained a doc"));
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
        let findings = run("MEANING_CHANGED", &old, &new, &none());
        assert!(
            findings.iter().all(|f| f.severity == Severity::Info),
            "{findings:?}"
        );
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
