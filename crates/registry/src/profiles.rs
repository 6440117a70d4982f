//! Data profiles of a subject over time: documents written by `covenant profile`, stored with
//! the window of records they describe, their population trend per field path, and their
//! findings against the subject's latest schema.
//!
//! The thresholds of the findings are a Covenant setting in the config's extra keys, like
//! `semanticRules`: `profileThresholds: {"promoteShare", "promoteGroups", "removeShare"}`,
//! the subject's keys laid over the global ones, each overridable per request.

use crate::{Registry, RegistryError, RegistryResult, VersionSpec};
use covenant_engine::Finding;
use covenant_profile::{Evidence, Profile, Thresholds, declared_fields};
use covenant_store::{AuditLine, NewProfile, ProfileRecord, ProfileStore};
use serde_json::{Map, Value};
use std::sync::Arc;

/// The config key holding the thresholds.
pub const THRESHOLDS_KEY: &str = "profileThresholds";

/// Overrides of single thresholds; `None` keeps the configured value.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ThresholdOverrides {
    pub promote_share: Option<f64>,
    pub promote_groups: Option<usize>,
    pub remove_share: Option<f64>,
}

/// One stored profile as the trend of a path sees it.
#[derive(Debug, Clone, PartialEq)]
pub struct TrendPoint {
    pub id: i64,
    pub window_from: i64,
    pub window_to: i64,
    pub records: u64,
    pub present: u64,
    pub non_null: u64,
    /// Share of records with a value at the path (0 when the profile never saw it).
    pub population: f64,
}

/// The findings of a subject's latest profile against its latest schema.
#[derive(Debug, Clone)]
pub struct ProfileFindings {
    pub profile_id: i64,
    pub version: i64,
    pub schema_id: i64,
    pub thresholds: Thresholds,
    pub findings: Vec<Finding>,
}

/// Reads an instant: milliseconds since the epoch or an RFC 3339 time.
pub fn parse_instant(text: &str) -> RegistryResult<i64> {
    let text = text.trim();
    if let Ok(ms) = text.parse::<i64>() {
        return Ok(ms);
    }
    chrono::DateTime::parse_from_rfc3339(text)
        .map(|t| t.timestamp_millis())
        .map_err(|_| {
            RegistryError::InvalidProfile(format!(
                "'{text}' is neither milliseconds since the epoch nor an RFC 3339 time."
            ))
        })
}

/// Validates a `profileThresholds` value of a config update.
pub(crate) fn validate_update(extra: &Map<String, Value>) -> RegistryResult<()> {
    match extra.get(THRESHOLDS_KEY).filter(|v| !v.is_null()) {
        Some(value) => thresholds_from(value, Thresholds::default())
            .map(|_| ())
            .map_err(RegistryError::InvalidPolicySettings),
        None => Ok(()),
    }
}

/// `base` with the keys `value` sets.
fn thresholds_from(value: &Value, base: Thresholds) -> Result<Thresholds, String> {
    let Some(map) = value.as_object() else {
        return Err(format!("{THRESHOLDS_KEY} must be an object"));
    };
    let number = |key: &str, v: &Value| {
        v.as_f64()
            .ok_or_else(|| format!("{THRESHOLDS_KEY}.{key} must be a number, not {v}"))
    };
    let mut out = ThresholdOverrides::default();
    for (key, v) in map {
        match key.as_str() {
            "promoteShare" => out.promote_share = Some(number(key, v)?),
            "removeShare" => out.remove_share = Some(number(key, v)?),
            "promoteGroups" => {
                let groups = v.as_u64().and_then(|n| usize::try_from(n).ok());
                out.promote_groups = Some(groups.ok_or_else(|| {
                    format!("{THRESHOLDS_KEY}.promoteGroups must be a whole number, not {v}")
                })?);
            }
            other => {
                return Err(format!(
                    "{THRESHOLDS_KEY} has no key '{other}' (promoteShare, promoteGroups, removeShare)"
                ));
            }
        }
    }
    out.apply(base)
}

