//! Thin handlers: parse the request, call the registry, shape the answer.

use crate::AppState;
use crate::audit::{Audited, Caller, HandlerRefusal};
use crate::auth::{Access, Operation, Resource};
use crate::error::{ApiError, CONTENT_TYPE};
use crate::extract::{ConfluentJson, Params, SafePath};
use crate::principal::Principal;
use crate::reads::ReadTarget;
use crate::views::{config_update_view, config_view, mode_view, schema_fields, version_view};
use axum::extract::State;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use bytes::Bytes;
use covenant_registry::AuditContext;
use covenant_registry::{
    Answer, ConfigUpdate, Ref, RegisterOptions, Registration, RegistryError, Schema, SchemaRequest,
    TextFormat, Version, VersionSpec, finding_text,
};
use covenant_store::StoredVersion;
use covenant_store::context::public_id;
use serde::Deserialize;
use serde_json::{Map, Value, json};
use std::future::Future;
use std::sync::Arc;

type ApiResult = Result<Response, ApiError>;

/// A JSON answer under Confluent's media type.
pub fn ok(value: Value) -> Response {
    body_response(json_bytes(&value))
}

/// `value` as compact JSON. Serializing a `Value` cannot fail (its map keys are strings).
fn json_bytes(value: &Value) -> Bytes {
    Bytes::from(serde_json::to_vec(value).unwrap_or_default())
}

/// Text under Confluent's media type (raw schema endpoints answer the schema itself).
fn raw(text: String) -> Response {
    body_response(Bytes::from(text))
}

fn body_response(body: Bytes) -> Response {
    let mut r = (StatusCode::OK, body).into_response();
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
    r
}

#[derive(Debug, Deserialize)]
pub struct RefBody {
    name: String,
    subject: String,
    version: i64,
}

/// Register, lookup and compatibility bodies. Unknown fields are ignored, as Confluent's
/// entities are.
#[derive(Debug, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct SchemaBody {
    #[serde(default)]
    schema: Option<String>,
    #[serde(default)]
    schema_type: Option<String>,
    #[serde(default)]
    references: Option<Vec<RefBody>>,
    #[serde(default)]
    metadata: Option<Value>,
    #[serde(default)]
    rule_set: Option<Value>,
    #[serde(default)]
    id: Option<i64>,
    #[serde(default)]
    version: Option<i64>,
    /// Payloads written with this schema, replayed through earlier versions under FORWARD
    /// and FULL levels (a Covenant extension).
    #[serde(default)]
    samples: Option<Vec<crate::policy_routes::SampleBody>>,
}

impl SchemaBody {
    /// The registry's request; a submitted sample that is not base64 is a 42230.
    pub(crate) fn into_request(self) -> Result<SchemaRequest, ApiError> {
        let samples = self
            .samples
            .unwrap_or_default()
            .into_iter()
            .map(crate::policy_routes::SampleBody::into_candidate)
            .collect::<Result<Vec<_>, _>>()?;
        Ok(SchemaRequest {
            schema: self.schema.unwrap_or_default(),
            schema_type: self.schema_type,
            references: self
                .references
                .unwrap_or_default()
                .into_iter()
                .map(|r| Ref {
                    name: r.name,
                    subject: r.subject,
                    version: r.version,
                })
                .collect(),
            metadata: self.metadata,
            rule_set: self.rule_set,
            id: self.id,
            version: self.version,
            samples,
        })
    }
}

fn parse_id(text: &str) -> Result<i64, ApiError> {
    text.trim().parse().map_err(|_| ApiError::unparseable_id())
}

fn version_spec(text: &str) -> Result<VersionSpec, ApiError> {
    Ok(VersionSpec::parse(text)?)
}

/// `offset`/`limit` paging; a limit of 0 or below (or above `max`) means the default.
/// The schema's text in the `format` the request asks for.
async fn requested_text(
    state: &AppState,
    caller: &Caller,
    access: &Access,
    schema: &Schema,
    params: &Params,
) -> Result<String, ApiError> {
    let format = TextFormat::parse(params.get("format"));
    readable_text(state, caller, access, schema, format).await
}

/// References followed at most when checking that a resolved text may be shown.
const MAX_RESOLVED_REFERENCES: usize = 10_000;

/// The schema's text in `format`; the resolved form inlines every schema it references,
/// directly or not, so it is refused (403) unless the caller may read all their subjects.
async fn readable_text(
    state: &AppState,
    caller: &Caller,
    access: &Access,
    schema: &Schema,
    format: TextFormat,
) -> Result<String, ApiError> {
    if format == TextFormat::Resolved && !access.allows_everywhere(Operation::Read) {
        let mut pending: Vec<_> = schema.references.clone();
        let mut seen = std::collections::HashSet::new();
        while let Some(r) = pending.pop() {
            if !seen.insert((r.subject.clone(), r.version)) {
                continue;
            }
            if !access.can_read(&r.subject) || seen.len() > MAX_RESOLVED_REFERENCES {
                let resource = Resource::Subject(r.subject.clone());
                let refusal = HandlerRefusal::denied(Operation::Read, resource);
                return Err(caller.refuse(state, refusal).await);
            }
            let referenced = state
                .registry
                .version(&r.subject, VersionSpec::Number(r.version), true)
                .await?;
            pending.extend(referenced.schema.references.iter().cloned());
        }
    }
    Ok(state.registry.schema_text(schema, format).await?)
}

