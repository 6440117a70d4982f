//! Null (or absence) became legal or illegal for a field that kept its name.

use crate::pair::Pair;
use covenant_engine::{Finding, NodeKind, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "NULLABILITY_CHANGED",
    format: "any",
    category: "semantic",
    // A warning: either direction changes what consumers must handle; the cases that break
    // the parser are already structural errors in the format crates.
    default_severity: Severity::Warning,
    summary: "A field became nullable or non-null, or stopped being required; historical data may hold nulls, and consumers may have assumed a value is always present.",
    bad_example: "v1: {\"name\": \"closedAt\", \"type\": [\"null\", \"string\"], \"default\": null}\nv2: {\"name\": \"closedAt\", \"type\": \"string\"}",
    good_example: "keep the nullability and document what null means (unknown, not applicable, redacted, pending), or add a new field with the new nullability",
    hint: "Keep the field's nullability, or add a new field with the intended nullability and document what null means; consumers that assumed presence must be reviewed before producers send nulls.",
    peers: &[],
};

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (old, new) in pair.matched() {
        if new.node.kind != NodeKind::Field {
            continue;
        }
        let name = &new.node.name;
        let message = match (old.node.nullable, new.node.nullable) {
            (true, false) => Some(format!(
                "Field '{name}' is no longer nullable; historical records and old producers may still carry null."
            )),
            (false, true) => Some(format!(
                "Field '{name}' became nullable; consumers that assumed a value will meet null."
            )),
            _ if old.node.required && !new.node.required => Some(format!(
                "Field '{name}' is no longer required; consumers that assumed it is present will meet records without it."
            )),
            _ => None,
        };
        if let Some(message) = message {
            findings.push(Finding::new(&RULE, new.node.path.clone(), message));
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use crate::rules::testkit::*;

    #[test]
    fn nullable_to_non_null() {
        let old = avro("Case", vec![field("reasonCode", "string").nullable()]);
        let new = avro("Case", vec![field("reasonCode", "string")]);
        let findings = run("NULLABILITY_CHANGED", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "/fields/reasonCode");
        assert!(findings[0].message.contains("is no longer nullable"));
    }

    #[test]
    fn non_null_to_nullable() {
        let old = avro("Case", vec![field("caseId", "string")]);
        let new = avro("Case", vec![field("caseId", "string").nullable()]);
        let findings = run("NULLABILITY_CHANGED", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert!(findings[0].message.contains("became nullable"));
    }

    #[test]
    fn required_to_optional_in_json() {
        let old = json(vec![property("caseId", "string").with_required()]);
        let new = json(vec![property("caseId", "string")]);
        let findings = run("NULLABILITY_CHANGED", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "#/properties/caseId");
        assert!(findings[0].message.contains("no longer required"));
        // Becoming required is the JSON Schema crate's structural rule, not repeated here.
        assert!(run("NULLABILITY_CHANGED", &new, &old, &none()).is_empty());
    }

    #[test]
    fn unchanged_fields_are_quiet() {
        let tree = avro(
            "Case",
            vec![field("a", "string").nullable(), field("b", "long")],
        );
        assert!(run("NULLABILITY_CHANGED", &tree, &tree, &none()).is_empty());
    }

    trait Required {
        fn with_required(self) -> Self;
    }
    impl Required for covenant_engine::Node {
        fn with_required(mut self) -> Self {
            self.required = true;
            self
        }
    }
}
