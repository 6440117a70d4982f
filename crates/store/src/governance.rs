//! What consumer governance persists: consumers and what they read, time-bucketed usage
//! evidence, deprecation records with their evidence and exceptions, and usage findings.
//!
//! This module is SQL-free. Each backend implements [`GovernanceStore`]; the decisions (freeze,
//! removal gate) live in the `covenant-governance` crate, which runs its checks inside
//! [`GovernanceStore::modify_consumer`] and [`GovernanceStore::modify_deprecation`] so that a
//! check and the write it allows are one transaction.
//!
//! Times are milliseconds since the Unix epoch, like the main store's `created_at`.

use crate::audit::AuditLine;
use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::fmt;

/// Usage evidence is aggregated into buckets of this width (one hour).
pub const USAGE_BUCKET_MS: i64 = 3_600_000;

const HOUR_MS: i64 = 3_600_000;
const DAY_MS: i64 = 24 * HOUR_MS;

/// The start of the usage bucket holding `at`.
pub fn bucket_start(at: i64) -> i64 {
    at.div_euclid(USAGE_BUCKET_MS) * USAGE_BUCKET_MS
}

/// How often a consumer runs. Its duration is the silence the removal gate asks for, so each
/// one is the longest calendar instance of its period: a month is 31 days, a quarter 92.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Cadence {
    Hourly,
    Daily,
    Weekly,
    Monthly,
    Quarterly,
    Yearly,
}

impl Cadence {
    pub const ALL: [Cadence; 6] = [
        Cadence::Hourly,
        Cadence::Daily,
        Cadence::Weekly,
        Cadence::Monthly,
        Cadence::Quarterly,
        Cadence::Yearly,
    ];

    pub fn duration_ms(self) -> i64 {
        match self {
            Cadence::Hourly => HOUR_MS,
            Cadence::Daily => DAY_MS,
            Cadence::Weekly => 7 * DAY_MS,
            Cadence::Monthly => 31 * DAY_MS,
            Cadence::Quarterly => 92 * DAY_MS,
            Cadence::Yearly => 366 * DAY_MS,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Cadence::Hourly => "hourly",
            Cadence::Daily => "daily",
            Cadence::Weekly => "weekly",
            Cadence::Monthly => "monthly",
            Cadence::Quarterly => "quarterly",
            Cadence::Yearly => "yearly",
        }
    }

    pub fn parse(text: &str) -> Option<Cadence> {
        Cadence::ALL
            .into_iter()
            .find(|c| c.as_str().eq_ignore_ascii_case(text))
    }

    /// The duration in words, for messages ("31 days").
    pub fn describe(self) -> String {
        match self {
            Cadence::Hourly => "1 hour".to_string(),
            Cadence::Daily => "1 day".to_string(),
            other => format!("{} days", other.duration_ms() / DAY_MS),
        }
    }
}

impl fmt::Display for Cadence {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What breaks, and for whom, when a consumer fails.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Criticality {
    Low,
    Medium,
    High,
    Critical,
}

impl Criticality {
    pub fn as_str(self) -> &'static str {
        match self {
            Criticality::Low => "low",
            Criticality::Medium => "medium",
            Criticality::High => "high",
            Criticality::Critical => "critical",
        }
    }

    pub fn parse(text: &str) -> Option<Criticality> {
        [
            Criticality::Low,
            Criticality::Medium,
            Criticality::High,
            Criticality::Critical,
        ]
        .into_iter()
        .find(|c| c.as_str().eq_ignore_ascii_case(text))
    }
}

impl fmt::Display for Criticality {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Brings the spellings of a field path that readers and schema diffs use to one dotted form:
/// `/fields/customer/fields/id`, `#/properties/customer/properties/id`, `/customer/id` and
/// `customer.id` all become `customer.id`.
pub fn normalize_field_path(path: &str) -> String {
    let trimmed = path.trim();
    let body = trimmed.strip_prefix('#').unwrap_or(trimmed);
    if !body.starts_with('/') {
        return body.trim_matches('.').to_string();
    }
    let mut parts = Vec::new();
    let mut segments = body.split('/').filter(|s| !s.is_empty()).peekable();
    while let Some(segment) = segments.next() {
        let container = matches!(segment, "fields" | "properties");
        if container && segments.peek().is_some() {
            continue;
        }
        parts.push(segment.replace("~1", "/").replace("~0", "~"));
    }
    parts.join(".")
}

/// One subject a consumer reads: the reader schema version it decodes with and the field
/// paths (normalized, see [`normalize_field_path`]) its logic depends on.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubjectRead {
    pub subject: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader_version: Option<i64>,
    #[serde(default)]
    pub fields: Vec<String>,
}

