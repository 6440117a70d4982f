//! Consumer governance over HTTP, under its own prefix `/covenant/v1/` beside the Confluent
//! routes: consumers, usage reports and queries, deprecation records, and the removal gate.
//!
//! Times in bodies and query strings are milliseconds since the epoch or RFC 3339 text;
//! answers carry milliseconds. Errors use the Confluent shape through the one table in
//! [`crate::error`].

use crate::AppState;
use crate::audit::{AuditedWrite, Caller, HandlerRefusal};
use crate::auth::{Access, Operation, Resource};
use crate::error::ApiError;
use crate::extract::{ConfluentJson, Params, SafePath};
use crate::handlers::ok;
use crate::principal::Principal;
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use covenant_governance::{
    Attribution, Clock, CounterSink, DeprecationUpdate, ExceptionRequest, FAMILIES, FindingKind,
    Governance, GovernanceStore, MetricFamily, NewConsumer, NewDeprecation, SchemaFields,
    StageRequest, UsageQuery, UsageReport, parse_instant, removal_gate,
};
use covenant_registry::{
    BoxFuture, FieldRecords, HookFuture, Registry, RegistryError, RegistryResult, RemovalCheck,
    RemovalVerdict, SchemaRequest, UsageEvidence,
};
use serde::de::DeserializeOwned;
use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Weak};

type ApiResult = Result<Response, ApiError>;

const DAY_MS: i64 = 24 * 3_600_000;
/// The deprecation window when a request names none.
const DEFAULT_WINDOW_MS: i64 = 90 * DAY_MS;
/// Items a governance list answers with when the request names no `limit`.
pub const DEFAULT_PAGE: usize = 100;
/// The most items a governance list answers with (`limit` above it is refused).
pub const MAX_PAGE: usize = 1000;

/// One page of a list: `offset` (default 0) and `limit` (1 to [`MAX_PAGE`], default
/// `default`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Page {
    offset: usize,
    limit: usize,
}

impl Page {
    fn of(params: &Params, default: usize) -> Result<Page, ApiError> {
        let number = |key: &str, default: usize| match params.get(key) {
            None | Some("") => Ok(default),
            Some(text) => text.trim().parse::<usize>().map_err(|_| {
                ApiError::invalid_input(format!(
                    "query parameter '{key}' must be a whole number, not '{text}'"
                ))
            }),
        };
        let limit = number("limit", default)?;
        if !(1..=MAX_PAGE).contains(&limit) {
            return Err(ApiError::invalid_input(format!(
                "'limit' must be between 1 and {MAX_PAGE}"
            )));
        }
        Ok(Page {
            offset: number("offset", 0)?,
            limit,
        })
    }

    /// The page's items, and the `offset` of the next page when there are more.
    fn cut<T>(self, items: Vec<T>) -> (Vec<T>, Option<usize>) {
        let total = items.len();
        let page: Vec<T> = items
            .into_iter()
            .skip(self.offset)
            .take(self.limit)
            .collect();
        let end = self.offset.saturating_add(page.len());
        (page, (end < total).then_some(end))
    }
}

/// Field paths of registered schemas, for usage reports that name a reader schema id. Holds
/// the registry weakly: the registry holds the governance gate, which holds this.
struct RegistryFields(Weak<Registry>);

#[async_trait::async_trait]
impl SchemaFields for RegistryFields {
    async fn fields_of(&self, _subject: &str, schema_id: i64) -> Option<Vec<String>> {
        let registry = self.0.upgrade()?;
        registry.schema_field_paths(schema_id).await.ok()
    }

    async fn version_fields(&self, subject: &str, version: i64) -> Option<Vec<String>> {
        let registry = self.0.upgrade()?;
        let versions = registry.store().subject_versions(subject).await.ok()?;
        let v = versions.iter().find(|v| v.version == version)?;
        registry.schema_field_paths(v.schema.id).await.ok()
    }

    async fn subject_fields(&self, subject: &str) -> Option<Vec<String>> {
        let registry = self.0.upgrade()?;
        let versions = registry.store().subject_versions(subject).await.ok()?;
        let ids: BTreeSet<i64> = versions.iter().map(|v| v.schema.id).collect();
        let mut fields = BTreeSet::new();
        for id in ids {
            fields.extend(registry.schema_field_paths(id).await.ok()?);
        }
        Some(fields.into_iter().collect())
    }
}

/// Exports governance counters through the server's metrics recorder.
struct MetricsSink;

