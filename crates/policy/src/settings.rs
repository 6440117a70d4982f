//! Per-subject policy: how much each semantic rule matters.

pub use crate::presets::Preset;
use covenant_engine::{RuleSpec, Severity};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// What a rule's findings become. `Error` blocks registration like an incompatibility.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RuleLevel {
    Off,
    Info,
    #[serde(alias = "warn")]
    Warning,
    Error,
}

impl RuleLevel {
    /// The severity findings get, or `None` when the rule is off.
    pub fn severity(self) -> Option<Severity> {
        match self {
            RuleLevel::Off => None,
            RuleLevel::Info => Some(Severity::Info),
            RuleLevel::Warning => Some(Severity::Warning),
            RuleLevel::Error => Some(Severity::Error),
        }
    }
}

impl From<Severity> for RuleLevel {
    fn from(severity: Severity) -> RuleLevel {
        match severity {
            Severity::Info => RuleLevel::Info,
            Severity::Warning => RuleLevel::Warning,
            Severity::Error => RuleLevel::Error,
        }
    }
}

/// Rule levels that differ from the preset's, stored by the registry as JSON in a subject's
/// (a context's, or the global) config:
/// `{"policyPreset": "confluent", "semanticRules": {"LIKELY_RENAME": "error"}}`.
/// A rule not listed runs at its level under the preset ([`crate::presets`]); without a
/// preset, the `covenant` one.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicySettings {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub policy_preset: Option<Preset>,
    #[serde(default)]
    pub semantic_rules: BTreeMap<String, RuleLevel>,
}

/// Settings that name a rule this version does not know.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SettingsError {
    #[error("Unknown semantic rule '{id}' in policy settings")]
    UnknownRule { id: String },
    #[error("Invalid policy settings: {message}")]
    Invalid { message: String },
}

impl PolicySettings {
    /// Parses and validates settings JSON as the registry stores it.
    pub fn from_json(value: &serde_json::Value) -> Result<PolicySettings, SettingsError> {
        let settings: PolicySettings =
            serde_json::from_value(value.clone()).map_err(|e| SettingsError::Invalid {
                message: e.to_string(),
            })?;
        settings.validate()?;
        Ok(settings)
    }

    /// Rejects ids that are not semantic rules, so a typo cannot silently disable nothing.
    pub fn validate(&self) -> Result<(), SettingsError> {
        for id in self.semantic_rules.keys() {
            if !crate::rules().iter().any(|r| r.id == id) {
                return Err(SettingsError::UnknownRule { id: id.clone() });
            }
        }
        Ok(())
    }

    /// The preset these settings run under: the one set, else `covenant`.
    pub fn preset(&self) -> Preset {
        self.policy_preset.unwrap_or_default()
    }

    /// The level a rule runs at under these settings: the one `semanticRules` names, else
    /// the preset's.
    pub fn level(&self, rule: &RuleSpec) -> RuleLevel {
        self.semantic_rules
            .get(rule.id)
            .copied()
            .unwrap_or_else(|| self.preset().level(rule))
    }

    /// These settings with `more_specific` laid over them, rule by rule, and its preset when
    /// it sets one (global config, then context, then subject config).
    pub fn overridden_by(&self, more_specific: &PolicySettings) -> PolicySettings {
        let mut semantic_rules = self.semantic_rules.clone();
        semantic_rules.extend(more_specific.semantic_rules.clone());
        PolicySettings {
            policy_preset: more_specific.policy_preset.or(self.policy_preset),
            semantic_rules,
        }
    }

    /// These settings under `preset`.
    pub fn with_preset(mut self, preset: Preset) -> PolicySettings {
        self.policy_preset = Some(preset);
        self
    }

    /// Sets one rule's level, for callers building settings in code.
    pub fn with(mut self, rule_id: &str, level: RuleLevel) -> PolicySettings {
        self.semantic_rules.insert(rule_id.to_string(), level);
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn reads_the_subject_config_shape() {
        let settings = PolicySettings::from_json(
            &json!({"semanticRules": {"LIKELY_RENAME": "error", "ENUM_VALUE_ADDED": "off"}}),
        )
        .expect("valid settings");
        let rename = crate::rules::likely_rename::RULE;
        assert_eq!(settings.level(&rename), RuleLevel::Error);
        assert_eq!(
            settings.level(&crate::rules::enum_value_added::RULE),
            RuleLevel::Off
        );
        assert_eq!(
            settings.level(&crate::rules::key_field_changed::RULE),
            RuleLevel::Error,
            "an unlisted rule keeps its default"
        );
        assert_eq!(
            serde_json::to_value(&settings).expect("serializable"),
            json!({"semanticRules": {"ENUM_VALUE_ADDED": "off", "LIKELY_RENAME": "error"}})
        );
    }

    #[test]
    fn the_preset_sets_unlisted_rules_and_named_rules_override_it() {
        let rename = crate::rules::likely_rename::RULE;
        let removal = crate::rules::field_removed_without_deprecation::RULE;
        assert_eq!(PolicySettings::default().preset(), Preset::Covenant);
        assert_eq!(PolicySettings::default().level(&rename), RuleLevel::Error);
        let confluent = PolicySettings::from_json(
            &json!({"policyPreset": "confluent", "semanticRules": {"LIKELY_RENAME": "error"}}),
        )
        .expect("valid settings");
        assert_eq!(confluent.preset(), Preset::Confluent);
        assert_eq!(
            confluent.level(&rename),
            RuleLevel::Error,
            "named rules win"
        );
        assert_eq!(confluent.level(&removal), RuleLevel::Warning);
        assert!(matches!(
            PolicySettings::from_json(&json!({"policyPreset": "strict"})),
            Err(SettingsError::Invalid { .. })
        ));
        // A nearer scope's preset wins; one that sets none keeps the outer one.
        let global = PolicySettings::default().with_preset(Preset::Confluent);
        assert_eq!(
            global.overridden_by(&PolicySettings::default()).preset(),
            Preset::Confluent
        );
        let subject = PolicySettings::default().with_preset(Preset::Covenant);
        assert_eq!(global.overridden_by(&subject).preset(), Preset::Covenant);
    }

    #[test]
    fn rejects_unknown_rules_and_levels() {
        assert_eq!(
            PolicySettings::from_json(&json!({"semanticRules": {"LIKELY_RENAMED": "error"}})),
            Err(SettingsError::UnknownRule {
                id: "LIKELY_RENAMED".into()
            })
        );
        assert!(matches!(
            PolicySettings::from_json(&json!({"semanticRules": {"LIKELY_RENAME": "fatal"}})),
            Err(SettingsError::Invalid { .. })
        ));
        assert_eq!(
            PolicySettings::from_json(&json!({})),
            Ok(PolicySettings::default())
        );
    }

    #[test]
    fn subject_settings_override_global_ones_rule_by_rule() {
        let global = PolicySettings::default()
            .with("LIKELY_RENAME", RuleLevel::Error)
            .with("ENUM_VALUE_ADDED", RuleLevel::Info);
        let subject = PolicySettings::default().with("ENUM_VALUE_ADDED", RuleLevel::Error);
        let merged = global.overridden_by(&subject);
        assert_eq!(merged.semantic_rules["LIKELY_RENAME"], RuleLevel::Error);
        assert_eq!(merged.semantic_rules["ENUM_VALUE_ADDED"], RuleLevel::Error);
    }
}
