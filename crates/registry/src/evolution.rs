//! Evolution policy in the registry: the verdict a registration or compatibility test gets
//! (structural check over the versions in scope, semantic rules against the latest version,
//! replay of the stored samples of every version, or of those a declared scope keeps), the
//! per-subject settings it runs under, sample storage and rollout plans.
//!
//! Settings live in the config's extra keys, so Confluent clients ignore them:
//! `policyPreset` (`covenant`, the default, or `confluent`; the nearest scope that sets one,
//! subject, context or global), `semanticRules` (rule levels, laid rule by rule over the
//! global ones and the preset's) and `compatibilityScope` (which versions a transitive level
//! and sample replay cover).

use crate::compatibility::record_check_metrics;
use crate::config::{ChainSettings, check_options};
use crate::contexts::ScopeKey;
use crate::{CandidateSample, Registry, RegistryError, RegistryResult, SchemaRequest, VersionSpec};
use covenant_engine::budget::Metered;
use covenant_engine::{CheckOptions, Direction, Level, Report, Severity};
use covenant_policy::replay::{Sample, SampleEncoding};
use covenant_policy::scope::is_transitive;
use covenant_policy::{
    CompatibilityScope, PolicyContext, PolicySettings, Preset, RolloutPlan, SubjectMetadata,
    VersionFacts,
};
use covenant_schema::ParsedSchema;
use covenant_store::{
    AuditLine, NewSample, SampleAdded, SampleRecord, SampleStore, Scope, StoredVersion,
};
use serde_json::{Map, Value};
use std::collections::BTreeMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::Duration;

/// A boxed future, for the object-safe async seams ([`UsageEvidence`]).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

/// Bounds that keep sample replay cheap enough to run on every registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReplayLimits {
    /// Samples a subject may hold (all versions together).
    pub max_samples_per_subject: usize,
    /// Largest payload accepted, in bytes (after base64 decoding).
    pub max_payload_bytes: usize,
    /// Time one check may spend replaying; past it the replay stops with a warning finding.
    pub budget: Duration,
}

impl Default for ReplayLimits {
    fn default() -> Self {
        ReplayLimits {
            max_samples_per_subject: 1000,
            max_payload_bytes: 1024 * 1024,
            budget: Duration::from_secs(2),
        }
    }
}

/// Consumer governance as the compatibility path sees it: who reads which field, and when
/// each version was last seen in reported usage. The registry works without it (no consumers
/// named in findings; `live` scopes see only explicit marks).
pub trait UsageEvidence: Send + Sync {
    /// Field reference (path, dotted or bare name) to the consumers known to read it.
    fn consumers_by_field<'a>(
        &'a self,
        subject: &'a str,
    ) -> BoxFuture<'a, RegistryResult<BTreeMap<String, Vec<String>>>>;

    /// Version to the last time (ms since the epoch) producers or consumers used it.
    fn last_seen<'a>(
        &'a self,
        subject: &'a str,
    ) -> BoxFuture<'a, RegistryResult<BTreeMap<i64, i64>>>;

    /// The fields with a deprecation record and the last reported read of each field, for
    /// judging removals; nothing by default.
    fn field_records<'a>(
        &'a self,
        _subject: &'a str,
    ) -> BoxFuture<'a, RegistryResult<FieldRecords>> {
        Box::pin(async { Ok(FieldRecords::default()) })
    }
}

/// What governance records about a subject's fields (normalized field paths).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldRecords {
    /// Fields with a deprecation record, at any stage.
    pub deprecated: Vec<String>,
    /// Field to the last time (ms since the epoch) a read of it was reported.
    pub last_used: BTreeMap<String, i64>,
}

/// Everything a verdict needs besides the versions, gathered before the store's write so that
/// the check inside it stays synchronous.
pub(crate) struct Evolution {
    pub settings: PolicySettings,
    pub context: PolicyContext,
    pub scope: Option<CompatibilityScope>,
    pub last_seen: BTreeMap<i64, i64>,
    pub samples: Vec<SampleRecord>,
    /// Payloads written with the candidate, replayed forward (checked by
    /// [`Registry::check_candidate_samples`] before).
    pub candidate_samples: Vec<CandidateSample>,
    pub budget: Duration,
    pub options: CheckOptions,
    /// The bound on judging, see [`crate::CheckBudget`].
    pub check_budget: crate::CheckBudget,
}