/// A consumer as declared by its owner.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewConsumer {
    pub name: String,
    pub owner: String,
    pub purpose: String,
    pub cadence: Cadence,
    pub criticality: Criticality,
    pub contact: String,
    /// Credentials or client ids whose usage reports are attributed to this consumer.
    #[serde(default)]
    pub clients: Vec<String>,
    #[serde(default)]
    pub reads: Vec<SubjectRead>,
    /// `production` (the default, left out of answers) or `non-production`.
    #[serde(default, skip_serializing_if = "Environment::is_production")]
    pub environment: Environment,
}

/// Where a consumer runs. During enforcement production readers of a deprecated field get
/// warnings naming them and non-production readers get failures: discovery while it is
/// still cheap to fix.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Environment {
    #[default]
    #[serde(rename = "production")]
    Production,
    #[serde(rename = "non-production")]
    NonProduction,
}

impl Environment {
    pub fn as_str(self) -> &'static str {
        match self {
            Environment::Production => "production",
            Environment::NonProduction => "non-production",
        }
    }

    pub fn is_production(&self) -> bool {
        *self == Environment::Production
    }
}

/// A consumer record: who relies on which fields, and why.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Consumer {
    pub name: String,
    pub owner: String,
    pub purpose: String,
    pub cadence: Cadence,
    pub criticality: Criticality,
    pub contact: String,
    pub clients: Vec<String>,
    pub reads: Vec<SubjectRead>,
    /// `production` (the default, left out of answers) or `non-production`.
    #[serde(default, skip_serializing_if = "Environment::is_production")]
    pub environment: Environment,
    pub created_at: i64,
    pub updated_at: i64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retired_at: Option<i64>,
}

impl Consumer {
    pub fn from_new(new: NewConsumer, at: i64) -> Consumer {
        Consumer {
            name: new.name,
            owner: new.owner,
            purpose: new.purpose,
            cadence: new.cadence,
            criticality: new.criticality,
            contact: new.contact,
            clients: new.clients,
            reads: new.reads,
            environment: new.environment,
            created_at: at,
            updated_at: at,
            retired_at: None,
        }
    }

    pub fn is_active(&self) -> bool {
        self.retired_at.is_none()
    }

    pub fn read_of(&self, subject: &str) -> Option<&SubjectRead> {
        self.reads.iter().find(|r| r.subject == subject)
    }

    pub fn declares_field(&self, subject: &str, field: &str) -> bool {
        self.read_of(subject)
            .is_some_and(|r| r.fields.iter().any(|f| f == field))
    }
}

/// One usage report from a reader for one interval.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct UsageReport {
    pub subject: String,
    /// The reporting credential or client id; attribution goes through it.
    pub client_id: String,
    /// The consumer the reporter claims to be, if it knows.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader_schema_id: Option<i64>,
    #[serde(default)]
    pub writer_schema_ids: Vec<i64>,
    #[serde(default)]
    pub fields_read: Vec<String>,
    /// Records decoded, by writer schema version.
    #[serde(default)]
    pub records_by_version: BTreeMap<i64, u64>,
    /// Enum symbols the reader did not know, by field path then symbol.
    #[serde(default)]
    pub unknown_enum_values: BTreeMap<String, BTreeMap<String, u64>>,
    #[serde(default)]
    pub decode_failures: u64,
    pub interval_start: i64,
    pub interval_end: i64,
}

/// Which reporters a usage query covers.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(tag = "kind", content = "consumer", rename_all = "lowercase")]
pub enum Attribution {
    #[default]
    Any,
    Consumer(String),
    /// Reports no known consumer owns.
    Unattributed,
}

/// A usage query: what was read, by whom, in `[from, to]` (bucket precision).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct UsageQuery {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    #[serde(default)]
    pub attribution: Attribution,
    pub from: i64,
    pub to: i64,
}

/// Reads of one field by one reporter within a query's range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldUsage {
    pub subject: String,
    pub field: String,
    pub consumer: Option<String>,
    pub client_id: String,
    pub reader_schema_id: Option<i64>,
    pub reads: u64,
    pub first_at: i64,
    pub last_at: i64,
}

/// Reports by one reporter with one reader schema within a query's range, whatever fields
/// they itemized.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReaderUsage {
    pub subject: String,
    pub consumer: Option<String>,
    pub client_id: String,
    pub reader_schema_id: Option<i64>,
    pub reports: u64,
    pub decode_failures: u64,
    pub first_at: i64,
    pub last_at: i64,
}

/// Counters summed over a query's range.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct UsageCounts {
    pub records_by_version: BTreeMap<i64, u64>,
    pub unknown_enum_values: BTreeMap<String, BTreeMap<String, u64>>,
    pub writer_schema_ids: BTreeMap<i64, u64>,
    pub decode_failures: u64,
}

/// When a subject's schemas were last reported in use. Writer ids and per-version record
/// counts are kept per hourly bucket, so their times are the last report of the same
/// reporter in that bucket (at most one bucket late); reader schema times are exact.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct SchemaSightings {
    /// Global schema id (a writer id seen, or the reader schema) to the last time it was used.
    pub by_schema_id: BTreeMap<i64, i64>,
    /// Writer schema version (from records counted by version) to the last time it was used.
    pub by_version: BTreeMap<i64, i64>,
}

