//! Subject name validation for every route with a `{subject}` (42208), in one layer so no
//! handler can forget it. Deletes are let through: a name stored before a rule existed must
//! stay removable.

use crate::auth::routes::{Target, route_access};
use crate::error::ApiError;
use axum::extract::{FromRequestParts, MatchedPath, Path, Request};
use axum::http::Method;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use covenant_registry::{SubjectUse, validate_subject};
use std::collections::HashMap;

/// The layer (installed by [`crate::router_with_auth`] after routing).
pub(crate) async fn check(request: Request, next: Next) -> Response {
    let (mut parts, body) = request.into_parts();
    let template = parts
        .extensions
        .get::<MatchedPath>()
        .map(|p| p.as_str().to_string());
    if let Some(template) = template
        && parts.method != Method::DELETE
        && route_access(parts.method.as_str(), &template).is_some_and(|r| r.1 == Target::Subject)
        && let Ok(Path(params)) =
            Path::<HashMap<String, String>>::from_request_parts(&mut parts, &()).await
        && let Some(subject) = params.get("subject")
    {
        let using = if template.starts_with("/config/") || template.starts_with("/mode/") {
            SubjectUse::ConfigOrMode
        } else {
            SubjectUse::Schemas
        };
        if let Err(e) = validate_subject(subject, using) {
            return ApiError::from(e).into_response();
        }
    }
    next.run(Request::from_parts(parts, body)).await
}
