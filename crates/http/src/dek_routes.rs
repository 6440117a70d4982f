//! Confluent's DEK Registry (`/dek-registry/v1`): the key store behind client-side field-level
//! encryption (see `covenant_registry::deks`). KEKs are resources of their own (`Kek:<name>`
//! in the auth file); a DEK is reached only by a caller allowed on both its KEK and its
//! subject, which the authorization layer decides for every route naming both. Listings
//! answer only what the caller may read. Key material never reaches a log: audit entries
//! name the KEK, subject, version and algorithm, never the body.

use crate::AppState;
use crate::audit::{Audited, Caller, HandlerRefusal};
use crate::auth::{Access, Operation, Resource};
use crate::error::ApiError;
use crate::extract::{ConfluentJson, Params, SafePath};
use crate::handlers::ok;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use covenant_registry::deks::{DekError, DekRegistry, KekUpdate, NewDek, NewKek};
use covenant_store::AuditTarget;
use covenant_store::deks::{Dek, Kek};
use serde_json::{Map, Value, json};
use std::collections::BTreeMap;

type ApiResult = Result<Response, ApiError>;

const KEKS: &str = "/dek-registry/v1/keks";

/// `(method, path, summary)` of every route here: the routes served (`ROUTES`) and the OpenAPI document.
pub const OPERATIONS: &[(&str, &str, &str)] = &[
    (
        "GET",
        "/dek-registry/v1/keks",
        "The names of the KEKs the caller may read (deleted=true includes soft-deleted ones).",
    ),
    (
        "POST",
        "/dek-registry/v1/keks",
        "Creates a KEK: name, kmsType, kmsKeyId, kmsProps, doc; shared is refused (no KMS driver).",
    ),
    (
        "GET",
        "/dek-registry/v1/keks/{name}",
        "A KEK (deleted=true finds a soft-deleted one).",
    ),
    (
        "PUT",
        "/dek-registry/v1/keks/{name}",
        "Changes a KEK's kmsProps or doc.",
    ),
    (
        "DELETE",
        "/dek-registry/v1/keks/{name}",
        "Soft-deletes a KEK without live DEKs, or (permanent=true) removes a soft-deleted one without DEKs.",
    ),
    (
        "POST",
        "/dek-registry/v1/keks/{name}/undelete",
        "Undeletes a soft-deleted KEK.",
    ),
    (
        "POST",
        "/dek-registry/v1/keks/{name}/test",
        "Tests a shared KEK's KMS; this registry holds no shared KEK, so a KEK that exists answers 42271 (shared).",
    ),
    (
        "GET",
        "/dek-registry/v1/keks/{name}/deks",
        "The subjects with DEKs under a KEK that the caller may read.",
    ),
    (
        "POST",
        "/dek-registry/v1/keks/{name}/deks",
        "Creates a DEK (the subject in the body; the older form of the route below).",
    ),
    (
        "POST",
        "/dek-registry/v1/keks/{name}/deks/{subject}",
        "Creates a DEK: version (default 1), algorithm (AES256_GCM, AES128_GCM, AES256_SIV), encryptedKeyMaterial.",
    ),
    (
        "GET",
        "/dek-registry/v1/keks/{name}/deks/{subject}",
        "The latest DEK of a subject (algorithm=, deleted=).",
    ),
    (
        "DELETE",
        "/dek-registry/v1/keks/{name}/deks/{subject}",
        "Soft-deletes every version of a subject's DEK, or (permanent=true) removes them once soft-deleted.",
    ),
    (
        "POST",
        "/dek-registry/v1/keks/{name}/deks/{subject}/undelete",
        "Undeletes every soft-deleted version of a subject's DEK.",
    ),
    (
        "GET",
        "/dek-registry/v1/keks/{name}/deks/{subject}/versions",
        "The versions of a subject's DEK (algorithm=, deleted=).",
    ),
    (
        "GET",
        "/dek-registry/v1/keks/{name}/deks/{subject}/versions/{version}",
        "One version of a subject's DEK (-1 or latest: the latest).",
    ),
    (
        "DELETE",
        "/dek-registry/v1/keks/{name}/deks/{subject}/versions/{version}",
        "Soft-deletes one version of a DEK, or (permanent=true) removes it once soft-deleted.",
    ),
    (
        "POST",
        "/dek-registry/v1/keks/{name}/deks/{subject}/versions/{version}/undelete",
        "Undeletes one soft-deleted version of a DEK.",
    ),
];