impl CounterSink for MetricsSink {
    fn add(&self, family: MetricFamily, labels: &[(&'static str, String)], by: u64) {
        let labels: Vec<metrics::Label> = labels
            .iter()
            .map(|(k, v)| metrics::Label::new(*k, v.clone()))
            .collect();
        metrics::counter!(family.name, labels).increment(by);
    }
}

/// The registry's removal check: gathers the gate's evidence before the write, decides on
/// the dropped fields inside it, and closes the deprecations a written version removed.
struct GovernanceGate(Arc<Governance>);

impl RemovalCheck for GovernanceGate {
    fn prepare<'a>(&'a self, subject: &'a str) -> HookFuture<'a, Result<RemovalVerdict, String>> {
        Box::pin(async move {
            let evidence = self
                .0
                .gate_evidence(subject)
                .await
                .map_err(|e| e.to_string())?;
            let verdict: RemovalVerdict = Box::new(move |fields: &[String]| {
                let report = removal_gate(&evidence, fields);
                if report.allows_removal() {
                    return Ok(());
                }
                let lines: Vec<String> = report
                    .blockers
                    .iter()
                    .map(|b| format!("- [{}] {}", b.kind, b.message))
                    .collect();
                Err(lines.join("\n"))
            });
            Ok(verdict)
        })
    }

    fn removed<'a>(
        &'a self,
        subject: &'a str,
        fields: &'a [String],
        version: i64,
    ) -> HookFuture<'a, ()> {
        Box::pin(async move {
            match self.0.mark_removed(subject, fields, version).await {
                Ok(closed) => {
                    for d in closed {
                        tracing::info!(
                            subject,
                            deprecation = d.id,
                            version,
                            "deprecation closed: field removed"
                        );
                    }
                }
                Err(e) => {
                    tracing::warn!(subject, error = %e, "could not close deprecations after a removal")
                }
            }
        })
    }
}

/// Governance as the compatibility path's evidence: the consumers a field is declared by,
/// and when each version was last reported in use (its schema id as a writer or as the
/// reader schema, or its number in record counts) within the usage retention. Holds the
/// registry weakly, like [`RegistryFields`].
struct GovernanceUsage {
    governance: Arc<Governance>,
    registry: Weak<Registry>,
}

fn evidence_error(e: covenant_governance::GovernanceError) -> RegistryError {
    RegistryError::Store(format!("reading consumer governance: {e}"))
}

impl UsageEvidence for GovernanceUsage {
    fn consumers_by_field<'a>(
        &'a self,
        subject: &'a str,
    ) -> BoxFuture<'a, RegistryResult<BTreeMap<String, Vec<String>>>> {
        Box::pin(async move {
            self.governance
                .consumers_by_field(subject)
                .await
                .map_err(evidence_error)
        })
    }

    fn field_records<'a>(
        &'a self,
        subject: &'a str,
    ) -> BoxFuture<'a, RegistryResult<FieldRecords>> {
        Box::pin(async move {
            let deprecated = self
                .governance
                .deprecations(Some(subject))
                .await
                .map_err(evidence_error)?
                .iter()
                .filter_map(|d| d.target.field().map(str::to_string))
                .collect();
            let reads = self
                .governance
                .field_usage(UsageQuery {
                    subject: Some(subject.to_string()),
                    field: None,
                    attribution: Attribution::Any,
                    from: i64::MIN / 2,
                    to: i64::MAX / 2,
                })
                .await
                .map_err(evidence_error)?;
            let mut last_used: BTreeMap<String, i64> = BTreeMap::new();
            for read in reads {
                let at = last_used.entry(read.field).or_insert(read.last_at);
                *at = (*at).max(read.last_at);
            }
            Ok(FieldRecords {
                deprecated,
                last_used,
            })
        })
    }

    fn last_seen<'a>(
        &'a self,
        subject: &'a str,
    ) -> BoxFuture<'a, RegistryResult<BTreeMap<i64, i64>>> {
        Box::pin(async move {
            let sightings = self
                .governance
                .schema_sightings(subject)
                .await
                .map_err(evidence_error)?;
            let mut last_seen = BTreeMap::new();
            // A live consumer's declared reader version is in use now: its declaration is
            // the evidence, whether or not it has reported yet.
            let now = self.governance.now();
            for consumer in self
                .governance
                .consumers(false)
                .await
                .map_err(evidence_error)?
            {
                if let Some(version) = consumer.read_of(subject).and_then(|r| r.reader_version) {
                    last_seen.insert(version, now);
                }
            }
            // Fetches of a version's schema are usage too (consumers discovered from reads).
            let since = self.governance.now() - self.governance.config().retention_ms;
            for read in self
                .governance
                .store()
                .schema_reads(subject, since)
                .await
                .map_err(evidence_error)?
            {
                let seen = last_seen.entry(read.version).or_insert(read.last_at);
                *seen = (*seen).max(read.last_at);
            }
            if sightings.by_schema_id.is_empty() && sightings.by_version.is_empty() {
                return Ok(last_seen);
            }
            let Some(registry) = self.registry.upgrade() else {
                return Ok(last_seen);
            };
            for v in registry.store().subject_versions(subject).await? {
                let times = [
                    sightings.by_schema_id.get(&v.schema.id),
                    sightings.by_version.get(&v.version),
                ];
                if let Some(at) = times.into_iter().flatten().max() {
                    let seen = last_seen.entry(v.version).or_insert(*at);
                    *seen = (*seen).max(*at);
                }
            }
            Ok(last_seen)
        })
    }
}