/// One earlier version as a verdict sees it.
pub(crate) struct Prior<'a> {
    pub version: i64,
    pub registered_at: i64,
    pub metadata: Option<&'a Value>,
    pub schema: &'a ParsedSchema,
}

fn subject_metadata(value: Option<&Value>) -> SubjectMetadata {
    value
        .and_then(|v| serde_json::from_value(v.clone()).ok())
        .unwrap_or_default()
}

fn settings_from(extra: &Map<String, Value>) -> PolicySettings {
    match extra.get("semanticRules") {
        Some(rules) if !rules.is_null() => {
            let value = serde_json::json!({ "semanticRules": rules });
            PolicySettings::from_json(&value).unwrap_or_else(|e| {
                tracing::warn!(error = %e, "ignoring stored semanticRules");
                PolicySettings::default()
            })
        }
        _ => PolicySettings::default(),
    }
}

/// Config key naming the policy preset.
pub const POLICY_PRESET: &str = "policyPreset";

/// The preset a config's extra keys name, if a valid one.
/// The `semanticRules` of the global config with `subject`'s laid over them.
pub(crate) fn rule_levels(settings: &ChainSettings, subject: &str) -> PolicySettings {
    let levels = |key: &ScopeKey| {
        settings
            .own_config(key)
            .map(|c| settings_from(&c.extra))
            .unwrap_or_default()
    };
    levels(&None).overridden_by(&levels(&Some(subject.to_string())))
}

fn preset_from(extra: &Map<String, Value>) -> Option<Preset> {
    extra
        .get(POLICY_PRESET)
        .and_then(Value::as_str)
        .and_then(Preset::parse)
}

/// Validates the evolution keys of a config update (`None` values clear a key and pass).
pub(crate) fn validate_update(extra: &Map<String, Value>) -> RegistryResult<()> {
    if let Some(preset) = extra.get(POLICY_PRESET).filter(|v| !v.is_null())
        && preset.as_str().and_then(Preset::parse).is_none()
    {
        return Err(RegistryError::InvalidPolicySettings(format!(
            "Invalid policyPreset {preset}. Valid values are covenant and confluent"
        )));
    }
    if let Some(rules) = extra.get("semanticRules").filter(|v| !v.is_null()) {
        PolicySettings::from_json(&serde_json::json!({ "semanticRules": rules }))
            .map_err(|e| RegistryError::InvalidPolicySettings(e.to_string()))?;
    }
    if let Some(scope) = extra.get("compatibilityScope").filter(|v| !v.is_null()) {
        CompatibilityScope::from_json(scope).map_err(RegistryError::InvalidCompatibilityScope)?;
    }
    Ok(())
}

fn now_millis() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