impl ThresholdOverrides {
    /// `base` with these overrides, each share checked to lie between 0 and 1.
    pub fn apply(self, base: Thresholds) -> Result<Thresholds, String> {
        let out = Thresholds {
            promote_share: self.promote_share.unwrap_or(base.promote_share),
            promote_groups: self.promote_groups.unwrap_or(base.promote_groups),
            remove_share: self.remove_share.unwrap_or(base.remove_share),
        };
        for (name, share) in [
            ("promoteShare", out.promote_share),
            ("removeShare", out.remove_share),
        ] {
            if !(0.0..=1.0).contains(&share) {
                return Err(format!("{name} is a share between 0 and 1, not {share}"));
            }
        }
        Ok(out)
    }
}

fn stored_profile(record: &ProfileRecord) -> RegistryResult<Profile> {
    Profile::from_json(&record.document)
        .map_err(|e| RegistryError::Store(format!("reading profile {}: {e}", record.id)))
}

impl Registry {
    /// Adds the profile store; without one, profile routes fail.
    pub fn with_profiles(mut self, profiles: Arc<dyn ProfileStore>) -> Registry {
        self.profiles = Some(profiles);
        self
    }

    fn profile_store(&self) -> RegistryResult<&Arc<dyn ProfileStore>> {
        self.profiles
            .as_ref()
            .ok_or_else(|| RegistryError::Store("reading profiles: no profile store".into()))
    }

    /// Stores a profile document of a subject's data, for the window `[from, to]` (both
    /// default to now; `from` to `to`). The document must be one this release reads.
    pub async fn add_profile(
        &self,
        subject: &str,
        document: &Value,
        from: Option<i64>,
        to: Option<i64>,
        audit: AuditLine<'_>,
    ) -> RegistryResult<ProfileRecord> {
        let store = self.profile_store()?;
        self.ensure_writable(covenant_store::Scope::Subject(subject))
            .await?;
        self.versions(subject, false, false).await?;
        let text = document.to_string();
        let profile =
            Profile::from_json(&text).map_err(|e| RegistryError::InvalidProfile(e.to_string()))?;
        let window_to = to.unwrap_or_else(|| chrono::Utc::now().timestamp_millis());
        let window_from = from.unwrap_or(window_to);
        if window_from > window_to {
            return Err(RegistryError::InvalidProfile(format!(
                "The window starts ({window_from}) after it ends ({window_to})."
            )));
        }
        let new = NewProfile {
            subject: subject.to_string(),
            window_from,
            window_to,
            records: i64::try_from(profile.records).unwrap_or(i64::MAX),
            document: text,
        };
        Ok(store.add_profile(&new, audit).await?)
    }

    /// A page of a subject's profiles, oldest window first.
    pub async fn profiles(
        &self,
        subject: &str,
        offset: i64,
        limit: i64,
    ) -> RegistryResult<Vec<ProfileRecord>> {
        let store = self.profile_store()?;
        self.versions(subject, false, false).await?;
        Ok(store.profiles(subject, offset.max(0), limit.max(0)).await?)
    }

    /// One profile of a subject.
    pub async fn profile(&self, subject: &str, id: i64) -> RegistryResult<ProfileRecord> {
        let store = self.profile_store()?;
        self.versions(subject, false, false).await?;
        store
            .profile(subject, id)
            .await?
            .ok_or(RegistryError::ProfileNotFound(id))
    }

    /// The population of `path` in each profile of a page of the subject's profiles.
    pub async fn profile_trend(
        &self,
        subject: &str,
        path: &str,
        offset: i64,
        limit: i64,
    ) -> RegistryResult<Vec<TrendPoint>> {
        let mut points = Vec::new();
        for record in self.profiles(subject, offset, limit).await? {
            let profile = stored_profile(&record)?;
            let stats = profile.paths.get(path);
            points.push(TrendPoint {
                id: record.id,
                window_from: record.window_from,
                window_to: record.window_to,
                records: profile.records,
                present: stats.map_or(0, |s| s.present),
                non_null: stats.map_or(0, |s| s.non_null),
                population: profile.population(path),
            });
        }
        Ok(points)
    }