/// Builds the governance service over `store`, lets it read field paths from `registry`,
/// exports its counters, installs its removal gate in the registry's registrations and makes
/// it the evidence of `live` compatibility scopes and of the consumers named in findings.
pub fn enable(
    registry: &Arc<Registry>,
    store: Arc<dyn GovernanceStore>,
    clock: Arc<dyn Clock>,
) -> Arc<Governance> {
    for family in FAMILIES {
        metrics::describe_counter!(family.name, family.help);
    }
    let governance = Arc::new(
        Governance::new(store, clock)
            .with_schema_fields(Arc::new(RegistryFields(Arc::downgrade(registry))))
            .with_counter_sink(Arc::new(MetricsSink)),
    );
    registry.set_removal_check(Arc::new(GovernanceGate(governance.clone())));
    registry.set_usage(Arc::new(GovernanceUsage {
        governance: governance.clone(),
        registry: Arc::downgrade(registry),
    }));
    registry.set_approval_source(Arc::new(crate::approval_routes::GovernanceApprovals(
        governance.clone(),
    )));
    governance
}

fn governance(state: &AppState) -> Result<&Arc<Governance>, ApiError> {
    state
        .governance
        .as_ref()
        .ok_or_else(ApiError::governance_disabled)
}

/// Turns RFC 3339 strings under `keys` into milliseconds, so either form is accepted.
fn times_to_ms(map: &mut Map<String, Value>, keys: &[&str]) -> Result<(), ApiError> {
    for key in keys {
        if let Some(Value::String(text)) = map.get(*key) {
            let ms = parse_instant(text).ok_or_else(|| {
                ApiError::invalid_input(format!(
                    "'{key}' must be milliseconds since the epoch or an RFC 3339 time, not '{text}'"
                ))
            })?;
            map.insert(key.to_string(), json!(ms));
        }
    }
    Ok(())
}

fn object(body: Value, what: &str) -> Result<Map<String, Value>, ApiError> {
    match body {
        Value::Object(map) => Ok(map),
        _ => Err(ApiError::invalid_input(format!(
            "{what} must be a JSON object"
        ))),
    }
}

/// Reads a typed body; shape errors are 422s that name what is wrong.
fn typed<T: DeserializeOwned>(map: Map<String, Value>, what: &str) -> Result<T, ApiError> {
    serde_json::from_value(Value::Object(map))
        .map_err(|e| ApiError::invalid_input(format!("invalid {what}: {e}")))
}

fn to_json<T: serde::Serialize>(value: &T) -> Value {
    serde_json::to_value(value).unwrap_or(Value::Null)
}

fn time_param(params: &Params, key: &str) -> Result<Option<i64>, ApiError> {
    match params.get(key) {
        None | Some("") => Ok(None),
        Some(text) => parse_instant(text).map(Some).ok_or_else(|| {
            ApiError::invalid_input(format!(
                "query parameter '{key}' must be milliseconds or RFC 3339, not '{text}'"
            ))
        }),
    }
}

/// Governance takes the actor from the request when it is authenticated: the body field `key`
/// (in `map`) is filled with the principal's name when absent or empty, and a body naming
/// someone else is refused with 403 (40301) rather than silently rewritten, so a client learns
/// that its claim was not accepted; the refusal is recorded in the audit trail like any other
/// (see [`crate::audit::refuse`]). Anonymous requests keep what the body says.
async fn actor_field(
    state: &AppState,
    caller: &Caller,
    map: &mut Map<String, Value>,
    key: &str,
) -> Result<(), ApiError> {
    match actor_claim(map, key, &caller.principal) {
        Ok(()) => Ok(()),
        Err(refusal) => Err(caller.refuse(state, refusal).await),
    }
}