/// The stored id that the id in the path names, seen from `?subject=` (its context), once the
/// caller may read it.
async fn readable_id(
    state: &AppState,
    access: &Access,
    id: &str,
    params: &Params,
) -> Result<i64, ApiError> {
    let public = parse_id(id)?;
    // `?subject=` naming an alias is read as its target (whose context may differ).
    let subject = match params.get("subject") {
        Some(s) if !s.is_empty() => Some(followed(state, access, s.to_string()).await?),
        other => other.map(str::to_string),
    };
    let stored = state
        .registry
        .resolve_id(public, subject.as_deref())
        .await?;
    if !id_readable(state, access, stored).await? {
        return Err(RegistryError::SchemaIdNotFound(public).into());
    }
    Ok(stored)
}

/// The id in the path, the schema registered under it and its requested text.
async fn schema_with_text(
    state: &AppState,
    caller: &Caller,
    access: &Access,
    id: &str,
    params: &Params,
) -> Result<(i64, Arc<Schema>, String), ApiError> {
    let id = readable_id(state, access, id, params).await?;
    let record = state.registry.schema_by_id(id).await.map_err(|e| match e {
        RegistryError::SchemaIdNotFound(stored) => {
            RegistryError::SchemaIdNotFound(public_id(stored))
        }
        e => e,
    })?;
    let text = requested_text(state, caller, access, &record, params).await?;
    Ok((id, record, text))
}

/// The subject a read of `subject` is answered from: its config's `alias`, when the caller may
/// read that subject too (an alias must not open a subject its caller cannot read).
async fn followed(state: &AppState, access: &Access, subject: String) -> Result<String, ApiError> {
    let target = state.registry.alias_target(&subject).await?;
    Ok(read_target(access, subject, target))
}

/// The subject a read of `subject` is answered from, given its alias `target`.
fn read_target(access: &Access, subject: String, target: Option<String>) -> String {
    match target {
        Some(target) if access.can_read(&target) => target,
        _ => subject,
    }
}

/// The subject a change to `subject` acts on: its config's `alias` when it has one, as every
/// `/subjects/{subject}` route is rewritten to the alias's target (a registration under an
/// alias registers under its target and never creates the alias as a subject). A caller who
/// may not do `operation` on the target is refused.
async fn changed(
    state: &AppState,
    access: &Access,
    subject: String,
    operation: Operation,
) -> Result<String, ApiError> {
    let target = state.registry.alias_target(&subject).await?;
    change_target(access, subject, target, operation)
}

/// The subject a change to `subject` acts on, given its alias `target`.
fn change_target(
    access: &Access,
    subject: String,
    target: Option<String>,
    operation: Operation,
) -> Result<String, ApiError> {
    match target {
        Some(target) if access.allows(operation, &Resource::Subject(target.clone())) => Ok(target),
        Some(target) => Err(ApiError::forbidden(format!(
            "Subject '{subject}' is an alias of '{target}', which this caller may not change"
        ))),
        None => Ok(subject),
    }
}

/// The subject version named in the path (`?deleted` included) and its requested text.
async fn version_with_text(
    state: &AppState,
    caller: &Caller,
    access: &Access,
    subject: &str,
    version: &str,
    params: &Params,
) -> Result<(Version, String), ApiError> {
    let spec = version_spec(version)?;
    let v = state
        .registry
        .version(subject, spec, params.flag("deleted"))
        .await?;
    let text = requested_text(state, caller, access, &v.schema, params).await?;
    Ok((v, text))
}

/// Whether the caller may read schema `id`: through any subject it may read that uses it
/// (soft-deleted versions included). An unreadable id is answered as a missing one.
async fn id_readable(state: &AppState, access: &Access, id: i64) -> Result<bool, ApiError> {
    if access.allows_everywhere(Operation::Read) {
        return Ok(true);
    }
    let pairs = match state.registry.versions_with_id(id, true).await {
        Ok(pairs) => pairs,
        Err(RegistryError::SchemaIdNotFound(_)) => return Ok(false),
        Err(e) => return Err(e.into()),
    };
    Ok(pairs.iter().any(|(s, _)| access.can_read(s)))
}

/// Refuses (and records) a schema whose references name a subject the caller may not read,
/// so a register, lookup or compatibility test cannot probe another subject's schemas.
async fn ensure_references_readable(
    state: &AppState,
    caller: &Caller,
    access: &Access,
    body: &SchemaBody,
) -> Result<(), ApiError> {
    for r in body.references.iter().flatten() {
        if !access.can_read(&r.subject) {
            let resource = Resource::Subject(r.subject.clone());
            let refusal = HandlerRefusal::denied(Operation::Read, resource);
            return Err(caller.refuse(state, refusal).await);
        }
    }
    Ok(())
}

/// A registration that names its id or version (IMPORT mode) rewrites the registry's
/// numbering, so it needs `Admin` on the subject, not only `Write`.
async fn ensure_may_choose_ids(
    state: &AppState,
    caller: &Caller,
    access: &Access,
    subject: &str,
    body: &SchemaBody,
) -> Result<(), ApiError> {
    let resource = Resource::Subject(subject.to_string());
    if (body.id.is_some() || body.version.is_some()) && !access.allows(Operation::Admin, &resource)
    {
        let refusal = HandlerRefusal::denied(Operation::Admin, resource);
        return Err(caller.refuse(state, refusal).await);
    }
    Ok(())
}

