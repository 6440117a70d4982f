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
//!
//! Every reply is read with bounds: at most [`MAX_REPLY_BYTES`], the whole call within 30 s,
//! and it must have the shape the call expects (a list of version numbers, an object with a
//! schema id, ...): a web page or any other answer is an error, never taken for success. A
//! reply carrying this process's own instance identity ([`crate::instance`]) means the
//! destination is this registry: the call fails and [`Destination::is_this_registry`] says so.

use crate::spec::{HIDDEN, URL_KEY, url_password, url_without_userinfo};
use percent_encoding::{NON_ALPHANUMERIC, utf8_percent_encode};
use serde_json::Value;
use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

const CONTENT_TYPE: &str = "application/vnd.schemaregistry.v1+json";
/// The whole of one call, its reply read to the end included.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// The most of one reply that is read: a longer success is an error, and of a longer
/// failure only this much is summarized.
pub const MAX_REPLY_BYTES: usize = 1 << 20;
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
    /// A reply carried this process's instance identity.
    this_registry: AtomicBool,
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
        let mut builder = crate::client::builder()
            .timeout(REQUEST_TIMEOUT)
            .connect_timeout(CONNECT_TIMEOUT);
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
            this_registry: AtomicBool::new(false),
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

    /// Sends a request for `action` and reads its reply: at most [`MAX_REPLY_BYTES`] of it
    /// (whether there was more is answered beside it), all within [`REQUEST_TIMEOUT`].
    async fn send(
        &self,
        action: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<Reply> {
        let url = format!("{}{path}", self.base);
        let mut request = self.http.request(method, &url);
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
        let mut response = request.send().await.map_err(|e| self.unreachable(e))?;
        if response
            .headers()
            .get(crate::instance::HEADER)
            .is_some_and(|id| id.as_bytes() == crate::instance::id().as_bytes())
        {
            self.this_registry.store(true, Ordering::Relaxed);
            return Err(DestinationError(format!(
                "{} is this registry itself",
                self.shown
            )));
        }
        let status = response.status().as_u16();
        let html = response
            .headers()
            .get(reqwest::header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| v.to_ascii_lowercase().contains("html"));
        let mut text = Vec::new();
        let mut oversized = false;
        while !oversized {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => break,
                Err(e) if e.is_timeout() => {
                    return Err(DestinationError(format!(
                        "{} did not finish its reply to {action} within {} s",
                        self.shown,
                        REQUEST_TIMEOUT.as_secs()
                    )));
                }
                Err(e) => return Err(self.unreachable(e)),
            };
            let room = MAX_REPLY_BYTES - text.len();
            oversized = chunk.len() > room;
            text.extend_from_slice(&chunk[..chunk.len().min(room)]);
        }
        Ok(Reply {
            status,
            text: String::from_utf8_lossy(&text).into_owned(),
            oversized,
            html,
        })
    }

    /// Sends a request for `action` (how errors name it: never the subject, which readers
    /// of the status may not be allowed to know) and answers the reply's status and JSON.
    /// A success must be JSON of at most [`MAX_REPLY_BYTES`]; an `accepted` failure status
    /// (such as 404 for a subject the destination does not know) must be a registry's error
    /// object; any other status is an error summarizing the destination's message.
    async fn call(
        &self,
        action: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        accepted: &[u16],
    ) -> Result<(u16, Value)> {
        let reply = self.send(action, method, path, body).await?;
        let status = reply.status;
        let success = (200..300).contains(&status);
        if !success && !accepted.contains(&status) {
            let answer: Value = serde_json::from_str(&reply.text).unwrap_or(Value::Null);
            let message = answer
                .get("message")
                .and_then(Value::as_str)
                .map_or(reply.text.as_str(), |m| m);
            return Err(DestinationError(self.scrub(format!(
                "{} answered HTTP {status} to {action}: {}",
                self.shown,
                summary(message)
            ))));
        }
        if reply.oversized {
            return Err(DestinationError(format!(
                "{} answered {action} with more than {MAX_REPLY_BYTES} bytes",
                self.shown
            )));
        }
        if status == 204 || (success && reply.text.trim().is_empty()) {
            return Ok((status, Value::Null));
        }
        let answer = if reply.html {
            None
        } else {
            serde_json::from_str::<Value>(&reply.text).ok()
        };
        match answer {
            Some(answer) if success || answer.get("error_code").is_some_and(Value::is_i64) => {
                Ok((status, answer))
            }
            _ => Err(DestinationError(format!(
                "{} answered HTTP {status} to {action} with {}, not a schema registry's JSON",
                self.shown,
                if reply.html {
                    "an HTML page"
                } else {
                    "a reply"
                }
            ))),
        }
    }

    /// [`Destination::call`] for a reply that must have the given shape.
    async fn expect(
        &self,
        action: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
        shape: Shape,
    ) -> Result<()> {
        let (status, answer) = self.call(action, method, path, body, &[]).await?;
        self.check(action, status, &answer, shape)
    }

    fn check(&self, action: &str, status: u16, answer: &Value, shape: Shape) -> Result<()> {
        if shape.fits(answer) {
            return Ok(());
        }
        Err(DestinationError(format!(
            "{} answered HTTP {status} to {action} with JSON that is not {}",
            self.shown,
            shape.name()
        )))
    }

    /// Whether a reply came from this very registry: the exporter would copy into its own
    /// source.
    pub fn is_this_registry(&self) -> bool {
        self.this_registry.load(Ordering::Relaxed)
    }

    /// The subject's version numbers (soft-deleted ones too with `deleted`); none when the
    /// destination does not know the subject.
    pub async fn versions(&self, subject: &str, deleted: bool) -> Result<Vec<i64>> {
        let action = "a listing of versions";
        let path = format!("/subjects/{}/versions?deleted={deleted}", enc(subject));
        let (status, answer) = self
            .call(action, reqwest::Method::GET, &path, None, &[404])
            .await?;
        if status == 404 {
            return Ok(Vec::new());
        }
        self.check(action, status, &answer, Shape::Versions)?;
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
            Shape::Mode,
        )
        .await
    }

    /// Registers a version with the source's id and number. A refusal by the destination's
    /// rules on ids and modes (42205: the id is taken by other content, the subject left
    /// IMPORT mode) is [`Registered::Refused`] with the destination's message: the two
    /// registries disagree, which no retry mends.
    pub async fn register(&self, subject: &str, body: &Value) -> Result<Registered> {
        let action = "a registration";
        let path = format!("/subjects/{}/versions", enc(subject));
        let (status, answer) = self
            .call(action, reqwest::Method::POST, &path, Some(body), &[422])
            .await?;
        if status == 422 {
            let message = answer.get("message").and_then(Value::as_str).unwrap_or("");
            let message = self.scrub(summary(message));
            if answer.get("error_code").and_then(Value::as_i64) == Some(42205) {
                return Ok(Registered::Refused(message));
            }
            return Err(DestinationError(format!(
                "{} answered HTTP 422 to {action}: {message}",
                self.shown
            )));
        }
        self.check(action, status, &answer, Shape::Id)?;
        Ok(Registered::Done)
    }

    /// The schema id the destination holds at `version` of `subject` (soft-deleted or not);
    /// none when it holds no such version.
    pub async fn version_id(&self, subject: &str, version: i64) -> Result<Option<i64>> {
        let action = "a read of a version";
        let path = format!("/subjects/{}/versions/{version}?deleted=true", enc(subject));
        let (status, answer) = self
            .call(action, reqwest::Method::GET, &path, None, &[404])
            .await?;
        if status == 404 {
            return Ok(None);
        }
        self.check(action, status, &answer, Shape::Id)?;
        Ok(answer.get("id").and_then(Value::as_i64))
    }

    pub async fn delete_version(&self, subject: &str, version: i64, permanent: bool) -> Result<()> {
        let action = "a delete";
        let path = format!(
            "/subjects/{}/versions/{version}?permanent={permanent}",
            enc(subject)
        );
        // Already gone (or already soft-deleted) is what was asked for.
        let (status, answer) = self
            .call(action, reqwest::Method::DELETE, &path, None, &[404])
            .await?;
        if status == 404 {
            return Ok(());
        }
        self.check(action, status, &answer, Shape::Version)
    }

    /// The subject's own config on the destination (`None` when it has none), as it answers
    /// it, with `compatibilityLevel` read as `compatibility`. The empty subject is the
    /// destination's global config.
    pub async fn config(&self, subject: &str) -> Result<Option<serde_json::Map<String, Value>>> {
        let action = "a config read";
        let path = format!("{}?defaultToGlobal=false", config_path(subject));
        let (status, answer) = self
            .call(action, reqwest::Method::GET, &path, None, &[404])
            .await?;
        if status == 404 {
            return Ok(None);
        }
        self.check(action, status, &answer, Shape::Object)?;
        let mut config = answer.as_object().cloned().unwrap_or_default();
        if let Some(level) = config.remove("compatibilityLevel") {
            config.entry("compatibility").or_insert(level);
        }
        Ok(Some(config))
    }

    pub async fn put_config(&self, subject: &str, body: &Value) -> Result<()> {
        let path = config_path(subject);
        self.expect(
            "a config change",
            reqwest::Method::PUT,
            &path,
            Some(body),
            Shape::Object,
        )
        .await
    }

    pub async fn delete_config(&self, subject: &str) -> Result<()> {
        let action = "a config removal";
        let path = config_path(subject);
        let (status, answer) = self
            .call(action, reqwest::Method::DELETE, &path, None, &[404])
            .await?;
        if status == 404 {
            return Ok(());
        }
        self.check(action, status, &answer, Shape::Object)
    }
}