/// [`actor_field`]'s decision: the refusal when the body names someone else.
fn actor_claim(
    map: &mut Map<String, Value>,
    key: &str,
    principal: &Principal,
) -> Result<(), HandlerRefusal> {
    let Some(name) = &principal.name else {
        return Ok(());
    };
    match map.get(key) {
        None | Some(Value::Null) => {}
        Some(Value::String(claimed)) if claimed.is_empty() || claimed == name => {}
        Some(Value::String(claimed)) => {
            return Err(HandlerRefusal::new(
                Operation::Govern,
                None,
                format!(
                    "'{key}' names '{claimed}' but the request is authenticated as '{name}'; governance actions are recorded under the authenticated principal"
                ),
            ));
        }
        Some(_) => return Ok(()),
    }
    map.insert(key.to_string(), json!(name));
    Ok(())
}

/// [`actor_field`] on a body that should be an object; other bodies are left for the typed
/// parse to refuse.
async fn with_actor(
    state: &AppState,
    caller: &Caller,
    mut body: Value,
    key: &str,
) -> Result<Value, ApiError> {
    if let Value::Object(map) = &mut body {
        actor_field(state, caller, map, key).await?;
    }
    Ok(body)
}

fn deprecation_id(text: &str) -> Result<i64, ApiError> {
    text.trim()
        .parse()
        .map_err(|_| ApiError::invalid_input(format!("deprecation id '{text}' is not a number")))
}

// ----- consumers ---------------------------------------------------------------------------

pub async fn list_consumers(State(state): State<AppState>, params: Params) -> ApiResult {
    let gov = governance(&state)?;
    let page = Page::of(&params, MAX_PAGE)?;
    let all = gov.consumers(params.flag("includeRetired")).await?;
    Ok(ok(to_json(&page.cut(all).0)))
}

pub async fn create_consumer(
    State(state): State<AppState>,
    AuditedWrite(audit): AuditedWrite,
    ConfluentJson(body): ConfluentJson<Value>,
) -> ApiResult {
    let gov = governance(&state)?;
    let new: NewConsumer = typed(object(body, "a consumer")?, "consumer")?;
    let created = gov.create_consumer(new, Some(&audit)).await?;
    Ok(ok(to_json(&created)))
}

pub async fn get_consumer(
    State(state): State<AppState>,
    SafePath(name): SafePath<String>,
) -> ApiResult {
    let gov = governance(&state)?;
    Ok(ok(to_json(&gov.consumer(&name).await?)))
}

/// Replaces a declaration; the name comes from the path.
pub async fn update_consumer(
    State(state): State<AppState>,
    AuditedWrite(audit): AuditedWrite,
    SafePath(name): SafePath<String>,
    ConfluentJson(body): ConfluentJson<Value>,
) -> ApiResult {
    let gov = governance(&state)?;
    let mut map = object(body, "a consumer")?;
    match map.get("name").and_then(Value::as_str) {
        Some(other) if other != name => {
            return Err(ApiError::invalid_input(format!(
                "the body names consumer '{other}' but the path names '{name}'"
            )));
        }
        _ => {}
    }
    map.insert("name".into(), json!(name));
    let new: NewConsumer = typed(map, "consumer")?;
    Ok(ok(to_json(&gov.update_consumer(new, Some(&audit)).await?)))
}

pub async fn retire_consumer(
    State(state): State<AppState>,
    AuditedWrite(audit): AuditedWrite,
    SafePath(name): SafePath<String>,
) -> ApiResult {
    let gov = governance(&state)?;
    Ok(ok(to_json(
        &gov.retire_consumer(&name, Some(&audit)).await?,
    )))
}

// ----- usage -------------------------------------------------------------------------------

/// Records a usage report. Without an interval the report covers the current instant.
pub async fn report_usage(
    State(state): State<AppState>,
    AuditedWrite(audit): AuditedWrite,
    caller: Caller,
    access: Access,
    ConfluentJson(body): ConfluentJson<Value>,
) -> ApiResult {
    let gov = governance(&state)?;
    let mut map = object(body, "a usage report")?;
    actor_field(&state, &caller, &mut map, "client_id").await?;
    times_to_ms(&mut map, &["interval_start", "interval_end"])?;
    let now = gov.now();
    let end = map
        .get("interval_end")
        .and_then(Value::as_i64)
        .unwrap_or(now);
    map.entry("interval_end").or_insert(json!(end));
    map.entry("interval_start").or_insert(json!(end));
    let report: UsageReport = typed(map, "usage report")?;
    // Reporting usage of a subject needs Govern on it (or on the registry): a reader's
    // account is granted the subjects it reads, nothing more.
    let subject = Resource::Subject(report.subject.clone());
    if !access.allows(Operation::Govern, &subject)
        && !access.allows(Operation::Govern, &Resource::Global)
    {
        return Err(caller
            .refuse(&state, HandlerRefusal::denied(Operation::Govern, subject))
            .await);
    }
    let receipt = gov.report_usage(report, Some(&audit)).await?;
    for f in &receipt.findings {
        metrics::counter!("covenant_governance_findings_total", "kind" => f.kind.as_str())
            .increment(1);
    }
    let mut answer = to_json(&receipt);
    if let Value::Object(m) = &mut answer {
        m.insert("flagged".into(), json!(!receipt.findings.is_empty()));
    }
    let failures: Vec<&str> = receipt
        .findings
        .iter()
        .filter(|f| f.kind == FindingKind::EnforcementFailure)
        .map(|f| f.message.as_str())
        .collect();
    if !failures.is_empty() {
        return Ok(enforcement_failure(&failures, answer));
    }
    Ok(ok(answer))
}