    /// The thresholds a subject's profile findings use: defaults, the global config's
    /// `profileThresholds`, the subject's, then `overrides`.
    pub async fn profile_thresholds(
        &self,
        subject: &str,
        overrides: ThresholdOverrides,
    ) -> RegistryResult<Thresholds> {
        let mut thresholds = Thresholds::default();
        for scope in [
            covenant_store::Scope::Global,
            covenant_store::Scope::Subject(subject),
        ] {
            let config = self.store.config(scope).await?;
            if let Some(value) = config
                .as_ref()
                .and_then(|c| c.extra.get(THRESHOLDS_KEY))
                .filter(|v| !v.is_null())
            {
                thresholds = thresholds_from(value, thresholds).unwrap_or_else(|e| {
                    tracing::warn!(subject, error = %e, "ignoring stored profileThresholds");
                    thresholds
                });
            }
        }
        overrides
            .apply(thresholds)
            .map_err(RegistryError::InvalidProfile)
    }

    /// The findings of the subject's latest profile against its latest schema.
    pub async fn profile_findings(
        &self,
        subject: &str,
        overrides: ThresholdOverrides,
    ) -> RegistryResult<ProfileFindings> {
        let store = self.profile_store()?;
        let latest = self.version(subject, VersionSpec::Latest, false).await?;
        let thresholds = self.profile_thresholds(subject, overrides).await?;
        let record = store
            .latest_profiles(Some(subject))
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| RegistryError::NoProfile(subject.to_string()))?;
        let profile = stored_profile(&record)?;
        let schema = self.parse_record(&latest.schema).await?;
        let declared = self
            .judge_here(|m| declared_fields(&covenant_policy::field_tree(m, &schema)))
            .await?;
        let findings = covenant_profile::findings(&Evidence {
            profile: &profile,
            declared: Some(&declared),
            thresholds,
        });
        Ok(ProfileFindings {
            profile_id: record.id,
            version: latest.version,
            schema_id: latest.schema.id,
            thresholds,
            findings,
        })
    }

    /// Drops the profiles of a permanently deleted subject, so that a subject created again
    /// under its name starts without them (a follow-up of the audited delete).
    pub(crate) async fn forget_profiles(&self, subject: &str) {
        if let Some(store) = &self.profiles
            && let Err(e) = store.delete_profiles(subject).await
        {
            tracing::warn!(subject, error = %e, "could not drop profiles of a deleted subject");
        }
    }

    /// The newest profile of every subject, for gauges.
    pub async fn latest_profiles(&self) -> RegistryResult<Vec<(ProfileRecord, Profile)>> {
        let store = self.profile_store()?;
        let mut out = Vec::new();
        for record in store.latest_profiles(None).await? {
            let profile = stored_profile(&record)?;
            out.push((record, profile));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn instants_read_as_milliseconds_or_rfc3339() {
        assert_eq!(parse_instant("1700000000000").unwrap(), 1_700_000_000_000);
        assert_eq!(
            parse_instant("2026-01-01T00:00:00Z").unwrap(),
            1_767_225_600_000
        );
        assert!(parse_instant("yesterday").is_err());
    }

    #[test]
    fn configured_thresholds_lay_over_the_base_key_by_key() {
        let base = Thresholds::default();
        let t = thresholds_from(&json!({"promoteShare": 0.9}), base).unwrap();
        assert_eq!(t.promote_share, 0.9);
        assert_eq!(t.promote_groups, base.promote_groups);
        let t = thresholds_from(&json!({"promoteGroups": 3, "removeShare": 0.1}), t).unwrap();
        assert_eq!(
            (t.promote_share, t.promote_groups, t.remove_share),
            (0.9, 3, 0.1)
        );
    }

    #[test]
    fn bad_thresholds_are_refused_with_the_key_named() {
        let base = Thresholds::default();
        for (value, named) in [
            (json!({"promoteShare": 1.5}), "promoteShare"),
            (json!({"promoteShare": "high"}), "promoteShare"),
            (json!({"promoteGroups": -1}), "promoteGroups"),
            (json!({"promote": 1}), "promote"),
            (json!([1]), "object"),
        ] {
            let e = thresholds_from(&value, base).unwrap_err();
            assert!(e.contains(named), "{value}: {e}");
        }
    }
}
