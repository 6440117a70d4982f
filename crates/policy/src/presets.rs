//! Policy presets: how much each semantic rule matters when a subject names no level for it.
//!
//! `covenant` (the default) refuses the changes the seeds call dangerous: renames, removals
//! without a deprecation, meaning and unit changes, money and time retyped, precision loss,
//! identity changes, dropped Protobuf reservations, partition changes. `confluent` gives
//! Confluent's structural verdicts alone: every semantic finding is still reported, but none
//! refuses a change. Per-rule `semanticRules` override either. The levels of both are in one
//! table, [`LEVELS`]; a rule's spec states its `covenant` level as its default severity.

use crate::RuleLevel;
use covenant_engine::{RuleSpec, Severity};
use serde::{Deserialize, Serialize};

/// A named set of rule levels, chosen in config like `compatibility` (`policyPreset`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Preset {
    /// The seeds' discipline: dangerous changes are errors.
    #[default]
    Covenant,
    /// Confluent's verdicts: semantic findings are reported and never refuse.
    Confluent,
}

/// One rule's level under each preset.
pub struct PresetLevels {
    pub rule: &'static str,
    pub covenant: RuleLevel,
    pub confluent: RuleLevel,
}

const fn row(rule: &'static str, covenant: RuleLevel, confluent: RuleLevel) -> PresetLevels {
    PresetLevels {
        rule,
        covenant,
        confluent,
    }
}

use RuleLevel::{Error as E, Info as I, Warning as W};

/// Every semantic rule's level per preset, in catalog order.
pub static LEVELS: &[PresetLevels] = &[
    row("KEY_FIELD_CHANGED", E, W),
    row("LIKELY_IDENTITY_CHANGED", E, W),
    row("KEY_SUBJECT_CHANGED", E, W),
    row("SENSITIVE_TYPE_CHANGED", E, W),
    row("PRECISION_LOSS", E, W),
    row("VALUE_REINTERPRETED", E, W),
    row("MONEY_AS_FLOAT", W, W),
    row("MEANING_CHANGED", E, W),
    row("LIKELY_RENAME", E, W),
    row("FIELD_REMOVED_WITHOUT_DEPRECATION", E, W),
    row("FIELD_DEFAULT_CHANGED", W, W),
    row("FIELD_IDENTITY_MOVED", E, W),
    row("ICEBERG_HISTORY_ID_REUSED", E, W),
    row("ICEBERG_PARTITION_CHANGED", E, W),
    row("NULLABILITY_CHANGED", W, W),
    row("ENUM_VALUE_ADDED", W, W),
    row("PII_TAG_ADDED", W, W),
    row("PII_TAG_REMOVED", E, W),
    row("PII_UNTAGGED", W, W),
    row("PII_NOT_ENCRYPTED", W, W),
    row("VERSION_SUFFIXED_NAME", W, W),
    row("WIDE_UNION", W, W),
    row("AMBIGUOUS_NULL_DEFAULT", I, I),
    row("JSON_ADDITIONAL_PROPERTIES_IMPLICIT", I, I),
    row("JSON_FORMAT_ADDED", E, W),
    row("PROTOBUF_REMOVED_NOT_RESERVED", E, W),
    row("PROTOBUF_RESERVED_DROPPED", E, W),
    row("PROTOBUF_ENUM_ZERO_NOT_UNSPECIFIED", W, W),
    row("PROTOBUF_HISTORY_REUSED", E, W),
];

impl Preset {
    pub const ALL: [Preset; 2] = [Preset::Covenant, Preset::Confluent];

    pub fn as_str(self) -> &'static str {
        match self {
            Preset::Covenant => "covenant",
            Preset::Confluent => "confluent",
        }
    }

    pub fn parse(text: &str) -> Option<Preset> {
        match text.to_ascii_lowercase().as_str() {
            "covenant" => Some(Preset::Covenant),
            "confluent" => Some(Preset::Confluent),
            _ => None,
        }
    }

    /// The level `rule` runs at under this preset. A rule outside the table (a structural,
    /// replay or profile rule) keeps its spec's severity: presets only set semantic levels.
    pub fn level(self, rule: &RuleSpec) -> RuleLevel {
        match LEVELS.iter().find(|l| l.rule == rule.id) {
            Some(l) => match self {
                Preset::Covenant => l.covenant,
                Preset::Confluent => l.confluent,
            },
            None => rule.default_severity.into(),
        }
    }

    /// The severity a finding of `rule` gets under this preset when the subject names no
    /// level for the rule. A finding at the rule's default severity takes the preset's
    /// level; one its rule raised with cause (consumers known to read a removed field) stays
    /// at least that level, and one it lowered (a doc added where there was none) stays at
    /// most that level. Under `confluent` nothing semantic refuses a change.
    pub fn severity(self, rule: &RuleSpec, found: Severity) -> Severity {
        let Some(level) = self.level(rule).severity() else {
            return found;
        };
        let severity = match found.cmp(&rule.default_severity) {
            std::cmp::Ordering::Equal => level,
            std::cmp::Ordering::Greater => found.max(level),
            std::cmp::Ordering::Less => found.min(level),
        };
        match self {
            Preset::Covenant => severity,
            Preset::Confluent => severity.min(Severity::Warning),
        }
    }
}

impl std::fmt::Display for Preset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_semantic_rule_has_one_row_and_its_spec_states_the_covenant_level() {
        let rules = crate::rules();
        assert_eq!(LEVELS.len(), rules.len());
        for (rule, row) in rules.iter().zip(LEVELS) {
            assert_eq!(rule.id, row.rule, "the table follows the catalog's order");
            assert_eq!(
                RuleLevel::from(rule.default_severity),
                row.covenant,
                "{}",
                rule.id
            );
            assert_ne!(row.confluent, RuleLevel::Error, "{}", rule.id);
        }
    }

    #[test]
    fn confluent_never_refuses_and_keeps_what_a_rule_lowered() {
        let rename = &crate::rules::likely_rename::RULE;
        assert_eq!(
            Preset::Covenant.severity(rename, Severity::Error),
            Severity::Error
        );
        assert_eq!(
            Preset::Confluent.severity(rename, Severity::Error),
            Severity::Warning
        );
        assert_eq!(
            Preset::Covenant.severity(rename, Severity::Info),
            Severity::Info
        );
        let nulls = &crate::rules::nullability_changed::RULE;
        assert_eq!(
            Preset::Covenant.severity(nulls, Severity::Error),
            Severity::Error,
            "raised with cause"
        );
        assert_eq!(
            Preset::Confluent.severity(nulls, Severity::Error),
            Severity::Warning
        );
    }
}