/// A non-production reader of a field under enforcement: the report is recorded (it is
/// evidence, audited in its transaction), and the answer is a failure its tooling cannot
/// miss, 410 Gone with `error_code` 41001, the receipt beside the Confluent fields.
fn enforcement_failure(messages: &[&str], receipt: Value) -> Response {
    let mut body = json!({
        "error_code": ENFORCEMENT_FAILURE,
        "message": format!(
            "{} Non-production consumers get failures while a deprecation is enforcing; the report was recorded.",
            messages.join(" ")
        ),
    });
    if let (Value::Object(m), Value::Object(r)) = (&mut body, receipt) {
        m.extend(r);
    }
    let mut response = (StatusCode::GONE, body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(crate::error::CONTENT_TYPE),
    );
    response
}

/// The `error_code` of a usage report answered with an enforcement failure.
pub const ENFORCEMENT_FAILURE: u32 = 41001;

fn usage_query(gov: &Governance, params: &Params) -> Result<UsageQuery, ApiError> {
    let attribution = match (params.get("consumer"), params.flag("unattributed")) {
        (Some(_), true) => {
            return Err(ApiError::invalid_input(
                "ask for one consumer or for unattributed usage, not both",
            ));
        }
        (Some(name), false) => Attribution::Consumer(name.to_string()),
        (None, true) => Attribution::Unattributed,
        (None, false) => Attribution::Any,
    };
    let to = time_param(params, "to")?.unwrap_or_else(|| gov.now());
    let from = time_param(params, "from")?.unwrap_or(to - gov.config().retention_ms);
    if to < from {
        return Err(ApiError::invalid_input(
            "'to' is earlier than 'from' in the usage query",
        ));
    }
    Ok(UsageQuery {
        subject: params.get("subject").map(str::to_string),
        field: params.get("field").map(str::to_string),
        attribution,
        from,
        to,
    })
}

/// The governance service and the usage query the parameters ask for.
fn governed_query<'a>(
    state: &'a AppState,
    params: &Params,
) -> Result<(&'a Arc<Governance>, UsageQuery), ApiError> {
    let gov = governance(state)?;
    let query = usage_query(gov, params)?;
    Ok((gov, query))
}

/// A usage answer: the query as understood (defaults filled in) and what it found, under
/// `key`.
fn usage_answer<T: serde::Serialize>(query: &UsageQuery, key: &str, found: &T) -> Response {
    let mut answer = Map::new();
    answer.insert("query".into(), to_json(query));
    answer.insert(key.into(), to_json(found));
    ok(Value::Object(answer))
}

/// A page of a usage answer: [`usage_answer`] with `next`, the `offset` of the following page
/// (`null` on the last).
fn usage_page<T: serde::Serialize>(query: &UsageQuery, page: Page, rows: Vec<T>) -> Response {
    let (rows, next) = page.cut(rows);
    let mut answer = Map::new();
    answer.insert("query".into(), to_json(query));
    answer.insert("usage".into(), to_json(&rows));
    answer.insert("next".into(), json!(next));
    ok(Value::Object(answer))
}

/// Field reads per reporter: `subject`, `field`, `consumer` or `unattributed=true`, `from`,
/// `to` (default: the retention up to now).
pub async fn field_usage(State(state): State<AppState>, params: Params) -> ApiResult {
    let page = Page::of(&params, DEFAULT_PAGE)?;
    let (gov, query) = governed_query(&state, &params)?;
    let rows = gov.field_usage(query.clone()).await?;
    Ok(usage_page(&query, page, rows))
}

/// Reports per reporter and reader schema, whatever fields they itemized.
pub async fn reader_usage(State(state): State<AppState>, params: Params) -> ApiResult {
    let page = Page::of(&params, DEFAULT_PAGE)?;
    let (gov, query) = governed_query(&state, &params)?;
    let rows = gov.store().reader_usage(&query).await?;
    Ok(usage_page(&query, page, rows))
}

