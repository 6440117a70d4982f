//! An escape-hatch key common enough to be a real field (the seed's "if 2+ exchanges have
//! it" and "vendor_data fields with >70% population").

use super::{Evidence, percent};
use covenant_engine::{Finding, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "PROFILE_PROMOTION_CANDIDATE",
    format: "any",
    category: "profile",
    default_severity: Severity::Info,
    summary: "A key of an escape-hatch column (e.g. `vendor_data`) is present in at least the promotion share of records (default 70 %), or common in at least the promotion number of groups (default 2 sources): present in at least the promotion share of each such group's records, so a key a few records of many sources carry is not one. Source: adr-005-schema-evolution, vendor_data monitoring.",
    bad_example: "vendor_data = {\"marginTradingAllowed\": true} in 80 % of Binance and Kraken records, read with JSON extraction in every query",
    good_example: "{\"name\": \"margin_trading_allowed\", \"type\": [\"null\", \"boolean\"], \"default\": null} promoted as an optional field",
    hint: "Promote it as an optional field (nullable with a null default, an optional property, or a new field number), backfill it from the escape hatch, and stop writing it there.",
    peers: &[],
};

pub(super) fn check(evidence: &Evidence<'_>) -> Vec<Finding> {
    let profile = evidence.profile;
    let limits = evidence.thresholds;
    profile
        .paths
        .iter()
        .filter(|(_, stats)| stats.escape_hatch_key)
        .filter_map(|(path, stats)| {
            let share = profile.population(path);
            // The seed's two signals, "2+ exchanges have it" and ">70% of records", hold
            // together: a group has the key when it is common there, not when a stray record
            // of the group carries it.
            let groups: Vec<&str> = profile
                .groups
                .iter()
                .filter(|(_, g)| {
                    let present = g.present.get(path).copied().unwrap_or(0);
                    present > 0 && present as f64 >= limits.promote_share * g.records as f64
                })
                .map(|(name, _)| name.as_str())
                .collect();
            let by_share = share >= limits.promote_share;
            let by_groups = !profile.groups.is_empty() && groups.len() >= limits.promote_groups;
            if !(by_share || by_groups) {
                return None;
            }
            let sources = if profile.groups.is_empty() {
                String::new()
            } else {
                format!(
                    " and common in {} of {} groups ({}: each in at least {} of its records)",
                    groups.len(),
                    profile.groups.len(),
                    groups.join(", "),
                    percent(limits.promote_share)
                )
            };
            Some(Finding::new(
                &RULE,
                path.clone(),
                format!(
                    "'{path}' is present in {} of records ({} of {}){sources}; it is common enough to be a field of its own (it has {} values).",
                    percent(share),
                    stats.non_null,
                    profile.records,
                    type_list(stats)
                ),
            ))
        })
        .collect()
}

fn type_list(stats: &crate::PathStats) -> String {
    stats
        .types
        .keys()
        .filter(|t| t.as_str() != "null")
        .cloned()
        .collect::<Vec<_>>()
        .join("/")
}

#[cfg(test)]
mod tests {
    use crate::ProfileOptions;
    use crate::rules::testkit::*;
    use serde_json::json;

    fn options() -> ProfileOptions {
        ProfileOptions {
            escape_hatches: vec!["vendor_data".into()],
            group_by: Some("exchange".into()),
            ..ProfileOptions::default()
        }
    }

    #[test]
    fn common_keys_are_candidates_rare_ones_are_not() {
        let mut records = Vec::new();
        for i in 0..10 {
            let vendor = match i {
                0 => json!({"marginTradingAllowed": true, "rare": 1}),
                1..8 => json!({"marginTradingAllowed": true}),
                _ => json!({}),
            };
            records.push(json!({"exchange": "binance", "vendor_data": vendor.to_string()}));
        }
        let p = profile(&records, options());
        let findings = run("PROFILE_PROMOTION_CANDIDATE", &p, None);
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].path, "/vendor_data/marginTradingAllowed");
        assert!(
            findings[0].message.contains("80%"),
            "{}",
            findings[0].message
        );
    }

    /// 3 % of the records, spread over three exchanges: every exchange has the key, none
    /// commonly; not a field of its own.
    #[test]
    fn a_key_rare_in_every_group_is_not_a_candidate() {
        let mut records = Vec::new();
        for exchange in ["binance", "kraken", "coinbase"] {
            for i in 0..100 {
                let vendor = if i < 3 {
                    json!({"promoCode": "X"})
                } else {
                    json!({})
                };
                records.push(json!({"exchange": exchange, "vendor_data": vendor}));
            }
        }
        let p = profile(&records, options());
        assert!(run("PROFILE_PROMOTION_CANDIDATE", &p, None).is_empty());
        // Common in two of them (68 % overall, below the share): a candidate by groups.
        for r in records.iter_mut().take(200) {
            r["vendor_data"] = json!({"promoCode": "X"});
        }
        let p = profile(&records, options());
        let findings = run("PROFILE_PROMOTION_CANDIDATE", &p, None);
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(
            findings[0]
                .message
                .contains("common in 2 of 3 groups (binance, kraken: each in at least 70%"),
            "{}",
            findings[0].message
        );
    }

    #[test]
    fn two_sources_make_a_candidate_below_the_share() {
        let mut records = vec![
            json!({"exchange": "binance", "vendor_data": {"tickSizeStep": 1}}),
            json!({"exchange": "kraken", "vendor_data": {"tickSizeStep": 2}}),
        ];
        for _ in 0..8 {
            records.push(json!({"exchange": "coinbase", "vendor_data": {}}));
        }
        let p = profile(&records, options());
        let findings = run("PROFILE_PROMOTION_CANDIDATE", &p, None);
        assert_eq!(findings.len(), 1);
        assert!(
            findings[0].message.contains("binance, kraken"),
            "{}",
            findings[0].message
        );
    }
}