impl Evolution {
    /// The verdict for `candidate` against `priors` (live versions, oldest first) at `level`.
    /// With `only` set (a compatibility test against one version), scopes are not applied and
    /// only that version's samples are replayed. Judged under the budget `m` proves installed.
    pub fn verdict(
        &self,
        m: Metered<'_>,
        level: Level,
        candidate: &ParsedSchema,
        priors: &[Prior<'_>],
        only: Option<i64>,
    ) -> Report {
        let in_scope = self.versions_in_scope(level, priors, only);
        let history: Vec<(i64, &ParsedSchema)> = priors
            .iter()
            .filter(|p| !is_transitive(level) || in_scope.contains(&p.version))
            .map(|p| (p.version, p.schema))
            .collect();
        let mut context = self.context.clone();
        context.previous_metadata = priors.last().map(|p| subject_metadata(p.metadata));
        let lineage: Vec<(i64, &ParsedSchema)> =
            priors.iter().map(|p| (p.version, p.schema)).collect();
        let report = covenant_policy::judge(
            m,
            level,
            candidate,
            &history,
            &lineage,
            &self.options,
            &context,
            &self.settings,
        );
        let replayable = self.replayable_samples(priors, only, &in_scope);
        let mut findings = report.findings;
        let started = std::time::Instant::now();
        findings.extend(covenant_policy::replay::replay(
            m,
            candidate,
            &replayable,
            self.budget,
        ));
        let left = self.budget.saturating_sub(started.elapsed());
        findings.extend(self.forward_replay(m, level, candidate, priors, &history, left));
        if level == Level::None {
            // NONE skips checks: a registration at NONE judges nothing, so the dry run must
            // not refuse what it would accept. Its findings stay visible, as warnings.
            for f in &mut findings {
                if f.severity == Severity::Error {
                    f.severity = Severity::Warning;
                }
            }
        }
        Report::from_findings(findings)
    }
}

impl Evolution {
    /// The versions a check at `level` covers: `only`, or those the subject's scope (or the
    /// level's default scope) selects from what is known of each.
    fn versions_in_scope(&self, level: Level, priors: &[Prior<'_>], only: Option<i64>) -> Vec<i64> {
        if let Some(v) = only {
            return vec![v];
        }
        let facts: Vec<VersionFacts> = priors
            .iter()
            .map(|p| VersionFacts {
                version: p.version,
                registered_at: p.registered_at,
                last_seen_at: self.last_seen.get(&p.version).copied(),
            })
            .collect();
        self.scope
            .clone()
            .unwrap_or_else(|| CompatibilityScope::default_for(level))
            .select(&facts, now_millis())
    }

    /// The stored samples to replay through the candidate, each with the version that wrote
    /// it. Samples exist because that data still exists: without a declared scope every
    /// version's samples are replayed, whatever the level; a scope narrows them.
    fn replayable_samples<'s>(
        &'s self,
        priors: &[Prior<'s>],
        only: Option<i64>,
        in_scope: &[i64],
    ) -> Vec<(&'s ParsedSchema, Sample<'s>)> {
        let replayed = |version: i64| match (only, &self.scope) {
            (None, None) => true,
            _ => in_scope.contains(&version),
        };
        let mut replayable = Vec::new();
        for s in &self.samples {
            let Some(prior) = priors.iter().find(|p| p.version == s.version) else {
                continue;
            };
            if !replayed(s.version) {
                continue;
            }
            let Some(encoding) = SampleEncoding::parse(&s.encoding) else {
                continue;
            };
            replayable.push((
                prior.schema,
                Sample {
                    id: s.id,
                    version: s.version,
                    encoding,
                    message_name: s.message_name.as_deref(),
                    payload: &s.payload,
                },
            ));
        }
        replayable
    }

    /// Under FORWARD and FULL levels, the samples submitted with the candidate read by the
    /// old consumers: the latest version's, or every version's in scope when transitive.
    fn forward_replay(
        &self,
        m: Metered<'_>,
        level: Level,
        candidate: &ParsedSchema,
        priors: &[Prior<'_>],
        history: &[(i64, &ParsedSchema)],
        budget: Duration,
    ) -> Vec<covenant_engine::Finding> {
        if !level.directions().contains(&Direction::Forward) || self.candidate_samples.is_empty() {
            return Vec::new();
        }
        let readers: Vec<(i64, &ParsedSchema)> = if is_transitive(level) {
            history.to_vec()
        } else {
            priors
                .last()
                .map(|p| (p.version, p.schema))
                .into_iter()
                .collect()
        };
        covenant_policy::replay::replay_forward(
            m,
            candidate,
            &candidate_samples(&self.candidate_samples),
            &readers,
            budget,
        )
    }
}

/// The submitted samples as replay sees them, numbered from 1 in the order given.
fn candidate_samples(samples: &[CandidateSample]) -> Vec<Sample<'_>> {
    samples
        .iter()
        .zip(1..)
        .filter_map(|(s, id)| {
            Some(Sample {
                id,
                version: 0,
                encoding: SampleEncoding::parse(&s.encoding)?,
                message_name: s.message_name.as_deref(),
                payload: &s.payload,
            })
        })
        .collect()
}

/// Whether [`Registry::evolution_with`] reads the evidence about earlier versions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Evidence {
    Read,
    /// The subject has no stored version, live or deleted.
    NoHistory,
}

impl Registry {
    /// Refuses samples submitted with a candidate that are too many, too large, of an unknown
    /// or unfitting encoding, or that do not decode with the candidate itself: a forward
    /// replay of a payload the new producer could not have written proves nothing. The
    /// decoding runs within the check budget (a spent budget is refused like a check's).
    pub(crate) fn check_candidate_samples(
        &self,
        candidate: &ParsedSchema,
        samples: &[CandidateSample],
    ) -> RegistryResult<()> {
        if samples.is_empty() {
            return Ok(());
        }
        self.check_budget
            .run(|m| self.decode_candidate_samples(m, candidate, samples))?
    }