/// Counters summed over a range (records by version, unknown enum values, decode failures).
pub async fn usage_counts(State(state): State<AppState>, params: Params) -> ApiResult {
    let (gov, query) = governed_query(&state, &params)?;
    let counts = gov.store().usage_counts(&query).await?;
    Ok(usage_answer(&query, "counts", &counts))
}

pub async fn findings(State(state): State<AppState>, params: Params) -> ApiResult {
    let page = Page::of(&params, MAX_PAGE)?;
    let (gov, query) = governed_query(&state, &params)?;
    let rows = gov.findings(query.from, query.to).await?;
    Ok(ok(to_json(&page.cut(rows).0)))
}

// ----- deprecations ------------------------------------------------------------------------

pub async fn list_deprecations(State(state): State<AppState>, params: Params) -> ApiResult {
    let gov = governance(&state)?;
    let page = Page::of(&params, MAX_PAGE)?;
    let all = gov.deprecations(params.get("subject")).await?;
    Ok(ok(to_json(&page.cut(all).0)))
}

/// Announces a deprecation. The window defaults to 90 days from now.
pub async fn create_deprecation(
    State(state): State<AppState>,
    AuditedWrite(audit): AuditedWrite,
    caller: Caller,
    ConfluentJson(body): ConfluentJson<Value>,
) -> ApiResult {
    let gov = governance(&state)?;
    let mut map = object(body, "a deprecation")?;
    actor_field(&state, &caller, &mut map, "announced_by").await?;
    times_to_ms(&mut map, &["window_start", "window_end", "sunset"])?;
    let start = map
        .get("window_start")
        .and_then(Value::as_i64)
        .unwrap_or_else(|| gov.now());
    map.entry("window_start").or_insert(json!(start));
    map.entry("window_end")
        .or_insert(json!(start + DEFAULT_WINDOW_MS));
    let new: NewDeprecation = typed(map, "deprecation")?;
    let created = gov.create_deprecation(new, Some(&audit)).await?;
    state.signals.invalidate();
    Ok(ok(gov.render_deprecation_json(created.id).await?))
}

/// The record with the removal gate's current verdict under `removal_gate`.
pub async fn get_deprecation(
    State(state): State<AppState>,
    SafePath(id): SafePath<String>,
) -> ApiResult {
    let gov = governance(&state)?;
    state.flush_reads().await;
    Ok(ok(gov
        .render_deprecation_json(deprecation_id(&id)?)
        .await?))
}

/// The record as the text people review.
pub async fn deprecation_record(
    State(state): State<AppState>,
    SafePath(id): SafePath<String>,
) -> ApiResult {
    let gov = governance(&state)?;
    let text = gov.render_deprecation_text(deprecation_id(&id)?).await?;
    let mut r = (StatusCode::OK, text).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    Ok(r)
}

/// A typed change to the deprecation in the path: the service, the id and the change, parsed
/// in that order so a bad id is reported before a bad body.
fn deprecation_change<'a, T: DeserializeOwned>(
    state: &'a AppState,
    id: &str,
    body: Value,
    (object_what, typed_what): (&str, &str),
) -> Result<(&'a Arc<Governance>, i64, T), ApiError> {
    let gov = governance(state)?;
    let id = deprecation_id(id)?;
    let change = typed(object(body, object_what)?, typed_what)?;
    Ok((gov, id, change))
}

/// Updates a record's content: `{"by"?, "note"?, "contract"?, "replacement"?, "owners"?,
/// "window_start"?, "window_end"?, "sunset"?, "notes"?: {...}}` (times as ms or RFC 3339); the change is
/// kept in the record's `updates`. Like every governance write, an authenticated change is
/// by its principal: `by` is filled in with it, and a `by` naming someone else is refused.
pub async fn update_deprecation(
    State(state): State<AppState>,
    AuditedWrite(audit): AuditedWrite,
    caller: Caller,
    SafePath(id): SafePath<String>,
    ConfluentJson(body): ConfluentJson<Value>,
) -> ApiResult {
    let gov = governance(&state)?;
    let id = deprecation_id(&id)?;
    let mut map = object(body, "a deprecation update")?;
    actor_field(&state, &caller, &mut map, "by").await?;
    times_to_ms(&mut map, &["window_start", "window_end", "sunset"])?;
    let update: DeprecationUpdate = typed(map, "deprecation update")?;
    gov.update_deprecation(id, update, Some(&audit)).await?;
    state.signals.invalidate();
    Ok(ok(gov.render_deprecation_json(id).await?))
}