/// The (subject, version) pairs carrying the id in the path that the caller may read,
/// narrowed to `?subject=`.
async fn usages_of_id(
    state: &AppState,
    access: &Access,
    id: &str,
    params: &Params,
) -> Result<Vec<(String, i64)>, ApiError> {
    let id = readable_id(state, access, id, params).await?;
    let pairs = state
        .registry
        .versions_with_id(id, params.flag("deleted"))
        .await?;
    // A context-only `?subject=` chose the context; a named one also narrows the answer.
    let filter = params
        .get("subject")
        .filter(|s| !s.is_empty() && !covenant_store::context::is_context_only(s));
    Ok(pairs
        .into_iter()
        .filter(|(s, _)| filter.is_none_or(|f| names_subject(f, s)) && access.can_read(s))
        .collect())
}

/// Whether `?subject=f` names `subject`: exactly, or unqualified as the same name in the
/// context the id was found in.
fn names_subject(f: &str, subject: &str) -> bool {
    f == subject || (!f.starts_with(':') && covenant_store::context::unqualified(subject) == f)
}

fn page<T>(items: Vec<T>, params: &Params, max: Option<usize>) -> Vec<T> {
    let (offset, limit) = page_bounds(params, max);
    items.into_iter().skip(offset).take(limit).collect()
}

/// `offset` and `limit` of a listing: a missing or non-positive limit, or one above `max`,
/// is `max` (no bound without one).
fn page_bounds(params: &Params, max: Option<usize>) -> (usize, usize) {
    let offset = params.int("offset").unwrap_or(0).max(0) as usize;
    let limit = params.int("limit").unwrap_or(-1);
    let limit = match (limit, max) {
        (l, Some(m)) if l <= 0 || l as usize > m => m,
        (l, None) if l <= 0 => usize::MAX,
        (l, _) => l as usize,
    };
    (offset, limit)
}

// ----- root ------------------------------------------------------------------------------

pub async fn root() -> Response {
    ok(json!({}))
}

pub async fn root_post(body: Result<ConfluentJson<Value>, ApiError>) -> Response {
    match body {
        Ok(_) => ok(json!({})),
        Err(e) => e.into_response(),
    }
}

pub async fn metadata_id() -> Response {
    ok(json!({"scope": {"path": [], "clusters": {
        "kafka-cluster": "covenant",
        "schema-registry-cluster": "covenant"
    }}}))
}

pub async fn metadata_version() -> Response {
    ok(json!({"version": env!("CARGO_PKG_VERSION"), "commitId": "covenant"}))
}

/// `GET /contexts`: the default context, then those holding a subject the caller may read
/// (all of them for a caller who may read everything), after `contextPrefix`, paged.
pub async fn contexts(State(state): State<AppState>, access: Access, params: Params) -> ApiResult {
    let mut names = state.registry.contexts().await?;
    if !access.allows_everywhere(Operation::Read) {
        let readable = state.registry.subjects(None, true, false).await?;
        let readable: Vec<&String> = readable.iter().filter(|s| access.can_read(s)).collect();
        names.retain(|ctx| {
            ctx == covenant_store::context::DEFAULT_CONTEXT
                || readable
                    .iter()
                    .any(|s| covenant_store::context::context_of(s) == ctx)
        });
    }
    if let Some(prefix) = params.get("contextPrefix").filter(|p| !p.is_empty()) {
        names.retain(|ctx| ctx.starts_with(prefix));
    }
    Ok(ok(json!(page(names, &params, None))))
}

/// `DELETE /contexts/{context}`: 204 once the (empty) context is gone.
pub async fn delete_context(
    State(state): State<AppState>,
    Audited(audit): Audited,
    SafePath(context): SafePath<String>,
) -> ApiResult {
    state
        .registry
        .delete_context(&context, Some(&audit))
        .await?;
    Ok(StatusCode::NO_CONTENT.into_response())
}

pub async fn health_live() -> Response {
    ok(json!({"status": "UP"}))
}

/// 503 while the store does not answer, so a load balancer routes around the node.
pub async fn health_ready(State(state): State<AppState>) -> Response {
    match state.registry.ready().await {
        Ok(()) => ok(json!({"status": "UP"})),
        Err(e) => {
            let mut r = ok(json!({"status": "DOWN", "message": e.to_string()}));
            *r.status_mut() = StatusCode::SERVICE_UNAVAILABLE;
            r
        }
    }
}

// ----- /schemas --------------------------------------------------------------------------

/// Confluent's three types in Confluent's order, then Covenant's own `ICEBERG`.
pub async fn schema_types() -> Response {
    ok(json!(["JSON", "PROTOBUF", "AVRO", "ICEBERG"]))
}

pub async fn schemas(State(state): State<AppState>, access: Access, params: Params) -> ApiResult {
    // Confluent's default prefix here is the default context's empty one; `:*:` lists all.
    let prefix = Some(params.get("subjectPrefix").unwrap_or(""));
    let (deleted, latest) = (params.flag("deleted"), params.flag("latestOnly"));
    let rule_type = params.get("ruleType").filter(|t| !t.is_empty());
    let keep = |v: &StoredVersion| {
        access.can_read(&v.subject) && rule_type.is_none_or(|t| v.schema.has_rules_of_type(t))
    };
    let versions = if params.flag("aliases") || latest {
        let mut versions = if params.flag("aliases") {
            state
                .registry
                .list_schemas_with_aliases(prefix, deleted, latest)
                .await?
        } else {
            let listed = state.registry.list_schemas(prefix, deleted, latest).await?;
            listed.into_iter().map(|v| (v, Vec::new())).collect()
        };
        versions.retain(|(v, _)| keep(v));
        page(versions, &params, Some(1000))
    } else {
        let (offset, limit) = page_bounds(&params, Some(1000));
        let listed = state
            .registry
            .list_schemas_page(prefix, deleted, &keep, offset, limit)
            .await?;
        listed.into_iter().map(|v| (v, Vec::new())).collect()
    };
    let mut out = Vec::with_capacity(versions.len());
    for (v, mut aliases) in versions {
        let mut view = version_view(&v, v.schema.schema.clone());
        aliases.retain(|a| access.can_read(a));
        if let (Some(m), false) = (view.as_object_mut(), aliases.is_empty()) {
            m.insert("aliases".into(), json!(aliases));
        }
        out.push(view);
    }
    Ok(ok(Value::Array(out)))
}

