//! What a profile says about a schema: one module per rule, each with its spec and tests,
//! listed once here in catalog order.

use crate::{DeclaredField, Profile};
use covenant_engine::{Finding, RuleSpec};

mod field_never_seen;
mod field_not_in_schema;
mod promotion_candidate;
mod removal_candidate;
mod type_drift;

/// The thresholds the findings use (the seed's defaults: promote at 70 % of records or in 2
/// groups, remove below 5 % population).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Thresholds {
    pub promote_share: f64,
    pub promote_groups: usize,
    pub remove_share: f64,
}

impl Default for Thresholds {
    fn default() -> Self {
        Thresholds {
            promote_share: 0.7,
            promote_groups: 2,
            remove_share: 0.05,
        }
    }
}

/// What one rule looks at.
pub struct Evidence<'a> {
    pub profile: &'a Profile,
    /// The fields of the schema the data is compared with; `None` without a schema.
    pub declared: Option<&'a [DeclaredField]>,
    pub thresholds: Thresholds,
}

struct Entry {
    spec: &'static RuleSpec,
    check: fn(&Evidence<'_>) -> Vec<Finding>,
}

const ENTRIES: [Entry; 5] = [
    Entry {
        spec: &promotion_candidate::RULE,
        check: promotion_candidate::check,
    },
    Entry {
        spec: &removal_candidate::RULE,
        check: removal_candidate::check,
    },
    Entry {
        spec: &type_drift::RULE,
        check: type_drift::check,
    },
    Entry {
        spec: &field_not_in_schema::RULE,
        check: field_not_in_schema::check,
    },
    Entry {
        spec: &field_never_seen::RULE,
        check: field_never_seen::check,
    },
];

/// The catalog entries of the profile rules.
pub fn rules() -> &'static [&'static RuleSpec] {
    static SPECS: [&RuleSpec; 5] = [
        &promotion_candidate::RULE,
        &removal_candidate::RULE,
        &type_drift::RULE,
        &field_not_in_schema::RULE,
        &field_never_seen::RULE,
    ];
    &SPECS
}

/// Every finding the evidence supports, rule by rule in catalog order.
pub fn findings(evidence: &Evidence<'_>) -> Vec<Finding> {
    ENTRIES
        .iter()
        .flat_map(|entry| {
            debug_assert!(rules().iter().any(|r| r.id == entry.spec.id));
            (entry.check)(evidence)
        })
        .collect()
}

/// A share as a whole percentage for messages.
fn percent(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

#[cfg(test)]
pub(crate) mod testkit {
    use super::*;
    use crate::{ProfileOptions, Profiler};
    use serde_json::Value;

    pub fn profile(records: &[Value], options: ProfileOptions) -> Profile {
        let mut profiler = Profiler::new(options);
        for record in records {
            profiler.observe(record);
        }
        profiler.finish()
    }

    pub fn declared(path: &str, nullable: bool) -> DeclaredField {
        DeclaredField {
            path: path.into(),
            schema_path: format!("/fields{path}"),
            nullable,
        }
    }

    pub fn run(rule: &str, profile: &Profile, declared: Option<&[DeclaredField]>) -> Vec<Finding> {
        findings(&Evidence {
            profile,
            declared,
            thresholds: Thresholds::default(),
        })
        .into_iter()
        .filter(|f| f.rule == rule)
        .collect()
    }
}