pub async fn change_stage(
    State(state): State<AppState>,
    AuditedWrite(audit): AuditedWrite,
    caller: Caller,
    SafePath(id): SafePath<String>,
    ConfluentJson(body): ConfluentJson<Value>,
) -> ApiResult {
    let body = with_actor(&state, &caller, body, "by").await?;
    let (gov, id, request): (_, _, StageRequest) =
        deprecation_change(&state, &id, body, ("a stage change", "stage change"))?;
    gov.change_stage(id, request, Some(&audit)).await?;
    state.signals.invalidate();
    Ok(ok(gov.render_deprecation_json(id).await?))
}

/// Attaches evidence: `{"claim", "by", "body": {"kind": "usage_query" | "sign_off" |
/// "replay_result", ...}}`. A usage query's result is computed here; a sign-off's time
/// defaults to now.
pub async fn add_evidence(
    State(state): State<AppState>,
    AuditedWrite(audit): AuditedWrite,
    caller: Caller,
    SafePath(id): SafePath<String>,
    ConfluentJson(body): ConfluentJson<Value>,
) -> ApiResult {
    let gov = governance(&state)?;
    let id = deprecation_id(&id)?;
    let mut map = object(body, "evidence")?;
    actor_field(&state, &caller, &mut map, "by").await?;
    let claim = map
        .get("claim")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let by = map
        .get("by")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let mut evidence = object(
        map.remove("body").unwrap_or(Value::Null),
        "the evidence 'body'",
    )?;
    if let Some(Value::Object(query)) = evidence.get_mut("query") {
        times_to_ms(query, &["from", "to"])?;
    }
    times_to_ms(&mut evidence, &["signed_at"])?;
    match evidence.get("kind").and_then(Value::as_str) {
        Some("usage_query") => {
            evidence.entry("result").or_insert(json!([]));
        }
        Some("sign_off") => {
            actor_field(&state, &caller, &mut evidence, "who").await?;
            evidence.entry("signed_at").or_insert(json!(gov.now()));
        }
        _ => {}
    }
    let body = typed(evidence, "evidence body")?;
    gov.add_evidence(id, &claim, &by, body, Some(&audit))
        .await?;
    Ok(ok(gov.render_deprecation_json(id).await?))
}

pub async fn add_exception(
    State(state): State<AppState>,
    AuditedWrite(audit): AuditedWrite,
    caller: Caller,
    SafePath(id): SafePath<String>,
    ConfluentJson(body): ConfluentJson<Value>,
) -> ApiResult {
    let body = with_actor(&state, &caller, body, "approver").await?;
    let (gov, id, request): (_, _, ExceptionRequest) =
        deprecation_change(&state, &id, body, ("an exception", "exception"))?;
    gov.add_exception(id, request, Some(&audit)).await?;
    Ok(ok(gov.render_deprecation_json(id).await?))
}

// ----- readers -----------------------------------------------------------------------------

/// `GET /covenant/v1/subjects/{s}/readers`: who fetched which version, how often, first and
/// last, and the consumer each reader is attributed to now.
pub async fn readers(
    State(state): State<AppState>,
    SafePath(subject): SafePath<String>,
    params: Params,
) -> ApiResult {
    let gov = governance(&state)?;
    let page = Page::of(&params, DEFAULT_PAGE)?;
    state.flush_reads().await;
    let (readers, next) = page.cut(gov.readers(&subject).await?);
    Ok(ok(
        json!({"subject": subject, "readers": readers, "next": next}),
    ))
}

// ----- removal gate ------------------------------------------------------------------------

/// Would this candidate be let through? The body is a registration body (the fields it drops
/// from the latest version are computed) or `{"fields": [...]}`.
pub async fn removal_gate_preview(
    State(state): State<AppState>,
    SafePath(subject): SafePath<String>,
    params: Params,
    ConfluentJson(body): ConfluentJson<Value>,
) -> ApiResult {
    let gov = governance(&state)?;
    let map = object(body, "a removal-gate request")?;
    let fields: Vec<String> = match (map.get("fields"), map.get("schema")) {
        (Some(Value::Array(list)), None) => list
            .iter()
            .map(|f| {
                f.as_str().map(str::to_string).ok_or_else(|| {
                    ApiError::invalid_input("'fields' must be a list of field paths")
                })
            })
            .collect::<Result<_, _>>()?,
        (None, Some(Value::String(schema))) => {
            let request = SchemaRequest {
                schema: schema.clone(),
                schema_type: map
                    .get("schemaType")
                    .and_then(Value::as_str)
                    .map(str::to_string),
                references: match map.get("references") {
                    Some(refs) => serde_json::from_value(refs.clone())
                        .map_err(|e| ApiError::invalid_input(format!("invalid references: {e}")))?,
                    None => Vec::new(),
                },
                ..SchemaRequest::default()
            };
            state
                .registry
                .fields_removed_by(&subject, &request, params.flag("normalize"))
                .await?
        }
        _ => {
            return Err(ApiError::invalid_input(
                "send either a candidate schema ('schema', optional 'schemaType' and 'references') or a list of 'fields'",
            ));
        }
    };
    state.flush_reads().await;
    let report = gov.removal_gate(&subject, &fields).await?;
    let mut answer = to_json(&report);
    if let Value::Object(m) = &mut answer {
        m.insert("allowed".into(), json!(report.allows_removal()));
    }
    Ok(ok(answer))
}

