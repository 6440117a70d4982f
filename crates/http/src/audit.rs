//! The audit side of the HTTP layer: a request id for every request (echoed as
//! `X-Request-Id`), the [`AuditContext`] handlers pass into registry writes and the
//! [`AuditedWrite`] entry they pass into governance and policy writes (both recorded by the
//! store in the write's own transaction), the [`AuditSink`] that appends denied attempts on
//! their own, and `GET /covenant/v1/audit`.

use crate::AppState;
use crate::error::ApiError;
use crate::extract::Params;
use crate::handlers::ok;
use crate::principal::Principal;
use axum::extract::{FromRequestParts, MatchedPath, RawPathParams, Request, State};
use axum::http::request::Parts;
use axum::http::{HeaderName, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;
use covenant_governance::parse_instant;
use covenant_store::audit::OUTCOME_DENIED;
use covenant_store::{AuditContext, AuditEntry, AuditQuery, AuditTarget, Store};
use serde_json::json;
use std::convert::Infallible;
use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU64, Ordering};

/// The response header carrying the request id.
pub const REQUEST_ID_HEADER: HeaderName = HeaderName::from_static("x-request-id");
const DEFAULT_PAGE: i64 = 100;
const MAX_PAGE: i64 = 1000;

/// The id of one request, put into its extensions by [`assign_request_id`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestId(pub String);

/// A fresh request id: a random per-process prefix and a counter. Ids only need to be unique
/// across the trail, not secret, so the standard library's randomly seeded hasher gives the
/// prefix instead of a random-number crate.
fn next_request_id() -> String {
    static PREFIX: OnceLock<u64> = OnceLock::new();
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let prefix = *PREFIX.get_or_init(|| {
        let mut h = std::collections::hash_map::RandomState::new().build_hasher();
        h.write_u128(
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_nanos())
                .unwrap_or_default(),
        );
        h.write_u32(std::process::id());
        h.finish()
    });
    let n = COUNTER.fetch_add(1, Ordering::Relaxed);
    format!("{prefix:016x}-{n:08x}")
}

/// Gives every request an id and echoes it as `X-Request-Id`, on errors too. A request that
/// already has one (this layer also placed further out, around an authentication layer) keeps it.
pub async fn assign_request_id(mut req: Request, next: Next) -> Response {
    let id = match req.extensions().get::<RequestId>() {
        Some(existing) => existing.0.clone(),
        None => next_request_id(),
    };
    req.extensions_mut().insert(RequestId(id.clone()));
    let mut response = next.run(req).await;
    if let Ok(value) = HeaderValue::from_str(&id) {
        response.headers_mut().insert(REQUEST_ID_HEADER, value);
    }
    response
}

/// The audit context of a request: its principal as actor, its source and its request id.
pub fn context_of(principal: &Principal, request_id: Option<&RequestId>) -> AuditContext {
    AuditContext {
        principal: principal.actor(),
        source: principal.source.map(|s| s.to_string()),
        request_id: request_id.map(|r| r.0.clone()),
    }
}

/// Extracts the [`AuditContext`] a handler hands to registry writes.
pub struct Audited(pub AuditContext);

impl<S: Send + Sync> FromRequestParts<S> for Audited {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let principal = Principal::from_request_parts(parts, state).await?;
        Ok(Audited(context_of(
            &principal,
            parts.extensions.get::<RequestId>(),
        )))
    }
}

/// Appends audit entries that ride in no write's transaction: denied attempts (called by the
/// authorization layer), which change nothing.
#[derive(Clone)]
pub struct AuditSink {
    store: Arc<dyn Store>,
}

impl AuditSink {
    pub fn new(store: Arc<dyn Store>) -> AuditSink {
        AuditSink { store }
    }

    /// Appends `entry`. The attempt it describes was refused (and answered as such), so a
    /// failure to record is logged rather than turned into a failed request.
    pub async fn record(&self, entry: AuditEntry) {
        if let Err(e) = self.store.record_audit(&entry).await {
            tracing::error!(error = %e, operation = %entry.operation, "could not record an audit entry");
        }
    }

