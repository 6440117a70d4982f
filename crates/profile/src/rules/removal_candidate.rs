//! A nullable field of the schema that the data hardly ever fills (the seed's "nullable
//! columns with <5% population → candidate for removal").

use super::{Evidence, percent};
use covenant_engine::{Finding, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "PROFILE_REMOVAL_CANDIDATE",
    format: "any",
    category: "profile",
    default_severity: Severity::Info,
    summary: "A nullable field of the schema is populated (present and not null) in fewer than the removal share of records (default 5 %). Source: adr-005-schema-evolution, column population monitoring.",
    bad_example: "\"legacy_fee_tier\": [\"null\", \"string\"] populated in 3 % of records",
    good_example: "a deprecation record for legacy_fee_tier with this profile as evidence, then removal after its window",
    hint: "Open a deprecation record for it with the profile's figures as evidence, find who still reads it (declared consumers and observed readers), and remove it only when the removal gate is clear.",
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
        .filter(|field| field.nullable)
        .filter_map(|field| {
            let share = profile.population(&field.path);
            (share < evidence.thresholds.remove_share).then(|| {
                let filled = profile.paths.get(&field.path).map_or(0, |s| s.non_null);
                Finding::new(
                    &RULE,
                    field.schema_path.clone(),
                    format!(
                        "'{}' is populated in {} of records ({filled} of {}), below the removal threshold of {}.",
                        field.path,
                        percent(share),
                        profile.records,
                        percent(evidence.thresholds.remove_share)
                    ),
                )
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::ProfileOptions;
    use crate::rules::testkit::*;
    use serde_json::json;

    #[test]
    fn rarely_filled_nullable_fields_are_candidates() {
        let records: Vec<_> = (0..100)
            .map(|i| json!({"id": i, "fee": if i < 3 { json!("x") } else { json!(null) }, "note": if i < 30 { json!("y") } else { json!(null) }}))
            .collect();
        let p = profile(&records, ProfileOptions::default());
        let declared = [
            declared("/id", false),
            declared("/fee", true),
            declared("/note", true),
        ];
        let findings = run("PROFILE_REMOVAL_CANDIDATE", &p, Some(&declared));
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].path, "/fields/fee");
        assert!(
            findings[0].message.contains("3%"),
            "{}",
            findings[0].message
        );
    }
}
