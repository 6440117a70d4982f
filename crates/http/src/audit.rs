//! The audit side of the HTTP layer: a request id for every request (echoed as
//! `X-Request-Id`), the [`AuditContext`] handlers pass into registry writes and the
//! [`AuditedWrite`] entry they pass into governance and policy writes (both recorded by the
//! store in the write's own transaction), the [`AuditSink`] that records the authorization
//! layer's refusals, [`refuse`] for refusals decided inside handlers, and
//! `GET /covenant/v1/audit`.
//!
//! Every refusal, wherever it is decided, is recorded the same way ([`record_refused`]): as a
//! `denied` entry whose actor is the authenticated principal or `anonymous`, whose source is
//! the caller's address without its port, and whose detail says why and where; repeats of
//! one kind are counted on one entry by the store (`covenant_store::audit_denials`).

use crate::AppState;
use crate::auth::{Operation, Resource};
use crate::error::ApiError;
use crate::extract::Params;
use crate::handlers::ok;
use crate::principal::Principal;
use axum::extract::{
    FromRequestParts, MatchedPath, OptionalFromRequestParts, RawPathParams, Request, State,
};
use axum::http::request::Parts;
use axum::http::{HeaderName, HeaderValue, Method};
use axum::middleware::Next;
use axum::response::Response;
use covenant_governance::parse_instant;
use covenant_store::audit::OUTCOME_DENIED;
use covenant_store::audit_denials::DenialKey;
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

/// The id of one request, put into its extensions by [`assign_request_id`]. A handler takes
/// it as `Option<RequestId>` (absent when no [`assign_request_id`] layer runs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequestId(pub String);

impl<S: Send + Sync> OptionalFromRequestParts<S> for RequestId {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Option<Self>, Self::Rejection> {
        Ok(parts.extensions.get::<RequestId>().cloned())
    }
}

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
        detail: None,
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

/// One refused attempt, as [`record_refused`] records it.
pub struct RefusedAttempt<'a> {
    pub principal: &'a Principal,
    pub request_id: Option<&'a str>,
    /// Why: `AuthenticationRequired`, `BadCredentials`, `RateLimited`, `Forbidden`, ...
    pub reason: &'a str,
    /// The operation refused (`Read`, `Delete`, ..., `authenticate`).
    pub operation: &'a str,
    /// What it was refused on.
    pub resource: Option<&'a Resource>,
    /// Where or how it was refused, for the entry's detail: `METHOD /route/{template}` for the
    /// authorization layer, the refusal's message for one decided inside a handler.
    pub place: &'a str,
    /// What repeats of this refusal share besides principal, source, reason, operation and
    /// resource: the method and route template, or for a handler's refusal its message (its
    /// operation alone when the caller is unauthenticated, since the message may carry what
    /// the caller chose). Never the raw path or the user agent.
    pub repeat_of: &'a str,
}

/// The caller's address without its port: one client opens many connections.
fn source_address(principal: &Principal) -> Option<String> {
    principal.source.map(|s| s.ip().to_string())
}

/// The entry and the repeat key of a refused attempt. The actor is the authenticated name,
/// or `anonymous` (not the user agent, which the caller picks at will); the detail names the
/// reason and the place. Unauthenticated refusals count as one kind per source address,
/// reason, operation and place; an authenticated principal's per resource too.
pub fn refused_entry(attempt: &RefusedAttempt<'_>) -> (AuditEntry, DenialKey) {
    let authenticated = attempt.principal.name.clone();
    let context = AuditContext {
        principal: authenticated
            .clone()
            .unwrap_or_else(|| "anonymous".to_string()),
        source: source_address(attempt.principal),
        request_id: attempt.request_id.map(str::to_string),
        detail: None,
    };
    let mut target = match attempt.resource {
        Some(Resource::Subject(s)) => AuditTarget::subject(Some(s)),
        Some(Resource::Global) => AuditTarget {
            config_key: Some("Config:".into()),
            ..AuditTarget::default()
        },
        Some(Resource::Kek(k)) => AuditTarget {
            config_key: Some(format!("Kek:{k}")),
            ..AuditTarget::default()
        },
        None => AuditTarget::default(),
    };
    target.detail = Some(format!("{}: {}", attempt.reason, attempt.place));
    let mut entry = context.entry(attempt.operation, target);
    entry.outcome = OUTCOME_DENIED.to_string();
    let key = DenialKey {
        resource: authenticated
            .as_ref()
            .and(attempt.resource)
            .map(|r| r.to_string()),
        principal: authenticated,
        source: context.source.clone(),
        reason: attempt.reason.to_string(),
        operation: attempt.operation.to_string(),
        route: attempt.repeat_of.to_string(),
    };
    (entry, key)
}

/// Records a refused attempt in the trail of `store`. The attempt was refused (and answered
/// as such), so a failure to record is logged rather than turned into a failed request.
pub async fn record_refused(store: &dyn Store, attempt: &RefusedAttempt<'_>) {
    let (entry, key) = refused_entry(attempt);
    if let Err(e) = store.record_denied(&entry, &key).await {
        tracing::error!(error = %e, operation = %entry.operation, "could not record a refusal in the audit trail");
    }
}

/// Records the authorization layer's refusals ([`crate::auth::DenialHook`]) through
/// [`record_refused`].
#[derive(Clone)]
pub struct AuditSink {
    store: Arc<dyn Store>,
}

impl AuditSink {
    pub fn new(store: Arc<dyn Store>) -> AuditSink {
        AuditSink { store }
    }

    /// Appends `entry` as it is. A failure is logged, not returned.
    pub async fn record(&self, entry: AuditEntry) {
        if let Err(e) = self.store.record_audit(&entry).await {
            tracing::error!(error = %e, operation = %entry.operation, "could not record an audit entry");
        }
    }