    /// Records a refused attempt of `operation` on `target` by the request's principal; made to
    /// be called from the authorization middleware with the request's parts.
    pub async fn record_denied(&self, parts: &Parts, operation: &str, target: AuditTarget) {
        let principal = match parts.extensions.get::<Principal>() {
            Some(p) => p.clone(),
            None => Principal::anonymous(parts),
        };
        let context = context_of(&principal, parts.extensions.get::<RequestId>());
        let mut entry = context.entry(operation, target);
        entry.outcome = OUTCOME_DENIED.to_string();
        self.record(entry).await;
    }
}

/// The authorization layer's refusals, recorded as `denied` entries: the operation refused
/// (`authenticate` when the credentials themselves failed) on the subject or `Config:`.
#[async_trait::async_trait]
impl crate::auth::DenialHook for AuditSink {
    async fn on_denied(&self, denial: &crate::auth::Denial, request: &Parts) {
        let operation = denial
            .operation
            .map_or("authenticate", |o| o.name())
            .to_string();
        let mut target = match &denial.resource {
            Some(crate::auth::Resource::Subject(s)) => AuditTarget::subject(Some(s)),
            Some(crate::auth::Resource::Global) => AuditTarget {
                config_key: Some("Config:".into()),
                ..AuditTarget::default()
            },
            None => AuditTarget::default(),
        };
        target.detail = Some(format!("{:?}", denial.reason));
        self.record_denied(request, &operation, target).await;
    }
}

/// Governance and policy writes with their audit operation names, read by [`AuditedWrite`];
/// reads and previews are not listed (they change nothing). A handler that takes an
/// `AuditedWrite` on a route missing here answers 500 rather than write unrecorded.
const GOVERNANCE_WRITES: &[(&str, &str, &str)] = &[
    ("POST", "/covenant/v1/consumers", "consumer.create"),
    (
        "PUT",
        "/covenant/v1/consumers/{consumer}",
        "consumer.update",
    ),
    (
        "POST",
        "/covenant/v1/consumers/{consumer}/retire",
        "consumer.retire",
    ),
    ("POST", "/covenant/v1/usage", "usage.report"),
    ("POST", "/covenant/v1/deprecations", "deprecation.create"),
    (
        "PATCH",
        "/covenant/v1/deprecations/{id}",
        "deprecation.update",
    ),
    (
        "POST",
        "/covenant/v1/deprecations/{id}/stage",
        "deprecation.stage",
    ),
    (
        "POST",
        "/covenant/v1/deprecations/{id}/evidence",
        "deprecation.evidence",
    ),
    (
        "POST",
        "/covenant/v1/deprecations/{id}/exceptions",
        "deprecation.exception",
    ),
    (
        "POST",
        "/covenant/v1/subjects/{subject}/versions/{version}/samples",
        "sample.add",
    ),
    (
        "DELETE",
        "/covenant/v1/subjects/{subject}/versions/{version}/samples",
        "sample.delete",
    ),
    (
        "DELETE",
        "/covenant/v1/subjects/{subject}/versions/{version}/samples/{sampleId}",
        "sample.delete",
    ),
    (
        "POST",
        "/covenant/v1/subjects/{subject}/versions/{version}/live",
        "live.mark",
    ),
    (
        "DELETE",
        "/covenant/v1/subjects/{subject}/versions/{version}/live",
        "live.unmark",
    ),
    (
        "POST",
        "/covenant/v1/subjects/{subject}/profiles",
        "profile.add",
    ),
];

/// The audit operation of a governance write, if `method` on `route` is one.
pub fn governance_operation(method: &Method, route: &str) -> Option<&'static str> {
    GOVERNANCE_WRITES
        .iter()
        .find(|(m, r, _)| *m == method.as_str() && *r == route)
        .map(|(_, _, op)| *op)
}

/// The target named by a governance route's path parameters.
fn path_target(params: &RawPathParams) -> AuditTarget {
    let mut target = AuditTarget::default();
    for (key, value) in params.iter() {
        match key {
            "subject" => target.subject = Some(value.to_string()),
            "version" => target.version = value.parse().ok(),
            "consumer" => target.detail = Some(format!("consumer {value}")),
            "id" => target.detail = Some(format!("deprecation {value}")),
            "sampleId" => target.detail = Some(format!("sample {value}")),
            "profileId" => target.detail = Some(format!("profile {value}")),
            _ => {}
        }
    }
    target
}