const KEKS: &str = "/dek-registry/v1/keks";

/// A key as the destination's DEK Registry holds it: its JSON (a KEK's metadata, or a DEK
/// with its encrypted material, which is compared and never shown) and whether it is
/// soft-deleted.
#[derive(Debug, Clone, PartialEq)]
pub struct HeldKey {
    pub fields: serde_json::Map<String, Value>,
    pub deleted: bool,
}

impl HeldKey {
    /// A field as text; absent or null is `None`.
    pub fn text(&self, field: &str) -> Option<&str> {
        self.fields.get(field).and_then(Value::as_str)
    }
}

/// How a key write at the destination ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeyWritten {
    Done,
    /// Refused by the DEK Registry's rules (a key that exists, a KEK still referenced), with
    /// the destination's error code: the two registries disagree, which no retry mends.
    Refused(i64),
}

impl Destination {
    /// The KEK named, soft-deleted or not; none when the destination does not hold it.
    pub async fn kek(&self, name: &str) -> Result<Option<HeldKey>> {
        let path = format!("{KEKS}/{}?deleted=true", enc(name));
        self.key("a read of a KEK", &path).await
    }

    /// One version of a subject's DEK in one algorithm, soft-deleted or not.
    pub async fn dek(
        &self,
        kek: &str,
        subject: &str,
        version: i64,
        algorithm: &str,
    ) -> Result<Option<HeldKey>> {
        let path = format!(
            "{KEKS}/{}/deks/{}/versions/{version}?algorithm={}&deleted=true",
            enc(kek),
            enc(subject),
            enc(algorithm)
        );
        self.key("a read of a DEK", &path).await
    }