    /// Records a refused attempt of `operation` on `target`'s subject (or the registry, when
    /// it names none) by the request's principal, for a middleware with the request's parts;
    /// `target.detail`, when given, is the reason.
    pub async fn record_denied(&self, parts: &Parts, operation: &str, target: AuditTarget) {
        let resource = match &target.subject {
            Some(s) => Some(Resource::Subject(s.clone())),
            None => target.config_key.as_ref().map(|_| Resource::Global),
        };
        let reason = target.detail.unwrap_or_else(|| "Forbidden".to_string());
        self.record_in_request(parts, &reason, operation, resource.as_ref())
            .await;
    }

    async fn record_in_request(
        &self,
        parts: &Parts,
        reason: &str,
        operation: &str,
        resource: Option<&Resource>,
    ) {
        let principal = match parts.extensions.get::<Principal>() {
            Some(p) => p.clone(),
            None => Principal::anonymous(parts),
        };
        let route = parts
            .extensions
            .get::<MatchedPath>()
            .map_or("(no route)", |r| r.as_str());
        let place = format!("{} {route}", parts.method);
        let attempt = RefusedAttempt {
            principal: &principal,
            request_id: parts.extensions.get::<RequestId>().map(|r| r.0.as_str()),
            reason,
            operation,
            resource,
            place: &place,
            repeat_of: &place,
        };
        record_refused(self.store.as_ref(), &attempt).await;
    }
}

/// The authorization layer's refusals, recorded as `denied` entries: the operation refused
/// (`authenticate` when the credentials themselves failed) on the subject or `Config:`, with
/// the reason and the route in the detail.
#[async_trait::async_trait]
impl crate::auth::DenialHook for AuditSink {
    async fn on_denied(&self, denial: &crate::auth::Denial, request: &Parts) {
        let operation = denial.operation.map_or("authenticate", |o| o.name());
        let reason = format!("{:?}", denial.reason);
        self.record_in_request(request, &reason, operation, denial.resource.as_ref())
            .await;
    }
}

/// A refusal decided inside a handler, for [`refuse`].
#[derive(Clone, Debug)]
pub struct HandlerRefusal {
    pub operation: Operation,
    pub resource: Option<Resource>,
    /// The message the caller gets (and the trail records).
    pub message: String,
}

impl HandlerRefusal {
    /// `operation` is not granted on `resource`, answered as the authorization layer answers
    /// it: `User is denied operation <operation> on <resource>`.
    pub fn denied(operation: Operation, resource: Resource) -> HandlerRefusal {
        HandlerRefusal {
            message: format!("User is denied operation {operation} on {resource}"),
            operation,
            resource: Some(resource),
        }
    }

    /// A refusal of `operation` (on `resource`, when it concerns one) with its own message.
    pub fn new(
        operation: Operation,
        resource: Option<Resource>,
        message: impl Into<String>,
    ) -> HandlerRefusal {
        HandlerRefusal {
            operation,
            resource,
            message: message.into(),
        }
    }
}

/// The request's principal and id, in one extractor: what [`refuse`] needs besides the state.
#[derive(Clone, Debug)]
pub struct Caller {
    pub principal: Principal,
    pub request_id: Option<RequestId>,
}

impl Caller {
    /// [`refuse`] for this request.
    pub async fn refuse(&self, state: &AppState, refusal: HandlerRefusal) -> ApiError {
        refuse(state, &self.principal, self.request_id.as_ref(), refusal).await
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Caller {
    type Rejection = Infallible;

    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        let principal = Principal::from_request_parts(parts, state).await?;
        Ok(Caller {
            principal,
            request_id: parts.extensions.get::<RequestId>().cloned(),
        })
    }
}

/// Refuses a request from inside a handler: records the refusal in the audit trail exactly as
/// the authorization layer's refusals are recorded (a `denied` entry by the principal, reason
/// `Forbidden`, counted with its repeats, see [`record_refused`]) and returns the 403
/// (`40301`) [`ApiError`] to answer with. Every refusal a handler decides goes through here,
/// so that every denied attempt is in the trail. A handler that takes a [`Caller`] calls
/// [`Caller::refuse`] instead.
///
/// ```ignore
/// pub async fn handler(
///     State(state): State<AppState>,
///     principal: Principal,
///     request_id: Option<RequestId>,
///     access: Access,
///     SafePath(subject): SafePath<String>,
/// ) -> ApiResult {
///     let resource = Resource::Subject(subject.clone());
///     if !access.allows(Operation::Admin, &resource) {
///         let refusal = HandlerRefusal::denied(Operation::Admin, resource);
///         return Err(refuse(&state, &principal, request_id.as_ref(), refusal).await);
///     }
///     // ...
/// }
/// ```
pub async fn refuse(
    state: &AppState,
    principal: &Principal,
    request_id: Option<&RequestId>,
    refusal: HandlerRefusal,
) -> ApiError {
    tracing::info!(
        principal = %principal.actor(),
        operation = refusal.operation.name(),
        message = %refusal.message,
        "request refused"
    );
    let attempt = RefusedAttempt {
        principal,
        request_id: request_id.map(|r| r.0.as_str()),
        reason: "Forbidden",
        operation: refusal.operation.name(),
        resource: refusal.resource.as_ref(),
        place: &refusal.message,
        repeat_of: if principal.is_authenticated() {
            &refusal.message
        } else {
            "(handler)"
        },
    };
    record_refused(state.registry.store().as_ref(), &attempt).await;
    ApiError::forbidden(refusal.message)
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
        "/covenant/v1/subjects/{subject}/approvals",
        "approval.create",
    ),
    (
        "POST",
        "/covenant/v1/subjects/{subject}/approvals/{id}/revoke",
        "approval.revoke",
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