impl SchemaSightings {
    /// Records a use of schema `id` at `at`, keeping the latest.
    pub fn saw_schema(&mut self, id: i64, at: i64) {
        let seen = self.by_schema_id.entry(id).or_insert(at);
        *seen = (*seen).max(at);
    }

    /// Records a use of version `version` at `at`, keeping the latest.
    pub fn saw_version(&mut self, version: i64, at: i64) {
        let seen = self.by_version.entry(version).or_insert(at);
        *seen = (*seen).max(at);
    }
}

/// When a reporter's evidence for a subject begins (within retention).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReportingSince {
    pub consumer: Option<String>,
    pub client_id: String,
    pub first_at: i64,
}

/// Something a usage report revealed that a person should look at.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum FindingKind {
    /// No known consumer owns the reporting client.
    UnattributedUsage,
    /// The report named a consumer that is not registered (or retired).
    UnknownConsumer,
    /// A deprecated field was read.
    DeprecatedFieldUsed,
    /// A reader that did not read the field before its freeze reads it now.
    NewUseAfterFreeze,
    /// A field under enforcement was read: the warning names who read it.
    EnforcementWarning,
    /// A non-production consumer read a field under enforcement: its report is answered
    /// with a failure.
    EnforcementFailure,
}

impl FindingKind {
    pub fn as_str(self) -> &'static str {
        match self {
            FindingKind::UnattributedUsage => "unattributed_usage",
            FindingKind::UnknownConsumer => "unknown_consumer",
            FindingKind::DeprecatedFieldUsed => "deprecated_field_used",
            FindingKind::NewUseAfterFreeze => "new_use_after_freeze",
            FindingKind::EnforcementWarning => "enforcement_warning",
            FindingKind::EnforcementFailure => "enforcement_failure",
        }
    }

    pub fn parse(text: &str) -> Option<FindingKind> {
        [
            FindingKind::UnattributedUsage,
            FindingKind::UnknownConsumer,
            FindingKind::DeprecatedFieldUsed,
            FindingKind::NewUseAfterFreeze,
            FindingKind::EnforcementWarning,
            FindingKind::EnforcementFailure,
        ]
        .into_iter()
        .find(|k| k.as_str() == text)
    }
}

/// A finding recorded from usage.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct UsageFinding {
    pub kind: FindingKind,
    pub at: i64,
    pub subject: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub field: Option<String>,
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub deprecation_id: Option<i64>,
    pub message: String,
}

/// What is being deprecated.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum DeprecationTarget {
    Field {
        subject: String,
        path: String,
    },
    EnumValue {
        subject: String,
        path: String,
        symbol: String,
    },
    Version {
        subject: String,
        version: i64,
    },
    Subject {
        subject: String,
    },
}

impl DeprecationTarget {
    pub fn subject(&self) -> &str {
        match self {
            DeprecationTarget::Field { subject, .. }
            | DeprecationTarget::EnumValue { subject, .. }
            | DeprecationTarget::Version { subject, .. }
            | DeprecationTarget::Subject { subject } => subject,
        }
    }

    /// The field path this deprecation retires, for field targets.
    pub fn field(&self) -> Option<&str> {
        match self {
            DeprecationTarget::Field { path, .. } => Some(path),
            _ => None,
        }
    }

    pub fn describe(&self) -> String {
        match self {
            DeprecationTarget::Field { subject, path } => {
                format!("field '{path}' of subject '{subject}'")
            }
            DeprecationTarget::EnumValue {
                subject,
                path,
                symbol,
            } => format!("enum value '{symbol}' of field '{path}' in subject '{subject}'"),
            DeprecationTarget::Version { subject, version } => {
                format!("version {version} of subject '{subject}'")
            }
            DeprecationTarget::Subject { subject } => format!("subject '{subject}'"),
        }
    }
}

/// Where a deprecation stands. Stages are ordered: each one allows less than the one before.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Stage {
    /// Published; new and old coexist.
    Announced,
    /// No new use of the old shape may start.
    Frozen,
    /// Reversible enforcement (warnings, canaries, non-production omission) is under way.
    Enforcing,
    /// The removal gate found nothing left that blocks.
    Removable,
    /// The old shape is gone.
    Removed,
}

impl Stage {
    pub const ALL: [Stage; 5] = [
        Stage::Announced,
        Stage::Frozen,
        Stage::Enforcing,
        Stage::Removable,
        Stage::Removed,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Stage::Announced => "announced",
            Stage::Frozen => "frozen",
            Stage::Enforcing => "enforcing",
            Stage::Removable => "removable",
            Stage::Removed => "removed",
        }
    }

    pub fn parse(text: &str) -> Option<Stage> {
        Stage::ALL
            .into_iter()
            .find(|s| s.as_str().eq_ignore_ascii_case(text))
    }

    /// Whether new dependencies on the old shape are refused.
    pub fn is_frozen(self) -> bool {
        self >= Stage::Frozen
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A named owner and the part they play (producer, consumer, platform, steward, risk approver).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    pub role: String,
    pub name: String,
}