impl From<DekError> for ApiError {
    fn from(e: DekError) -> ApiError {
        ApiError::new(e.error_code(), e.to_string())
    }
}

fn deks(state: &AppState) -> Result<&DekRegistry, ApiError> {
    Ok(state.registry.deks()?)
}

fn kek_view(k: &Kek) -> Value {
    let mut v = json!({
        "name": k.name,
        "kmsType": k.kms_type,
        "kmsKeyId": k.kms_key_id,
        "kmsProps": k.kms_props,
        "shared": k.shared,
        "ts": k.ts,
        "deleted": k.deleted,
    });
    if let Some(doc) = &k.doc {
        v["doc"] = json!(doc);
    }
    v
}

fn dek_view(d: &Dek) -> Value {
    let mut v = json!({
        "kekName": d.kek_name,
        "subject": d.subject,
        "version": d.version,
        "algorithm": d.algorithm,
        "ts": d.ts,
        "deleted": d.deleted,
    });
    if let Some(m) = &d.encrypted_key_material {
        v["encryptedKeyMaterial"] = json!(m);
    }
    if let Some(m) = &d.key_material {
        v["keyMaterial"] = json!(m);
    }
    v
}

fn invalid(field: &str) -> ApiError {
    DekError::InvalidKey(field.to_string()).into()
}

/// A string field: absent or null is `None`, anything but a string is 42271.
fn text(body: &Map<String, Value>, field: &str) -> Result<Option<String>, ApiError> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(invalid(field)),
    }
}

fn flag(body: &Map<String, Value>, field: &str) -> Result<Option<bool>, ApiError> {
    match body.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Bool(b)) => Ok(Some(*b)),
        Some(_) => Err(invalid(field)),
    }
}

fn props(body: &Map<String, Value>) -> Result<Option<BTreeMap<String, String>>, ApiError> {
    match body.get("kmsProps") {
        None | Some(Value::Null) => Ok(None),
        Some(Value::Object(m)) => m
            .iter()
            .map(|(k, v)| match v {
                Value::String(s) => Ok((k.clone(), s.clone())),
                _ => Err(invalid("kmsProps")),
            })
            .collect::<Result<_, _>>()
            .map(Some),
        Some(_) => Err(invalid("kmsProps")),
    }
}

/// A DEK version in a path: a number, or `latest` (Confluent's `-1`).
fn version(text: &str) -> Result<Option<i64>, ApiError> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("latest") {
        return Ok(None);
    }
    match text.parse::<i64>() {
        Ok(-1) => Ok(None),
        Ok(v) if v >= 1 => Ok(Some(v)),
        _ => Err(invalid("version")),
    }
}

fn no_content() -> Response {
    StatusCode::NO_CONTENT.into_response()
}

/// The audit target of a key write: the DEK's subject (when it has one) and, in the detail,
/// the KEK and what of the DEK was addressed.
fn target(kek: &str, subject: Option<&str>, what: Option<String>) -> AuditTarget {
    let detail = match what {
        Some(w) => format!("KEK {kek}, {w}"),
        None => format!("KEK {kek}"),
    };
    AuditTarget {
        subject: subject.map(str::to_string),
        detail: Some(detail),
        ..AuditTarget::default()
    }
}

fn dek_what(version: Option<i64>, algorithm: Option<&str>) -> String {
    let algorithm = covenant_registry::deks::algorithm(algorithm).unwrap_or("?");
    match version {
        Some(v) => format!("DEK version {v} {algorithm}"),
        None => format!("every DEK version {algorithm}"),
    }
}

/// Refuses a write whose KEK or subject is named only in the body, through the trail.
async fn check_named(
    state: &AppState,
    caller: &Caller,
    access: &Access,
    operation: Operation,
    resource: Resource,
) -> Result<(), ApiError> {
    if access.allows(operation, &resource) {
        return Ok(());
    }
    Err(caller
        .refuse(state, HandlerRefusal::denied(operation, resource))
        .await)
}