    async fn key(&self, action: &str, path: &str) -> Result<Option<HeldKey>> {
        let (status, answer) = self
            .call(action, reqwest::Method::GET, path, None, &[404])
            .await?;
        if status == 404 {
            return Ok(None);
        }
        self.check(action, status, &answer, Shape::Key)?;
        let fields = answer.as_object().cloned().unwrap_or_default();
        let deleted = fields.get("deleted").and_then(Value::as_bool) == Some(true);
        Ok(Some(HeldKey { fields, deleted }))
    }

    pub async fn create_kek(&self, body: &Value) -> Result<KeyWritten> {
        self.key_write("a KEK creation", reqwest::Method::POST, KEKS, Some(body))
            .await
    }

    pub async fn update_kek(&self, name: &str, body: &Value) -> Result<KeyWritten> {
        let path = format!("{KEKS}/{}", enc(name));
        self.key_write("a KEK change", reqwest::Method::PUT, &path, Some(body))
            .await
    }

    /// Soft-deletes a KEK (`deleted`), or undeletes it.
    pub async fn set_kek_deleted(&self, name: &str, deleted: bool) -> Result<KeyWritten> {
        let (method, path) = if deleted {
            (reqwest::Method::DELETE, format!("{KEKS}/{}", enc(name)))
        } else {
            (
                reqwest::Method::POST,
                format!("{KEKS}/{}/undelete", enc(name)),
            )
        };
        self.key_write("a KEK delete or undelete", method, &path, None)
            .await
    }