/// One stage change in a deprecation's history.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageChange {
    pub from: Option<Stage>,
    pub to: Stage,
    pub at: i64,
    pub by: String,
    #[serde(default)]
    pub note: String,
}

/// The sections of the deprecation record that are prose written by people.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
pub struct RecordNotes {
    #[serde(default)]
    pub mixed_versions: String,
    #[serde(default)]
    pub discovery: String,
    #[serde(default)]
    pub migration_evidence: String,
    #[serde(default)]
    pub freeze: String,
    #[serde(default)]
    pub enforcement: String,
    #[serde(default)]
    pub fallback: String,
    #[serde(default)]
    pub removal: String,
}

/// What a piece of evidence is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum EvidenceBody {
    /// A usage query, kept with its exact query and range and what it returned.
    UsageQuery {
        query: UsageQuery,
        result: Vec<FieldUsage>,
    },
    /// A consumer owner's statement that they moved (or do not depend on the old shape).
    SignOff {
        consumer: String,
        who: String,
        signed_at: i64,
        #[serde(default)]
        statement: String,
    },
    /// Old samples run through new code.
    ReplayResult {
        sample: String,
        passed: bool,
        #[serde(default)]
        detail: String,
    },
    /// A canary run: a producer omitted the old shape on one bounded path (a tenant, service,
    /// group or region) while readers were watched.
    Canary {
        path: String,
        outcome: Outcome,
        #[serde(default)]
        detail: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        link: Option<String>,
    },
    /// What the data carries: how often a field is filled, from a profile of records
    /// (`covenant profile`), e.g. the 3 % population that makes it a removal candidate.
    DataProfile {
        /// The field's path in the profile (`/legacy_fee_tier`).
        path: String,
        records: u64,
        present: u64,
        non_null: u64,
        /// Where the profile came from (a file name or a description of the data).
        #[serde(default)]
        source: String,
    },
    /// Non-production runs with the old shape omitted.
    NonProductionOmission {
        environment: String,
        outcome: Outcome,
        #[serde(default)]
        detail: String,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        link: Option<String>,
    },
}

/// How a canary or an omission run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Outcome {
    Passed,
    Failed,
}

impl Outcome {
    pub fn as_str(self) -> &'static str {
        match self {
            Outcome::Passed => "passed",
            Outcome::Failed => "FAILED",
        }
    }
}

impl EvidenceBody {
    pub fn kind(&self) -> &'static str {
        match self {
            EvidenceBody::UsageQuery { .. } => "usage_query",
            EvidenceBody::SignOff { .. } => "sign_off",
            EvidenceBody::ReplayResult { .. } => "replay_result",
            EvidenceBody::Canary { .. } => "canary",
            EvidenceBody::NonProductionOmission { .. } => "non_production_omission",
            EvidenceBody::DataProfile { .. } => "data_profile",
        }
    }
}

/// A claim in the record and what supports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Evidence {
    pub id: i64,
    /// The claim it supports, in the record's words ("compliance export observed on replacement").
    pub claim: String,
    pub recorded_at: i64,
    pub recorded_by: String,
    pub body: EvidenceBody,
}

/// Why a removal may not happen yet. Exceptions name the kind they override.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BlockerKind {
    /// A live consumer still declares that it reads the field.
    ConsumerDeclared,
    /// A consumer read the field within its last full cadence.
    RecentUsage,
    /// A consumer's usage evidence does not cover its last full cadence.
    InsufficientEvidence,
    /// Someone no consumer owns read the field within the look-back.
    UnattributedUsage,
    /// The deprecation names no replacement.
    NoReplacement,
    /// The deprecation has not reached `removable`.
    StageNotRemovable,
    /// The field is not deprecated, yet a consumer declares that it reads it.
    NotDeprecated,
    /// The deprecation window has not ended (an entry condition of `removable`).
    WindowOpen,
    /// No evidence is recorded on the deprecation (an entry condition of `removable`).
    NoEvidence,
    /// No passed canary is recorded (an entry condition of `removable`, leaving the
    /// reversible `enforcing` stage).
    NoCanary,
}

