//! The destination registry, reached through the Confluent REST API with the credentials of
//! the exporter's config (`basic.auth.user.info`, `bearer.auth.token`, or a user name and
//! password in the URL) and, for a private CA, `schema.registry.ssl.ca.location` (a PEM
//! file).
//!
//! Errors become the exporter's `trace`, which principals without access to the exporter's
//! config read: they name the destination without its userinfo, summarize the destination's
//! reply (its status, and at most [`REPLY_CHARS`] characters of its message without control
//! characters) rather than echo it, never contain a credential, and say nothing about local
//! files (whether a CA file exists or parses): only that the TLS settings could not be loaded.

use crate::spec::{HIDDEN, URL_KEY, url_password, url_without_userinfo};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::Value;
use std::collections::BTreeMap;
use std::time::Duration;

const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
/// Characters of the destination's reply kept in an error.
pub const REPLY_CHARS: usize = 200;
/// What a CA file that cannot be used is reported as, whatever the reason.
pub const TLS_UNUSABLE: &str = "the TLS settings could not be loaded";

/// A failed call to the destination, as text for the exporter's `trace`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct DestinationError(pub String);

type Result<T> = std::result::Result<T, DestinationError>;

pub struct Destination {
    base: String,
    /// `base` without userinfo, for messages.
    shown: String,
    http: reqwest::Client,
    basic: Option<(String, String)>,
    bearer: Option<String>,
    /// Every credential this destination holds, scrubbed from whatever an error says.
    secrets: Vec<String>,
}

fn enc(segment: &str) -> String {
    utf8_percent_encode(segment, NON_ALPHANUMERIC).to_string()
}

/// At most [`REPLY_CHARS`] characters of `text`, control characters removed.
fn summary(text: &str) -> String {
    let clean: String = text
        .chars()
        .map(|c| if c.is_control() { ' ' } else { c })
        .collect();
    let clean = clean.split_whitespace().collect::<Vec<_>>().join(" ");
    if clean.chars().count() <= REPLY_CHARS {
        return clean;
    }
    let mut cut: String = clean.chars().take(REPLY_CHARS).collect();
    cut.push_str("...");
    cut
}

/// The CA certificates of a PEM file; any failure (no such file, unreadable, not PEM, no
/// certificate in it) is the same error, logged here for the operator.
fn ca_certificates(path: &str) -> Result<Vec<reqwest::Certificate>> {
    let loaded = std::fs::read(path)
        .map_err(|e| e.to_string())
        .and_then(|pem| reqwest::Certificate::from_pem_bundle(&pem).map_err(|e| e.to_string()))
        .and_then(|certs| {
            if certs.is_empty() {
                Err("no certificate in the file".to_string())
            } else {
                Ok(certs)
            }
        });
    loaded.map_err(|e| {
        tracing::warn!(path, error = %e, "exporter CA file unusable");
        DestinationError(TLS_UNUSABLE.into())
    })
}

impl Destination {
    pub fn new(config: &BTreeMap<String, String>) -> Result<Destination> {
        let base = config
            .get(URL_KEY)
            .map(|u| u.trim_end_matches('/').to_string())
            .ok_or_else(|| DestinationError(format!("no '{URL_KEY}' in the exporter config")))?;
        let mut builder = crate::client::builder().timeout(REQUEST_TIMEOUT);
        let with_ca = config.get("schema.registry.ssl.ca.location");
        if let Some(path) = with_ca {
            for cert in ca_certificates(path)? {
                builder = builder.add_root_certificate(cert);
            }
        }
        let http = builder.build().map_err(|e| {
            tracing::warn!(error = %e, "exporter HTTP client");
            DestinationError(if with_ca.is_some() {
                TLS_UNUSABLE.into()
            } else {
                "the HTTP client could not be built".into()
            })
        })?;
        let basic = config
            .get("basic.auth.user.info")
            .and_then(|info| info.split_once(':'))
            .map(|(user, pass)| (user.to_string(), pass.to_string()));
        let bearer = config.get("bearer.auth.token").cloned();
        let mut secrets: Vec<String> = config
            .iter()
            .filter(|(k, _)| crate::spec::is_secret_key(k))
            .map(|(_, v)| v.clone())
            .chain(basic.iter().map(|(_, pass)| pass.clone()))
            .chain(url_password(&base).map(str::to_string))
            .filter(|s| s.len() >= 3)
            .collect();
        // Longest first, so a secret containing another is scrubbed whole.
        secrets.sort_by_key(|s| std::cmp::Reverse(s.len()));
        Ok(Destination {
            shown: url_without_userinfo(&base),
            base,
            http,
            basic,
            bearer,
            secrets,
        })
    }

    /// `text` without any credential this destination holds.
    fn scrub(&self, text: String) -> String {
        self.secrets
            .iter()
            .fold(text, |text, secret| text.replace(secret.as_str(), HIDDEN))
    }

