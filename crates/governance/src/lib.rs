//! Consumer governance: who relies on a published field, the evidence of their use, and
//! deprecations that can stop an unsafe removal.
//!
//! "A published data shape does not belong only to the team that emits it." [`Governance`]
//! records consumers and their usage, refuses new dependencies on frozen fields, and decides
//! with [`removal_gate`] whether a schema may drop a field. Records live in a
//! [`GovernanceStore`] (embedded SQLite or PostgreSQL); time comes from a [`Clock`].

mod clock;
mod declared;
mod evidence;
mod gate;
pub mod limits;
mod metrics;
mod render;

pub use clock::{
    Clock, FileClock, ManualClock, SystemClock, format_day, format_span, format_time, parse_instant,
};
pub use covenant_store::governance::*;
pub use covenant_store::{AuditEntry, AuditLine};
pub use gate::{Blocker, GateEvidence, GateReport, Overridden, removal_blockers, removal_gate};
pub use metrics::{
    CounterSink, Counters, DEPRECATED_FIELD_USED, DESERIALIZATION_FAILURE, ENUM_UNKNOWN, FAMILIES,
    LABEL_SETS, LABEL_VALUE, LabelCaps, MetricFamily, MetricSample, NEW_USE_AFTER_FREEZE, OTHER,
    RECORDS_BY_SCHEMA_VERSION, capped_value,
};
pub use render::{render_json, render_text};

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

const DAY_MS: i64 = 24 * 3_600_000;

/// The fields a registered schema contains, by global schema id (normalized paths). The
/// registry implements it by parsing the schema; usage by a reader schema that still contains
/// a field counts as use of that field.
#[async_trait]
pub trait SchemaFields: Send + Sync {
    async fn fields_of(&self, subject: &str, schema_id: i64) -> Option<Vec<String>>;

    /// The fields of one version of `subject` (a whole-version declaration, `S@N`, reads
    /// them all); `None` when unknown.
    async fn version_fields(&self, _subject: &str, _version: i64) -> Option<Vec<String>> {
        None
    }

    /// Every field any version of `subject` has had (a declared field must be one of them);
    /// `None` when unknown.
    async fn subject_fields(&self, _subject: &str) -> Option<Vec<String>> {
        None
    }
}

/// No schema knowledge: only itemized field reads count.
#[derive(Debug, Default, Clone, Copy)]
pub struct NoSchemaFields;

#[async_trait]
impl SchemaFields for NoSchemaFields {
    async fn fields_of(&self, _: &str, _: i64) -> Option<Vec<String>> {
        None
    }
}

#[async_trait]
impl SchemaFields for BTreeMap<i64, Vec<String>> {
    async fn fields_of(&self, _: &str, schema_id: i64) -> Option<Vec<String>> {
        self.get(&schema_id).cloned()
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GovernanceConfig {
    /// How long usage buckets are kept. Keep it above the longest cadence in use (a yearly
    /// consumer needs a year of evidence), or the gate will find evidence missing.
    pub retention_ms: i64,
    /// How far back unattributed usage blocks a removal.
    pub unattributed_lookback_ms: i64,
}

impl Default for GovernanceConfig {
    fn default() -> Self {
        GovernanceConfig {
            retention_ms: 400 * DAY_MS,
            unattributed_lookback_ms: 31 * DAY_MS,
        }
    }
}

/// What happened to one usage report.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct UsageReceipt {
    /// The consumer the report was attributed to, if any.
    pub consumer: Option<String>,
    /// Deprecated fields this report read (itemized or through its reader schema).
    pub deprecated_fields_read: Vec<String>,
    pub findings: Vec<UsageFinding>,
}

/// A stage change request.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct StageRequest {
    pub to: Stage,
    pub by: String,
    #[serde(default)]
    pub note: String,
}

/// An update of a deprecation record's content; absent members stay as they are. An empty
/// `replacement` clears it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DeprecationUpdate {
    pub by: String,
    #[serde(default)]
    pub note: String,
    #[serde(default)]
    pub contract: Option<String>,
    #[serde(default)]
    pub replacement: Option<String>,
    #[serde(default)]
    pub owners: Option<Vec<Owner>>,
    #[serde(default)]
    pub window_start: Option<i64>,
    #[serde(default)]
    pub window_end: Option<i64>,
    /// A new sunset time (ms).
    #[serde(default)]
    pub sunset: Option<i64>,
    #[serde(default)]
    pub notes: Option<NotesUpdate>,
}

/// New texts for some of a record's notes.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NotesUpdate {
    pub mixed_versions: Option<String>,
    pub discovery: Option<String>,
    pub migration_evidence: Option<String>,
    pub freeze: Option<String>,
    pub enforcement: Option<String>,
    pub fallback: Option<String>,
    pub removal: Option<String>,
}