pub async fn schema_by_id(
    State(state): State<AppState>,
    principal: Principal,
    caller: Caller,
    access: Access,
    SafePath(id): SafePath<String>,
    params: Params,
) -> ApiResult {
    let (id, record, text) = schema_with_text(&state, &caller, &access, &id, &params).await?;
    let mut m = schema_fields(&record, text);
    if let Some(subject) = params
        .get("subject")
        .filter(|s| !s.is_empty() && access.can_read(s))
        && let Ok(pairs) = state.registry.versions_with_id(id, true).await
        && let Some((s, v)) = pairs.iter().rev().find(|(s, _)| s == subject)
    {
        m.insert("subject".into(), json!(s));
        m.insert("version".into(), json!(v));
    }
    if params.flag("fetchMaxId") {
        m.insert("maxId".into(), json!(state.registry.max_id().await?));
    }
    let answer = ok(Value::Object(m));
    Ok(state
        .answer_read(&principal, &access, ReadTarget::Id(id), answer)
        .await)
}

/// `GET /schemas/guids/{guid}`: the schema of the lowest readable id with that guid, without
/// subject or version (a guid names content, not a place).
pub async fn schema_by_guid(
    State(state): State<AppState>,
    principal: Principal,
    caller: Caller,
    access: Access,
    SafePath(guid): SafePath<String>,
    params: Params,
) -> ApiResult {
    let id = readable_ids_by_guid(&state, &access, &guid)
        .await?
        .into_iter()
        .next()
        .ok_or(RegistryError::SchemaGuidNotFound(guid))?;
    let record = state.registry.schema_by_id(id).await?;
    let text = requested_text(&state, &caller, &access, &record, &params).await?;
    let answer = ok(Value::Object(schema_fields(&record, text)));
    Ok(state
        .answer_read(&principal, &access, ReadTarget::Id(id), answer)
        .await)
}

/// `GET /schemas/guids/{guid}/ids`: `[{"context": ".", "id": n}]` for each readable id.
pub async fn ids_by_guid(
    State(state): State<AppState>,
    access: Access,
    SafePath(guid): SafePath<String>,
) -> ApiResult {
    let ids = readable_ids_by_guid(&state, &access, &guid).await?;
    let mut listed = Vec::with_capacity(ids.len());
    for id in ids {
        let context = state
            .registry
            .context_of_slot(covenant_store::context::slot_of(id))
            .await?;
        listed.push(json!({"context": context, "id": public_id(id)}));
    }
    Ok(ok(json!(listed)))
}

async fn readable_ids_by_guid(
    state: &AppState,
    access: &Access,
    guid: &str,
) -> Result<Vec<i64>, ApiError> {
    let mut readable = Vec::new();
    for id in state.registry.ids_by_guid(guid).await? {
        if id_readable(state, access, id).await? {
            readable.push(id);
        }
    }
    Ok(readable)
}

pub async fn schema_text_by_id(
    State(state): State<AppState>,
    principal: Principal,
    caller: Caller,
    access: Access,
    SafePath(id): SafePath<String>,
    params: Params,
) -> ApiResult {
    let (id, _, text) = schema_with_text(&state, &caller, &access, &id, &params).await?;
    Ok(state
        .answer_read(&principal, &access, ReadTarget::Id(id), raw(text))
        .await)
}

pub async fn subjects_by_id(
    State(state): State<AppState>,
    access: Access,
    SafePath(id): SafePath<String>,
    params: Params,
) -> ApiResult {
    let pairs = usages_of_id(&state, &access, &id, &params).await?;
    let mut subjects: Vec<String> = pairs.into_iter().map(|(s, _)| s).collect();
    subjects.dedup();
    Ok(ok(json!(page(subjects, &params, None))))
}

pub async fn versions_by_id(
    State(state): State<AppState>,
    access: Access,
    SafePath(id): SafePath<String>,
    params: Params,
) -> ApiResult {
    let pairs = usages_of_id(&state, &access, &id, &params).await?;
    let out: Vec<Value> = pairs
        .into_iter()
        .map(|(s, v)| json!({"subject": s, "version": v}))
        .collect();
    Ok(ok(json!(page(out, &params, None))))
}

// ----- /subjects -------------------------------------------------------------------------

pub async fn subjects(State(state): State<AppState>, access: Access, params: Params) -> ApiResult {
    let prefix = params.get("subjectPrefix");
    let deleted = (params.flag("deleted"), params.flag("deletedOnly"));
    let (offset, limit) = page_bounds(&params, None);
    if limit == usize::MAX {
        // No limit: every name, as Confluent answers.
        let mut list = state
            .registry
            .subjects(prefix, deleted.0, deleted.1)
            .await?;
        list.retain(|s| access.can_read(s));
        return Ok(ok(json!(page(list, &params, None))));
    }
    let keep = |s: &str| access.can_read(s);
    let list = state
        .registry
        .subjects_page(prefix, deleted, &keep, offset, limit)
        .await?;
    Ok(ok(json!(list)))
}

