//! Compatibility is scoped: "compatible with what?" A topic with seven days of retention and a
//! regulatory archive kept for seven years need different histories to stay readable.
//!
//! A scope picks, among a subject's versions, the ones a transitive level checks against and
//! whose stored samples are replayed. The latest version is always in scope: a non-transitive
//! level compares with it anyway, and a scope that selected nothing would silently accept any
//! change.

use covenant_engine::Level;
use serde::{Deserialize, Serialize};

const DAY_MS: i64 = 24 * 60 * 60 * 1000;
/// Longest window or retention accepted, in days (a century).
pub const MAX_SCOPE_DAYS: i64 = 36_500;

/// A subject's (or the global) `compatibilityScope` setting.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum CompatibilityScope {
    /// The latest version only.
    Latest,
    /// Every version (Confluent's transitive behaviour).
    All,
    /// Versions registered within the last `days` days.
    Window { days: i64 },
    /// Versions seen by producers or consumers within the last `retentionDays` days, or
    /// marked live explicitly.
    Live {
        #[serde(rename = "retentionDays")]
        retention_days: i64,
    },
    /// An explicit list of version numbers.
    Versions { versions: Vec<i64> },
}

/// What a scope needs to know about one version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VersionFacts {
    pub version: i64,
    /// Milliseconds since the Unix epoch when the version was registered.
    pub registered_at: i64,
    /// The last time producers or consumers were seen using it, or it was marked live.
    pub last_seen_at: Option<i64>,
}

impl CompatibilityScope {
    /// Parses and validates the config value; the error is one sentence for a 422.
    pub fn from_json(value: &serde_json::Value) -> Result<CompatibilityScope, String> {
        let scope: CompatibilityScope = serde_json::from_value(value.clone()).map_err(|e| {
            format!(
                "Invalid compatibilityScope: {e}. Valid kinds are latest, all, window (days), live (retentionDays) and versions (versions)."
            )
        })?;
        scope.validate()?;
        Ok(scope)
    }

    pub fn validate(&self) -> Result<(), String> {
        let days_ok = |d: i64| (1..=MAX_SCOPE_DAYS).contains(&d);
        match self {
            CompatibilityScope::Window { days } if !days_ok(*days) => Err(format!(
                "Invalid compatibilityScope: days must be between 1 and {MAX_SCOPE_DAYS}, got {days}."
            )),
            CompatibilityScope::Live { retention_days } if !days_ok(*retention_days) => {
                Err(format!(
                    "Invalid compatibilityScope: retentionDays must be between 1 and {MAX_SCOPE_DAYS}, got {retention_days}."
                ))
            }
            CompatibilityScope::Versions { versions } if versions.is_empty() => {
                Err("Invalid compatibilityScope: versions must list at least one version.".into())
            }
            CompatibilityScope::Versions { versions }
                if versions
                    .iter()
                    .any(|v| !(1..=i64::from(i32::MAX)).contains(v)) =>
            {
                Err("Invalid compatibilityScope: versions must be between 1 and 2^31-1.".into())
            }
            _ => Ok(()),
        }
    }

    /// The versions in scope, in the order given (oldest first), latest always included.
    pub fn select(&self, versions: &[VersionFacts], now_ms: i64) -> Vec<i64> {
        let Some(latest) = versions.last().map(|v| v.version) else {
            return Vec::new();
        };
        versions
            .iter()
            .filter(|v| {
                v.version == latest
                    || match self {
                        CompatibilityScope::Latest => false,
                        CompatibilityScope::All => true,
                        CompatibilityScope::Window { days } => {
                            v.registered_at >= now_ms - days.saturating_mul(DAY_MS)
                        }
                        CompatibilityScope::Live { retention_days } => v
                            .last_seen_at
                            .is_some_and(|t| t >= now_ms - retention_days.saturating_mul(DAY_MS)),
                        CompatibilityScope::Versions { versions } => versions.contains(&v.version),
                    }
            })
            .map(|v| v.version)
            .collect()
    }

    /// The scope that applies when none is configured: every version for a transitive level,
    /// the latest for the others.
    pub fn default_for(level: Level) -> CompatibilityScope {
        match level {
            Level::BackwardTransitive | Level::ForwardTransitive | Level::FullTransitive => {
                CompatibilityScope::All
            }
            _ => CompatibilityScope::Latest,
        }
    }
}

/// Whether a level checks more than the latest version (and so honours a scope).
pub fn is_transitive(level: Level) -> bool {
    matches!(
        level,
        Level::BackwardTransitive | Level::ForwardTransitive | Level::FullTransitive
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn facts() -> Vec<VersionFacts> {
        let day = DAY_MS;
        vec![
            VersionFacts {
                version: 1,
                registered_at: 0,
                last_seen_at: Some(95 * day),
            },
            VersionFacts {
                version: 2,
                registered_at: 20 * day,
                last_seen_at: None,
            },
            VersionFacts {
                version: 3,
                registered_at: 50 * day,
                last_seen_at: Some(10 * day),
            },
            VersionFacts {
                version: 4,
                registered_at: 99 * day,
                last_seen_at: None,
            },
        ]
    }

    #[test]
    fn each_kind_selects_its_versions_and_keeps_the_latest() {
        let now = 100 * DAY_MS;
        let v = facts();
        let pick = |j: serde_json::Value| {
            CompatibilityScope::from_json(&j)
                .expect("valid scope")
                .select(&v, now)
        };
        assert_eq!(pick(json!({"kind": "latest"})), [4]);
        assert_eq!(pick(json!({"kind": "all"})), [1, 2, 3, 4]);
        assert_eq!(pick(json!({"kind": "window", "days": 90})), [2, 3, 4]);
        assert_eq!(pick(json!({"kind": "live", "retentionDays": 30})), [1, 4]);
        assert_eq!(pick(json!({"kind": "versions", "versions": [2]})), [2, 4]);
        assert!(CompatibilityScope::All.select(&[], now).is_empty());
    }

    #[test]
    fn invalid_scopes_are_refused_with_a_reason() {
        for bad in [
            json!({"kind": "forever"}),
            json!({"kind": "window"}),
            json!({"kind": "window", "days": 0}),
            json!({"kind": "live", "retentionDays": -3}),
            json!({"kind": "versions", "versions": []}),
            json!({"kind": "versions", "versions": [0]}),
            json!("all"),
        ] {
            let e = CompatibilityScope::from_json(&bad).expect_err("invalid");
            assert!(e.starts_with("Invalid compatibilityScope"), "{e}");
        }
    }

    #[test]
    fn the_default_follows_transitivity() {
        assert_eq!(
            CompatibilityScope::default_for(Level::FullTransitive),
            CompatibilityScope::All
        );
        assert_eq!(
            CompatibilityScope::default_for(Level::Backward),
            CompatibilityScope::Latest
        );
        assert!(is_transitive(Level::BackwardTransitive));
        assert!(!is_transitive(Level::None));
    }
}