    fn decode_candidate_samples(
        &self,
        m: Metered<'_>,
        candidate: &ParsedSchema,
        samples: &[CandidateSample],
    ) -> RegistryResult<()> {
        if samples.len() > self.limits.max_samples_per_subject {
            return Err(RegistryError::InvalidSample(format!(
                "{} samples were submitted with the schema; at most {} are accepted.",
                samples.len(),
                self.limits.max_samples_per_subject
            )));
        }
        for (s, n) in samples.iter().zip(1..) {
            let invalid = |why: String| {
                RegistryError::InvalidSample(format!("Sample {n} submitted with the schema: {why}"))
            };
            if s.payload.len() > self.limits.max_payload_bytes {
                return Err(RegistryError::SamplePayloadTooLarge(
                    self.limits.max_payload_bytes,
                ));
            }
            let encoding = SampleEncoding::parse(&s.encoding).ok_or_else(|| {
                invalid(format!(
                    "unknown encoding '{}'. Valid encodings are avro, protobuf, json and confluent.",
                    s.encoding
                ))
            })?;
            covenant_policy::replay::check_encoding(candidate, encoding, s.message_name.as_deref())
                .map_err(invalid)?;
            let sample = Sample {
                id: n,
                version: 0,
                encoding,
                message_name: s.message_name.as_deref(),
                payload: &s.payload,
            };
            covenant_policy::replay::decode_sample(m, candidate, candidate, &sample).map_err(
                |e| {
                    invalid(format!(
                        "the payload does not decode with the new schema: {e}"
                    ))
                },
            )?;
        }
        Ok(())
    }

    /// Adds the sample store; without one, sample routes fail and nothing is replayed.
    pub fn with_samples(mut self, samples: Arc<dyn SampleStore>) -> Registry {
        self.samples = Some(samples);
        self
    }

    /// Adds consumer governance evidence (consumers per field, usage by version).
    pub fn with_usage(self, usage: Arc<dyn UsageEvidence>) -> Registry {
        self.set_usage(usage);
        self
    }

    /// Installs usage evidence in a registry already shared: governance is built after the
    /// registry (it reads schemas through it), like the removal check.
    pub fn set_usage(&self, usage: Arc<dyn UsageEvidence>) {
        if let Ok(mut slot) = self.usage.write() {
            *slot = Some(usage);
        }
    }

    fn usage(&self) -> Option<Arc<dyn UsageEvidence>> {
        self.usage.read().ok().and_then(|u| u.clone())
    }

    pub fn with_replay_limits(mut self, limits: ReplayLimits) -> Registry {
        self.limits = limits;
        self
    }

    pub fn replay_limits(&self) -> ReplayLimits {
        self.limits
    }

    fn sample_store(&self) -> RegistryResult<&Arc<dyn SampleStore>> {
        self.samples
            .as_ref()
            .ok_or_else(|| RegistryError::Store("reading samples: no sample store".into()))
    }

