//! Exporters: Confluent's `/exporters` (Schema Linking) for Covenant. An exporter copies the
//! subjects it is given, with their ids, versions, soft and hard deletes and configs, and the
//! DEK Registry's keys of those subjects (see `keys.rs`), to another Confluent-compatible
//! registry, first everything there is, then every change as it
//! happens, and keeps its progress so a restart resumes where it stopped.
//!
//! The change log it follows is the registry's audit trail: every registry write appends its
//! entry in its own transaction, so the trail's sequence numbers order exactly the changes
//! that committed. An exporter remembers the last sequence number whose subject it copied;
//! copying a subject is idempotent (it writes what the destination lacks), so replaying a
//! stretch of the trail after a crash writes nothing twice.
//!
//! An exporter runs with the rights of the principal that created it (see [`authority`]):
//! it copies only subjects its creator may read, and pauses itself when its creator may no
//! longer administer exporters. The API never answers its credentials ([`spec::HIDDEN`]).

pub mod authority;
pub mod client;
mod destination;
pub mod instance;
mod keys;
mod runner;
pub mod spec;

pub use authority::{AllowAll, Creator, ExportAuthority};
pub use destination::{Destination, DestinationError, MAX_REPLY_BYTES, REPLY_CHARS, TLS_UNUSABLE};
pub use spec::{ContextType, ExporterSpec, SpecError};

use covenant_registry::{AuditContext, Registry};
use covenant_store::exporters::{ExporterRecord, ExporterStore};
use covenant_store::{AuditTarget, StoreError};
use serde::Serialize;
use serde_json::{Map, Value};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::{Arc, Mutex};
use tokio::sync::Notify;

pub const RUNNING: &str = "RUNNING";
/// Exporters per registry: each one is a loop of work on every node that may run it.
pub const MAX_EXPORTERS: usize = 100;
pub const PAUSED: &str = "PAUSED";

