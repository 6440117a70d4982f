//! The destination registry, reached through the Confluent REST API with the credentials of
//! the exporter's config (`basic.auth.user.info`, `bearer.auth.token`) and, for a private CA,
//! `schema.registry.ssl.ca.location` (a PEM file).

use crate::spec::URL_KEY;
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// A failed call to the destination, as text for the exporter's `trace`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DestinationError(pub String);

type Result<T> = std::result::Result<T, DestinationError>;

pub struct Destination {
    base: String,
    http: reqwest::Client,
    basic: Option<(String, String)>,
    bearer: Option<String>,
}

fn enc(segment: &str) -> String {
    utf8_percent_encode(segment, NON_ALPHANUMERIC).to_string()
}

impl Destination {
    pub fn new(config: &BTreeMap<String, String>) -> Result<Destination> {
        let base = config
            .get(URL_KEY)
            .map(|u| u.trim_end_matches('/').to_string())
            .ok_or_else(|| DestinationError(format!("no '{URL_KEY}' in the exporter config")))?;
        let mut builder = crate::client::builder().timeout(REQUEST_TIMEOUT);
        if let Some(path) = config.get("schema.registry.ssl.ca.location") {
            let pem = std::fs::read(path)
                .map_err(|e| DestinationError(format!("reading CA file {path}: {e}")))?;
            let cert = reqwest::Certificate::from_pem(&pem)
                .map_err(|e| DestinationError(format!("CA file {path}: {e}")))?;
            builder = builder.add_root_certificate(cert);
        }
        let http = builder
            .build()
            .map_err(|e| DestinationError(format!("HTTP client: {e}")))?;
        let basic = config
            .get("basic.auth.user.info")
            .and_then(|info| info.split_once(':'))
            .map(|(user, pass)| (user.to_string(), pass.to_string()));
        Ok(Destination {
            base,
            http,
            basic,
            bearer: config.get("bearer.auth.token").cloned(),
        })
    }

    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(u16, Value)> {
        let url = format!("{}{path}", self.base);
        let mut request = self.http.request(method.clone(), &url);
        if let Some((user, pass)) = &self.basic {
            request = request.basic_auth(user, Some(pass));
        } else if let Some(token) = &self.bearer {
            request = request.bearer_auth(token);
        }
        if let Some(body) = body {
            request = request
                .header("content-type", CONTENT_TYPE)
                .body(body.to_string());
        }
        let response = request
            .send()
            .await
            .map_err(|e| DestinationError(format!("cannot reach {}: {e}", self.base)))?;
        let status = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        Ok((status, serde_json::from_str(&text).unwrap_or(Value::Null)))
    }

    async fn expect(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        accepted: &[u16],
    ) -> Result<Value> {
        let (status, answer) = self.send(method.clone(), path, body).await?;
        if status == 200 || status == 204 || accepted.contains(&status) {
            return Ok(answer);
        }
        let message = answer
            .get("message")
            .and_then(Value::as_str)
            .map(str::to_string)
            .unwrap_or_else(|| answer.to_string());
        Err(DestinationError(format!(
            "{method} {}{path} answered HTTP {status}: {message}",
            self.base
        )))
    }

    /// The subject's version numbers (soft-deleted ones too with `deleted`); none when the
    /// destination does not know the subject.
    pub async fn versions(&self, subject: &str, deleted: bool) -> Result<Vec<i64>> {
        let path = format!("/subjects/{}/versions?deleted={deleted}", enc(subject));
        let answer = self
            .expect(reqwest::Method::GET, &path, None, &[404])
            .await?;
        Ok(answer
            .as_array()
            .map(|a| a.iter().filter_map(Value::as_i64).collect())
            .unwrap_or_default())
    }

    /// Puts the subject in IMPORT mode, so versions are written with the source's ids.
    pub async fn import_mode(&self, subject: &str) -> Result<()> {
        let path = format!("/mode/{}?force=true", enc(subject));
        let body = serde_json::json!({"mode": "IMPORT"});
        self.expect(reqwest::Method::PUT, &path, Some(&body), &[])
            .await
            .map(drop)
    }

    pub async fn register(&self, subject: &str, body: &Value) -> Result<()> {
        let path = format!("/subjects/{}/versions", enc(subject));
        self.expect(reqwest::Method::POST, &path, Some(body), &[])
            .await
            .map(drop)
    }

    pub async fn delete_version(&self, subject: &str, version: i64, permanent: bool) -> Result<()> {
        let path = format!(
            "/subjects/{}/versions/{version}?permanent={permanent}",
            enc(subject)
        );
        // Already gone (or already soft-deleted) is what was asked for.
        self.expect(reqwest::Method::DELETE, &path, None, &[404])
            .await
            .map(drop)
    }

    pub async fn put_config(&self, subject: &str, body: &Value) -> Result<()> {
        let path = format!("/config/{}", enc(subject));
        self.expect(reqwest::Method::PUT, &path, Some(body), &[])
            .await
            .map(drop)
    }

    pub async fn delete_config(&self, subject: &str) -> Result<()> {
        let path = format!("/config/{}", enc(subject));
        self.expect(reqwest::Method::DELETE, &path, None, &[404])
            .await
            .map(drop)
    }
}