    /// Creates a DEK under `kek` for `subject`: version, algorithm, encrypted material.
    pub async fn create_dek(&self, kek: &str, subject: &str, body: &Value) -> Result<KeyWritten> {
        let path = format!("{KEKS}/{}/deks/{}", enc(kek), enc(subject));
        self.key_write("a DEK creation", reqwest::Method::POST, &path, Some(body))
            .await
    }

    /// Soft-deletes one version of a DEK (`deleted`), or undeletes it.
    pub async fn set_dek_deleted(
        &self,
        kek: &str,
        subject: &str,
        (version, algorithm): (i64, &str),
        deleted: bool,
    ) -> Result<KeyWritten> {
        let path = format!(
            "{KEKS}/{}/deks/{}/versions/{version}{}?algorithm={}",
            enc(kek),
            enc(subject),
            if deleted { "" } else { "/undelete" },
            enc(algorithm)
        );
        let method = if deleted {
            reqwest::Method::DELETE
        } else {
            reqwest::Method::POST
        };
        self.key_write("a DEK delete or undelete", method, &path, None)
            .await
    }

    /// A key write whose refusal by the DEK Registry's rules (409, 422) is an answer, not an
    /// error; its reply (which may carry key material) is checked for shape and dropped.
    async fn key_write(
        &self,
        action: &str,
        method: reqwest::Method,
        path: &str,
        body: Option<&Value>,
    ) -> Result<KeyWritten> {
        let (status, answer) = self.call(action, method, path, body, &[409, 422]).await?;
        if status == 409 || status == 422 {
            let code = answer
                .get("error_code")
                .and_then(Value::as_i64)
                .unwrap_or(0);
            return Ok(KeyWritten::Refused(code));
        }
        self.check(action, status, &answer, Shape::Object)?;
        Ok(KeyWritten::Done)
    }
}

/// The config route of a subject or context key, the global one for the empty name.
fn config_path(subject: &str) -> String {
    if subject.is_empty() {
        "/config".into()
    } else {
        format!("/config/{}", enc(subject))
    }
}

/// How a registration at the destination ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Registered {
    Done,
    /// Refused by the destination's rules on ids and modes, with its message.
    Refused(String),
}

/// A reply of the destination, read up to [`MAX_REPLY_BYTES`].
struct Reply {
    status: u16,
    text: String,
    /// The destination had more to say than was read.
    oversized: bool,
    /// Its content type is HTML: a web page, not a registry.
    html: bool,
}

/// What a successful reply must be.
#[derive(Debug, Clone, Copy)]
enum Shape {
    /// A list of version numbers.
    Versions,
    /// A version number (or nothing, for a delete answered 204).
    Version,
    /// An object with an integer `id`.
    Id,
    /// An object with a string `mode`.
    Mode,
    /// An object (or nothing, for a change answered 204).
    Object,
    /// A key of the DEK Registry: an object with a string `kmsKeyId` (a KEK) or
    /// `algorithm` (a DEK).
    Key,
}

impl Shape {
    fn fits(self, answer: &Value) -> bool {
        match self {
            Shape::Versions => answer
                .as_array()
                .is_some_and(|a| a.iter().all(Value::is_i64)),
            Shape::Version => answer.is_i64() || answer.is_null(),
            Shape::Id => answer.get("id").is_some_and(Value::is_i64),
            Shape::Mode => answer.get("mode").is_some_and(Value::is_string),
            Shape::Object => answer.is_object() || answer.is_null(),
            Shape::Key => ["kmsKeyId", "algorithm"]
                .iter()
                .any(|f| answer.get(f).is_some_and(Value::is_string)),
        }
    }

    fn name(self) -> &'static str {
        match self {
            Shape::Versions => "a list of version numbers",
            Shape::Version => "a version number",
            Shape::Id => "an object with a schema id",
            Shape::Mode => "an object with a mode",
            Shape::Object => "an object",
            Shape::Key => "a KEK or DEK",
        }
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
