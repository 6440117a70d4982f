//! `POST /compatibility/subjects/{s}/versions[/{v}]`: a candidate judged against a subject
//! without registering it, and the metrics every verdict counts.

use crate::config::group_value;
use crate::evolution;
use crate::{ConfigView, Registry, RegistryError, RegistryResult, SchemaRequest, VersionSpec};
use covenant_engine::{Level, Report};
use covenant_schema::ParsedSchema;
use covenant_store::StoredVersion;
use serde_json::Value;
use std::sync::Arc;

/// The pairwise direction of a level without its transitive scope.
pub(crate) fn single_step(level: Level) -> Level {
    match level {
        Level::BackwardTransitive => Level::Backward,
        Level::ForwardTransitive => Level::Forward,
        Level::FullTransitive => Level::Full,
        other => other,
    }
}

pub(crate) fn record_check_metrics(report: &Report) {
    let verdict = if report.compatible {
        "compatible"
    } else {
        "incompatible"
    };
    metrics::counter!("covenant_compatibility_checks_total", "verdict" => verdict).increment(1);
    for f in &report.findings {
        metrics::counter!("covenant_compatibility_findings_total",
            "rule" => f.rule.clone(), "severity" => f.severity.as_str())
        .increment(1);
    }
}

impl Registry {
    /// `POST /compatibility/subjects/{s}/versions[/{v}]`. With a version, the candidate is
    /// compared with that one version in the level's direction(s); without, exactly as a
    /// registration would be.
    pub async fn test_compatibility(
        &self,
        subject: &str,
        against: Option<VersionSpec>,
        request: &SchemaRequest,
        normalize: bool,
    ) -> RegistryResult<Report> {
        let settings = self.chain_settings(Some(subject)).await?;
        let config = settings.config(self.default_level);
        let versions = self.store.subject_versions(subject).await?;
        let live: Vec<&StoredVersion> = versions.iter().filter(|v| !v.deleted).collect();
        let only = match against {
            Some(VersionSpec::Number(n)) => Some(n),
            Some(VersionSpec::Latest) => live.last().map(|v| v.version),
            None => None,
        };
        let (history, level) = history_and_level(&config, &live, against, request)?;
        let (candidate, _) = self.prepare(subject, request, normalize, true).await?;
        self.check_candidate_samples(&candidate, &request.samples)?;
        let mut parsed = Vec::new();
        for v in &history {
            parsed.push((v.version, self.parse_record(&v.schema).await?));
        }
        let metadata = request
            .metadata
            .as_ref()
            .or_else(|| live.last().and_then(|v| v.schema.metadata.as_ref()));
        let mut evolution = self.evolution(subject, &settings, metadata).await?;
        evolution.candidate_samples = request.samples.clone();
        // The rule set the version would be registered with: its own or the latest's, under
        // the subject's default and override rule sets.
        let rule_set = crate::Contract::from_extra(&config.extra).rule_set(
            request
                .rule_set
                .clone()
                .or_else(|| live.last().and_then(|v| v.schema.rule_set.clone())),
        );
        evolution.context.encryption =
            Some(covenant_policy::Encryption::of_rule_set(rule_set.as_ref()));
        let owned: Vec<(i64, i64, Option<Value>, Arc<ParsedSchema>)> = parsed
            .into_iter()
            .zip(&history)
            .map(|((version, p), v)| (version, v.created_at, v.schema.metadata.clone(), p))
            .collect();
        // Off the async workers, and stopped when the client goes away (see `off_runtime`).
        self.off_runtime(move || {
            let priors: Vec<evolution::Prior<'_>> = owned
                .iter()
                .map(|(version, registered_at, metadata, p)| evolution::Prior {
                    version: *version,
                    registered_at: *registered_at,
                    metadata: metadata.as_ref(),
                    schema: p.as_ref(),
                })
                .collect();
            Registry::judge_and_count(&evolution, level, &candidate, &priors, only)
        })
        .await?
    }
}

/// The versions a compatibility test compares with, and at which level: without a version,
/// the live versions of the candidate's compatibility group at the subject's level; with one,
/// that version alone in the level's direction(s) without its transitive scope.
fn history_and_level<'v>(
    config: &ConfigView,
    live: &[&'v StoredVersion],
    against: Option<VersionSpec>,
    request: &SchemaRequest,
) -> RegistryResult<(Vec<&'v StoredVersion>, Level)> {
    Ok(match against {
        None => {
            let group = config
                .extra
                .get("compatibilityGroup")
                .and_then(Value::as_str);
            let mine = group.map(|g| group_value(&request.metadata, g).cloned());
            let history = live
                .iter()
                .copied()
                .filter(|v| match (group, &mine) {
                    (Some(g), Some(mine)) => group_value(&v.schema.metadata, g) == mine.as_ref(),
                    _ => true,
                })
                .collect();
            (history, config.level)
        }
        Some(VersionSpec::Latest) => (
            live.last().copied().into_iter().collect(),
            single_step(config.level),
        ),
        Some(VersionSpec::Number(n)) => match live.iter().find(|v| v.version == n) {
            Some(v) => (vec![*v], single_step(config.level)),
            None => return Err(RegistryError::VersionNotFound(n.to_string())),
        },
    })
}
