//! Per-subject policy: how much each semantic rule matters.

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

/// Rule levels that differ from the rules' defaults, stored by the registry as JSON in a
/// subject's (or the global) config: `{"semanticRules": {"LIKELY_RENAME": "error"}}`.
/// A rule not listed keeps its spec's `default_severity`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicySettings {
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

    /// The level a rule runs at under these settings.
    pub fn level(&self, rule: &RuleSpec) -> RuleLevel {
        self.semantic_rules
            .get(rule.id)
            .copied()
            .unwrap_or_else(|| rule.default_severity.into())
    }

    /// These settings with `more_specific` laid over them, rule by rule (global config, then
    /// subject config).
    pub fn overridden_by(&self, more_specific: &PolicySettings) -> PolicySettings {
        let mut semantic_rules = self.semantic_rules.clone();
        semantic_rules.extend(more_specific.semantic_rules.clone());
        PolicySettings { semantic_rules }
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