/// Why an exporter operation failed, with Confluent's error code.
#[derive(Debug, thiserror::Error)]
pub enum ExporterError {
    #[error("Exporter '{0}' not found.")]
    NotFound(String),
    #[error("Exporter '{0}' already exists.")]
    Exists(String),
    #[error("Exporter '{0}' is not paused.")]
    NotPaused(String),
    #[error("Too many exporters: at most {MAX_EXPORTERS}.")]
    TooMany,
    #[error("User is denied operation Admin on Config:")]
    Forbidden,
    #[error(transparent)]
    Spec(#[from] SpecError),
    #[error("{0}")]
    InvalidRequest(String),
    #[error("Error while accessing the exporter store: {0}")]
    Store(#[from] StoreError),
}

impl ExporterError {
    /// Confluent's `error_code`; the HTTP status is its first three digits.
    pub fn error_code(&self) -> u32 {
        match self {
            ExporterError::NotFound(_) => 40450,
            ExporterError::Exists(_) => 40960,
            ExporterError::NotPaused(_) => 40963,
            ExporterError::TooMany => 40964,
            ExporterError::Forbidden => 40301,
            ExporterError::Spec(e) => e.error_code(),
            ExporterError::InvalidRequest(_) => 42201,
            ExporterError::Store(_) => 50001,
        }
    }
}

pub type ExporterResult<T> = Result<T, ExporterError>;

/// `GET /exporters/{name}/status`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ExporterStatus {
    pub name: String,
    pub state: String,
    /// The last change (audit sequence number) copied to the destination.
    pub offset: i64,
    /// Changes committed on this registry and not copied yet.
    pub lag: i64,
    pub ts: i64,
    /// The last error; while all is well, how many subjects are skipped because the
    /// exporter's creator may not read them (a count, never their names), or nothing.
    pub trace: String,
}

/// The exporters of one registry: their records and the loop that runs them.
pub struct Exporters {
    registry: Arc<Registry>,
    store: Arc<dyn ExporterStore>,
    /// Woken by every change to an exporter, so the loop picks it up at once.
    wake: Notify,
    /// What each exporter's creator may do now.
    authority: Arc<dyn ExportAuthority>,
    /// Per exporter this node runs: the subjects it matches and did not copy because its
    /// creator may not read them (counted in its trace, retried once allowed).
    skipped: Mutex<HashMap<String, BTreeSet<String>>>,
}

fn now_ms() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn decode(record: &ExporterRecord) -> ExporterResult<ExporterSpec> {
    serde_json::from_str(&record.spec)
        .map_err(|e| ExporterError::InvalidRequest(format!("stored exporter is unreadable: {e}")))
}

fn encode(spec: &ExporterSpec) -> String {
    serde_json::to_string(spec).unwrap_or_default()
}

/// Reads Confluent's request fields over `spec` (all optional except where creation needs
/// them); unknown fields are refused so a typo does not pass silently.
fn apply_fields(spec: &mut ExporterSpec, body: &Map<String, Value>) -> ExporterResult<()> {
    let text = |key: &str, v: &Value| -> ExporterResult<Option<String>> {
        match v {
            Value::Null => Ok(None),
            Value::String(s) => Ok(Some(s.clone())),
            _ => Err(ExporterError::InvalidRequest(format!(
                "'{key}' must be a string"
            ))),
        }
    };
    for (key, value) in body {
        match key.as_str() {
            "name" => {}
            "subjects" => {
                spec.subjects = serde_json::from_value(value.clone()).map_err(|_| {
                    SpecError::InvalidSubjects("'subjects' must be a list of strings".into())
                })?;
            }
            "contextType" => {
                spec.context_type = serde_json::from_value(value.clone()).map_err(|_| {
                    ExporterError::InvalidRequest("contextType must be AUTO, CUSTOM or NONE".into())
                })?;
            }
            "context" => spec.context = text(key, value)?,
            "subjectRenameFormat" => spec.subject_rename_format = text(key, value)?,
            "config" => {
                let mut given = config_map(value)?;
                spec::restore_hidden(&mut given, &spec.config)?;
                spec.config = given;
            }
            "kekRenameFormat" => spec.kek_rename_format = text(key, value)?,
            other => {
                return Err(ExporterError::InvalidRequest(format!(
                    "Unknown exporter field '{other}'"
                )));
            }
        }
    }
    Ok(())
}

fn config_map(value: &Value) -> ExporterResult<BTreeMap<String, String>> {
    let Some(object) = value.as_object() else {
        return Err(SpecError::InvalidConfig("'config' must be an object".into()).into());
    };
    object
        .iter()
        .map(|(k, v)| match v {
            Value::String(s) => Ok((k.clone(), s.clone())),
            Value::Number(_) | Value::Bool(_) => Ok((k.clone(), v.to_string())),
            _ => Err(SpecError::InvalidConfig(format!("config '{k}' must be a string")).into()),
        })
        .collect()
}

fn audited(audit: &AuditContext, operation: &str, name: &str) -> covenant_store::AuditEntry {
    audit.entry(
        operation,
        AuditTarget {
            detail: Some(format!("exporter {name}")),
            ..AuditTarget::default()
        },
    )
}

impl Exporters {
    /// The exporters of `registry`, stored in `store`, each held to its creator's rights as
    /// `authority` answers them ([`AllowAll`] on a server without authentication).
    pub fn new(
        registry: Arc<Registry>,
        store: Arc<dyn ExporterStore>,
        authority: Arc<dyn ExportAuthority>,
    ) -> Arc<Exporters> {
        Arc::new(Exporters {
            registry,
            store,
            wake: Notify::new(),
            authority,
            skipped: Mutex::new(HashMap::new()),
        })
    }

    async fn record(&self, name: &str) -> ExporterResult<ExporterRecord> {
        self.store
            .exporter(name)
            .await?
            .ok_or_else(|| ExporterError::NotFound(name.to_string()))
    }

    /// `GET /exporters`: names, sorted.
    pub async fn names(&self) -> ExporterResult<Vec<String>> {
        Ok(self
            .store
            .exporters()
            .await?
            .into_iter()
            .map(|r| r.name)
            .collect())
    }

    /// `POST /exporters` by `creator`, whose rights the exporter runs with: validated,
    /// stored RUNNING with nothing copied yet. The creator must hold Admin itself (checked
    /// here too, not only by whoever routed the request).
    pub async fn create(
        &self,
        body: &Map<String, Value>,
        creator: &Creator,
        audit: &AuditContext,
    ) -> ExporterResult<String> {
        if !self.authority.may_administer(creator) {
            return Err(ExporterError::Forbidden);
        }
        let name = body
            .get("name")
            .and_then(Value::as_str)
            .unwrap_or("")
            .to_string();
        let mut spec = ExporterSpec {
            name: name.clone(),
            subjects: vec!["*".into()],
            context_type: ContextType::Auto,
            context: None,
            subject_rename_format: None,
            kek_rename_format: None,
            config: BTreeMap::new(),
        };
        apply_fields(&mut spec, body)?;
        spec.validate()?;
        if self.store.exporters().await?.len() >= MAX_EXPORTERS {
            return Err(ExporterError::TooMany);
        }
        let record = ExporterRecord {
            name: name.clone(),
            spec: encode(&spec),
            state: RUNNING.into(),
            offset: 0,
            ts: now_ms(),
            trace: String::new(),
            creator: creator.encode(),
        };
        let entry = audited(audit, "exporter.create", &name);
        if !self.store.create_exporter(&record, Some(&entry)).await? {
            return Err(ExporterError::Exists(name));
        }
        self.wake.notify_one();
        Ok(name)
    }

