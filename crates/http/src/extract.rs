//! Request parsing with Confluent's quirks: case-insensitive boolean query flags, JSON bodies
//! under any of the accepted media types, and every failure answered in Confluent's error
//! shape rather than axum's plain-text rejections.

use crate::error::ApiError;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::{StatusCode, header, request::Parts};
use percent_encoding::percent_decode_str;
use serde::de::DeserializeOwned;

/// Query parameters; repeated keys keep every value in order.
#[derive(Debug, Clone, Default)]
pub struct Params(Vec<(String, String)>);

fn decode(part: &str) -> String {
    let spaced = part.replace('+', " ");
    percent_decode_str(&spaced).decode_utf8_lossy().into_owned()
}

impl Params {
    pub fn parse(query: &str) -> Params {
        Params(
            query
                .split('&')
                .filter(|p| !p.is_empty())
                .map(|pair| match pair.split_once('=') {
                    Some((k, v)) => (decode(k), decode(v)),
                    None => (decode(pair), String::new()),
                })
                .collect(),
        )
    }

    pub fn get(&self, key: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
    }

    pub fn all(&self, key: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(k, _)| k == key)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// JAX-RS `Boolean.valueOf`: case-insensitive `true`, anything else is false.
    pub fn flag(&self, key: &str) -> bool {
        self.get(key)
            .is_some_and(|v| v.trim().eq_ignore_ascii_case("true"))
    }

    /// An integer parameter; unparseable values count as absent.
    pub fn int(&self, key: &str) -> Option<i64> {
        self.get(key).and_then(|v| v.trim().parse().ok())
    }
}

impl<S: Send + Sync> FromRequestParts<S> for Params {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, _: &S) -> Result<Self, Self::Rejection> {
        Ok(Params::parse(parts.uri.query().unwrap_or("")))
    }
}

/// Media types a request body may be sent as.
const ACCEPTED: &[&str] = &[
    "application/vnd.schemaregistry.v1+json",
    "application/vnd.schemaregistry+json",
    "application/json",
    "application/octet-stream",
];

/// A JSON body with Confluent-shaped rejections (400 malformed, 413 too large, 415 media type).
pub struct ConfluentJson<T>(pub T);

/// The largest body accepted; set from `--max-body-bytes` into request extensions so the
/// rejection can name it.
#[derive(Debug, Clone, Copy)]
pub struct BodyLimit(pub usize);

impl<S: Send + Sync, T: DeserializeOwned> FromRequest<S> for ConfluentJson<T> {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        if let Some(ct) = req.headers().get(header::CONTENT_TYPE) {
            let ct = ct.to_str().unwrap_or("").to_ascii_lowercase();
            let essence = ct.split(';').next().unwrap_or("").trim();
            if !essence.is_empty() && !ACCEPTED.contains(&essence) {
                return Err(ApiError::unsupported_media_type());
            }
        }
        let limit = req
            .extensions()
            .get::<BodyLimit>()
            .map(|l| l.0)
            .unwrap_or(usize::MAX);
        let bytes = match Bytes::from_request(req, state).await {
            Ok(b) => b,
            Err(rejection) if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE => {
                return Err(ApiError::payload_too_large(limit));
            }
            Err(rejection) => return Err(ApiError::bad_request(rejection.body_text())),
        };
        serde_json::from_slice(&bytes)
            .map(ConfluentJson)
            .map_err(|e| ApiError::bad_request(json_error_text(&e)))
    }
}

/// serde_json's message without the line/column suffix, as Confluent strips Jackson's location.
fn json_error_text(e: &serde_json::Error) -> String {
    let text = e.to_string();
    match text.rfind(" at line ") {
        Some(i) => text[..i].to_string(),
        None => text,
    }
}

/// Path parameters with Confluent-shaped rejections (e.g. a segment that is not UTF-8).
pub struct SafePath<T>(pub T);

impl<S: Send + Sync, T: DeserializeOwned + Send> FromRequestParts<S> for SafePath<T> {
    type Rejection = ApiError;
    async fn from_request_parts(parts: &mut Parts, state: &S) -> Result<Self, Self::Rejection> {
        axum::extract::Path::<T>::from_request_parts(parts, state)
            .await
            .map(|p| SafePath(p.0))
            .map_err(|e| ApiError::bad_request(e.body_text()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flags_are_case_insensitive() {
        let p = Params::parse("normalize=False&deleted=TRUE&verbose=True&force=yes&x");
        assert!(!p.flag("normalize"));
        assert!(p.flag("deleted"));
        assert!(p.flag("verbose"));
        assert!(!p.flag("force"));
        assert!(!p.flag("absent"));
        assert_eq!(p.get("x"), Some(""));
    }

    #[test]
    fn values_are_percent_decoded_and_repeatable() {
        let p = Params::parse("key=a%2Fb&key=c+d&value=1&limit=-1");
        assert_eq!(p.all("key"), vec!["a/b", "c d"]);
        assert_eq!(p.int("limit"), Some(-1));
        assert_eq!(p.int("value"), Some(1));
    }
}
