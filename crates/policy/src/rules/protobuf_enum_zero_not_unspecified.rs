//! Proto3 reads every unset enum field as its zero value, so the zero value should mean
//! "not set", not a business state.

use crate::pair::Pair;
use covenant_engine::{Finding, NodeKind, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "PROTOBUF_ENUM_ZERO_NOT_UNSPECIFIED",
    format: "protobuf",
    category: "semantic",
    // A warning: valid Protobuf, but every missing value silently becomes that state.
    // Reported when an enum appears or its zero value changes, not on every version.
    default_severity: Severity::Warning,
    summary: "A Protobuf enum's zero value is a meaningful state instead of an `_UNSPECIFIED` sentinel, so every unset or unknown field reads as that state.",
    bad_example: "enum CaseStatus {\n  CASE_STATUS_OPEN = 0;\n  CASE_STATUS_CLOSED = 1;\n}",
    good_example: "enum CaseStatus {\n  CASE_STATUS_UNSPECIFIED = 0;\n  CASE_STATUS_OPEN = 1;\n  CASE_STATUS_CLOSED = 2;\n}",
    hint: "Make the zero value a sentinel named `<ENUM>_UNSPECIFIED` and give business states non-zero numbers; for an enum already in use, introduce a new enum rather than renumbering.",
    peers: &["buf:ENUM_ZERO_VALUE_SUFFIX"],
};

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    if pair.format() != "protobuf" {
        return Vec::new();
    }
    let mut findings = Vec::new();
    for new in pair.new_nodes() {
        if new.node.kind != NodeKind::Enum {
            continue;
        }
        let zero = |node: &covenant_engine::Node| {
            node.enum_values
                .iter()
                .find(|v| v.number == Some(0))
                .map(|v| v.name.clone())
        };
        let Some(name) = zero(new.node) else { continue };
        if name.ends_with("_UNSPECIFIED") {
            continue;
        }
        if pair.old_at(&new.node.path).is_some_and(|o| {
            o.node.kind == NodeKind::Enum && zero(o.node).as_deref() == Some(&name)
        }) {
            continue;
        }
        findings.push(Finding::new(
            &RULE,
            new.node.path.clone(),
            format!(
                "Enum '{}' uses '{name}' as its zero value, so every unset field reads as that state.",
                new.node.name
            ),
        ));
    }
    findings
}

#[cfg(test)]
mod tests {
    use crate::rules::testkit::*;
    use covenant_engine::FieldTree;

    #[test]
    fn business_state_as_zero_value() {
        let new = proto(vec![proto_enum(
            "acme.CaseStatus",
            &[("CASE_STATUS_OPEN", 0), ("CASE_STATUS_CLOSED", 1)],
        )]);
        let findings = run(
            "PROTOBUF_ENUM_ZERO_NOT_UNSPECIFIED",
            &FieldTree::empty("PROTOBUF"),
            &new,
            &none(),
        );
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "/acme.CaseStatus");
        assert_eq!(
            findings[0].message,
            "Enum 'acme.CaseStatus' uses 'CASE_STATUS_OPEN' as its zero value, so every unset field reads as that state."
        );
        assert!(run("PROTOBUF_ENUM_ZERO_NOT_UNSPECIFIED", &new, &new, &none()).is_empty());
    }

    #[test]
    fn unspecified_sentinel_is_fine() {
        let new = proto(vec![proto_enum(
            "acme.CaseStatus",
            &[("CASE_STATUS_UNSPECIFIED", 0), ("CASE_STATUS_OPEN", 1)],
        )]);
        assert!(
            run(
                "PROTOBUF_ENUM_ZERO_NOT_UNSPECIFIED",
                &FieldTree::empty("PROTOBUF"),
                &new,
                &none()
            )
            .is_empty()
        );
    }
}