    /// `GET /exporters/{name}` (and its config): credentials hidden.
    pub async fn info(&self, name: &str) -> ExporterResult<ExporterSpec> {
        Ok(decode(&self.record(name).await?)?.redacted())
    }

    /// `PUT /exporters/{name}`: the given fields replace the stored ones; only while paused.
    pub async fn update(
        &self,
        name: &str,
        body: &Map<String, Value>,
        audit: &AuditContext,
    ) -> ExporterResult<String> {
        self.change(name, audit, "exporter.update", |record, spec| {
            if record.state != PAUSED {
                return Err(ExporterError::NotPaused(record.name.clone()));
            }
            apply_fields(spec, body)
        })
        .await
    }

    /// `PUT /exporters/{name}/config`: merges the given keys into the destination config; a
    /// credential sent back as [`spec::HIDDEN`] keeps its stored value.
    pub async fn update_config(
        &self,
        name: &str,
        body: &Value,
        audit: &AuditContext,
    ) -> ExporterResult<String> {
        let given = config_map(body)?;
        self.change(name, audit, "exporter.config", |record, spec| {
            if record.state != PAUSED {
                return Err(ExporterError::NotPaused(record.name.clone()));
            }
            let mut given = given;
            spec::restore_hidden(&mut given, &spec.config)?;
            spec.config.extend(given);
            Ok(())
        })
        .await
    }

    /// `PUT /exporters/{name}/pause`.
    pub async fn pause(&self, name: &str, audit: &AuditContext) -> ExporterResult<String> {
        self.change(name, audit, "exporter.pause", |record, _| {
            record.state = PAUSED.into();
            Ok(())
        })
        .await
    }

    /// `PUT /exporters/{name}/resume`.
    pub async fn resume(&self, name: &str, audit: &AuditContext) -> ExporterResult<String> {
        self.change(name, audit, "exporter.resume", |record, _| {
            record.state = RUNNING.into();
            record.trace.clear();
            Ok(())
        })
        .await
    }

    /// `PUT /exporters/{name}/reset`: forgets the progress, so everything is copied again
    /// (idempotently) when it runs.
    pub async fn reset(&self, name: &str, audit: &AuditContext) -> ExporterResult<String> {
        self.change(name, audit, "exporter.reset", |record, _| {
            record.offset = 0;
            record.trace.clear();
            Ok(())
        })
        .await
    }

    async fn change(
        &self,
        name: &str,
        audit: &AuditContext,
        operation: &str,
        edit: impl FnOnce(&mut ExporterRecord, &mut ExporterSpec) -> ExporterResult<()>,
    ) -> ExporterResult<String> {
        let mut record = self.record(name).await?;
        let mut spec = decode(&record)?;
        edit(&mut record, &mut spec)?;
        spec.name = name.to_string();
        spec.validate()?;
        record.spec = encode(&spec);
        record.ts = now_ms();
        let entry = audited(audit, operation, name);
        if !self.store.update_exporter(&record, Some(&entry)).await? {
            return Err(ExporterError::NotFound(name.to_string()));
        }
        self.wake.notify_one();
        Ok(name.to_string())
    }

    /// `DELETE /exporters/{name}`.
    pub async fn delete(&self, name: &str, audit: &AuditContext) -> ExporterResult<()> {
        let entry = audited(audit, "exporter.delete", name);
        if !self.store.delete_exporter(name, Some(&entry)).await? {
            return Err(ExporterError::NotFound(name.to_string()));
        }
        self.wake.notify_one();
        Ok(())
    }

    /// `GET /exporters/{name}/status`.
    pub async fn status(&self, name: &str) -> ExporterResult<ExporterStatus> {
        let record = self.record(name).await?;
        let last = self.registry.store().last_audit_seq().await?;
        Ok(ExporterStatus {
            lag: (last - record.offset).max(0),
            name: record.name,
            state: record.state,
            offset: record.offset,
            ts: record.ts,
            trace: record.trace,
        })
    }
}
