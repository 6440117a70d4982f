//! One path, several kinds of value: a producer changed what it writes, or two producers
//! disagree.

use super::Evidence;
use covenant_engine::{Finding, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "PROFILE_TYPE_DRIFT",
    format: "any",
    category: "profile",
    default_severity: Severity::Warning,
    summary: "The data holds values of several JSON types at one path (null aside; whole and fractional numbers count as one), so readers see a type the schema may not promise.",
    bad_example: "\"price\": \"12.5\" in some records and \"price\": 12.5 in others",
    good_example: "\"price\": 12.5 everywhere (or a separate field for the text form)",
    hint: "Find the producer writing the other type (group the profile by source), fix it at the source, and make the schema state the one type.",
    peers: &[],
};

pub(super) fn check(evidence: &Evidence<'_>) -> Vec<Finding> {
    evidence
        .profile
        .paths
        .iter()
        .filter_map(|(path, stats)| {
            let mut kinds: Vec<(&str, u64)> = stats
                .types
                .iter()
                .filter(|(kind, _)| kind.as_str() != "null")
                .map(|(kind, count)| (kind.as_str(), *count))
                .collect();
            let numeric = kinds
                .iter()
                .filter(|(k, _)| matches!(*k, "integer" | "number"))
                .count();
            let distinct = kinds.len() - numeric.saturating_sub(1);
            if distinct < 2 {
                return None;
            }
            kinds.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
            let seen = kinds
                .iter()
                .map(|(kind, count)| format!("{kind} ({count})"))
                .collect::<Vec<_>>()
                .join(", ");
            Some(Finding::new(
                &RULE,
                path.clone(),
                format!("'{path}' holds values of several types: {seen}."),
            ))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::ProfileOptions;
    use crate::rules::testkit::*;
    use serde_json::json;

    #[test]
    fn mixed_types_drift_but_numbers_and_nulls_do_not() {
        let p = profile(
            &[
                json!({"price": "12.5", "qty": 1, "note": null}),
                json!({"price": 12.5, "qty": 1.5, "note": "x"}),
            ],
            ProfileOptions::default(),
        );
        let findings = run("PROFILE_TYPE_DRIFT", &p, None);
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].path, "/price");
        assert!(
            findings[0].message.contains("string (1)"),
            "{}",
            findings[0].message
        );
    }
}