/// Confluent's paging of a listing, applied after what the caller may not see is left out:
/// `offset` entries skipped, at most `limit` answered (none, or not above 0: all).
fn page<T>(items: Vec<T>, params: &Params) -> Vec<T> {
    let offset = params
        .int("offset")
        .map_or(0, |o| usize::try_from(o).unwrap_or(0));
    let limit = params
        .int("limit")
        .and_then(|l| usize::try_from(l).ok())
        .filter(|l| *l > 0)
        .unwrap_or(usize::MAX);
    items.into_iter().skip(offset).take(limit).collect()
}

/// `GET /keks`: the KEKs the caller may read; with `subjectPrefix` (repeatable) only those
/// with a DEK for a subject, readable by the caller, that starts with one of the prefixes.
pub async fn list_keks(State(state): State<AppState>, access: Access, params: Params) -> ApiResult {
    let deleted = params.flag("deleted");
    let prefixes = params.all("subjectPrefix");
    let names = if prefixes.is_empty() {
        deks(&state)?.kek_names(deleted).await?
    } else {
        deks(&state)?
            .kek_names_for_subjects(&prefixes, deleted, |s| access.can_read(s))
            .await?
    };
    let readable: Vec<String> = names
        .into_iter()
        .filter(|n| access.allows(Operation::Read, &Resource::Kek(n.clone())))
        .collect();
    Ok(ok(json!(page(readable, &params))))
}

pub async fn create_kek(
    State(state): State<AppState>,
    caller: Caller,
    access: Access,
    Audited(context): Audited,
    ConfluentJson(body): ConfluentJson<Map<String, Value>>,
) -> ApiResult {
    let name = text(&body, "name")?;
    if let Some(n) = &name {
        covenant_registry::deks::check_name(n)?;
        check_named(
            &state,
            &caller,
            &access,
            Operation::Write,
            Resource::Kek(n.clone()),
        )
        .await?;
    }
    let request = NewKek {
        name: name.clone(),
        kms_type: text(&body, "kmsType")?,
        kms_key_id: text(&body, "kmsKeyId")?,
        kms_props: props(&body)?.unwrap_or_default(),
        doc: text(&body, "doc")?,
        shared: flag(&body, "shared")?.unwrap_or(false),
    };
    let entry = context.entry(
        "kek.create",
        target(name.as_deref().unwrap_or(""), None, None),
    );
    let kek = deks(&state)?.create_kek(request, Some(&entry)).await?;
    Ok(ok(kek_view(&kek)))
}

pub async fn get_kek(
    State(state): State<AppState>,
    SafePath(name): SafePath<String>,
    params: Params,
) -> ApiResult {
    let kek = deks(&state)?.kek(&name, params.flag("deleted")).await?;
    Ok(ok(kek_view(&kek)))
}

pub async fn update_kek(
    State(state): State<AppState>,
    Audited(context): Audited,
    SafePath(name): SafePath<String>,
    ConfluentJson(body): ConfluentJson<Map<String, Value>>,
) -> ApiResult {
    let update = KekUpdate {
        kms_props: match body.get("kmsProps") {
            Some(Value::Null) => Some(BTreeMap::new()),
            _ => props(&body)?,
        },
        doc: match body.get("doc") {
            None => None,
            Some(_) => Some(text(&body, "doc")?),
        },
        shared: flag(&body, "shared")?,
    };
    let entry = context.entry("kek.update", target(&name, None, None));
    let kek = deks(&state)?
        .update_kek(&name, update, Some(&entry))
        .await?;
    Ok(ok(kek_view(&kek)))
}

pub async fn delete_kek(
    State(state): State<AppState>,
    Audited(context): Audited,
    SafePath(name): SafePath<String>,
    params: Params,
) -> ApiResult {
    let permanent = params.flag("permanent");
    let operation = if permanent {
        "kek.delete.permanent"
    } else {
        "kek.delete"
    };
    let entry = context.entry(operation, target(&name, None, None));
    deks(&state)?
        .delete_kek(&name, permanent, Some(&entry))
        .await?;
    Ok(no_content())
}