impl BlockerKind {
    pub const ALL: [BlockerKind; 10] = [
        BlockerKind::ConsumerDeclared,
        BlockerKind::RecentUsage,
        BlockerKind::InsufficientEvidence,
        BlockerKind::UnattributedUsage,
        BlockerKind::NoReplacement,
        BlockerKind::StageNotRemovable,
        BlockerKind::NotDeprecated,
        BlockerKind::WindowOpen,
        BlockerKind::NoEvidence,
        BlockerKind::NoCanary,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            BlockerKind::ConsumerDeclared => "consumer_declared",
            BlockerKind::RecentUsage => "recent_usage",
            BlockerKind::InsufficientEvidence => "insufficient_evidence",
            BlockerKind::UnattributedUsage => "unattributed_usage",
            BlockerKind::NoReplacement => "no_replacement",
            BlockerKind::StageNotRemovable => "stage_not_removable",
            BlockerKind::NotDeprecated => "not_deprecated",
            BlockerKind::WindowOpen => "window_open",
            BlockerKind::NoEvidence => "no_evidence",
            BlockerKind::NoCanary => "no_canary",
        }
    }

    pub fn parse(text: &str) -> Option<BlockerKind> {
        BlockerKind::ALL.into_iter().find(|k| k.as_str() == text)
    }
}

impl fmt::Display for BlockerKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// An accepted, attributed exception: one blocker of `overrides` (narrowed to a consumer or
/// a client when given) no longer blocks.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Exception {
    pub id: i64,
    pub approver: String,
    pub reason: String,
    pub overrides: BlockerKind,
    /// The consumer (or, for unattributed usage, the client id) the blocker concerns.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub party: Option<String>,
    pub approved_at: i64,
}

/// A deprecation as first written.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewDeprecation {
    pub target: DeprecationTarget,
    /// The surfaces the promise lives on.
    #[serde(default)]
    pub contract: String,
    pub old_promise: String,
    pub new_promise: String,
    /// The field or shape consumers move to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replacement: Option<String>,
    #[serde(default)]
    pub owners: Vec<Owner>,
    pub window_start: i64,
    pub window_end: i64,
    /// When the deprecated thing stops being served (ms), announced in `Sunset` headers.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sunset: Option<i64>,
    #[serde(default)]
    pub notes: RecordNotes,
    /// Who announced it.
    #[serde(default)]
    pub announced_by: String,
}

/// The live deprecation record.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deprecation {
    pub id: i64,
    pub target: DeprecationTarget,
    pub contract: String,
    pub old_promise: String,
    pub new_promise: String,
    pub replacement: Option<String>,
    pub owners: Vec<Owner>,
    pub window_start: i64,
    pub window_end: i64,
    /// When the deprecated thing stops being served (ms); records written before it existed
    /// read as having none.
    #[serde(default)]
    pub sunset: Option<i64>,
    pub stage: Stage,
    pub notes: RecordNotes,
    pub history: Vec<StageChange>,
    pub evidence: Vec<Evidence>,
    pub exceptions: Vec<Exception>,
    /// Changes to the record's content (window, replacement, owners, notes), oldest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub updates: Vec<RecordUpdate>,
    pub created_at: i64,
    pub updated_at: i64,
}

/// One update of a deprecation record's content: the record stays one live document while
/// the migration proceeds, and this says what changed, when and by whom.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RecordUpdate {
    pub at: i64,
    pub by: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub note: String,
    /// One line per changed item: `replacement: 'a' -> 'b'`.
    pub changes: Vec<String>,
}

impl Deprecation {
    pub fn from_new(id: i64, new: NewDeprecation, at: i64) -> Deprecation {
        Deprecation {
            id,
            target: new.target,
            contract: new.contract,
            old_promise: new.old_promise,
            new_promise: new.new_promise,
            replacement: new.replacement,
            owners: new.owners,
            window_start: new.window_start,
            window_end: new.window_end,
            sunset: new.sunset,
            stage: Stage::Announced,
            notes: new.notes,
            history: vec![StageChange {
                from: None,
                to: Stage::Announced,
                at,
                by: new.announced_by,
                note: String::new(),
            }],
            evidence: Vec::new(),
            exceptions: Vec::new(),
            updates: Vec::new(),
            created_at: at,
            updated_at: at,
        }
    }

    /// When the deprecation first reached `frozen` (or a later stage), if it has.
    pub fn frozen_at(&self) -> Option<i64> {
        self.history.iter().find(|c| c.to.is_frozen()).map(|c| c.at)
    }

    pub fn next_evidence_id(&self) -> i64 {
        self.evidence.iter().map(|e| e.id).max().unwrap_or(0) + 1
    }

    pub fn next_exception_id(&self) -> i64 {
        self.exceptions.iter().map(|e| e.id).max().unwrap_or(0) + 1
    }
}

/// An accepted risk, on record: a principal holding `Approve` on the subject accepts the
/// error findings of one rule (at one path, when given) for one exact candidate schema, named
/// by its fingerprint (the registry's identity of the schema text and references, without
/// metadata). A registration of that candidate is then judged with those findings accepted.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Approval {
    pub id: i64,
    pub subject: String,
    /// The rule id whose error findings are accepted (`LIKELY_RENAME`).
    pub rule: String,
    /// The finding path the acceptance is narrowed to; every path of the rule when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub path: Option<String>,
    /// The candidate's fingerprint (see [`Approval`]).
    pub fingerprint: String,
    pub schema_type: String,
    pub reason: String,
    pub approver: String,
    pub created_at: i64,
    /// When the approval stops counting (ms); never when absent.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked: Option<Revocation>,
}