/// Applies `update` to `d`, returning one line per item it changed.
fn apply_update(d: &mut Deprecation, update: &DeprecationUpdate) -> Vec<String> {
    let mut changes = Vec::new();
    let mut text = |label: &str, slot: &mut String, value: &Option<String>| {
        if let Some(v) = value.as_ref().map(|v| v.trim().to_string())
            && v != *slot
        {
            changes.push(format!("{label}: '{slot}' -> '{v}'"));
            *slot = v;
        }
    };
    text("contract", &mut d.contract, &update.contract);
    if let Some(notes) = &update.notes {
        let n = &mut d.notes;
        text(
            "mixed versions",
            &mut n.mixed_versions,
            &notes.mixed_versions,
        );
        text("discovery", &mut n.discovery, &notes.discovery);
        text(
            "migration evidence",
            &mut n.migration_evidence,
            &notes.migration_evidence,
        );
        text("freeze", &mut n.freeze, &notes.freeze);
        text("enforcement", &mut n.enforcement, &notes.enforcement);
        text("fallback", &mut n.fallback, &notes.fallback);
        text("removal", &mut n.removal, &notes.removal);
    }
    if let Some(r) = &update.replacement {
        let r = Some(r.trim().to_string()).filter(|r| !r.is_empty());
        if r != d.replacement {
            let show = |x: &Option<String>| x.clone().unwrap_or_else(|| "none".to_string());
            changes.push(format!(
                "replacement: '{}' -> '{}'",
                show(&d.replacement),
                show(&r)
            ));
            d.replacement = r;
        }
    }
    if let Some(owners) = &update.owners
        && *owners != d.owners
    {
        let show = |o: &[Owner]| {
            o.iter()
                .map(|o| format!("{} {}", o.role, o.name))
                .collect::<Vec<_>>()
                .join("; ")
        };
        changes.push(format!(
            "owners: '{}' -> '{}'",
            show(&d.owners),
            show(owners)
        ));
        d.owners = owners.clone();
    }
    for (label, slot, value) in [
        ("window start", &mut d.window_start, update.window_start),
        ("window end", &mut d.window_end, update.window_end),
    ] {
        if let Some(v) = value
            && v != *slot
        {
            changes.push(format!(
                "{label}: {} -> {}",
                format_day(*slot),
                format_day(v)
            ));
            *slot = v;
        }
    }
    if let Some(v) = update.sunset
        && Some(v) != d.sunset
    {
        let show = |x: Option<i64>| x.map_or_else(|| "none".to_string(), format_day);
        changes.push(format!("sunset: {} -> {}", show(d.sunset), show(Some(v))));
        d.sunset = Some(v);
    }
    changes
}

/// RFC 9745 §4: a sunset may not come before the deprecation it ends.
fn check_sunset(window_start: i64, sunset: Option<i64>) -> GovernanceResult<()> {
    match sunset {
        Some(s) if s < window_start => Err(GovernanceError::Invalid(
            "the sunset comes before the deprecation window starts".to_string(),
        )),
        _ => Ok(()),
    }
}

/// An exception as requested (id and time are assigned).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ExceptionRequest {
    pub approver: String,
    pub reason: String,
    pub overrides: BlockerKind,
    #[serde(default)]
    pub party: Option<String>,
}

/// The fields a read declares: its list, or for a read without one (a whole version, `S@2`)
/// every field, of which only the frozen ones matter here.
fn declared_fields<'a>(read: &'a SubjectRead, deprecations: &'a [Deprecation]) -> Vec<&'a str> {
    if !read.fields.is_empty() {
        return read.fields.iter().map(String::as_str).collect();
    }
    deprecations
        .iter()
        .filter(|d| d.stage.is_frozen() && d.target.subject() == read.subject)
        .filter_map(|d| d.target.field())
        .collect()
}

/// The refusal messages when a consumer would start depending on frozen fields. A read
/// without a field list declares every field, so it cannot slip past a freeze.
pub fn freeze_violations(
    candidate: &Consumer,
    previous: Option<&Consumer>,
    deprecations: &[Deprecation],
) -> Vec<String> {
    let mut out = Vec::new();
    for read in &candidate.reads {
        let before = previous.and_then(|p| p.read_of(&read.subject));
        let new_reader = before.is_some_and(|b| b.reader_version != read.reader_version);
        let whole = read.fields.is_empty();
        for f in declared_fields(read, deprecations) {
            let Some(d) = deprecations.iter().find(|d| {
                d.stage.is_frozen()
                    && d.target.subject() == read.subject
                    && d.target.field() == Some(f)
            }) else {
                continue;
            };
            let replacement = d
                .replacement
                .as_deref()
                .map(|r| format!("read '{r}' instead"))
                .unwrap_or_else(|| {
                    "the deprecation names no replacement yet; ask its owners".to_string()
                });
            let since = d
                .frozen_at()
                .map(|t| format!(" since {}", format_day(t)))
                .unwrap_or_default();
            let declared_before =
                before.is_some_and(|b| b.fields.is_empty() || b.fields.iter().any(|x| x == f));
            if !declared_before && whole {
                out.push(format!(
                    "Consumer '{}' cannot declare every field of subject '{}' (a read without a field list) while field '{f}' is deprecated and frozen{since} (deprecation #{}, stage '{}'); list the fields it reads, without '{f}'; {replacement}.",
                    candidate.name, read.subject, d.id, d.stage
                ));
            } else if !declared_before {
                out.push(format!(
                    "Consumer '{}' cannot start reading field '{f}' of subject '{}': it is deprecated and frozen{since} (deprecation #{}, stage '{}'); {replacement}.",
                    candidate.name, read.subject, d.id, d.stage
                ));
            } else if new_reader {
                let version = read
                    .reader_version
                    .map(|v| format!("version {v}"))
                    .unwrap_or_else(|| "an unversioned reader".to_string());
                out.push(format!(
                    "Consumer '{}' cannot adopt reader schema {version} of subject '{}' while it reads frozen field '{f}' (deprecation #{}); drop the field from the new reader and {replacement}.",
                    candidate.name, read.subject, d.id
                ));
            }
        }
    }
    out
}

/// Whether a canary that omitted the old shape passed: the record's proof that production
/// readers survive its absence on at least one path.
fn has_passed_canary(record: &Deprecation) -> bool {
    record.evidence.iter().any(|e| {
        matches!(
            e.body,
            EvidenceBody::Canary {
                outcome: Outcome::Passed,
                ..
            }
        )
    })
}

/// A stage entry condition that does not hold, as a blocker of the deprecation.
fn entry_blocker(record: &Deprecation, kind: BlockerKind, message: String) -> Blocker {
    Blocker {
        kind,
        field: record.target.field().unwrap_or_default().to_string(),
        party: None,
        deprecation_id: Some(record.id),
        message,
    }
}

fn normalize_reads(reads: &mut [SubjectRead]) {
    for read in reads {
        let fields: BTreeSet<String> = read
            .fields
            .iter()
            .map(|f| normalize_field_path(f))
            .collect();
        read.fields = fields.into_iter().filter(|f| !f.is_empty()).collect();
    }
}