    /// Why a request got no answer, without its URL (which may carry credentials): the
    /// error's kind and its innermost cause.
    fn unreachable(&self, e: reqwest::Error) -> DestinationError {
        let timeout = e.is_timeout();
        let e = e.without_url();
        let mut innermost = None;
        let mut source = std::error::Error::source(&e);
        while let Some(cause) = source {
            innermost = Some(cause.to_string());
            source = cause.source();
        }
        let detail = match (timeout, innermost) {
            (true, _) => "timed out".to_string(),
            (false, Some(cause)) => format!("{e}: {cause}"),
            (false, None) => e.to_string(),
        };
        DestinationError(self.scrub(format!("cannot reach {}: {}", self.shown, summary(&detail))))
    }

    async fn send(
        &self,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<(u16, String)> {
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
        let response = request.send().await.map_err(|e| self.unreachable(e))?;
        let status = response.status().as_u16();
        let text = response.text().await.unwrap_or_default();
        Ok((status, text))
    }

    /// Sends a request for `action` (how errors name it: never the subject, which readers
    /// of the status may not be allowed to know) and answers the reply's JSON.
    async fn expect(
        &self,
        action: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        accepted: &[u16],
    ) -> Result<Value> {
        let (status, text) = self.send(method, path, body).await?;
        let answer = serde_json::from_str(&text).unwrap_or(Value::Null);
        if status == 200 || status == 204 || accepted.contains(&status) {
            return Ok(answer);
        }
        let message = answer
            .get("message")
            .and_then(Value::as_str)
            .map_or(text.as_str(), |m| m);
        Err(DestinationError(self.scrub(format!(
            "{} answered HTTP {status} to {action}: {}",
            self.shown,
            summary(message)
        ))))
    }

    /// The subject's version numbers (soft-deleted ones too with `deleted`); none when the
    /// destination does not know the subject.
    pub async fn versions(&self, subject: &str, deleted: bool) -> Result<Vec<i64>> {
        let path = format!("/subjects/{}/versions?deleted={deleted}", enc(subject));
        let answer = self
            .expect(
                "a listing of versions",
                reqwest::Method::GET,
                &path,
                None,
                &[404],
            )
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
        self.expect(
            "a change of mode",
            reqwest::Method::PUT,
            &path,
            Some(&body),
            &[],
        )
        .await
        .map(drop)
    }

    pub async fn register(&self, subject: &str, body: &Value) -> Result<()> {
        let path = format!("/subjects/{}/versions", enc(subject));
        self.expect(
            "a registration",
            reqwest::Method::POST,
            &path,
            Some(body),
            &[],
        )
        .await
        .map(drop)
    }

    pub async fn delete_version(&self, subject: &str, version: i64, permanent: bool) -> Result<()> {
        let path = format!(
            "/subjects/{}/versions/{version}?permanent={permanent}",
            enc(subject)
        );
        // Already gone (or already soft-deleted) is what was asked for.
        self.expect("a delete", reqwest::Method::DELETE, &path, None, &[404])
            .await
            .map(drop)
    }

    pub async fn put_config(&self, subject: &str, body: &Value) -> Result<()> {
        let path = format!("/config/{}", enc(subject));
        self.expect(
            "a config change",
            reqwest::Method::PUT,
            &path,
            Some(body),
            &[],
        )
        .await
        .map(drop)
    }

    pub async fn delete_config(&self, subject: &str) -> Result<()> {
        let path = format!("/config/{}", enc(subject));
        self.expect(
            "a config removal",
            reqwest::Method::DELETE,
            &path,
            None,
            &[404],
        )
        .await
        .map(drop)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replies_are_summarized_without_control_characters() {
        let reply = format!("\u{1b}[31mbad\r\nX-Injected: 1\t{}END", "z".repeat(400));
        let short = summary(&reply);
        assert!(short.starts_with("[31mbad X-Injected: 1 zz"), "{short}");
        assert!(!short.chars().any(char::is_control));
        assert!(!short.contains("END"));
        assert_eq!(short.chars().count(), REPLY_CHARS + 3);
        assert_eq!(summary("  Subject not found.\n"), "Subject not found.");
    }

    #[test]
    fn an_unusable_ca_file_says_nothing_about_the_file() {
        let dir = std::env::temp_dir().join(format!("covenant-ca-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let garbage = dir.join("garbage.pem");
        std::fs::write(&garbage, "not a certificate").unwrap();
        let missing = dir.join("missing.pem");
        for path in [&garbage, &missing] {
            let config = BTreeMap::from([
                (URL_KEY.to_string(), "https://b.example".to_string()),
                (
                    "schema.registry.ssl.ca.location".to_string(),
                    path.display().to_string(),
                ),
            ]);
            let error = Destination::new(&config).err().expect("refused");
            assert_eq!(error.0, TLS_UNUSABLE);
        }
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn credentials_are_scrubbed_and_the_url_shown_without_them() {
        let config = BTreeMap::from([
            (
                URL_KEY.to_string(),
                "http://u:url-secret@b.example:8081/".to_string(),
            ),
            ("bearer.auth.token".to_string(), "token-secret".to_string()),
        ]);
        let destination = Destination::new(&config).expect("destination");
        assert_eq!(destination.shown, "http://b.example:8081");
        let scrubbed = destination.scrub("echo url-secret and token-secret".into());
        assert_eq!(scrubbed, "echo [hidden] and [hidden]");
    }
}