/// Who withdrew an approval, and when.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Revocation {
    pub by: String,
    pub at: i64,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub reason: String,
}

/// An approval as first written (the store assigns its id).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NewApproval {
    pub subject: String,
    pub rule: String,
    pub path: Option<String>,
    pub fingerprint: String,
    pub schema_type: String,
    pub reason: String,
    pub approver: String,
    pub expires_at: Option<i64>,
}

impl Approval {
    pub fn from_new(id: i64, new: NewApproval, at: i64) -> Approval {
        Approval {
            id,
            subject: new.subject,
            rule: new.rule,
            path: new.path,
            fingerprint: new.fingerprint,
            schema_type: new.schema_type,
            reason: new.reason,
            approver: new.approver,
            created_at: at,
            expires_at: new.expires_at,
            revoked: None,
        }
    }

    /// Whether it counts at `now`: not revoked and not expired.
    pub fn is_live(&self, now: i64) -> bool {
        self.revoked.is_none() && self.expires_at.is_none_or(|end| now < end)
    }

    /// Refuses an edit that changed what the approval is for.
    pub fn check_edit(&self, before: &Approval) -> GovernanceResult<()> {
        let key = |a: &Approval| {
            (
                a.id,
                a.subject.clone(),
                a.rule.clone(),
                a.path.clone(),
                a.fingerprint.clone(),
            )
        };
        if key(self) != key(before) {
            return Err(GovernanceError::Invalid(
                "an approval's id, subject, rule, path and candidate cannot change".to_string(),
            ));
        }
        Ok(())
    }

    /// `live`, `expired` or `revoked` at `now`.
    pub fn state(&self, now: i64) -> &'static str {
        if self.revoked.is_some() {
            "revoked"
        } else if self.is_live(now) {
            "live"
        } else {
            "expired"
        }
    }
}