    /// Semantic rule levels for a subject: the global ones with the subject's laid over them,
    /// under the preset of the nearest scope that sets one.
    pub async fn policy_settings(&self, subject: &str) -> RegistryResult<PolicySettings> {
        let chain = self.chain_settings(Some(subject)).await?;
        let mut settings = rule_levels(&chain, subject);
        settings.policy_preset = Some(chain.nearest(|c| preset_from(&c.extra)).unwrap_or_default());
        Ok(settings)
    }

    /// The policy preset in force for `subject` (the global one for `None`): that of the
    /// nearest scope along its chain (subject, context, `:.__GLOBAL:`) that sets one, else
    /// `covenant`.
    pub async fn policy_preset(&self, subject: Option<&str>) -> RegistryResult<Preset> {
        let settings = self.chain_settings(subject).await?;
        Ok(settings
            .nearest(|c| preset_from(&c.extra))
            .unwrap_or_default())
    }

    /// The inputs of a verdict for `subject`, with `metadata` the candidate's.
    pub(crate) async fn evolution(
        &self,
        subject: &str,
        settings: &ChainSettings,
        metadata: Option<&Value>,
    ) -> RegistryResult<Evolution> {
        self.evolution_with(subject, settings, metadata, Evidence::Read)
            .await
    }

    /// Like [`Registry::evolution`]; with [`Evidence::NoHistory`] the usage and samples are
    /// not read: they only speak of earlier versions, and a subject's first registration, the
    /// hot path of every new topic, has none.
    pub(crate) async fn evolution_with(
        &self,
        subject: &str,
        chain: &ChainSettings,
        metadata: Option<&Value>,
        evidence: Evidence,
    ) -> RegistryResult<Evolution> {
        let extra = &chain.config(self.default_level).extra;
        let scope = extra
            .get("compatibilityScope")
            .filter(|v| !v.is_null())
            .and_then(|v| CompatibilityScope::from_json(v).ok());
        let mut last_seen = BTreeMap::new();
        let mut consumers = BTreeMap::new();
        let mut records = FieldRecords::default();
        let usage = match evidence {
            Evidence::Read => self.usage(),
            Evidence::NoHistory => None,
        };
        if let Some(usage) = usage {
            consumers = usage.consumers_by_field(subject).await?;
            last_seen = usage.last_seen(subject).await?;
            records = usage.field_records(subject).await?;
        }
        let samples = match (&self.samples, evidence) {
            (Some(store), Evidence::Read) => {
                for (version, at) in store.live_marks(subject).await? {
                    let seen = last_seen.entry(version).or_insert(at);
                    *seen = (*seen).max(at);
                }
                store.samples(subject, None).await?
            }
            _ => Vec::new(),
        };
        // `extra` is the config merged along the subject's chain, nearer scopes winning: its
        // preset is the one in force.
        let mut settings = rule_levels(chain, subject);
        settings.policy_preset = Some(preset_from(extra).unwrap_or_default());
        Ok(Evolution {
            settings,
            context: PolicyContext {
                metadata: subject_metadata(metadata),
                previous_metadata: None,
                consumers,
                subject: Some(subject.to_string()),
                deprecated: records.deprecated,
                last_used: records.last_used,
                encryption: None,
            },
            scope,
            last_seen,
            samples,
            candidate_samples: Vec::new(),
            budget: self.limits.budget,
            options: check_options(extra),
            check_budget: self.check_budget,
        })
    }