pub async fn versions(
    State(state): State<AppState>,
    access: Access,
    SafePath(subject): SafePath<String>,
    params: Params,
) -> ApiResult {
    let subject = followed(&state, &access, subject).await?;
    let negative = params.flag("deletedAsNegative");
    let deleted = params.flag("deleted") || negative;
    let list = state
        .registry
        .versions(&subject, deleted, params.flag("deletedOnly"))
        .await?;
    let list = if negative {
        let live = state
            .registry
            .versions(&subject, false, false)
            .await
            .unwrap_or_default();
        list.into_iter()
            .map(|v| if live.contains(&v) { v } else { -v })
            .collect()
    } else {
        list
    };
    Ok(ok(json!(page(list, &params, None))))
}

pub async fn register(
    State(state): State<AppState>,
    Audited(audit): Audited,
    caller: Caller,
    access: Access,
    SafePath(subject): SafePath<String>,
    params: Params,
    ConfluentJson(body): ConfluentJson<SchemaBody>,
) -> ApiResult {
    // The alias lookup also reads what the registration reads first.
    let (target, first_read) = state
        .registry
        .alias_target_for_registration(&subject)
        .await?;
    let subject = change_target(&access, subject, target, Operation::Write)?;
    ensure_references_readable(&state, &caller, &access, &body).await?;
    ensure_may_choose_ids(&state, &caller, &access, &subject, &body).await?;
    let options = RegisterOptions {
        normalize: params.flag("normalize"),
        force: params.flag("force"),
        audit: Some(&audit),
        first_read: first_read.as_ref(),
    };
    let request = body.into_request()?;
    let sent = request.schema.trim().to_string();
    let format = params.get("format");
    if let Some(answer) = state
        .registry
        .registered(&subject, &request, options.normalize)
    {
        let reg = Registration {
            id: answer.schema.id,
            version: answer.version,
            schema: answer.schema.clone(),
            created: false,
            approvals: Vec::new(),
        };
        let body = kept_body(&answer, format.is_none(), || {
            registration_body(&state, &subject, &sent, &reg, format)
        })
        .await?;
        return Ok(body_response(body));
    }
    // The removal gate inside the registration must see every read counted so far.
    state.flush_reads().await;
    let reg = state.registry.register(&subject, request, options).await?;
    if reg.created {
        // What versions exist decides which ones a deprecation covers and what succeeds them.
        state.signals.invalidate();
    }
    let body = registration_body(&state, &subject, &sent, &reg, format).await?;
    Ok(body_response(body))
}

/// The body of a cached answer: made by `render` on its first hit when `keep` (the request
/// names no `format`, the one thing the answer's key leaves out), the same bytes after.
async fn kept_body<F, Fut>(answer: &Answer, keep: bool, render: F) -> Result<Bytes, ApiError>
where
    F: FnOnce() -> Fut,
    Fut: Future<Output = Result<Bytes, ApiError>>,
{
    if keep && let Some(body) = answer.rendered() {
        return Ok(body);
    }
    let body = render().await?;
    if keep {
        answer.keep_rendered(body.clone());
    }
    Ok(body)
}

/// `{id, subject, version, guid, schemaType, references?, metadata?, ruleSet?, schema}`.
async fn registration_body(
    state: &AppState,
    subject: &str,
    sent: &str,
    reg: &Registration,
    format: Option<&str>,
) -> Result<Bytes, ApiError> {
    // Protobuf sent as a base64 descriptor is stored as .proto text; without an explicit
    // format the answer echoes the descriptor as sent, since clients cache the answer by id
    // and later parse it as a descriptor.
    let text = match format {
        None if reg.schema.schema_type == "PROTOBUF"
            && !sent.is_empty()
            && sent != reg.schema.schema
            && !sent.contains(char::is_whitespace) =>
        {
            sent.to_string()
        }
        f => {
            state
                .registry
                .schema_text(&reg.schema, TextFormat::parse(f))
                .await?
        }
    };
    let mut m = Map::new();
    m.insert("id".into(), json!(public_id(reg.id)));
    m.insert("subject".into(), json!(subject));
    m.insert("version".into(), json!(reg.version));
    m.extend(schema_fields(&reg.schema, text));
    if !reg.approvals.is_empty() {
        // A Covenant extension: the accepted risk this version needed, on record.
        m.insert("approvals".into(), json!(reg.approvals));
    }
    Ok(json_bytes(&Value::Object(m)))
}

pub async fn lookup(
    State(state): State<AppState>,
    principal: Principal,
    caller: Caller,
    access: Access,
    SafePath(subject): SafePath<String>,
    params: Params,
    ConfluentJson(body): ConfluentJson<SchemaBody>,
) -> ApiResult {
    ensure_references_readable(&state, &caller, &access, &body).await?;
    // The alias lookup also reads what the lookup by content reads first.
    let (target, first_read) = state.registry.alias_target_for_content(&subject).await?;
    let subject = read_target(&access, subject, target);
    let format = response_format(&params, &body);
    let request = body.into_request()?;
    let (normalize, deleted) = (params.flag("normalize"), params.flag("deleted"));
    let registry = &state.registry;
    let (read, body) = match registry.looked_up(&subject, &request, normalize, deleted) {
        Some(answer) => {
            let read = ReadTarget::Version {
                subject: subject.clone(),
                version: answer.version,
                schema_id: answer.schema.id,
            };
            let keep = params.get("format").is_none();
            let body = kept_body(&answer, keep, || async {
                version_body(
                    &state,
                    &caller,
                    &access,
                    &answer.to_version(&subject),
                    format,
                )
                .await
            })
            .await?;
            (read, body)
        }
        None => {
            let v = registry
                .lookup(&subject, &request, normalize, deleted, first_read.as_ref())
                .await?;
            (
                version_read(&v),
                version_body(&state, &caller, &access, &v, format).await?,
            )
        }
    };
    Ok(state
        .answer_read(&principal, &access, read, body_response(body))
        .await)
}

