//! `plan_id_v2` next to `plan_id` says "newer", not what changed: consumers must guess which
//! one means what, and `v3` follows. Names should state the meaning.

use crate::pair::Pair;
use covenant_engine::{Finding, NodeKind, RuleSpec, Severity};
use foldhash::HashSet;

pub static RULE: RuleSpec = RuleSpec {
    id: "VERSION_SUFFIXED_NAME",
    format: "any",
    category: "semantic",
    // A warning: a naming lint. Source: schema-evolution-rules §23.3 and the seeds' advice
    // to use semantic names (businessEventTime), not version suffixes.
    default_severity: Severity::Warning,
    summary: "A new field's name differs from an existing field's only by a version suffix (`plan_id_v2` next to `plan_id`, `amountV2` next to `amount`), which says that it is newer but not what it means. Source: schema-evolution-rules §23.3.",
    bad_example: "v1: {\"name\": \"plan_id\", ...}\nv2 adds {\"name\": \"plan_id_v2\", ...}",
    good_example: "v2 adds {\"name\": \"billing_plan_id\", \"doc\": \"Stable billing identity at the event's effective time.\"}",
    hint: "Name the new field after what it means (billing_plan_id, businessEventTime, amountMinorUnits) and document how it differs from the old one.",
    peers: &[],
};

/// The name without a trailing version suffix (`_v2`, `V2`, `-v3`, `_2`), or `None` when it
/// has none.
fn base_name(name: &str) -> Option<&str> {
    let rest = name.trim_end_matches(|c: char| c.is_ascii_digit());
    if rest.len() == name.len() {
        return None;
    }
    let stem = rest
        .strip_suffix(['v', 'V'])
        .unwrap_or(rest)
        .trim_end_matches(['_', '-']);
    (!stem.is_empty()).then_some(stem)
}

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    let suffixed: Vec<(&str, &str, &str)> = pair
        .added()
        .into_iter()
        .filter(|a| a.node.kind == NodeKind::Field)
        .filter_map(|a| {
            let name = a.node.name.as_str();
            Some((name, base_name(name)?, a.node.path.as_str()))
        })
        .collect();
    if suffixed.is_empty() {
        return Vec::new();
    }
    let existing: HashSet<&str> = pair
        .new_nodes()
        .into_iter()
        .filter(|l| l.node.kind == NodeKind::Field)
        .map(|l| l.node.name.as_str())
        .collect();
    suffixed
        .into_iter()
        .filter(|(name, base, _)| name != base && existing.contains(base))
        .map(|(name, base, path)| {
            Finding::new(
                &RULE,
                path.to_string(),
                format!(
                    "Field '{name}' differs from '{base}' only by a version suffix; its name should say what it means."
                ),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::base_name;
    use crate::rules::testkit::*;

    #[test]
    fn suffixes_are_recognised() {
        assert_eq!(base_name("plan_id_v2"), Some("plan_id"));
        assert_eq!(base_name("amountV2"), Some("amount"));
        assert_eq!(base_name("status-v3"), Some("status"));
        assert_eq!(base_name("plan_id2"), Some("plan_id"));
        assert_eq!(base_name("plan_id"), None);
        assert_eq!(base_name("v2"), None);
    }

    #[test]
    fn plan_id_v2_next_to_plan_id() {
        let old = avro("Sub", vec![field("plan_id", "string")]);
        let new = avro(
            "Sub",
            vec![
                field("plan_id", "string"),
                field("plan_id_v2", "string"),
                field("sha256", "string"),
            ],
        );
        let findings = run("VERSION_SUFFIXED_NAME", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "/fields/plan_id_v2");
    }
}