/// The audit entry of a governance or policy write: its operation (from the route, see
/// [`GOVERNANCE_WRITES`]), its target (from the path parameters) and who asked. Handlers pass
/// it down to the store, which appends it in the same transaction as the change, so a write
/// that is refused or fails leaves no entry and a committed one always has its entry.
pub struct AuditedWrite(pub AuditEntry);

impl<S: Send + Sync> FromRequestParts<S> for AuditedWrite {
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let route = parts.extensions.get::<MatchedPath>().cloned();
        let Some(operation) = route.and_then(|r| governance_operation(&parts.method, r.as_str()))
        else {
            tracing::error!(path = %parts.uri.path(), "a write route has no audit operation");
            return Err(ApiError::internal());
        };
        let target = match RawPathParams::from_request_parts(parts, state).await {
            Ok(params) => path_target(&params),
            Err(_) => AuditTarget::default(),
        };
        let Audited(context) = Audited::from_request_parts(parts, state)
            .await
            .unwrap_or_else(|never| match never {});
        Ok(AuditedWrite(context.entry(operation, target)))
    }
}

fn text_param(params: &Params, key: &str) -> Option<String> {
    params
        .get(key)
        .filter(|v| !v.is_empty())
        .map(str::to_string)
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

fn number_param(params: &Params, key: &str, default: i64) -> Result<i64, ApiError> {
    match params.get(key) {
        None | Some("") => Ok(default),
        Some(text) => text.trim().parse().map_err(|_| {
            ApiError::invalid_input(format!(
                "query parameter '{key}' must be a whole number, not '{text}'"
            ))
        }),
    }
}

/// The trail query a request's parameters ask for.
fn audit_query(params: &Params) -> Result<AuditQuery, ApiError> {
    let limit = number_param(params, "limit", DEFAULT_PAGE)?;
    if !(1..=MAX_PAGE).contains(&limit) {
        return Err(ApiError::invalid_input(format!(
            "'limit' must be between 1 and {MAX_PAGE}"
        )));
    }
    Ok(AuditQuery {
        principal: text_param(params, "principal"),
        subject: text_param(params, "subject"),
        operation: text_param(params, "operation"),
        outcome: text_param(params, "outcome"),
        since: time_param(params, "since")?,
        until: time_param(params, "until")?,
        after: number_param(params, "after", 0)?,
        limit,
    })
}

/// `GET /covenant/v1/audit`: a page of the trail, oldest first; `next` is the `after` of the
/// following page, `null` on the last one.
pub async fn list_audit(
    State(state): State<AppState>,
    params: Params,
) -> Result<Response, ApiError> {
    let query = audit_query(&params)?;
    let entries = state
        .registry
        .store()
        .audit_entries(&query)
        .await
        .map_err(covenant_registry::RegistryError::from)?;
    let next = (entries.len() as i64 == query.limit)
        .then(|| entries.last().map(|e| e.seq))
        .flatten();
    Ok(ok(json!({"entries": entries, "next": next})))
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::Router;
    use axum::body::Body;
    use axum::http::StatusCode;
    use axum::routing::post;
    use tower::ServiceExt;

    async fn echo(AuditedWrite(entry): AuditedWrite) -> String {
        format!("{} {}", entry.operation, entry.detail.unwrap_or_default())
    }

    async fn post_to(app: &Router, path: &str) -> (StatusCode, String) {
        let request = Request::post(path).body(Body::empty()).expect("request");
        let response = app.clone().oneshot(request).await.expect("answer");
        let status = response.status();
        let bytes = axum::body::to_bytes(response.into_body(), usize::MAX)
            .await
            .expect("body");
        (status, String::from_utf8_lossy(&bytes).into_owned())
    }

    #[tokio::test]
    async fn a_listed_route_names_its_entry_and_an_unlisted_one_writes_nothing() {
        let app = Router::new()
            .route("/covenant/v1/deprecations/{id}/stage", post(echo))
            .route("/covenant/v1/unlisted", post(echo));
        assert_eq!(
            post_to(&app, "/covenant/v1/deprecations/7/stage").await,
            (
                StatusCode::OK,
                "deprecation.stage deprecation 7".to_string()
            )
        );
        let (status, _) = post_to(&app, "/covenant/v1/unlisted").await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
    }
}