/// [`version_view`] with the schema in `format`, as JSON.
async fn version_body(
    state: &AppState,
    caller: &Caller,
    access: &Access,
    v: &Version,
    format: TextFormat,
) -> Result<Bytes, ApiError> {
    let text = readable_text(state, caller, access, &v.schema, format).await?;
    Ok(json_bytes(&version_view(v, text)))
}

/// The read of one subject version, for consumer discovery.
fn version_read(v: &Version) -> ReadTarget {
    ReadTarget::Version {
        subject: v.subject.clone(),
        version: v.version,
        schema_id: v.schema.id,
    }
}

/// The `format` asked for, else the form the schema was sent in: a Protobuf descriptor sent
/// as base64 is stored as `.proto` text but answered as base64.
fn response_format(params: &Params, body: &SchemaBody) -> TextFormat {
    match params.get("format") {
        Some(f) => TextFormat::parse(Some(f)),
        None if body.schema.as_deref().is_some_and(|text| {
            covenant_registry::sent_as_descriptor(body.schema_type.as_deref(), text)
        }) =>
        {
            TextFormat::Serialized
        }
        None => TextFormat::Default,
    }
}

pub async fn version(
    State(state): State<AppState>,
    principal: Principal,
    caller: Caller,
    access: Access,
    SafePath((subject, version)): SafePath<(String, String)>,
    params: Params,
) -> ApiResult {
    let subject = followed(&state, &access, subject).await?;
    let (v, text) =
        version_with_text(&state, &caller, &access, &subject, &version, &params).await?;
    let answer = ok(version_view(&v, text));
    Ok(state
        .answer_read(&principal, &access, version_read(&v), answer)
        .await)
}

pub async fn version_schema(
    State(state): State<AppState>,
    principal: Principal,
    caller: Caller,
    access: Access,
    SafePath((subject, version)): SafePath<(String, String)>,
    params: Params,
) -> ApiResult {
    let subject = followed(&state, &access, subject).await?;
    let (v, text) =
        version_with_text(&state, &caller, &access, &subject, &version, &params).await?;
    Ok(state
        .answer_read(&principal, &access, version_read(&v), raw(text))
        .await)
}

pub async fn referenced_by(
    State(state): State<AppState>,
    access: Access,
    SafePath((subject, version)): SafePath<(String, String)>,
    params: Params,
) -> ApiResult {
    let subject = followed(&state, &access, subject).await?;
    let spec = version_spec(&version)?;
    let all = state
        .registry
        .referenced_by(&subject, spec, params.flag("deleted"))
        .await?;
    let mut ids = Vec::with_capacity(all.len());
    for id in all {
        if id_readable(&state, &access, id).await? {
            ids.push(public_id(id));
        }
    }
    Ok(ok(json!(page(ids, &params, Some(1000)))))
}

pub async fn latest_with_metadata(
    State(state): State<AppState>,
    principal: Principal,
    caller: Caller,
    access: Access,
    SafePath(subject): SafePath<String>,
    params: Params,
) -> ApiResult {
    let subject = followed(&state, &access, subject).await?;
    let keys = params.all("key");
    let values = params.all("value");
    let deleted = params.flag("deleted");
    let versions = state.registry.versions(&subject, deleted, false).await?;
    for n in versions.into_iter().rev() {
        let v = state
            .registry
            .version(&subject, VersionSpec::Number(n), deleted)
            .await?;
        let props = v
            .schema
            .metadata
            .as_ref()
            .and_then(|m| m.get("properties"))
            .cloned()
            .unwrap_or(Value::Null);
        let matches = keys
            .iter()
            .zip(values.iter())
            .all(|(k, val)| props.get(*k).and_then(Value::as_str) == Some(*val));
        if matches {
            let text = requested_text(&state, &caller, &access, &v.schema, &params).await?;
            let answer = ok(version_view(&v, text));
            return Ok(state
                .answer_read(&principal, &access, version_read(&v), answer)
                .await);
        }
    }
    Err(RegistryError::SchemaNotFound.into())
}

pub async fn delete_subject(
    State(state): State<AppState>,
    Audited(audit): Audited,
    access: Access,
    SafePath(subject): SafePath<String>,
    params: Params,
) -> ApiResult {
    let subject = changed(&state, &access, subject, Operation::Delete).await?;
    let versions = state
        .registry
        .delete_subject(&subject, params.flag("permanent"), Some(&audit))
        .await?;
    state.signals.invalidate();
    Ok(ok(json!(versions)))
}

pub async fn delete_version(
    State(state): State<AppState>,
    Audited(audit): Audited,
    access: Access,
    SafePath((subject, version)): SafePath<(String, String)>,
    params: Params,
) -> ApiResult {
    let subject = changed(&state, &access, subject, Operation::Delete).await?;
    let spec = version_spec(&version)?;
    let v = state
        .registry
        .delete_version(&subject, spec, params.flag("permanent"), Some(&audit))
        .await?;
    state.signals.invalidate();
    Ok(ok(json!(v)))
}

// ----- /compatibility --------------------------------------------------------------------