    /// `POST /covenant/v1/subjects/{s}/plan`: the rollout plan for replacing the latest version,
    /// over every live version in the subject's `compatibilityScope` (every live version when
    /// it sets none: without a declared scope any of them may still have producers, consumers
    /// or data that meet the new one).
    pub async fn plan(
        &self,
        subject: &str,
        request: &SchemaRequest,
        normalize: bool,
    ) -> RegistryResult<RolloutPlan> {
        let versions = self.store.subject_versions(subject).await?;
        let live: Vec<&StoredVersion> = versions.iter().filter(|v| !v.deleted).collect();
        let Some(latest) = live.last() else {
            return Err(RegistryError::SubjectNotFound(subject.to_string()));
        };
        let settings = self.chain_settings(Some(subject)).await?;
        let (candidate, _) = self.prepare(subject, request, normalize, true).await?;
        let metadata = request
            .metadata
            .as_ref()
            .or(latest.schema.metadata.as_ref());
        let evolution = self.evolution(subject, &settings, metadata).await?;
        let facts: Vec<VersionFacts> = live
            .iter()
            .map(|v| VersionFacts {
                version: v.version,
                registered_at: v.created_at,
                last_seen_at: evolution.last_seen.get(&v.version).copied(),
            })
            .collect();
        let in_scope = evolution
            .scope
            .clone()
            .unwrap_or(CompatibilityScope::All)
            .select(&facts, now_millis());
        let mut parsed = Vec::new();
        for v in live.iter().filter(|v| in_scope.contains(&v.version)) {
            parsed.push((v.version, self.parse_record(&v.schema).await?));
        }
        let mut context = evolution.context;
        context.previous_metadata = Some(subject_metadata(latest.schema.metadata.as_ref()));
        let (options, settings, budget) = (
            evolution.options,
            evolution.settings,
            evolution.check_budget,
        );
        // Admitted, off the async workers, and stopped when the client goes away.
        self.off_runtime(move || {
            let history: Vec<(i64, &ParsedSchema)> =
                parsed.iter().map(|(v, p)| (*v, p.as_ref())).collect();
            budget.run(|m| {
                covenant_policy::rollout(m, &candidate, &history, &options, &context, &settings)
            })
        })
        .await?
    }

    /// The live version `spec` names, or the 404 Confluent gives.
    async fn live_version(
        &self,
        subject: &str,
        spec: VersionSpec,
    ) -> RegistryResult<StoredVersion> {
        let v = self.version(subject, spec, false).await?;
        if v.deleted {
            return Err(RegistryError::VersionNotFound(v.version.to_string()));
        }
        Ok(v)
    }

    /// Stores a sample payload of a version after checking that it decodes with that version.
    pub async fn add_sample(
        &self,
        subject: &str,
        spec: VersionSpec,
        encoding: &str,
        message_name: Option<String>,
        payload: Vec<u8>,
        audit: AuditLine<'_>,
    ) -> RegistryResult<SampleRecord> {
        let store = self.sample_store()?;
        self.ensure_writable(Scope::Subject(subject)).await?;
        if payload.len() > self.limits.max_payload_bytes {
            return Err(RegistryError::SamplePayloadTooLarge(
                self.limits.max_payload_bytes,
            ));
        }
        let version = self.live_version(subject, spec).await?;
        let schema = self.parse_record(&version.schema).await?;
        let encoding = SampleEncoding::parse(encoding).ok_or_else(|| {
            RegistryError::InvalidSample(format!(
                "Unknown encoding '{encoding}'. Valid encodings are avro, protobuf, json and confluent."
            ))
        })?;
        let message_name = message_name.filter(|m| !m.trim().is_empty());
        covenant_policy::replay::check_encoding(&schema, encoding, message_name.as_deref())
            .map_err(RegistryError::InvalidSample)?;
        if encoding == SampleEncoding::Confluent {
            let (id, _) = covenant_policy::replay::split_confluent(&payload)
                .map_err(RegistryError::InvalidSample)?;
            if id != version.schema.id {
                return Err(RegistryError::InvalidSample(format!(
                    "The payload's header names schema id {id}, but version {} of subject '{subject}' has id {}.",
                    version.version, version.schema.id
                )));
            }
        }
        let sample = Sample {
            id: 0,
            version: version.version,
            encoding,
            message_name: message_name.as_deref(),
            payload: &payload,
        };
        self.check_budget
            .run(|m| covenant_policy::replay::decode_sample(m, &schema, &schema, &sample))?
            .map_err(|e| {
                RegistryError::InvalidSample(format!(
                    "The payload does not decode with version {} of subject '{subject}': {e}",
                    version.version
                ))
            })?;
        let new = NewSample {
            subject: subject.to_string(),
            version: version.version,
            encoding: encoding.as_str().to_string(),
            message_name,
            payload,
        };
        match store
            .add_sample(&new, self.limits.max_samples_per_subject, audit)
            .await?
        {
            SampleAdded::Stored(record) => Ok(record),
            SampleAdded::LimitReached { limit } => Err(RegistryError::SampleLimitReached {
                subject: subject.to_string(),
                limit,
            }),
        }
    }