pub async fn undelete_kek(
    State(state): State<AppState>,
    Audited(context): Audited,
    SafePath(name): SafePath<String>,
) -> ApiResult {
    let entry = context.entry("kek.undelete", target(&name, None, None));
    deks(&state)?.undelete_kek(&name, Some(&entry)).await?;
    Ok(no_content())
}

/// `POST /keks/{name}/test` (see [`DekRegistry::test_kek`]).
pub async fn test_kek(
    State(state): State<AppState>,
    SafePath(name): SafePath<String>,
) -> ApiResult {
    let kek = deks(&state)?.test_kek(&name).await?;
    Ok(ok(kek_view(&kek)))
}

pub async fn list_dek_subjects(
    State(state): State<AppState>,
    access: Access,
    SafePath(name): SafePath<String>,
    params: Params,
) -> ApiResult {
    let subjects = deks(&state)?
        .dek_subjects(&name, params.flag("deleted"))
        .await?;
    let readable: Vec<String> = subjects
        .into_iter()
        .filter(|s| access.can_read(s))
        .collect();
    Ok(ok(json!(page(readable, &params))))
}

async fn create(
    state: &AppState,
    context: &covenant_store::AuditContext,
    name: &str,
    subject: String,
    body: &Map<String, Value>,
    rewrap: bool,
) -> ApiResult {
    let version = match body.get("version") {
        None | Some(Value::Null) => None,
        Some(v) => Some(v.as_i64().ok_or_else(|| invalid("version"))?),
    };
    let algorithm = text(body, "algorithm")?;
    let entry = context.entry(
        "dek.create",
        target(
            name,
            Some(&subject),
            Some(dek_what(Some(version.unwrap_or(1)), algorithm.as_deref())),
        ),
    );
    let request = NewDek {
        subject: Some(subject),
        version,
        algorithm,
        encrypted_key_material: text(body, "encryptedKeyMaterial")?,
        deleted: flag(body, "deleted")?.unwrap_or(false),
        rewrap,
    };
    let dek = deks(state)?.create_dek(name, request, Some(&entry)).await?;
    Ok(ok(dek_view(&dek)))
}

/// The older route, with the subject only in the body: the layer has checked the KEK, the
/// handler checks the subject.
pub async fn create_dek_named_in_body(
    State(state): State<AppState>,
    caller: Caller,
    access: Access,
    Audited(context): Audited,
    SafePath(name): SafePath<String>,
    ConfluentJson(body): ConfluentJson<Map<String, Value>>,
) -> ApiResult {
    let subject = text(&body, "subject")?.ok_or_else(|| invalid("subject"))?;
    covenant_registry::deks::check_subject(&subject)?;
    let resource = Resource::Subject(subject.clone());
    check_named(&state, &caller, &access, Operation::Write, resource).await?;
    create(&state, &context, &name, subject, &body, false).await
}

/// `POST /keks/{name}/deks/{subject}`; `rewrap=true` replaces a held DEK's encrypted material.
pub async fn create_dek(
    State(state): State<AppState>,
    Audited(context): Audited,
    SafePath((name, subject)): SafePath<(String, String)>,
    params: Params,
    ConfluentJson(mut body): ConfluentJson<Map<String, Value>>,
) -> ApiResult {
    // The path names the subject; a different one in the body is not what was authorized.
    if text(&body, "subject")?.is_some_and(|s| s != subject) {
        return Err(invalid("subject"));
    }
    body.remove("subject");
    let rewrap = params.flag("rewrap");
    create(&state, &context, &name, subject, &body, rewrap).await
}

pub async fn get_latest_dek(
    State(state): State<AppState>,
    SafePath((name, subject)): SafePath<(String, String)>,
    params: Params,
) -> ApiResult {
    let dek = deks(&state)?
        .dek(
            &name,
            &subject,
            None,
            params.get("algorithm"),
            params.flag("deleted"),
        )
        .await?;
    Ok(ok(dek_view(&dek)))
}

pub async fn get_dek_version(
    State(state): State<AppState>,
    SafePath((name, subject, v)): SafePath<(String, String, String)>,
    params: Params,
) -> ApiResult {
    let dek = deks(&state)?
        .dek(
            &name,
            &subject,
            version(&v)?,
            params.get("algorithm"),
            params.flag("deleted"),
        )
        .await?;
    Ok(ok(dek_view(&dek)))
}