async fn compatibility(
    state: &AppState,
    caller: &Caller,
    access: &Access,
    subject: &str,
    against: Option<VersionSpec>,
    params: &Params,
    body: SchemaBody,
) -> ApiResult {
    let subject = &followed(state, access, subject.to_string()).await?;
    ensure_references_readable(state, caller, access, &body).await?;
    let verbose = params.flag("verbose");
    let request = body.into_request()?;
    match state
        .registry
        .test_compatibility(subject, against, &request, params.flag("normalize"))
        .await
    {
        Ok(report) => {
            let mut m = Map::new();
            m.insert("is_compatible".into(), json!(report.compatible));
            if verbose {
                let messages: Vec<String> = report.errors().map(finding_text).collect();
                m.insert("messages".into(), json!(messages));
                // Every finding, warnings and info included, in the CLI's JSON shape (left
                // out when empty, like Confluent's other optional fields).
                if !report.findings.is_empty() {
                    m.insert("findings".into(), json!(report.findings));
                }
            }
            Ok(ok(Value::Object(m)))
        }
        Err(RegistryError::InvalidSchema(message)) if verbose => {
            Ok(ok(json!({"is_compatible": false, "messages": [message]})))
        }
        Err(e) => Err(e.into()),
    }
}

/// `POST /covenant/v1/subjects/{subject}/check`: what registering the body would do, judged by
/// the registration's own steps (mode, data contracts, the verdict with its approvals, the
/// removal gate) without writing anything; a Covenant extension that, like a compatibility
/// test, needs only `Read`. The answer has the compatibility test's shape: `is_compatible`,
/// `messages` and `findings`, the removal gate's `blockers` when it refuses, and otherwise what
/// the registration would do (`existingVersion`, `removes`, `approvals`).
pub async fn check_registration(
    State(state): State<AppState>,
    caller: Caller,
    access: Access,
    SafePath(subject): SafePath<String>,
    params: Params,
    ConfluentJson(body): ConfluentJson<SchemaBody>,
) -> ApiResult {
    let subject = followed(&state, &access, subject).await?;
    ensure_references_readable(&state, &caller, &access, &body).await?;
    let request = body.into_request()?;
    let judged = state
        .registry
        .judge_registration(&subject, request, params.flag("normalize"))
        .await;
    let answer = match judged {
        Ok(would) => {
            let mut answer = json!({"is_compatible": true, "messages": [], "findings": []});
            if let (Value::Object(m), Ok(Value::Object(w))) =
                (&mut answer, serde_json::to_value(&would))
            {
                m.extend(w);
            }
            answer
        }
        Err(RegistryError::Incompatible { findings, .. }) => {
            let messages: Vec<String> = findings.iter().map(finding_text).collect();
            json!({"is_compatible": false, "messages": messages, "findings": findings})
        }
        Err(RegistryError::RemovalBlocked { blockers, .. }) => {
            let lines: Vec<&str> = blockers.lines().filter(|l| !l.trim().is_empty()).collect();
            json!({"is_compatible": false, "messages": lines, "findings": [], "blockers": lines})
        }
        Err(e) => return Err(e.into()),
    };
    Ok(ok(answer))
}

pub async fn compatibility_all(
    State(state): State<AppState>,
    caller: Caller,
    access: Access,
    SafePath(subject): SafePath<String>,
    params: Params,
    ConfluentJson(body): ConfluentJson<SchemaBody>,
) -> ApiResult {
    compatibility(&state, &caller, &access, &subject, None, &params, body).await
}

pub async fn compatibility_version(
    State(state): State<AppState>,
    caller: Caller,
    access: Access,
    SafePath((subject, version)): SafePath<(String, String)>,
    params: Params,
    ConfluentJson(body): ConfluentJson<SchemaBody>,
) -> ApiResult {
    let spec = version_spec(&version)?;
    compatibility(
        &state,
        &caller,
        &access,
        &subject,
        Some(spec),
        &params,
        body,
    )
    .await
}

// ----- /config and /mode -----------------------------------------------------------------

/// Config keys accepted besides the level; everything else in a body is ignored.
const CONFIG_KEYS: &[&str] = &[
    "normalize",
    "validateFields",
    "validateNewSchemas",
    "validateRules",
    "compatibilityGroup",
    "compatibilityPolicy",
    "compatibilityScope",
    "semanticRules",
    "policyPreset",
    "profileThresholds",
    "protobufStrictness",
    "alias",
    "defaultMetadata",
    "overrideMetadata",
    "defaultRuleSet",
    "overrideRuleSet",
];

fn config_update(body: Map<String, Value>) -> ConfigUpdate {
    let compatibility = body
        .get("compatibility")
        .or_else(|| body.get("compatibilityLevel"))
        .cloned();
    let extra = body
        .into_iter()
        .filter(|(k, _)| CONFIG_KEYS.contains(&k.as_str()))
        .collect();
    ConfigUpdate {
        compatibility,
        extra,
    }
}

/// The global config (`subject` `None`) or a subject's, as read, written or cleared.
async fn show_config(
    state: &AppState,
    subject: Option<&str>,
    default_to_global: bool,
) -> ApiResult {
    let c = state.registry.config(subject, default_to_global).await?;
    let mut view = config_view(&c);
    // Covenant's extension: the policy preset in force here, set or inherited.
    let preset = state.registry.policy_preset(subject).await?;
    if let Value::Object(m) = &mut view {
        m.insert("policyPreset".into(), json!(preset.as_str()));
    }
    Ok(ok(view))
}

async fn update_config(
    state: &AppState,
    audit: &AuditContext,
    subject: Option<&str>,
    body: Map<String, Value>,
) -> ApiResult {
    let c = state
        .registry
        .set_config(subject, config_update(body), Some(audit))
        .await?;
    Ok(ok(config_update_view(&c)))
}