/// Like [`ConsumerEdit`], for approvals.
pub type ApprovalEdit<'a> = &'a (dyn Fn(&mut Approval) -> GovernanceResult<()> + Send + Sync);

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum GovernanceError {
    #[error("{what} '{key}' does not exist")]
    NotFound { what: &'static str, key: String },
    #[error("{0}")]
    Conflict(String),
    /// A governance rule refused the change (freeze, stage order); the message explains.
    #[error("{0}")]
    Refused(String),
    #[error("{0}")]
    Invalid(String),
    /// A document larger than its byte limit (see the governance limits table); the message
    /// names the limit.
    #[error("{0}")]
    TooLarge(String),
    /// A list with more items, or an identifier or text longer, than its limit allows; the
    /// message names the limit.
    #[error("{0}")]
    OverLimit(String),
    #[error("governance store failure: {0}")]
    Backend(String),
}

pub type GovernanceResult<T> = Result<T, GovernanceError>;

/// A change applied to a record inside the backend's write transaction; an `Err` rolls back.
/// It sees the one record it changes: a write's work inside the transaction does not grow
/// with the number of consumers.
pub type ConsumerEdit<'a> = &'a (dyn Fn(&mut Consumer) -> GovernanceResult<()> + Send + Sync);
/// Like [`ConsumerEdit`], for deprecation records.
pub type DeprecationEdit<'a> = &'a (dyn Fn(&mut Deprecation) -> GovernanceResult<()> + Send + Sync);
/// Runs inside the write transaction before a new consumer is written; `Err` refuses it.
pub type ConsumerCheck<'a> = &'a (dyn Fn(&Consumer) -> GovernanceResult<()> + Send + Sync);

/// Everything consumer governance persists. Implementations must make an acknowledged write
/// durable, and run check/edit closures inside the write transaction.
///
/// Writes that take an [`AuditLine`] append it to the registry's `audit_log` inside that same
/// transaction, so the trail holds an entry exactly when its change committed: a refused edit
/// or a failed write leaves none. The backends share the registry's database for this.
#[async_trait]
pub trait GovernanceStore: Send + Sync {
    /// Writes a new consumer after `check` accepted it. Names and client ids are unique.
    async fn create_consumer(
        &self,
        consumer: &Consumer,
        check: ConsumerCheck<'_>,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Consumer>;

    /// Applies `edit` to the named consumer (the slice holds every other consumer).
    async fn modify_consumer(
        &self,
        name: &str,
        edit: ConsumerEdit<'_>,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Consumer>;

    async fn consumer(&self, name: &str) -> GovernanceResult<Option<Consumer>>;

    /// All consumers by name, retired ones included.
    async fn consumers(&self) -> GovernanceResult<Vec<Consumer>>;

    /// The live consumer a client id belongs to.
    async fn consumer_for_client(&self, client_id: &str) -> GovernanceResult<Option<String>>;

    /// Adds a report to its bucket, attributed to `consumer` (None: unattributed), with the
    /// findings it raised, in one transaction.
    async fn record_usage(
        &self,
        report: &UsageReport,
        consumer: Option<&str>,
        findings: &[UsageFinding],
        audit: AuditLine<'_>,
    ) -> GovernanceResult<()>;

    async fn field_usage(&self, query: &UsageQuery) -> GovernanceResult<Vec<FieldUsage>>;

    /// Reports per reporter and reader schema; `query.field` is ignored.
    async fn reader_usage(&self, query: &UsageQuery) -> GovernanceResult<Vec<ReaderUsage>>;

    async fn usage_counts(&self, query: &UsageQuery) -> GovernanceResult<UsageCounts>;

    /// The schemas of `subject` reported in use at or after `from`, and when last.
    async fn schema_sightings(&self, subject: &str, from: i64)
    -> GovernanceResult<SchemaSightings>;

    /// The earliest retained report per reporter for a subject.
    async fn reporting_since(&self, subject: &str) -> GovernanceResult<Vec<ReportingSince>>;

    /// Deletes usage buckets and findings older than `before`; returns the rows removed.
    async fn prune_usage(&self, before: i64) -> GovernanceResult<u64>;

    async fn record_findings(&self, findings: &[UsageFinding]) -> GovernanceResult<()>;

    async fn findings(&self, from: i64, to: i64) -> GovernanceResult<Vec<UsageFinding>>;

    async fn create_deprecation(
        &self,
        new: &NewDeprecation,
        at: i64,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Deprecation>;

    async fn deprecation(&self, id: i64) -> GovernanceResult<Option<Deprecation>>;

    /// Deprecations, of one subject when given, by id.
    async fn deprecations(&self, subject: Option<&str>) -> GovernanceResult<Vec<Deprecation>>;

    async fn modify_deprecation(
        &self,
        id: i64,
        edit: DeprecationEdit<'_>,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Deprecation>;

    /// Adds a batch of schema fetches to their hourly buckets (`first_at` picks the bucket).
    async fn record_reads(&self, reads: &[SchemaRead]) -> GovernanceResult<()>;

    /// Schema fetches of `subject` at or after `from`, summed per reader and version, by
    /// reader then version.
    async fn schema_reads(&self, subject: &str, from: i64) -> GovernanceResult<Vec<SchemaRead>>;

    /// Writes a new approval (ids count up from 1).
    async fn create_approval(
        &self,
        new: &NewApproval,
        at: i64,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Approval>;

    /// Approvals, of one subject when given, by id; revoked and expired ones included.
    async fn approvals(&self, subject: Option<&str>) -> GovernanceResult<Vec<Approval>>;

    /// Applies `edit` to one approval (revocation); its id, subject, rule, path and
    /// fingerprint cannot change.
    async fn modify_approval(
        &self,
        id: i64,
        edit: ApprovalEdit<'_>,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Approval>;

    /// Every row the store holds, read in one transaction (for `covenant export`).
    async fn snapshot(&self) -> GovernanceResult<GovernanceSnapshot>;

    /// Writes a snapshot's rows as they are, in one transaction, without the checks and
    /// stamps of the workflow (they were applied when the rows were first written) and
    /// without audit entries (the exported trail describes them). Idempotent: consumers and
    /// deprecations already held under their name or id, and usage buckets already held
    /// under their key, are left alone; findings are added only beyond the copies held.
    async fn restore(&self, snapshot: &GovernanceSnapshot) -> GovernanceResult<RestoreCounts>;
}

/// Fetches of one subject version's schema by one reader (an authenticated principal, else
/// the `User-Agent` of anonymous requests): per hour when recorded, summed over a range when
/// read back.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaRead {
    pub subject: String,
    pub version: i64,
    pub schema_id: i64,
    pub reader: String,
    pub reads: u64,
    pub first_at: i64,
    pub last_at: i64,
}

/// One hourly bucket of reports by one reporter and reader schema, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReaderBucket {
    pub bucket: i64,
    pub subject: String,
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader_schema_id: Option<i64>,
    pub reports: u64,
    pub decode_failures: u64,
    pub first_at: i64,
    pub last_at: i64,
}

/// One hourly bucket of reads of one field by one reporter, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FieldBucket {
    pub bucket: i64,
    pub subject: String,
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reader_schema_id: Option<i64>,
    pub field: String,
    pub reads: u64,
    pub first_at: i64,
    pub last_at: i64,
}

/// One counter of one hourly bucket (`writer_schema` by id, `records` by version,
/// `unknown_enum` by field and symbol), as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct CountBucket {
    pub bucket: i64,
    pub subject: String,
    pub client_id: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub consumer: Option<String>,
    pub kind: String,
    pub key: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub detail: String,
    pub value: u64,
}

/// One hourly bucket of schema fetches of one subject version by one reader, as stored.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaReadBucket {
    pub bucket: i64,
    #[serde(flatten)]
    pub read: SchemaRead,
}

/// Everything a governance store holds, row for row: what `covenant export` writes and
/// `covenant import` restores. Usage stays in its buckets (not summed) so that a restored
/// store answers every range query as the original did.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct GovernanceSnapshot {
    /// By name, retired ones included.
    #[serde(default)]
    pub consumers: Vec<Consumer>,
    /// By id, with their stage history, evidence, exceptions and updates.
    #[serde(default)]
    pub deprecations: Vec<Deprecation>,
    /// Oldest first.
    #[serde(default)]
    pub findings: Vec<UsageFinding>,
    #[serde(default)]
    pub usage_readers: Vec<ReaderBucket>,
    #[serde(default)]
    pub usage_fields: Vec<FieldBucket>,
    #[serde(default)]
    pub usage_counts: Vec<CountBucket>,
    #[serde(default)]
    pub schema_reads: Vec<SchemaReadBucket>,
    /// By id, revoked and expired ones included.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub approvals: Vec<Approval>,
}

impl GovernanceSnapshot {
    pub fn is_empty(&self) -> bool {
        *self == GovernanceSnapshot::default()
    }
}

/// What [`GovernanceStore::restore`] wrote. Rows the store already held are left as they are
/// (counted in `present`); records held with other content are named in `conflicts`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct RestoreCounts {
    pub consumers: usize,
    pub deprecations: usize,
    pub approvals: usize,
    pub findings: usize,
    pub usage_rows: usize,
    pub present: usize,
    pub conflicts: Vec<String>,
}