    /// A version's samples (every version's when `spec` is `None`), oldest first.
    pub async fn samples(
        &self,
        subject: &str,
        spec: Option<VersionSpec>,
    ) -> RegistryResult<Vec<SampleRecord>> {
        let store = self.sample_store()?;
        let version = match spec {
            Some(spec) => Some(self.live_version(subject, spec).await?.version),
            None => {
                self.versions(subject, false, false).await?;
                None
            }
        };
        Ok(store.samples(subject, version).await?)
    }

    /// Removes one sample of a version (`Some(id)`) or all of them, in one write; returns the
    /// ids removed.
    pub async fn delete_samples(
        &self,
        subject: &str,
        spec: VersionSpec,
        id: Option<i64>,
        audit: AuditLine<'_>,
    ) -> RegistryResult<Vec<i64>> {
        let store = self.sample_store()?;
        self.ensure_writable(Scope::Subject(subject)).await?;
        let version = self.live_version(subject, spec).await?.version;
        let existing = store.samples(subject, Some(version)).await?;
        let targets: Vec<i64> = match id {
            Some(id) => {
                if !existing.iter().any(|s| s.id == id) {
                    return Err(RegistryError::SampleNotFound(id));
                }
                vec![id]
            }
            None => existing.iter().map(|s| s.id).collect(),
        };
        Ok(store.delete_samples(subject, &targets, audit).await?)
    }

    /// Marks a version live now (its data is still replayable), for `live` scopes; returns
    /// the time recorded.
    pub async fn mark_live(
        &self,
        subject: &str,
        spec: VersionSpec,
        audit: AuditLine<'_>,
    ) -> RegistryResult<(i64, i64)> {
        let store = self.sample_store()?;
        self.ensure_writable(Scope::Subject(subject)).await?;
        let version = self.live_version(subject, spec).await?.version;
        let at = now_millis();
        store.mark_live(subject, version, at, audit).await?;
        Ok((version, at))
    }

    /// Removes a version's live mark.
    pub async fn unmark_live(
        &self,
        subject: &str,
        spec: VersionSpec,
        audit: AuditLine<'_>,
    ) -> RegistryResult<i64> {
        let store = self.sample_store()?;
        self.ensure_writable(Scope::Subject(subject)).await?;
        let version = self.version(subject, spec, true).await?.version;
        if !store.unmark_live(subject, version, audit).await? {
            return Err(RegistryError::VersionNotFound(version.to_string()));
        }
        Ok(version)
    }

    /// Drops samples and live marks of permanently deleted versions.
    pub(crate) async fn forget_samples(&self, subject: &str, versions: &[i64]) {
        if let Some(store) = &self.samples
            && let Err(e) = store.delete_version_samples(subject, versions).await
        {
            tracing::warn!(subject, error = %e, "could not drop samples of deleted versions");
        }
    }

    /// Runs a verdict within the check budget and records its metrics.
    pub(crate) fn judge_and_count(
        evolution: &Evolution,
        level: Level,
        candidate: &ParsedSchema,
        priors: &[Prior<'_>],
        only: Option<i64>,
    ) -> RegistryResult<Report> {
        let report = evolution
            .check_budget
            .run(|m| evolution.verdict(m, level, candidate, priors, only))?;
        record_check_metrics(&report);
        Ok(report)
    }
}

#[cfg(test)]
mod preset_tests {
    use crate::{ConfigUpdate, RegisterOptions, Registry, RegistryError, SchemaRequest};
    use covenant_policy::Preset;
    use covenant_store::SqliteStore;
    use serde_json::json;
    use std::sync::Arc;