fn validate_consumer(c: &NewConsumer) -> GovernanceResult<()> {
    limits::check_consumer(c)?;
    let name_ok = !c.name.is_empty()
        && c.name
            .chars()
            .all(|ch| ch.is_ascii_alphanumeric() || "-_.".contains(ch));
    if !name_ok {
        return Err(GovernanceError::Invalid(format!(
            "consumer name '{}' must be non-empty letters, digits, '-', '_' or '.'",
            c.name
        )));
    }
    for (label, value) in [
        ("owner", &c.owner),
        ("purpose", &c.purpose),
        ("contact", &c.contact),
    ] {
        if value.trim().is_empty() {
            return Err(GovernanceError::Invalid(format!(
                "consumer '{}' needs a {label}",
                c.name
            )));
        }
    }
    if let Some(r) = c.reads.iter().find(|r| r.subject.trim().is_empty()) {
        return Err(GovernanceError::Invalid(format!(
            "consumer '{}' declares a read with an empty subject ({:?})",
            c.name, r.fields
        )));
    }
    Ok(())
}

/// The governance service the HTTP layer and the registry call.
pub struct Governance {
    store: Arc<dyn GovernanceStore>,
    clock: Arc<dyn Clock>,
    schema_fields: Arc<dyn SchemaFields>,
    config: GovernanceConfig,
    counters: Counters,
    label_caps: LabelCaps,
    sink: Option<Arc<dyn CounterSink>>,
}

/// One reader's fetches of one version, with the consumer it is attributed to.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Reader {
    #[serde(flatten)]
    pub read: SchemaRead,
    pub consumer: Option<String>,
}

/// The live consumer that lists `reader` among its clients.
fn owner_of<'a>(consumers: &'a [Consumer], reader: &str) -> Option<&'a str> {
    consumers
        .iter()
        .find(|c| c.is_active() && c.clients.iter().any(|id| id == reader))
        .map(|c| c.name.as_str())
}

/// The reads no live consumer owns, attributed with the consumers as they are now (so that
/// declaring a consumer attributes its earlier reads too).
fn unattributed(consumers: &[Consumer], reads: Vec<SchemaRead>) -> Vec<SchemaRead> {
    reads
        .into_iter()
        .filter(|r| owner_of(consumers, &r.reader).is_none())
        .collect()
}

impl Governance {
    pub fn new(store: Arc<dyn GovernanceStore>, clock: Arc<dyn Clock>) -> Governance {
        Governance {
            store,
            clock,
            schema_fields: Arc::new(NoSchemaFields),
            config: GovernanceConfig::default(),
            counters: Counters::default(),
            label_caps: LabelCaps::default(),
            sink: None,
        }
    }

    pub fn with_config(mut self, config: GovernanceConfig) -> Governance {
        self.config = config;
        self
    }

    pub fn with_schema_fields(mut self, fields: Arc<dyn SchemaFields>) -> Governance {
        self.schema_fields = fields;
        self
    }

    /// Forwards every counter increment to `sink` as well (the server's metrics recorder).
    pub fn with_counter_sink(mut self, sink: Arc<dyn CounterSink>) -> Governance {
        self.sink = Some(sink);
        self
    }