/// How many copies of each finding a store holds, so a restore adds only the missing ones
/// (findings have no key of their own: two identical ones at the same time are both kept).
pub fn missing_findings<'a>(
    held: &[UsageFinding],
    wanted: &'a [UsageFinding],
) -> Vec<&'a UsageFinding> {
    let mut have: std::collections::HashMap<&UsageFinding, usize> =
        std::collections::HashMap::new();
    for f in held {
        *have.entry(f).or_default() += 1;
    }
    wanted
        .iter()
        .filter(|f| match have.get_mut(f) {
            Some(n) if *n > 0 => {
                *n -= 1;
                false
            }
            _ => true,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Records written before deprecations had a sunset are stored without the key.
    #[test]
    fn a_record_without_a_sunset_still_reads() {
        let new = NewDeprecation {
            target: DeprecationTarget::Subject {
                subject: "s".into(),
            },
            contract: String::new(),
            old_promise: "old".into(),
            new_promise: "new".into(),
            replacement: None,
            owners: Vec::new(),
            window_start: 1,
            window_end: 2,
            sunset: Some(3),
            notes: RecordNotes::default(),
            announced_by: "a".into(),
        };
        let mut body = serde_json::to_value(Deprecation::from_new(7, new, 1)).expect("json");
        assert_eq!(body["sunset"], 3);
        body.as_object_mut().expect("object").remove("sunset");
        let old: Deprecation = serde_json::from_value(body).expect("an old record reads");
        assert_eq!((old.id, old.sunset), (7, None));
    }

    #[test]
    fn field_paths_normalize_to_dotted_names() {
        assert_eq!(
            normalize_field_path("/fields/customer/fields/id"),
            "customer.id"
        );
        assert_eq!(
            normalize_field_path("#/properties/customer/properties/id"),
            "customer.id"
        );
        assert_eq!(normalize_field_path("/plan_name"), "plan_name");
        assert_eq!(normalize_field_path("plan_name"), "plan_name");
        assert_eq!(normalize_field_path("customer.id"), "customer.id");
        // A field literally called "fields" keeps its name when it is the last segment.
        assert_eq!(normalize_field_path("/fields/fields"), "fields");
    }

    #[test]
    fn cadences_cover_their_longest_period() {
        assert_eq!(Cadence::Monthly.duration_ms(), 31 * DAY_MS);
        assert!(Cadence::Monthly.duration_ms() > 3 * Cadence::Weekly.duration_ms());
        assert_eq!(Cadence::parse("Quarterly"), Some(Cadence::Quarterly));
        assert_eq!(Cadence::Monthly.describe(), "31 days");
    }

    #[test]
    fn stages_are_ordered_and_frozen_from_frozen_on() {
        assert!(!Stage::Announced.is_frozen());
        assert!(Stage::Frozen.is_frozen() && Stage::Removable.is_frozen());
        assert_eq!(Stage::parse("ENFORCING"), Some(Stage::Enforcing));
    }

    #[test]
    fn buckets_floor_to_the_hour() {
        assert_eq!(bucket_start(3_600_001), 3_600_000);
        assert_eq!(bucket_start(-1), -3_600_000);
    }
}