    fn registry() -> (tempfile::TempDir, Registry) {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = SqliteStore::open(dir.path()).expect("open store");
        (dir, Registry::new(Arc::new(store)))
    }

    fn preset(value: serde_json::Value) -> ConfigUpdate {
        ConfigUpdate {
            compatibility: None,
            extra: json!({ "policyPreset": value })
                .as_object()
                .cloned()
                .unwrap_or_default(),
        }
    }

    fn avro(text: &str) -> SchemaRequest {
        SchemaRequest {
            schema: text.into(),
            ..SchemaRequest::default()
        }
    }

    const V1: &str = r#"{"type":"record","name":"Case","fields":[{"name":"caseId","type":"string"},{"name":"owner_id","type":["null","string"],"default":null}]}"#;
    const V2: &str = r#"{"type":"record","name":"Case","fields":[{"name":"caseId","type":"string"},{"name":"assigned_officer_id","type":["null","string"],"default":null}]}"#;

    /// The nearest scope that names a preset wins (subject, context, global); without one
    /// it is covenant, and a name that is no preset is refused.
    #[tokio::test]
    async fn the_nearest_scope_names_the_preset() {
        let (_d, reg) = registry();
        assert_eq!(reg.policy_preset(None).await.unwrap(), Preset::Covenant);
        assert_eq!(
            reg.policy_preset(Some(":.eu:orders")).await.unwrap(),
            Preset::Covenant
        );
        reg.set_config(None, preset(json!("confluent")), None)
            .await
            .expect("global");
        assert_eq!(
            reg.policy_preset(Some("orders")).await.unwrap(),
            Preset::Confluent
        );
        reg.set_config(Some(":.eu:"), preset(json!("covenant")), None)
            .await
            .expect("context");
        assert_eq!(
            reg.policy_preset(Some(":.eu:orders")).await.unwrap(),
            Preset::Covenant
        );
        reg.set_config(Some(":.eu:orders"), preset(json!("confluent")), None)
            .await
            .expect("subject");
        assert_eq!(
            reg.policy_preset(Some(":.eu:orders")).await.unwrap(),
            Preset::Confluent
        );
        let refused = reg.set_config(None, preset(json!("strict")), None).await;
        assert!(
            matches!(&refused, Err(RegistryError::InvalidPolicySettings(m)) if m.contains("covenant and confluent")),
            "{refused:?}"
        );
    }

    /// §11: an optional CDC column renamed (owner_id to assigned_officer_id) passes
    /// Confluent's BACKWARD check; the covenant preset refuses it, and a subject under the
    /// confluent preset registers it.
    #[tokio::test]
    async fn a_cdc_column_rename_is_refused_by_default_and_accepted_under_confluent() {
        let (_d, reg) = registry();
        for subject in ["covenant-case", "confluent-case"] {
            reg.register(subject, avro(V1), RegisterOptions::default())
                .await
                .expect("v1");
        }
        let refused = reg
            .register("covenant-case", avro(V2), RegisterOptions::default())
            .await;
        let Err(RegistryError::Incompatible { findings, .. }) = &refused else {
            panic!("{refused:?}");
        };
        let rename = findings
            .iter()
            .find(|f| f.rule == "LIKELY_RENAME")
            .expect("a rename finding");
        assert_eq!(rename.path, "/fields/assigned_officer_id");
        assert!(
            rename
                .message
                .contains("'owner_id' looks renamed to 'assigned_officer_id'")
        );
        assert!(!rename.hint.is_empty());
        // owner_id is a foreign key, not the record's identity.
        assert!(!findings.iter().any(|f| f.rule == "LIKELY_IDENTITY_CHANGED"));

        reg.set_config(Some("confluent-case"), preset(json!("confluent")), None)
            .await
            .expect("preset");
        let accepted = reg
            .register("confluent-case", avro(V2), RegisterOptions::default())
            .await
            .expect("Confluent's verdict: compatible");
        assert_eq!(accepted.version, 2);
    }
}
