//! Confluent's `/exporters` (Schema Linking): replication of subjects to another registry,
//! run by `covenant serve` (see `covenant_exporter`). Everything but the list and the status
//! needs `Admin` on the registry, and an exporter runs with the rights of the principal that
//! created it (see [`crate::exporter_authority`]). Credentials never leave the server: the
//! specification and config answer them as `[hidden]`, and sending `[hidden]` back keeps
//! the stored value.

use crate::AppState;
use crate::audit::Audited;
use crate::error::ApiError;
use crate::extract::{ConfluentJson, SafePath};
use crate::handlers::ok;
use crate::principal::Principal;
use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use covenant_exporter::{ExporterError, Exporters};
use serde_json::{Map, Value, json};
use std::sync::Arc;

type ApiResult = Result<Response, ApiError>;

/// `(method, path, summary)` of every route here: the routes served (`ROUTES`) and the OpenAPI document.
pub const OPERATIONS: &[(&str, &str, &str)] = &[
    ("GET", "/exporters", "The exporters' names."),
    (
        "POST",
        "/exporters",
        "Creates an exporter: name, subjects (patterns with *), contextType (AUTO, CUSTOM, NONE), context, subjectRenameFormat, kekRenameFormat (the KEKs of the DEK Registry keys copied with the subjects), config (schema.registry.url and its credentials; covenant.export.keys false copies no keys).",
    ),
    (
        "GET",
        "/exporters/{name}",
        "An exporter's specification, credentials hidden.",
    ),
    (
        "PUT",
        "/exporters/{name}",
        "Changes a paused exporter's specification (the given fields).",
    ),
    ("DELETE", "/exporters/{name}", "Deletes an exporter."),
    (
        "GET",
        "/exporters/{name}/config",
        "An exporter's destination config, credentials hidden.",
    ),
    (
        "PUT",
        "/exporters/{name}/config",
        "Merges keys into a paused exporter's destination config ([hidden] keeps a stored credential).",
    ),
    ("PUT", "/exporters/{name}/pause", "Pauses an exporter."),
    (
        "PUT",
        "/exporters/{name}/resume",
        "Resumes a paused exporter.",
    ),
    (
        "PUT",
        "/exporters/{name}/reset",
        "Forgets an exporter's progress: everything is copied again (what the destination holds is skipped).",
    ),
    (
        "GET",
        "/exporters/{name}/status",
        "State, offset (the last change copied), lag (changes not copied yet), time and the last error or the count of subjects skipped for authorization.",
    ),
];

impl From<ExporterError> for ApiError {
    fn from(e: ExporterError) -> ApiError {
        ApiError::new(e.error_code(), e.to_string())
    }
}

fn exporters(state: &AppState) -> Result<&Arc<Exporters>, ApiError> {
    state
        .exporters
        .as_ref()
        .ok_or_else(|| ApiError::new(50303, "Exporters are not enabled on this server"))
}

fn named(name: String) -> Response {
    ok(json!({ "name": name }))
}

pub async fn list(State(state): State<AppState>) -> ApiResult {
    Ok(ok(json!(exporters(&state)?.names().await?)))
}

/// The exporter records its creator; the exporters check the creator's own Admin grant
/// again (through their authority), whatever the route's guard let through.
pub async fn create(
    State(state): State<AppState>,
    principal: Principal,
    Audited(audit): Audited,
    ConfluentJson(body): ConfluentJson<Map<String, Value>>,
) -> ApiResult {
    let creator = crate::exporter_authority::creator_of(&principal);
    Ok(named(
        exporters(&state)?.create(&body, &creator, &audit).await?,
    ))
}

pub async fn info(State(state): State<AppState>, SafePath(name): SafePath<String>) -> ApiResult {
    let spec = exporters(&state)?.info(&name).await?;
    Ok(ok(serde_json::to_value(spec).unwrap_or(Value::Null)))
}

pub async fn update(
    State(state): State<AppState>,
    Audited(audit): Audited,
    SafePath(name): SafePath<String>,
    ConfluentJson(body): ConfluentJson<Map<String, Value>>,
) -> ApiResult {
    Ok(named(
        exporters(&state)?.update(&name, &body, &audit).await?,
    ))
}

pub async fn delete(
    State(state): State<AppState>,
    Audited(audit): Audited,
    SafePath(name): SafePath<String>,
) -> ApiResult {
    exporters(&state)?.delete(&name, &audit).await?;
    Ok(StatusCode::OK.into_response())
}

pub async fn config(State(state): State<AppState>, SafePath(name): SafePath<String>) -> ApiResult {
    let spec = exporters(&state)?.info(&name).await?;
    Ok(ok(json!(spec.config)))
}

pub async fn update_config(
    State(state): State<AppState>,
    Audited(audit): Audited,
    SafePath(name): SafePath<String>,
    ConfluentJson(body): ConfluentJson<Value>,
) -> ApiResult {
    let exporters = exporters(&state)?;
    Ok(named(exporters.update_config(&name, &body, &audit).await?))
}

pub async fn pause(
    State(state): State<AppState>,
    Audited(audit): Audited,
    SafePath(name): SafePath<String>,
) -> ApiResult {
    Ok(named(exporters(&state)?.pause(&name, &audit).await?))
}

pub async fn resume(
    State(state): State<AppState>,
    Audited(audit): Audited,
    SafePath(name): SafePath<String>,
) -> ApiResult {
    Ok(named(exporters(&state)?.resume(&name, &audit).await?))
}

pub async fn reset(
    State(state): State<AppState>,
    Audited(audit): Audited,
    SafePath(name): SafePath<String>,
) -> ApiResult {
    Ok(named(exporters(&state)?.reset(&name, &audit).await?))
}

pub async fn status(State(state): State<AppState>, SafePath(name): SafePath<String>) -> ApiResult {
    let status = exporters(&state)?.status(&name).await?;
    Ok(ok(serde_json::to_value(status).unwrap_or(Value::Null)))
}