async fn clear_config(state: &AppState, audit: &AuditContext, subject: Option<&str>) -> ApiResult {
    let c = state.registry.delete_config(subject, Some(audit)).await?;
    Ok(ok(config_view(&c)))
}

pub async fn get_config(State(state): State<AppState>, params: Params) -> ApiResult {
    let _ = params;
    show_config(&state, None, true).await
}

pub async fn put_config(
    State(state): State<AppState>,
    Audited(audit): Audited,
    ConfluentJson(body): ConfluentJson<Map<String, Value>>,
) -> ApiResult {
    update_config(&state, &audit, None, body).await
}

pub async fn delete_config(State(state): State<AppState>, Audited(audit): Audited) -> ApiResult {
    clear_config(&state, &audit, None).await
}

pub async fn get_subject_config(
    State(state): State<AppState>,
    SafePath(subject): SafePath<String>,
    params: Params,
) -> ApiResult {
    show_config(&state, Some(&subject), params.flag("defaultToGlobal")).await
}

pub async fn put_subject_config(
    State(state): State<AppState>,
    Audited(audit): Audited,
    SafePath(subject): SafePath<String>,
    ConfluentJson(body): ConfluentJson<Map<String, Value>>,
) -> ApiResult {
    update_config(&state, &audit, Some(&subject), body).await
}

pub async fn delete_subject_config(
    State(state): State<AppState>,
    Audited(audit): Audited,
    SafePath(subject): SafePath<String>,
) -> ApiResult {
    clear_config(&state, &audit, Some(&subject)).await
}

#[derive(Debug, Deserialize)]
pub struct ModeBody {
    mode: String,
}

/// Sets the global mode (`subject` `None`) or a subject's. IMPORT lets a caller choose ids
/// and versions, so it needs `Admin` where it is set (on the registry for the global or a
/// context's mode), not only `Write` or `Configure`.
async fn update_mode(
    state: &AppState,
    audit: &AuditContext,
    caller: &Caller,
    access: &Access,
    subject: Option<&str>,
    params: &Params,
    body: ModeBody,
) -> ApiResult {
    {
        let resource = match subject {
            Some(s) if !covenant_store::context::is_context_only(s) => {
                Resource::Subject(s.to_string())
            }
            _ => Resource::Global,
        };
        if body.mode.trim().eq_ignore_ascii_case("IMPORT")
            && !access.allows(Operation::Admin, &resource)
        {
            let refusal = HandlerRefusal::denied(Operation::Admin, resource);
            return Err(caller.refuse(state, refusal).await);
        }
    }
    let m = state
        .registry
        .set_mode(subject, &body.mode, params.flag("force"), Some(audit))
        .await?;
    Ok(ok(mode_view(m)))
}

pub async fn get_mode(State(state): State<AppState>) -> ApiResult {
    Ok(ok(mode_view(state.registry.mode(None, true).await?)))
}

pub async fn put_mode(
    State(state): State<AppState>,
    Audited(audit): Audited,
    caller: Caller,
    access: Access,
    params: Params,
    ConfluentJson(body): ConfluentJson<ModeBody>,
) -> ApiResult {
    update_mode(&state, &audit, &caller, &access, None, &params, body).await
}

pub async fn delete_mode(State(state): State<AppState>, Audited(audit): Audited) -> ApiResult {
    Ok(ok(mode_view(
        state.registry.delete_mode(None, Some(&audit)).await?,
    )))
}

pub async fn get_subject_mode(
    State(state): State<AppState>,
    SafePath(subject): SafePath<String>,
    params: Params,
) -> ApiResult {
    let m = state
        .registry
        .mode(Some(&subject), params.flag("defaultToGlobal"))
        .await?;
    Ok(ok(mode_view(m)))
}

pub async fn put_subject_mode(
    State(state): State<AppState>,
    Audited(audit): Audited,
    caller: Caller,
    access: Access,
    SafePath(subject): SafePath<String>,
    params: Params,
    ConfluentJson(body): ConfluentJson<ModeBody>,
) -> ApiResult {
    update_mode(
        &state,
        &audit,
        &caller,
        &access,
        Some(&subject),
        &params,
        body,
    )
    .await
}

pub async fn delete_subject_mode(
    State(state): State<AppState>,
    Audited(audit): Audited,
    SafePath(subject): SafePath<String>,
) -> ApiResult {
    Ok(ok(mode_view(
        state
            .registry
            .delete_mode(Some(&subject), Some(&audit))
            .await?,
    )))
}

// ----- operations ------------------------------------------------------------------------

pub async fn metrics(State(state): State<AppState>, access: Access) -> Response {
    if let Ok(counts) = state.registry.schema_counts().await {
        for t in ["AVRO", "JSON", "PROTOBUF", "ICEBERG"] {
            let n = counts
                .iter()
                .find(|(k, _)| k == t)
                .map(|(_, n)| *n)
                .unwrap_or(0);
            metrics::gauge!("covenant_schemas", "type" => t).set(n as f64);
        }
    }
    // Walks that ran outside any budget: a defect, which an operator alerts on.
    metrics::counter!("covenant_unbudgeted_walks_total")
        .absolute(covenant_engine::budget::unbudgeted_walks());
    let mut text = crate::metrics_view::filter(&state.metrics.render(), &access);
    text.push_str(&crate::profile_routes::population_gauges(&state, &access).await);
    let mut r = (StatusCode::OK, text).into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4"),
    );
    r
}

pub async fn openapi() -> Response {
    ok(crate::openapi::document())
}
