//! The one table from failures to Confluent's HTTP status, `error_code` and message.
//! Every error response of the API is built here, in Confluent's
//! `{"error_code": <int>, "message": "<text>"}` shape.

use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use covenant_governance::GovernanceError;
use covenant_registry::RegistryError;

pub const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";

/// An error answer: HTTP status, Confluent error code and message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    pub status: StatusCode,
    pub code: u32,
    pub message: String,
    /// Seconds after which the same request may succeed (sent as `Retry-After`).
    pub retry_after: Option<u64>,
}

impl ApiError {
    pub(crate) fn new(code: u32, message: impl Into<String>) -> ApiError {
        // Five-digit codes carry their status in the first three digits; framework errors
        // use the status itself as the code.
        let status_number = if code >= 10_000 { code / 100 } else { code };
        let status = u16::try_from(status_number)
            .ok()
            .and_then(|n| StatusCode::from_u16(n).ok())
            .unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
        ApiError {
            status,
            code,
            message: message.into(),
            retry_after: None,
        }
    }

    pub fn not_found_path() -> ApiError {
        ApiError::new(404, "HTTP 404 Not Found")
    }
    pub fn method_not_allowed() -> ApiError {
        ApiError::new(405, "HTTP 405 Method Not Allowed")
    }
    pub fn unsupported_media_type() -> ApiError {
        ApiError::new(415, "HTTP 415 Unsupported Media Type")
    }
    /// An `Accept` header naming none of the API's media types.
    pub fn not_acceptable() -> ApiError {
        ApiError::new(406, "HTTP 406 Not Acceptable")
    }
    /// A request without the body its route requires (Confluent's `@NotNull` bodies).
    pub fn body_missing() -> ApiError {
        ApiError::new(422, "The request body must not be null")
    }
    pub fn payload_too_large(limit: usize) -> ApiError {
        ApiError::new(413, format!("Request body is larger than {limit} bytes"))
    }
    /// No credentials, or credentials that do not verify (sent with `WWW-Authenticate`).
    pub fn unauthorized() -> ApiError {
        ApiError::new(40101, "Unauthorized")
    }
    /// An authenticated caller without the operation on the resource.
    pub fn forbidden(message: impl Into<String>) -> ApiError {
        ApiError::new(40301, message)
    }
    /// Too many failed logins from one address.
    pub fn too_many_failed_logins() -> ApiError {
        ApiError::new(42901, "Too many failed login attempts; try again later")
    }
    /// Malformed JSON or a field of the wrong JSON type.
    pub fn bad_request(message: impl Into<String>) -> ApiError {
        ApiError::new(400, message)
    }
    pub fn internal() -> ApiError {
        ApiError::new(500, "Internal Server Error")
    }
    /// A governance route on a server started without consumer governance.
    pub fn governance_disabled() -> ApiError {
        ApiError::new(50301, "Consumer governance is not enabled on this server")
    }
    /// A connection refused because the server already holds as many as it may.
    pub fn too_many_connections() -> ApiError {
        ApiError::new(50302, "Too many open connections; retry later")
    }
    /// A governance request body or parameter that does not say something valid.
    pub fn invalid_input(message: impl Into<String>) -> ApiError {
        ApiError::new(42240, message)
    }
    /// An authenticated request whose body names another actor than its principal.
    pub fn impersonation(message: impl Into<String>) -> ApiError {
        ApiError::new(40301, message)
    }
    /// `Schema not found` for an id path segment that is not a number.
    pub fn unparseable_id() -> ApiError {
        ApiError::not_found_path()
    }
}

/// Confluent's error code for each domain failure.
pub fn error_code(e: &RegistryError) -> u32 {
    match e {
        RegistryError::SubjectNotFound(_) => 40401,
        RegistryError::VersionNotFound(_) => 40402,
        RegistryError::SchemaIdNotFound(_)
        | RegistryError::SchemaNotFound
        | RegistryError::SchemaGuidNotFound(_) => 40403,
        RegistryError::SubjectSoftDeleted(_) => 40404,
        RegistryError::SubjectNotSoftDeleted(_) => 40405,
        RegistryError::VersionSoftDeleted(..) => 40406,
        RegistryError::VersionNotSoftDeleted(..) => 40407,
        RegistryError::SubjectConfigNotFound(_) => 40408,
        RegistryError::SubjectModeNotFound(_) => 40409,
        RegistryError::Incompatible { .. } | RegistryError::RemovalBlocked { .. } => 40901,
        RegistryError::InvalidSchema(_) => 42201,
        RegistryError::InvalidVersion(_) => 42202,
        RegistryError::InvalidCompatibilityLevel => 42203,
        RegistryError::InvalidMode | RegistryError::ForwardModeOnSubject => 42204,
        RegistryError::OperationNotPermitted(_) => 42205,
        RegistryError::Referenced(..) => 42206,
        RegistryError::InvalidSubject(_) => 42208,
        RegistryError::InvalidRuleSet(_) => 42210,
        RegistryError::ContextNotEmpty(_) => 42211,
        RegistryError::InvalidContext(_) => 42212,
        RegistryError::Store(_) => 50001,
        RegistryError::InvalidCompatibilityScope(_) | RegistryError::InvalidPolicySettings(_) => {
            42203
        }
        RegistryError::SampleNotFound(_) => 40430,
        RegistryError::InvalidSample(_) => 42230,
        RegistryError::SampleLimitReached { .. } => 42231,
        RegistryError::ProfileNotFound(_) => 40450,
        RegistryError::NoProfile(_) => 40451,
        RegistryError::InvalidProfile(_) => 42260,
        RegistryError::SamplePayloadTooLarge(_) => 41301,
        RegistryError::CheckBudgetExceeded(_) => 42250,
        RegistryError::ChecksBusy { .. } => 42950,
        _ => 50001,
    }
}

