//! A declared field the data never carries: dead weight, or a producer that lost it.

use super::Evidence;
use covenant_engine::{Finding, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "PROFILE_FIELD_NEVER_SEEN",
    format: "any",
    category: "profile",
    default_severity: Severity::Info,
    summary: "A field the schema declares never occurs in the profiled records.",
    bad_example: "the schema declares \"promoCode\" and none of 1,000,000 records carries it",
    good_example: "a producer fixed to write promoCode, or a deprecation record for it",
    hint: "Check whether a producer stopped writing it (a silent break) or nobody ever did (a removal candidate through a deprecation record).",
    peers: &[],
};

pub(super) fn check(evidence: &Evidence<'_>) -> Vec<Finding> {
    let (Some(declared), profile) = (evidence.declared, evidence.profile) else {
        return Vec::new();
    };
    if profile.records == 0 {
        return Vec::new();
    }
    declared
        .iter()
        .filter(|field| !field.path.ends_with("[]"))
        .filter(|field| !profile.paths.contains_key(&field.path))
        .map(|field| {
            Finding::new(
                &RULE,
                field.schema_path.clone(),
                format!(
                    "'{}' is declared but absent from all {} records.",
                    field.path, profile.records
                ),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::ProfileOptions;
    use crate::rules::testkit::*;
    use serde_json::json;

    #[test]
    fn declared_but_absent() {
        let p = profile(&[json!({"id": 1, "v": null})], ProfileOptions::default());
        let declared = [
            declared("/id", false),
            declared("/v", true),
            declared("/promo", true),
        ];
        let findings = run("PROFILE_FIELD_NEVER_SEEN", &p, Some(&declared));
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "/fields/promo");
    }
}