    fn count(&self, family: MetricFamily, labels: Vec<(&'static str, String)>, by: u64) {
        if by == 0 {
            return;
        }
        let labels = self.label_caps.admit(family, labels);
        if let Some(sink) = &self.sink {
            sink.add(family, &labels, by);
        }
        self.counters.add(family, labels, by);
    }

    pub fn store(&self) -> &Arc<dyn GovernanceStore> {
        &self.store
    }

    pub fn now(&self) -> i64 {
        self.clock.now_ms()
    }

    pub fn config(&self) -> GovernanceConfig {
        self.config
    }

    // Consumers.

    /// Declares a consumer; refused when it would read a frozen field.
    pub async fn create_consumer(
        &self,
        mut new: NewConsumer,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Consumer> {
        validate_consumer(&new)?;
        normalize_reads(&mut new.reads);
        self.check_declared_fields(&new.name, &new.reads).await?;
        let deprecations = self.store.deprecations(None).await?;
        let consumer = Consumer::from_new(new, self.now());
        self.store
            .create_consumer(
                &consumer,
                &|c| {
                    let refusals = freeze_violations(c, None, &deprecations);
                    if refusals.is_empty() {
                        Ok(())
                    } else {
                        Err(GovernanceError::Refused(refusals.join("\n")))
                    }
                },
                audit,
            )
            .await
    }

    /// Replaces a consumer's declaration (its name stays); new reads of frozen fields and new
    /// reader versions that keep them are refused.
    pub async fn update_consumer(
        &self,
        mut new: NewConsumer,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Consumer> {
        validate_consumer(&new)?;
        normalize_reads(&mut new.reads);
        self.check_declared_fields(&new.name, &new.reads).await?;
        let deprecations = self.store.deprecations(None).await?;
        let now = self.now();
        let name = new.name.clone();
        self.store
            .modify_consumer(
                &name,
                &|c| {
                    if !c.is_active() {
                        return Err(GovernanceError::Refused(format!(
                            "consumer '{}' is retired; declare a new consumer instead",
                            c.name
                        )));
                    }
                    let mut next = Consumer::from_new(new.clone(), c.created_at);
                    next.updated_at = now;
                    let refusals = freeze_violations(&next, Some(c), &deprecations);
                    if !refusals.is_empty() {
                        return Err(GovernanceError::Refused(refusals.join("\n")));
                    }
                    *c = next;
                    Ok(())
                },
                audit,
            )
            .await
    }

    /// Retires a consumer: its declarations stop counting and its client ids are released.
    pub async fn retire_consumer(
        &self,
        name: &str,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Consumer> {
        let now = self.now();
        self.store
            .modify_consumer(
                name,
                &|c| {
                    if c.retired_at.is_some() {
                        return Err(GovernanceError::Conflict(format!(
                            "consumer '{}' is already retired",
                            c.name
                        )));
                    }
                    c.retired_at = Some(now);
                    c.updated_at = now;
                    Ok(())
                },
                audit,
            )
            .await
    }

    pub async fn consumer(&self, name: &str) -> GovernanceResult<Consumer> {
        self.store
            .consumer(name)
            .await?
            .ok_or_else(|| GovernanceError::NotFound {
                what: "consumer",
                key: name.to_string(),
            })
    }

    pub async fn consumers(&self, include_retired: bool) -> GovernanceResult<Vec<Consumer>> {
        let all = self.store.consumers().await?;
        Ok(all
            .into_iter()
            .filter(|c| include_retired || c.is_active())
            .collect())
    }

    // Usage.

    async fn effective_fields(
        &self,
        subject: &str,
        reader: Option<i64>,
        itemized: &[String],
    ) -> BTreeSet<String> {
        let mut fields: BTreeSet<String> = itemized.iter().cloned().collect();
        if let Some(id) = reader
            && let Some(schema_fields) = self.schema_fields.fields_of(subject, id).await
        {
            fields.extend(schema_fields.iter().map(|f| normalize_field_path(f)));
        }
        fields
    }

    /// Whether `who` read `field` before `before`, or declared it before then.
    async fn used_before(
        &self,
        subject: &str,
        field: &str,
        consumer: Option<&Consumer>,
        client: &str,
        before: i64,
    ) -> GovernanceResult<bool> {
        if let Some(c) = consumer
            && c.created_at < before
            && c.declares_field(subject, field)
        {
            return Ok(true);
        }
        let attribution = match consumer {
            Some(c) => Attribution::Consumer(c.name.clone()),
            None => Attribution::Unattributed,
        };
        let query = UsageQuery {
            subject: Some(subject.to_string()),
            field: Some(field.to_string()),
            attribution: attribution.clone(),
            from: i64::MIN / 2,
            to: before,
        };
        let mine =
            |c: &Option<String>, id: &str| consumer.is_some() || (c.is_none() && id == client);
        let rows = self.store.field_usage(&query).await?;
        if rows
            .iter()
            .any(|r| r.first_at < before && mine(&r.consumer, &r.client_id))
        {
            return Ok(true);
        }
        let readers = self
            .store
            .reader_usage(&UsageQuery {
                field: None,
                ..query
            })
            .await?;
        for r in readers
            .iter()
            .filter(|r| r.first_at < before && mine(&r.consumer, &r.client_id))
        {
            if let Some(id) = r.reader_schema_id
                && self
                    .effective_fields(subject, Some(id), &[])
                    .await
                    .contains(field)
            {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Records a usage report: attributes it, flags reads of deprecated fields and new reads
    /// of frozen ones, and counts it. The report, its findings and `audit` are one write.
    pub async fn report_usage(
        &self,
        mut report: UsageReport,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<UsageReceipt> {
        limits::check_usage_report(&report)?;
        if report.subject.trim().is_empty() || report.client_id.trim().is_empty() {
            return Err(GovernanceError::Invalid(
                "a usage report needs a subject and a client id".to_string(),
            ));
        }
        if report.interval_end < report.interval_start {
            return Err(GovernanceError::Invalid(format!(
                "usage interval ends ({}) before it starts ({})",
                report.interval_end, report.interval_start
            )));
        }
        let fields: BTreeSet<String> = report
            .fields_read
            .iter()
            .map(|f| normalize_field_path(f))
            .filter(|f| !f.is_empty())
            .collect();
        report.fields_read = fields.into_iter().collect();
        let now = self.now();
        let subject = report.subject.clone();
        let client = report.client_id.clone();

        let mut findings = Vec::new();
        let bound = self.store.consumer_for_client(&client).await?;
        let claimed = match &report.consumer {
            Some(name) if bound.is_none() => {
                self.store.consumer(name).await?.filter(|c| c.is_active())
            }
            _ => None,
        };
        let attributed = bound.or(claimed.map(|c| c.name));
        let consumer = match &attributed {
            Some(name) => self.store.consumer(name).await?,
            None => None,
        };
        if attributed.is_none() {
            if let Some(name) = &report.consumer {
                findings.push(UsageFinding {
                    kind: FindingKind::UnknownConsumer,
                    at: now,
                    subject: subject.clone(),
                    field: None,
                    client_id: client.clone(),
                    consumer: Some(name.clone()),
                    deprecation_id: None,
                    message: format!(
                        "Client '{client}' reported as consumer '{name}', which is not a declared live consumer."
                    ),
                });
            }
            findings.push(UsageFinding {
                kind: FindingKind::UnattributedUsage,
                at: now,
                subject: subject.clone(),
                field: None,
                client_id: client.clone(),
                consumer: None,
                deprecation_id: None,
                message: format!(
                    "No consumer owns client '{client}' reading subject '{subject}'; unknown ownership is a finding, not permission."
                ),
            });
        }

        let effective = self
            .effective_fields(&subject, report.reader_schema_id, &report.fields_read)
            .await;
        let deprecations = self.store.deprecations(Some(&subject)).await?;
        let mut deprecated_read = Vec::new();
        let who_label = attributed
            .clone()
            .unwrap_or_else(|| format!("unattributed:{client}"));
        for d in deprecations.iter().filter(|d| d.stage != Stage::Removed) {
            let Some(field) = d.target.field() else {
                continue;
            };
            if !effective.contains(field) {
                continue;
            }
            deprecated_read.push(field.to_string());
            self.count(
                DEPRECATED_FIELD_USED,
                vec![
                    ("subject", subject.clone()),
                    ("field", field.to_string()),
                    ("consumer", who_label.clone()),
                ],
                1,
            );
            // Enforcement is discovery: every read of the field now carries a warning naming
            // the reader, so unknown ones surface before the removal; a non-production
            // reader gets a failure, where breaking costs least.
            if d.stage == Stage::Enforcing {
                let failing = consumer
                    .as_ref()
                    .is_some_and(|c| c.environment == Environment::NonProduction);
                findings.push(UsageFinding {
                    kind: if failing {
                        FindingKind::EnforcementFailure
                    } else {
                        FindingKind::EnforcementWarning
                    },
                    at: now,
                    subject: subject.clone(),
                    field: Some(field.to_string()),
                    client_id: client.clone(),
                    consumer: attributed.clone(),
                    deprecation_id: Some(d.id),
                    message: format!(
                        "{} (client '{client}') read '{field}' of subject '{subject}', which is being removed (deprecation #{}, stage 'enforcing'); move to '{}'.",
                        match &attributed {
                            Some(name) if failing => format!("Non-production consumer '{name}'"),
                            Some(name) => format!("Consumer '{name}'"),
                            None => "An unattributed reader".to_string(),
                        },
                        d.id,
                        d.replacement.as_deref().unwrap_or("the replacement")
                    ),
                });
            }
            if let Some(frozen_at) = d.frozen_at()
                && report.interval_end >= frozen_at
                && !self
                    .used_before(&subject, field, consumer.as_ref(), &client, frozen_at)
                    .await?
            {
                self.count(
                    NEW_USE_AFTER_FREEZE,
                    vec![
                        ("subject", subject.clone()),
                        ("field", field.to_string()),
                        ("consumer", who_label.clone()),
                    ],
                    1,
                );
                findings.push(UsageFinding {
                    kind: FindingKind::NewUseAfterFreeze,
                    at: now,
                    subject: subject.clone(),
                    field: Some(field.to_string()),
                    client_id: client.clone(),
                    consumer: attributed.clone(),
                    deprecation_id: Some(d.id),
                    message: format!(
                        "{} started reading frozen field '{field}' of subject '{subject}' after its freeze on {} (deprecation #{}); it should read '{}' instead.",
                        match &attributed {
                            Some(name) => format!("Consumer '{name}'"),
                            None => format!("Unattributed client '{client}'"),
                        },
                        format_day(frozen_at),
                        d.id,
                        d.replacement.as_deref().unwrap_or("the replacement")
                    ),
                });
            }
        }

        self.store
            .record_usage(&report, attributed.as_deref(), &findings, audit)
            .await?;

        for (version, n) in &report.records_by_version {
            self.count(
                RECORDS_BY_SCHEMA_VERSION,
                vec![
                    ("subject", subject.clone()),
                    ("version", version.to_string()),
                ],
                *n,
            );
        }
        for (field, values) in &report.unknown_enum_values {
            self.count(
                ENUM_UNKNOWN,
                vec![("subject", subject.clone()), ("field", field.clone())],
                values.values().fold(0u64, |a, n| a.saturating_add(*n)),
            );
        }
        self.count(
            DESERIALIZATION_FAILURE,
            vec![("subject", subject.clone()), ("consumer", who_label)],
            report.decode_failures,
        );
        Ok(UsageReceipt {
            consumer: attributed,
            deprecated_fields_read: deprecated_read,
            findings,
        })
    }

    /// Reads of a field (or all fields) in a range, per reporter.
    pub async fn field_usage(&self, mut query: UsageQuery) -> GovernanceResult<Vec<FieldUsage>> {
        query.field = query.field.map(|f| normalize_field_path(&f));
        self.store.field_usage(&query).await
    }

    /// The last time each reporter read `field` of `subject` (within retention).
    pub async fn last_reads(
        &self,
        subject: &str,
        field: &str,
    ) -> GovernanceResult<Vec<FieldUsage>> {
        let rows = self
            .store
            .field_usage(&UsageQuery {
                subject: Some(subject.to_string()),
                field: Some(normalize_field_path(field)),
                attribution: Attribution::Any,
                from: i64::MIN / 2,
                to: i64::MAX / 2,
            })
            .await?;
        let mut last: BTreeMap<(Option<String>, String), FieldUsage> = BTreeMap::new();
        for row in rows {
            let key = (row.consumer.clone(), row.client_id.clone());
            match last.get_mut(&key) {
                Some(seen) => {
                    seen.reads += row.reads;
                    seen.first_at = seen.first_at.min(row.first_at);
                    if row.last_at > seen.last_at {
                        seen.last_at = row.last_at;
                        seen.reader_schema_id = row.reader_schema_id;
                    }
                }
                None => {
                    last.insert(key, row);
                }
            }
        }
        Ok(last.into_values().collect())
    }

    /// Reports no consumer owns, in a range.
    pub async fn unattributed_usage(
        &self,
        subject: Option<&str>,
        from: i64,
        to: i64,
    ) -> GovernanceResult<Vec<ReaderUsage>> {
        self.store
            .reader_usage(&UsageQuery {
                subject: subject.map(str::to_string),
                field: None,
                attribution: Attribution::Unattributed,
                from,
                to,
            })
            .await
    }

    pub async fn findings(&self, from: i64, to: i64) -> GovernanceResult<Vec<UsageFinding>> {
        self.store.findings(from, to).await
    }

    /// Drops usage older than the retention.
    pub async fn prune(&self) -> GovernanceResult<u64> {
        self.store
            .prune_usage(self.now() - self.config.retention_ms)
            .await
    }

    /// The counters, for export.
    pub fn metrics_snapshot(&self) -> Vec<MetricSample> {
        self.counters.snapshot()
    }

    // Deprecations.

    pub async fn create_deprecation(
        &self,
        mut new: NewDeprecation,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Deprecation> {
        limits::check_new_deprecation(&new)?;
        if new.old_promise.trim().is_empty() || new.new_promise.trim().is_empty() {
            return Err(GovernanceError::Invalid(
                "a deprecation states its old and its new promise".to_string(),
            ));
        }
        if new.window_end < new.window_start {
            return Err(GovernanceError::Invalid(
                "the deprecation window ends before it starts".to_string(),
            ));
        }
        check_sunset(new.window_start, new.sunset)?;
        if let DeprecationTarget::Field { path, .. } | DeprecationTarget::EnumValue { path, .. } =
            &mut new.target
        {
            *path = normalize_field_path(path);
            if path.is_empty() {
                return Err(GovernanceError::Invalid(
                    "the field path is empty".to_string(),
                ));
            }
        }
        new.replacement = new
            .replacement
            .map(|r| r.trim().to_string())
            .filter(|r| !r.is_empty());
        // The store refuses a second deprecation of a target that is not removed, checking
        // inside its write so that two concurrent requests cannot both pass.
        self.store.create_deprecation(&new, self.now(), audit).await
    }

    pub async fn deprecation(&self, id: i64) -> GovernanceResult<Deprecation> {
        self.store
            .deprecation(id)
            .await?
            .ok_or_else(|| GovernanceError::NotFound {
                what: "deprecation",
                key: id.to_string(),
            })
    }

    pub async fn deprecations(&self, subject: Option<&str>) -> GovernanceResult<Vec<Deprecation>> {
        self.store.deprecations(subject).await
    }

    /// Moves a deprecation one stage forward, or back any number (enforcement is reversible).
    /// A step forward needs its entry conditions ([`Governance::entry_blockers`]); nothing
    /// leaves `removed`.
    pub async fn change_stage(
        &self,
        id: i64,
        request: StageRequest,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Deprecation> {
        limits::check_stage_request(&request)?;
        let current = self.deprecation(id).await?;
        let to = request.to;
        if to == current.stage {
            return Err(GovernanceError::Conflict(format!(
                "deprecation #{id} is already at stage '{to}'"
            )));
        }
        if current.stage == Stage::Removed {
            return Err(GovernanceError::Refused(format!(
                "deprecation #{id} is removed; a removed shape comes back only as a new field"
            )));
        }
        let next = Stage::ALL
            .iter()
            .position(|s| *s == current.stage)
            .and_then(|i| Stage::ALL.get(i + 1))
            .copied();
        if to > current.stage && Some(to) != next {
            return Err(GovernanceError::Refused(format!(
                "deprecation #{id} moves forward one stage at a time: from '{}' the next is '{}'",
                current.stage,
                next.map(|s| s.as_str()).unwrap_or("none")
            )));
        }
        if to > current.stage {
            let blockers = self.entry_blockers(&current, to).await?;
            if !blockers.is_empty() {
                let lines: Vec<String> = blockers
                    .iter()
                    .map(|b| format!("[{}] {}", b.kind, b.message))
                    .collect();
                return Err(GovernanceError::Refused(format!(
                    "deprecation #{id} cannot become {to}:\n{}",
                    lines.join("\n")
                )));
            }
        }
        let at = self.now();
        self.store
            .modify_deprecation(
                id,
                &|d| {
                    if d.stage != current.stage {
                        return Err(GovernanceError::Conflict(format!(
                            "deprecation #{id} moved to '{}' meanwhile",
                            d.stage
                        )));
                    }
                    d.history.push(StageChange {
                        from: Some(d.stage),
                        to,
                        at,
                        by: request.by.clone(),
                        note: request.note.clone(),
                    });
                    d.stage = to;
                    d.updated_at = at;
                    limits::check_record(d)
                },
                audit,
            )
            .await
    }

    /// What stands between `record` and stage `to` (one step forward), exceptions applied.
    ///
    /// Entering `enforcing` needs every declared consumer moved off the field: enforcement is
    /// for discovering readers nobody declared, not for breaking known ones. Entering
    /// `removable` needs a clear removal gate, the window ended and evidence recorded
    /// (elapsed time alone is not completion evidence, and a window is a promise to
    /// consumers), and a passed canary: enforcement stays reversible until one bounded path
    /// has run without the field. An attributed exception of the matching kind overrides the
    /// window, the missing evidence or the missing canary, naming the residual risk in its
    /// reason.
    async fn entry_blockers(
        &self,
        record: &Deprecation,
        to: Stage,
    ) -> GovernanceResult<Vec<Blocker>> {
        let gate = match to {
            Stage::Enforcing | Stage::Removable => self.gate_for(record).await?.blockers,
            _ => return Ok(Vec::new()),
        };
        let mut blockers: Vec<Blocker> = gate
            .into_iter()
            .filter(|b| b.kind != BlockerKind::StageNotRemovable)
            .filter(|b| to == Stage::Removable || b.kind == BlockerKind::ConsumerDeclared)
            .collect();
        if to == Stage::Removable {
            let what = record.target.describe();
            let now = self.now();
            if record.window_end > now {
                blockers.push(entry_blocker(
                    record,
                    BlockerKind::WindowOpen,
                    format!(
                        "The deprecation window of {what} ends on {}; removal before then needs an exception naming the risk accepted.",
                        format_day(record.window_end)
                    ),
                ));
            }
            if record.evidence.is_empty() {
                blockers.push(entry_blocker(
                    record,
                    BlockerKind::NoEvidence,
                    format!(
                        "Deprecation #{} records no evidence; add a usage query, a consumer sign-off or a replay result.",
                        record.id
                    ),
                ));
            }
            if !has_passed_canary(record) {
                blockers.push(entry_blocker(
                    record,
                    BlockerKind::NoCanary,
                    format!(
                        "Deprecation #{} records no passed canary; omit {what} on one bounded internal path, watch its readers and record the run (evidence kind 'canary'), or approve an exception overriding no_canary.",
                        record.id
                    ),
                ));
            }
            blockers.retain(|b| {
                !matches!(
                    b.kind,
                    BlockerKind::WindowOpen | BlockerKind::NoEvidence | BlockerKind::NoCanary
                ) || !record.exceptions.iter().any(|e| e.overrides == b.kind)
            });
        }
        Ok(blockers)
    }

    /// Updates a record's content (contract, replacement, owners, window, notes) and keeps
    /// what changed in its `updates`, so the record stays one live document through the
    /// migration. A removed record is closed.
    pub async fn update_deprecation(
        &self,
        id: i64,
        update: DeprecationUpdate,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Deprecation> {
        limits::check_update(&update)?;
        if update.by.trim().is_empty() {
            return Err(GovernanceError::Invalid(
                "an update names who made it ('by')".to_string(),
            ));
        }
        let at = self.now();
        self.store
            .modify_deprecation(
                id,
                &|d| {
                    if d.stage == Stage::Removed {
                        return Err(GovernanceError::Refused(format!(
                            "deprecation #{id} is removed; its record is closed"
                        )));
                    }
                    let changes = apply_update(d, &update);
                    if changes.is_empty() {
                        return Err(GovernanceError::Invalid(format!(
                            "the update changes nothing in deprecation #{id}"
                        )));
                    }
                    if d.window_end < d.window_start {
                        return Err(GovernanceError::Invalid(
                            "the deprecation window ends before it starts".to_string(),
                        ));
                    }
                    check_sunset(d.window_start, d.sunset)?;
                    d.updates.push(RecordUpdate {
                        at,
                        by: update.by.trim().to_string(),
                        note: update.note.clone(),
                        changes,
                    });
                    d.updated_at = at;
                    limits::check_record(d)
                },
                audit,
            )
            .await
    }

    /// Attaches evidence. A usage query is run here and stored with its result, so the
    /// record shows what the store said, not what a caller claimed.
    pub async fn add_evidence(
        &self,
        id: i64,
        claim: &str,
        by: &str,
        body: EvidenceBody,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Deprecation> {
        limits::check_evidence(claim, by, &body)?;
        if claim.trim().is_empty() || by.trim().is_empty() {
            return Err(GovernanceError::Invalid(
                "evidence names the claim it supports and who recorded it".to_string(),
            ));
        }
        let body = match body {
            EvidenceBody::UsageQuery { mut query, .. } => {
                query.field = query.field.map(|f| normalize_field_path(&f));
                let result = self.store.field_usage(&query).await?;
                EvidenceBody::UsageQuery { query, result }
            }
            EvidenceBody::SignOff {
                consumer,
                who,
                signed_at,
                statement,
            } => {
                self.consumer(&consumer).await?;
                if who.trim().is_empty() {
                    return Err(GovernanceError::Invalid(
                        "a sign-off names who signed".to_string(),
                    ));
                }
                EvidenceBody::SignOff {
                    consumer,
                    who,
                    signed_at,
                    statement,
                }
            }
            EvidenceBody::Canary { path, .. } if path.trim().is_empty() => {
                return Err(GovernanceError::Invalid(
                    "a canary names the bounded path it ran on (a tenant, service, group or region)"
                        .to_string(),
                ));
            }
            EvidenceBody::NonProductionOmission { environment, .. }
                if environment.trim().is_empty() =>
            {
                return Err(GovernanceError::Invalid(
                    "a non-production omission names the environment it ran in".to_string(),
                ));
            }
            EvidenceBody::DataProfile {
                path,
                records,
                non_null,
                present,
                ..
            } if path.trim().is_empty()
                || records == 0
                || non_null > present
                || present > records =>
            {
                return Err(GovernanceError::Invalid(
                    "a data profile names a path and counts with filled <= present <= records > 0"
                        .to_string(),
                ));
            }
            other => other,
        };
        // Again with the stored result of a usage query.
        limits::check_evidence(claim, by, &body)?;
        let at = self.now();
        self.store
            .modify_deprecation(
                id,
                &|d| {
                    d.evidence.push(Evidence {
                        id: d.next_evidence_id(),
                        claim: claim.to_string(),
                        recorded_at: at,
                        recorded_by: by.to_string(),
                        body: body.clone(),
                    });
                    d.updated_at = at;
                    limits::check_record(d)
                },
                audit,
            )
            .await
    }

    /// Records an accepted exception; it overrides one matching blocker and stays in the record.
    pub async fn add_exception(
        &self,
        id: i64,
        request: ExceptionRequest,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Deprecation> {
        limits::check_exception(&request)?;
        if request.approver.trim().is_empty() || request.reason.trim().is_empty() {
            return Err(GovernanceError::Invalid(
                "an exception names its approver and its reason".to_string(),
            ));
        }
        let at = self.now();
        self.store
            .modify_deprecation(
                id,
                &|d| {
                    d.exceptions.push(Exception {
                        id: d.next_exception_id(),
                        approver: request.approver.clone(),
                        reason: request.reason.clone(),
                        overrides: request.overrides,
                        party: request.party.clone(),
                        approved_at: at,
                    });
                    d.updated_at = at;
                    limits::check_record(d)
                },
                audit,
            )
            .await
    }

    // The removal gate.

    /// Gathers the evidence for `subject` as of now.
    pub async fn gate_evidence(&self, subject: &str) -> GovernanceResult<GateEvidence> {
        let now = self.now();
        let consumers = self.store.consumers().await?;
        let lookback = GateEvidence::lookback_ms(&consumers, self.config.unattributed_lookback_ms);
        let query = UsageQuery {
            subject: Some(subject.to_string()),
            field: None,
            attribution: Attribution::Any,
            from: now - lookback,
            to: now,
        };
        let field_usage = self.store.field_usage(&query).await?;
        let reader_usage = self.store.reader_usage(&query).await?;
        let unattributed_reads = unattributed(
            &consumers,
            self.store
                .schema_reads(subject, now - self.config.unattributed_lookback_ms)
                .await?,
        );
        let mut reader_fields = BTreeMap::new();
        let read_ids = unattributed_reads.iter().map(|r| r.schema_id);
        for id in reader_usage
            .iter()
            .filter_map(|r| r.reader_schema_id)
            .chain(read_ids)
        {
            if let std::collections::btree_map::Entry::Vacant(slot) = reader_fields.entry(id)
                && let Some(fields) = self.schema_fields.fields_of(subject, id).await
            {
                slot.insert(fields.iter().map(|f| normalize_field_path(f)).collect());
            }
        }
        let version_fields = self.whole_version_fields(subject, &consumers).await;
        Ok(GateEvidence {
            subject: subject.to_string(),
            now,
            version_fields,
            consumers,
            deprecations: self.store.deprecations(Some(subject)).await?,
            field_usage,
            reader_usage,
            reader_fields,
            reporting_since: self.store.reporting_since(subject).await?,
            unattributed_reads,
            unattributed_lookback_ms: self.config.unattributed_lookback_ms,
        })
    }

    /// Adds a batch of schema fetches (aggregated by the caller) to the evidence.
    pub async fn record_reads(&self, reads: &[SchemaRead]) -> GovernanceResult<()> {
        self.store.record_reads(reads).await
    }

    /// Who fetched which version of `subject` within the usage retention, and the consumer
    /// each reader is attributed to now (none when no live consumer lists it as a client).
    pub async fn readers(&self, subject: &str) -> GovernanceResult<Vec<Reader>> {
        let from = self.now() - self.config.retention_ms;
        let consumers = self.store.consumers().await?;
        let reads = self.store.schema_reads(subject, from).await?;
        Ok(reads
            .into_iter()
            .map(|read| Reader {
                consumer: owner_of(&consumers, &read.reader).map(str::to_string),
                read,
            })
            .collect())
    }

    /// Whether a new version of `subject` may drop `removed_fields` (the registry diffs field
    /// trees to find them).
    pub async fn removal_gate(
        &self,
        subject: &str,
        removed_fields: &[String],
    ) -> GovernanceResult<GateReport> {
        let fields: Vec<String> = removed_fields
            .iter()
            .map(|f| normalize_field_path(f))
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        let evidence = self.gate_evidence(subject).await?;
        Ok(removal_gate(&evidence, &fields))
    }

    /// The gate for one deprecation's own target. Non-field targets are gated on a named
    /// replacement and, for a whole subject, on no live consumer declaring it.
    pub async fn gate_for(&self, record: &Deprecation) -> GovernanceResult<GateReport> {
        let subject = record.target.subject();
        if record.stage == Stage::Removed {
            // The shape is gone: nothing is left to gate, and later usage is a new finding.
            return Ok(GateReport {
                subject: subject.to_string(),
                fields: record
                    .target
                    .field()
                    .map(str::to_string)
                    .into_iter()
                    .collect(),
                evaluated_at: self.now(),
                ..GateReport::default()
            });
        }
        if let Some(field) = record.target.field() {
            return self.removal_gate(subject, &[field.to_string()]).await;
        }
        let mut report = GateReport {
            subject: subject.to_string(),
            evaluated_at: self.now(),
            ..GateReport::default()
        };
        let what = record.target.describe();
        if record.replacement.is_none() {
            report.blockers.push(Blocker {
                kind: BlockerKind::NoReplacement,
                field: String::new(),
                party: None,
                deprecation_id: Some(record.id),
                message: format!("Deprecation #{} of {what} names no replacement.", record.id),
            });
        }
        if record.stage < Stage::Removable {
            report.blockers.push(Blocker {
                kind: BlockerKind::StageNotRemovable,
                field: String::new(),
                party: None,
                deprecation_id: Some(record.id),
                message: format!(
                    "Deprecation #{} of {what} is at stage '{}'; removal needs stage 'removable'.",
                    record.id, record.stage
                ),
            });
        }
        if matches!(record.target, DeprecationTarget::Subject { .. }) {
            for c in self.consumers(false).await? {
                if c.read_of(subject).is_some() {
                    report.blockers.push(Blocker {
                        kind: BlockerKind::ConsumerDeclared,
                        field: String::new(),
                        party: Some(c.name.clone()),
                        deprecation_id: Some(record.id),
                        message: format!(
                            "Consumer '{}' (owner '{}') still declares that it reads subject '{subject}'.",
                            c.name, c.owner
                        ),
                    });
                }
            }
        }
        Ok(report)
    }

    /// Closes the deprecations of `fields` after a registered version of `subject` dropped
    /// them (the gate let it through): each moves to `removed`, naming the version. Returns
    /// the records changed. These follow-ups add no audit entries of their own: the
    /// registration that caused them is the audited change, and each record's history names
    /// the version.
    pub async fn mark_removed(
        &self,
        subject: &str,
        fields: &[String],
        version: i64,
    ) -> GovernanceResult<Vec<Deprecation>> {
        let fields: BTreeSet<String> = fields.iter().map(|f| normalize_field_path(f)).collect();
        let at = self.now();
        let mut changed = Vec::new();
        for d in self.store.deprecations(Some(subject)).await? {
            let matches = d.target.field().is_some_and(|f| fields.contains(f));
            if !matches || d.stage == Stage::Removed {
                continue;
            }
            let note = format!("version {version} of subject '{subject}' no longer has the field");
            let updated = self
                .store
                .modify_deprecation(
                    d.id,
                    &|record| {
                        if record.stage == Stage::Removed {
                            return Ok(());
                        }
                        record.history.push(StageChange {
                            from: Some(record.stage),
                            to: Stage::Removed,
                            at,
                            by: "registry".to_string(),
                            note: note.clone(),
                        });
                        record.stage = Stage::Removed;
                        record.updated_at = at;
                        Ok(())
                    },
                    None,
                )
                .await?;
            changed.push(updated);
        }
        Ok(changed)
    }

    /// The record as the seed's text, with the gate's current verdict.
    pub async fn render_deprecation_text(&self, id: i64) -> GovernanceResult<String> {
        let record = self.deprecation(id).await?;
        let gate = self.gate_for(&record).await?;
        Ok(render_text(&record, Some(&gate)))
    }

    pub async fn render_deprecation_json(&self, id: i64) -> GovernanceResult<serde_json::Value> {
        let record = self.deprecation(id).await?;
        let gate = self.gate_for(&record).await?;
        Ok(render_json(&record, Some(&gate)))
    }
}