/// Codes of consumer governance failures: 4044x not found, 40901 refused by a governance
/// rule (freeze, removal gate, stage order), 40940 conflicting state, 42240 invalid input,
/// 41340 a document over its byte limit, 42241 a list, identifier or text over its limit.
pub fn governance_error_code(e: &GovernanceError) -> u32 {
    match e {
        GovernanceError::NotFound {
            what: "consumer", ..
        } => 40440,
        GovernanceError::NotFound {
            what: "deprecation",
            ..
        } => 40441,
        GovernanceError::NotFound { .. } => 40442,
        GovernanceError::Refused(_) => 40901,
        GovernanceError::Conflict(_) => 40940,
        GovernanceError::Invalid(_) => 42240,
        GovernanceError::TooLarge(_) => 41340,
        GovernanceError::OverLimit(_) => 42241,
        GovernanceError::Backend(_) => 50001,
        _ => 50001,
    }
}

impl From<GovernanceError> for ApiError {
    fn from(e: GovernanceError) -> ApiError {
        let code = governance_error_code(&e);
        if code >= 50000 {
            tracing::error!(error = %e, "governance failure");
        }
        ApiError::new(code, e.to_string())
    }
}

impl From<RegistryError> for ApiError {
    fn from(e: RegistryError) -> ApiError {
        let code = error_code(&e);
        if code >= 50000 {
            tracing::error!(error = %e, "registry failure");
        }
        let mut api = ApiError::new(code, e.to_string());
        if let RegistryError::ChecksBusy {
            retry_after_secs, ..
        } = e
        {
            api.retry_after = Some(retry_after_secs);
        }
        api
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = serde_json::json!({"error_code": self.code, "message": self.message});
        let mut response = (self.status, body.to_string()).into_response();
        response
            .headers_mut()
            .insert(header::CONTENT_TYPE, HeaderValue::from_static(CONTENT_TYPE));
        if let Some(seconds) = self.retry_after {
            response
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(seconds));
        }
        response
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn codes_map_to_their_status() {
        let cases = [
            (RegistryError::SubjectNotFound("s".into()), 404, 40401),
            (RegistryError::VersionNotFound("2".into()), 404, 40402),
            (RegistryError::SchemaIdNotFound(7), 404, 40403),
            (RegistryError::SubjectConfigNotFound("s".into()), 404, 40408),
            (
                RegistryError::Incompatible {
                    subject: "s".into(),
                    findings: vec![],
                },
                409,
                40901,
            ),
            (RegistryError::InvalidVersion("x".into()), 422, 42202),
            (RegistryError::Referenced("s".into(), 1), 422, 42206),
            (
                RegistryError::CheckBudgetExceeded(covenant_engine::budget::BudgetExceeded::Work(
                    10,
                )),
                422,
                42250,
            ),
            (RegistryError::Store("x".into()), 500, 50001),
            (
                RegistryError::ChecksBusy {
                    what: "all 2 check slots are taken".into(),
                    retry_after_secs: 2,
                },
                429,
                42950,
            ),
        ];
        for (e, status, code) in cases {
            let api = ApiError::from(e);
            assert_eq!((api.status.as_u16(), api.code), (status, code));
        }
        assert_eq!(ApiError::payload_too_large(10).status.as_u16(), 413);
        let governance = [
            (
                GovernanceError::NotFound {
                    what: "consumer",
                    key: "x".into(),
                },
                404,
                40440,
            ),
            (GovernanceError::Refused("frozen".into()), 409, 40901),
            (GovernanceError::Conflict("again".into()), 409, 40940),
            (GovernanceError::Invalid("bad".into()), 422, 42240),
        ];
        for (e, status, code) in governance {
            let api = ApiError::from(e);
            assert_eq!((api.status.as_u16(), api.code), (status, code));
        }
        assert_eq!(ApiError::governance_disabled().status.as_u16(), 503);
        assert_eq!(ApiError::method_not_allowed().code, 405);
    }

    #[test]
    fn messages_are_confluents() {
        assert_eq!(
            ApiError::from(RegistryError::SubjectSoftDeleted("s".into())).message,
            "Subject 's' was soft deleted.Set permanent=true to delete permanently"
        );
        assert_eq!(
            ApiError::from(RegistryError::SchemaIdNotFound(3)).message,
            "Schema 3 not found"
        );
    }
}
