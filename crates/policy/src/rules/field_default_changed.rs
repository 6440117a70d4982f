//! A changed default changes data nobody wrote: records without the field are filled with
//! the old value by old readers and the new value by new ones, so two consumers disagree
//! about the same record without any error (a CDC column default is the common source).

use crate::pair::Pair;
use covenant_engine::{Finding, NodeKind, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "FIELD_DEFAULT_CHANGED",
    format: "any",
    category: "semantic",
    // A warning: a new default may be a deliberate correction, but old and new readers now
    // fill different values into the same historical records. Source: schema-evolution-rules
    // §11 (CDC: change default).
    default_severity: Severity::Warning,
    summary: "A field kept its name and type but its default changed (or was dropped); readers of old and new versions fill different values into records that lack the field. Source: schema-evolution-rules §11.",
    bad_example: "v1: {\"name\": \"priority\", \"type\": \"int\", \"default\": 3}\nv2: {\"name\": \"priority\", \"type\": \"int\", \"default\": 0}",
    good_example: "keep the default of 'priority'; if records now need another fallback, add a field whose name states it (priorityOrDefaultZero) or backfill the value explicitly",
    hint: "Keep the default; make the new value explicit in the data (backfill, or producers writing it) rather than changing what readers invent for missing values.",
    peers: &[],
};

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (old, new) in pair.matched() {
        let (o, n) = (old.node, new.node);
        if n.kind != NodeKind::Field || !o.has_default || o.type_name != n.type_name {
            continue;
        }
        let show = |v: &Option<serde_json::Value>| {
            v.as_ref()
                .map(|v| v.to_string())
                .unwrap_or_else(|| "none".to_string())
        };
        let message = if !n.has_default {
            format!(
                "Field '{}' lost its default {}; readers of the new version can no longer fill records that lack it.",
                n.name,
                show(&o.default)
            )
        } else if o.default != n.default {
            format!(
                "Field '{}' changed its default from {} to {}; old and new readers fill different values into records that lack it.",
                n.name,
                show(&o.default),
                show(&n.default)
            )
        } else {
            continue;
        };
        findings.push(Finding::new(&RULE, n.path.clone(), message));
    }
    findings
}

#[cfg(test)]
mod tests {
    use crate::rules::testkit::*;
    use serde_json::json;

    #[test]
    fn priority_default_three_to_zero() {
        let old = avro("Case", vec![field("priority", "int").default(json!(3))]);
        let new = avro("Case", vec![field("priority", "int").default(json!(0))]);
        let findings = run("FIELD_DEFAULT_CHANGED", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "/fields/priority");
        assert_eq!(
            findings[0].message,
            "Field 'priority' changed its default from 3 to 0; old and new readers fill different values into records that lack it."
        );
        let dropped = avro("Case", vec![field("priority", "int")]);
        assert!(
            run("FIELD_DEFAULT_CHANGED", &old, &dropped, &none())[0]
                .message
                .contains("lost its default 3")
        );
    }

    #[test]
    fn same_default_new_default_or_new_type_are_left_alone() {
        let old = avro("Case", vec![field("priority", "int").default(json!(3))]);
        assert!(run("FIELD_DEFAULT_CHANGED", &old, &old, &none()).is_empty());
        let added = avro("Case", vec![field("priority", "int")]);
        assert!(run("FIELD_DEFAULT_CHANGED", &added, &old, &none()).is_empty());
        let retyped = avro("Case", vec![field("priority", "long").default(json!(0))]);
        assert!(run("FIELD_DEFAULT_CHANGED", &old, &retyped, &none()).is_empty());
    }
}