#[cfg(test)]
mod tests {
    use super::*;
    use covenant_governance::{ManualClock, UsageReport};
    use covenant_registry::RegisterOptions;
    use covenant_store::{SqliteGovernanceStore, SqliteStore};

    const DAY: i64 = 86_400_000;
    /// 2026-01-01T00:00:00Z, an hour boundary: every report below lands in its own bucket.
    const NOW: i64 = 1_767_225_600_000;

    fn record(fields: &[&str]) -> SchemaRequest {
        let fields: Vec<Value> = fields
            .iter()
            .map(|f| json!({"name": f, "type": "string"}))
            .collect();
        SchemaRequest {
            schema: json!({"type": "record", "name": "Case", "fields": fields}).to_string(),
            ..SchemaRequest::default()
        }
    }

    fn principal(name: Option<&str>) -> Principal {
        Principal {
            name: name.map(str::to_string),
            roles: vec![],
            method: crate::principal::AuthMethod::Basic,
            source: None,
            user_agent: Some("cli/1".into()),
            expires: None,
        }
    }

    #[test]
    fn an_authenticated_actor_is_filled_in_and_cannot_be_claimed_by_a_body() {
        let alice = principal(Some("alice"));
        let mut map = Map::new();
        actor_claim(&mut map, "by", &alice).expect("absent: filled");
        assert_eq!(map["by"], json!("alice"));
        actor_claim(&mut map, "by", &alice).expect("same name: accepted");
        map.insert("by".into(), json!("mallory"));
        let refused = actor_claim(&mut map, "by", &alice).expect_err("someone else");
        assert_eq!(refused.operation, Operation::Govern);
        assert!(refused.message.contains("mallory") && refused.message.contains("alice"));
        // Anonymous requests keep what the body says.
        actor_claim(&mut map, "by", &principal(None)).expect("anonymous");
        assert_eq!(map["by"], json!("mallory"));
    }

    #[tokio::test]
    async fn versions_are_seen_through_writer_ids_reader_ids_and_record_counts() {
        let dir = tempfile::tempdir().expect("dir");
        let store = SqliteStore::open(dir.path()).expect("store");
        let registry = Arc::new(Registry::new(Arc::new(store)));
        let now = NOW;
        let clock = Arc::new(ManualClock::new(now));
        let governance = enable(
            &registry,
            Arc::new(SqliteGovernanceStore::open(dir.path()).expect("governance")),
            clock.clone(),
        );
        let options = RegisterOptions {
            force: true,
            ..RegisterOptions::default()
        };
        let mut ids = Vec::new();
        for fields in [
            &["a"][..],
            &["a", "b"],
            &["a", "b", "c"],
            &["a", "b", "c", "d"],
        ] {
            let r = registry
                .register("case-value", record(fields), options)
                .await
                .expect("register");
            ids.push(r.id);
        }
        let report =
            |reader: Option<i64>, writers: Vec<i64>, versions: &[i64], at: i64| UsageReport {
                subject: "case-value".to_string(),
                client_id: "reader-1".to_string(),
                reader_schema_id: reader,
                writer_schema_ids: writers,
                records_by_version: versions.iter().map(|v| (*v, 1)).collect(),
                interval_start: at,
                interval_end: at,
                ..UsageReport::default()
            };
        governance
            .report_usage(report(Some(ids[0]), vec![ids[1]], &[], now - 2 * DAY), None)
            .await
            .expect("report");
        governance
            .report_usage(report(None, vec![], &[3], now - DAY), None)
            .await
            .expect("report");
        // Past the retention (400 days): not evidence any more.
        governance
            .report_usage(report(None, vec![ids[3]], &[], now - 500 * DAY), None)
            .await
            .expect("report");

        let usage = GovernanceUsage {
            governance: governance.clone(),
            registry: Arc::downgrade(&registry),
        };
        let seen = usage.last_seen("case-value").await.expect("last seen");
        assert_eq!(
            seen,
            BTreeMap::from([(1, now - 2 * DAY), (2, now - 2 * DAY), (3, now - DAY)])
        );
        assert!(
            usage
                .last_seen("other-value")
                .await
                .expect("none")
                .is_empty()
        );
    }
}
