//! Covenant's own routes for evolution policy, under `/covenant/v1`: rollout plans, stored
//! sample payloads (replayed on every check) and explicit live marks for `live` scopes.

use crate::AppState;
use crate::audit::AuditedWrite;
use crate::error::ApiError;
use crate::extract::{ConfluentJson, Params, SafePath};
use crate::handlers::{SchemaBody, ok};
use axum::extract::State;
use axum::response::Response;
use base64::Engine;
use covenant_registry::{SampleRecord, VersionSpec};
use serde::Deserialize;
use serde_json::{Map, Value, json};

type ApiResult = Result<Response, ApiError>;

/// `(method, path, summary)` of every route here: the routes served (`ROUTES`) and the OpenAPI document.
pub const OPERATIONS: &[(&str, &str, &str)] = &[
    (
        "POST",
        "/covenant/v1/subjects/{subject}/plan",
        "The rollout plan for replacing the latest version with the schema in the body.",
    ),
    (
        "GET",
        "/covenant/v1/subjects/{subject}/samples",
        "Every stored sample of a subject (payloads with includePayload=true).",
    ),
    (
        "GET",
        "/covenant/v1/subjects/{subject}/versions/{version}/samples",
        "The samples stored for one version.",
    ),
    (
        "POST",
        "/covenant/v1/subjects/{subject}/versions/{version}/samples",
        "Stores a sample payload (base64) of a version; it must decode with that version.",
    ),
    (
        "DELETE",
        "/covenant/v1/subjects/{subject}/versions/{version}/samples",
        "Removes every sample of a version.",
    ),
    (
        "DELETE",
        "/covenant/v1/subjects/{subject}/versions/{version}/samples/{sampleId}",
        "Removes one sample.",
    ),
    (
        "POST",
        "/covenant/v1/subjects/{subject}/versions/{version}/live",
        "Marks a version live (its data is still replayable) for live compatibility scopes.",
    ),
    (
        "DELETE",
        "/covenant/v1/subjects/{subject}/versions/{version}/live",
        "Removes a version's live mark.",
    ),
];

fn spec(text: &str) -> Result<VersionSpec, ApiError> {
    Ok(VersionSpec::parse(text)?)
}

fn sample_view(s: &SampleRecord, with_payload: bool) -> Value {
    let mut m = Map::new();
    m.insert("id".into(), json!(s.id));
    m.insert("subject".into(), json!(s.subject));
    m.insert("version".into(), json!(s.version));
    m.insert("encoding".into(), json!(s.encoding));
    if let Some(name) = &s.message_name {
        m.insert("messageName".into(), json!(name));
    }
    m.insert("size".into(), json!(s.payload.len()));
    m.insert("createdAt".into(), json!(s.created_at));
    if with_payload {
        m.insert(
            "payload".into(),
            json!(base64::engine::general_purpose::STANDARD.encode(&s.payload)),
        );
    }
    Value::Object(m)
}

pub async fn plan(
    State(state): State<AppState>,
    SafePath(subject): SafePath<String>,
    params: Params,
    ConfluentJson(body): ConfluentJson<SchemaBody>,
) -> ApiResult {
    let plan = state
        .registry
        .plan(&subject, &body.into_request()?, params.flag("normalize"))
        .await?;
    let value = serde_json::to_value(&plan).map_err(|_| ApiError::internal())?;
    Ok(ok(value))
}

pub async fn subject_samples(
    State(state): State<AppState>,
    SafePath(subject): SafePath<String>,
    params: Params,
) -> ApiResult {
    let list = state.registry.samples(&subject, None).await?;
    let with_payload = params.flag("includePayload");
    Ok(ok(json!(
        list.iter()
            .map(|s| sample_view(s, with_payload))
            .collect::<Vec<_>>()
    )))
}

pub async fn version_samples(
    State(state): State<AppState>,
    SafePath((subject, version)): SafePath<(String, String)>,
    params: Params,
) -> ApiResult {
    let list = state
        .registry
        .samples(&subject, Some(spec(&version)?))
        .await?;
    let with_payload = params.flag("includePayload");
    Ok(ok(json!(
        list.iter()
            .map(|s| sample_view(s, with_payload))
            .collect::<Vec<_>>()
    )))
}

#[derive(Debug, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SampleBody {
    /// The payload bytes, base64 (standard alphabet, padding optional).
    payload: String,
    encoding: String,
    #[serde(default)]
    message_name: Option<String>,
}

impl SampleBody {
    /// The payload bytes; not base64 is a 42230.
    fn payload_bytes(&self) -> Result<Vec<u8>, ApiError> {
        let text: String = self.payload.split_whitespace().collect();
        base64::engine::general_purpose::STANDARD
            .decode(&text)
            .or_else(|_| base64::engine::general_purpose::STANDARD_NO_PAD.decode(&text))
            .map_err(|e| {
                ApiError::from(covenant_registry::RegistryError::InvalidSample(format!(
                    "The payload is not base64: {e}."
                )))
            })
    }

    /// A sample submitted with a schema, for its forward replay.
    pub(crate) fn into_candidate(self) -> Result<covenant_registry::CandidateSample, ApiError> {
        Ok(covenant_registry::CandidateSample {
            payload: self.payload_bytes()?,
            encoding: self.encoding,
            message_name: self.message_name,
        })
    }
}

pub async fn add_sample(
    State(state): State<AppState>,
    AuditedWrite(audit): AuditedWrite,
    SafePath((subject, version)): SafePath<(String, String)>,
    ConfluentJson(body): ConfluentJson<SampleBody>,
) -> ApiResult {
    let spec = spec(&version)?;
    let payload = body.payload_bytes()?;
    let record = state
        .registry
        .add_sample(
            &subject,
            spec,
            &body.encoding,
            body.message_name,
            payload,
            Some(&audit),
        )
        .await?;
    Ok(ok(sample_view(&record, false)))
}

pub async fn delete_version_samples(
    State(state): State<AppState>,
    AuditedWrite(audit): AuditedWrite,
    SafePath((subject, version)): SafePath<(String, String)>,
) -> ApiResult {
    let removed = state
        .registry
        .delete_samples(&subject, spec(&version)?, None, Some(&audit))
        .await?;
    Ok(ok(json!(removed)))
}

pub async fn delete_sample(
    State(state): State<AppState>,
    AuditedWrite(audit): AuditedWrite,
    SafePath((subject, version, id)): SafePath<(String, String, String)>,
) -> ApiResult {
    let id: i64 = id.trim().parse().map_err(|_| {
        ApiError::from(covenant_registry::RegistryError::InvalidSample(format!(
            "'{id}' is not a sample id."
        )))
    })?;
    let removed = state
        .registry
        .delete_samples(&subject, spec(&version)?, Some(id), Some(&audit))
        .await?;
    Ok(ok(json!(removed)))
}

pub async fn mark_live(
    State(state): State<AppState>,
    AuditedWrite(audit): AuditedWrite,
    SafePath((subject, version)): SafePath<(String, String)>,
) -> ApiResult {
    let (version, at) = state
        .registry
        .mark_live(&subject, spec(&version)?, Some(&audit))
        .await?;
    Ok(ok(
        json!({"subject": subject, "version": version, "markedAt": at}),
    ))
}

pub async fn unmark_live(
    State(state): State<AppState>,
    AuditedWrite(audit): AuditedWrite,
    SafePath((subject, version)): SafePath<(String, String)>,
) -> ApiResult {
    let version = state
        .registry
        .unmark_live(&subject, spec(&version)?, Some(&audit))
        .await?;
    Ok(ok(json!({"subject": subject, "version": version})))
}