pub async fn dek_versions(
    State(state): State<AppState>,
    SafePath((name, subject)): SafePath<(String, String)>,
    params: Params,
) -> ApiResult {
    let versions = deks(&state)?
        .dek_versions(
            &name,
            &subject,
            params.get("algorithm"),
            params.flag("deleted"),
        )
        .await?;
    Ok(ok(json!(page(versions, &params))))
}

async fn delete(
    state: &AppState,
    context: &covenant_store::AuditContext,
    (name, subject, version): (&str, &str, Option<i64>),
    params: &Params,
) -> ApiResult {
    let permanent = params.flag("permanent");
    let algorithm = params.get("algorithm");
    let operation = if permanent {
        "dek.delete.permanent"
    } else {
        "dek.delete"
    };
    let entry = context.entry(
        operation,
        target(name, Some(subject), Some(dek_what(version, algorithm))),
    );
    deks(state)?
        .delete_deks(name, subject, version, algorithm, permanent, Some(&entry))
        .await?;
    Ok(no_content())
}

async fn undelete(
    state: &AppState,
    context: &covenant_store::AuditContext,
    (name, subject, version): (&str, &str, Option<i64>),
    params: &Params,
) -> ApiResult {
    let algorithm = params.get("algorithm");
    let entry = context.entry(
        "dek.undelete",
        target(name, Some(subject), Some(dek_what(version, algorithm))),
    );
    deks(state)?
        .undelete_deks(name, subject, version, algorithm, Some(&entry))
        .await?;
    Ok(no_content())
}

pub async fn delete_deks(
    State(state): State<AppState>,
    Audited(context): Audited,
    SafePath((name, subject)): SafePath<(String, String)>,
    params: Params,
) -> ApiResult {
    delete(&state, &context, (&name, &subject, None), &params).await
}

pub async fn delete_dek_version(
    State(state): State<AppState>,
    Audited(context): Audited,
    SafePath((name, subject, v)): SafePath<(String, String, String)>,
    params: Params,
) -> ApiResult {
    let v = version(&v)?.ok_or_else(|| invalid("version"))?;
    delete(&state, &context, (&name, &subject, Some(v)), &params).await
}

pub async fn undelete_deks(
    State(state): State<AppState>,
    Audited(context): Audited,
    SafePath((name, subject)): SafePath<(String, String)>,
    params: Params,
) -> ApiResult {
    undelete(&state, &context, (&name, &subject, None), &params).await
}

pub async fn undelete_dek_version(
    State(state): State<AppState>,
    Audited(context): Audited,
    SafePath((name, subject, v)): SafePath<(String, String, String)>,
    params: Params,
) -> ApiResult {
    let v = version(&v)?.ok_or_else(|| invalid("version"))?;
    undelete(&state, &context, (&name, &subject, Some(v)), &params).await
}

/// The DEK Registry's routes.
pub fn router() -> axum::Router<AppState> {
    use axum::routing::{get, post};
    let dek = format!("{KEKS}/{{name}}/deks/{{subject}}");
    axum::Router::new()
        .route(KEKS, get(list_keks).post(create_kek))
        .route(
            &format!("{KEKS}/{{name}}"),
            get(get_kek).put(update_kek).delete(delete_kek),
        )
        .route(&format!("{KEKS}/{{name}}/undelete"), post(undelete_kek))
        .route(&format!("{KEKS}/{{name}}/test"), post(test_kek))
        .route(
            &format!("{KEKS}/{{name}}/deks"),
            get(list_dek_subjects).post(create_dek_named_in_body),
        )
        .route(
            &dek,
            get(get_latest_dek).post(create_dek).delete(delete_deks),
        )
        .route(&format!("{dek}/undelete"), post(undelete_deks))
        .route(&format!("{dek}/versions"), get(dek_versions))
        .route(
            &format!("{dek}/versions/{{version}}"),
            get(get_dek_version).delete(delete_dek_version),
        )
        .route(
            &format!("{dek}/versions/{{version}}/undelete"),
            post(undelete_dek_version),
        )
}
