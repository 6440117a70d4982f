//! The store interface and its embedded (SQLite) and shared (PostgreSQL) backends.
//!
//! The [`Store`] trait is shaped around what the registry needs, not around SQL: every
//! operation is one call, and registration takes a guard closure that runs inside the
//! backend's write transaction with the subject's current versions. That is how a
//! compatibility check stays atomic with the write it allows: the SQLite backend has a
//! single writer connection, and a PostgreSQL backend holds a per-subject lock for the
//! duration of the guard.
//!
//! The store knows nothing of schema formats: schema texts, types and content keys are
//! opaque strings computed by the registry.

pub mod audit;
pub mod audit_denials;
pub mod conformance;
pub mod context;
pub mod deks;
pub mod deks_postgres;
mod deks_sql;
pub mod deks_sqlite;
pub mod exporters;
pub mod exporters_postgres;
mod exporters_sql;
pub mod exporters_sqlite;
pub mod governance;
pub mod governance_postgres;
mod governance_sql;
pub mod governance_sqlite;
pub mod group_commit;
pub mod guid;
pub mod pg_group;
mod pg_pool;
pub mod postgres;
pub mod profiles;
pub mod profiles_postgres;
mod profiles_sql;
pub mod profiles_sqlite;
mod registry_sql;
pub mod samples;
pub mod samples_postgres;
mod samples_sql;
pub mod samples_sqlite;
mod sql;
pub mod sqlite;
mod sqlite_conn;

use async_trait::async_trait;
use serde::{Deserialize, Serialize};
use std::fmt;

pub use audit::{AuditContext, AuditEntry, AuditLine, AuditQuery, AuditTarget};
pub use governance::GovernanceStore;
pub use governance_postgres::PostgresGovernanceStore;
pub use governance_sqlite::SqliteGovernanceStore;
pub use postgres::PostgresStore;
pub use samples::{LiveMark, NewSample, SampleAdded, SampleRecord, SampleStore, SamplesRestored};
pub use samples_postgres::PostgresSampleStore;
pub use samples_sqlite::SqliteSampleStore;
pub use sqlite::SqliteStore;

pub use profiles::{NewProfile, ProfileRecord, ProfileStore, RestoredProfiles};
pub use profiles_postgres::PostgresProfileStore;
pub use profiles_sqlite::SqliteProfileStore;

/// A reference from one schema to a subject version, as registered.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SchemaRef {
    pub name: String,
    pub subject: String,
    pub version: i64,
}

/// A schema as stored: one row per stored id (see [`context`] for how a context's ids are
/// stored). Rows are never rebound to other content.
#[derive(Debug, Clone, PartialEq)]
pub struct SchemaRecord {
    pub id: i64,
    /// Confluent's `schemaType` name (`AVRO`, `JSON`, `PROTOBUF`).
    pub schema_type: String,
    pub schema: String,
    pub references: Vec<SchemaRef>,
    pub metadata: Option<serde_json::Value>,
    pub rule_set: Option<serde_json::Value>,
    /// Identity used for dedupe: same key means same id.
    pub content_key: String,
}

impl SchemaRecord {
    /// Whether the rule set has a migration, domain or encoding rule of this `type` (the
    /// `ruleType` filter of `GET /schemas`).
    pub fn has_rules_of_type(&self, rule_type: &str) -> bool {
        let Some(rule_set) = &self.rule_set else {
            return false;
        };
        ["migrationRules", "domainRules", "encodingRules"]
            .iter()
            .filter_map(|kind| rule_set.get(kind).and_then(serde_json::Value::as_array))
            .flatten()
            .any(|rule| rule.get("type").and_then(serde_json::Value::as_str) == Some(rule_type))
    }

    /// Confluent's guid of this record (see [`guid`]).
    pub fn guid(&self) -> String {
        guid::guid_of(
            &self.schema,
            &self.references,
            self.metadata.as_ref(),
            self.rule_set.as_ref(),
        )
    }
}

/// One version of a subject with the schema it carries.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredVersion {
    pub subject: String,
    pub version: i64,
    pub deleted: bool,
    /// Milliseconds since the Unix epoch when the version was written.
    pub created_at: i64,
    pub schema: SchemaRecord,
}

/// A schema to register; `content_key` decides whether an existing id is reused.
#[derive(Debug, Clone, PartialEq)]
pub struct NewSchema {
    pub schema_type: String,
    pub schema: String,
    pub references: Vec<SchemaRef>,
    pub metadata: Option<serde_json::Value>,
    pub rule_set: Option<serde_json::Value>,
    pub content_key: String,
}

impl NewSchema {
    /// The guid the stored row will carry (see [`guid`]).
    pub fn guid(&self) -> String {
        guid::guid_of(
            &self.schema,
            &self.references,
            self.metadata.as_ref(),
            self.rule_set.as_ref(),
        )
    }
}

/// When registration returns an existing version instead of writing a new one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dedupe {
    /// Any non-deleted version with the same content key is returned (Confluent's default).
    AnyLive,
    /// Only the latest non-deleted version is returned when equal (`"version": -1`).
    LatestOnly,
    /// Always write (explicit version, IMPORT mode).
    Never,
}

/// How to place the new version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Placement {
    /// An explicit id within the subject's context (IMPORT mode); `None` reuses the content's
    /// id in that context or allocates the context's next one.
    pub id: Option<i64>,
    /// An explicit version number; `None` takes max(all versions, deleted included) + 1.
    pub version: Option<i64>,
    pub dedupe: Dedupe,
}

impl Placement {
    /// The version a registration returns instead of writing, per [`Dedupe`]; both backends
    /// decide it here so they cannot disagree.
    pub fn existing(
        &self,
        versions: &[StoredVersion],
        candidate: &NewSchema,
    ) -> Option<Registered> {
        let mut live = versions.iter().filter(|v| !v.deleted);
        let found = match self.dedupe {
            Dedupe::AnyLive => live.find(|v| v.schema.content_key == candidate.content_key),
            Dedupe::LatestOnly => live
                .next_back()
                .filter(|v| v.schema.content_key == candidate.content_key),
            Dedupe::Never => None,
        };
        found.map(|v| Registered {
            id: v.schema.id,
            version: v.version,
            created: false,
            schema_created: false,
        })
    }

    /// The version number a new write takes: the explicit one if free, else one more than the
    /// highest ever used (deleted versions included).
    pub fn next_version(&self, subject: &str, versions: &[StoredVersion]) -> StoreResult<i64> {
        match self.version {
            Some(v) if versions.iter().any(|x| x.version == v) => Err(StoreError::VersionExists {
                subject: subject.to_string(),
                version: v,
            }),
            Some(v) => Ok(v),
            None => Ok(versions.iter().map(|v| v.version).max().unwrap_or(0) + 1),
        }
    }
}

impl Default for Placement {
    fn default() -> Self {
        Placement {
            id: None,
            version: None,
            dedupe: Dedupe::AnyLive,
        }
    }
}

/// The outcome of a registration.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Registered {
    pub id: i64,
    pub version: i64,
    /// False when an existing version was returned and nothing was written.
    pub created: bool,
    /// True when the candidate was stored as a new schema under `id`: the stored record is
    /// the candidate as sent, so the caller need not read it back.
    pub schema_created: bool,
}

/// One registration of a [`Store::register_all`] batch.
#[derive(Debug, Clone, Copy)]
pub struct Registration<'a> {
    pub subject: &'a str,
    pub candidate: &'a NewSchema,
    pub placement: Placement,
    pub audit: Audit<'a>,
}

/// Why a guard refused a registration; the registry puts its own error inside and takes it
/// back out with [`Rejection::into_inner`].
pub struct Rejection(pub Box<dyn std::error::Error + Send + Sync>);

impl Rejection {
    pub fn new(error: impl std::error::Error + Send + Sync + 'static) -> Self {
        Rejection(Box::new(error))
    }
    pub fn into_inner(self) -> Box<dyn std::error::Error + Send + Sync> {
        self.0
    }
}

impl fmt::Debug for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Rejection({})", self.0)
    }
}

/// The check run inside the write transaction with all versions of the subject (deleted ones
/// included, oldest first).
pub type Guard<'a> = &'a (dyn Fn(&[StoredVersion]) -> Result<(), Rejection> + Send + Sync);

/// A [`Guard`] the store may keep and run on another task ([`Store::register_shared`]).
pub type SharedGuard =
    std::sync::Arc<dyn Fn(&[StoredVersion]) -> Result<(), Rejection> + Send + Sync>;

/// A registration's check of the settings it was judged under: the config and mode rows of
/// `scopes` (`None`: the global scope) are read again inside the write transaction where
/// the backend can (PostgreSQL: under the subject's lock, by one statement for a whole group),
/// just before it otherwise, and `unchanged` refuses rows that differ from the judged ones.
#[derive(Clone)]
pub struct SettingsCheck {
    pub scopes: Vec<Option<String>>,
    /// Given the rows of `scopes`, in their order.
    pub unchanged: SettingsGuard,
}

/// The check of a [`SettingsCheck`], which the store may keep and run on another task.
pub type SettingsGuard = std::sync::Arc<dyn Fn(&[Settings]) -> Result<(), Rejection> + Send + Sync>;

impl SettingsCheck {
    /// The scopes to read, as the store names them.
    pub fn scopes(&self) -> Vec<Scope<'_>> {
        self.scopes
            .iter()
            .map(|s| s.as_deref().map_or(Scope::Global, Scope::Subject))
            .collect()
    }
}

/// The check run inside a delete's write transaction with every version (of any subject,
/// deleted ones included) whose schema references one of the versions being deleted. Because
/// it runs inside the write, no registration can add a reference between check and delete.
pub type DeleteGuard<'a> = &'a (dyn Fn(&[StoredVersion]) -> Result<(), Rejection> + Send + Sync);

/// Compatibility level and extra settings of one scope (global or a subject).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigRecord {
    /// The level's name as the registry writes it (`BACKWARD`, ...).
    pub compatibility: Option<String>,
    /// Further settings (`normalize`, `compatibilityGroup`, `protobufStrictness`, ...).
    pub extra: serde_json::Map<String, serde_json::Value>,
}

/// The config and mode rows of one scope, either absent.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Settings {
    pub config: Option<ConfigRecord>,
    pub mode: Option<String>,
}

/// The audit target of a config or mode write on `scope`; `key` is `config` or `mode`.
pub fn scope_target(scope: Scope<'_>, key: &str, detail: Option<String>) -> AuditTarget {
    AuditTarget {
        subject: match scope {
            Scope::Global => None,
            Scope::Subject(s) => Some(s.to_string()),
        },
        config_key: Some(key.to_string()),
        detail,
        ..AuditTarget::default()
    }
}

/// The audit target of a delete of `versions` of `subject`.
pub fn delete_target(subject: &str, versions: &[i64]) -> AuditTarget {
    let list: Vec<String> = versions.iter().map(i64::to_string).collect();
    AuditTarget {
        subject: Some(subject.to_string()),
        version: match versions {
            [one] => Some(*one),
            _ => None,
        },
        detail: (versions.len() > 1).then(|| format!("versions {}", list.join(","))),
        ..AuditTarget::default()
    }
}

/// The audit operation of a registration: IMPORT-mode writes with explicit ids stand out.
pub fn register_operation(placement: &Placement) -> &'static str {
    if placement.id.is_some() {
        "register.import"
    } else {
        "register"
    }
}

/// The audit target of a registration that wrote a version.
pub fn registered_target(subject: &str, r: &Registered) -> AuditTarget {
    AuditTarget {
        subject: Some(subject.to_string()),
        version: Some(r.version),
        schema_id: Some(context::public_id(r.id)),
        ..AuditTarget::default()
    }
}

/// The audit target of a context's removal.
pub fn context_target(context: &str) -> AuditTarget {
    AuditTarget {
        config_key: Some(context::context_key(context)),
        detail: Some("context".into()),
        ..AuditTarget::default()
    }
}

/// The audit operation name of a delete.
pub fn delete_operation(permanent: bool) -> &'static str {
    if permanent {
        "delete.permanent"
    } else {
        "delete.soft"
    }
}

/// Which configuration or mode scope an operation addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scope<'a> {
    Global,
    Subject(&'a str),
}

#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum StoreError {
    #[error("the guard refused the registration")]
    Rejected(Rejection),
    #[error("schema id {id} is already bound to other content")]
    IdConflict { id: i64 },
    #[error("version {version} of subject '{subject}' already exists")]
    VersionExists { subject: String, version: i64 },
    #[error("version {version} of subject '{subject}' does not exist")]
    NoSuchVersion { subject: String, version: i64 },
    #[error("the context '{0}' is not empty")]
    ContextNotEmpty(String),
    #[error("store failure: {0}")]
    Backend(String),
}

impl fmt::Display for Rejection {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.0, f)
    }
}

pub type StoreResult<T> = Result<T, StoreError>;

/// Who asked for a write, recorded in the write's transaction; `None` records nothing (an
/// import restoring an exported trail, tests).
pub type Audit<'a> = Option<&'a AuditContext>;

/// Everything the registry persists. Implementations must make an acknowledged write durable.
/// Writes that take an [`Audit`] append their audit entry inside their own transaction, and
/// only when they change something.
#[async_trait]
pub trait Store: Send + Sync {
    /// Registers `candidate` under `subject`, atomically with `guard`. The guard is not called
    /// when an existing version is returned per `placement.dedupe`. A new version whose
    /// references name a missing or soft-deleted version fails with
    /// [`StoreError::NoSuchVersion`] (checked inside the write, so a concurrent delete cannot
    /// slip between the registry's resolution of the references and the write).
    async fn register(
        &self,
        subject: &str,
        candidate: &NewSchema,
        placement: Placement,
        guard: Guard<'_>,
        audit: Audit<'_>,
    ) -> StoreResult<Registered>;

    /// [`Store::register`] with a guard the store may keep: a backend may write the
    /// registration together with concurrent ones in one transaction (PostgreSQL's group
    /// commit, see [`crate::pg_group`]). Each is still acknowledged only once its transaction
    /// committed, and a group fails or commits whole, so a registration is never half-written.
    async fn register_shared(
        &self,
        subject: &str,
        candidate: &NewSchema,
        placement: Placement,
        guard: SharedGuard,
        audit: Audit<'_>,
    ) -> StoreResult<Registered> {
        self.register(subject, candidate, placement, &*guard, audit)
            .await
    }

    /// [`Store::register_shared`] only if `settings` finds the config and mode rows it names
    /// as they were judged; [`StoreError::Rejected`] otherwise, with nothing written. Here the
    /// rows are read just before; a backend that can reads them inside the write.
    async fn register_checked(
        &self,
        subject: &str,
        candidate: &NewSchema,
        placement: Placement,
        guard: SharedGuard,
        settings: SettingsCheck,
        audit: Audit<'_>,
    ) -> StoreResult<Registered> {
        let now = self.settings(&settings.scopes()).await?;
        (settings.unchanged)(&now).map_err(StoreError::Rejected)?;
        self.register_shared(subject, candidate, placement, guard, audit)
            .await
    }

    /// Registers every one of `batch` in one write transaction, in order, as [`Store::register`]
    /// would one by one with a guard that allows all: all of them or, when any fails, none
    /// (the error is the first failure's). Made for imports and migrations, where a
    /// transaction per version paid a commit, a turn of the writer and a round trip each.
    async fn register_all(&self, batch: &[Registration<'_>]) -> StoreResult<Vec<Registered>>;

    /// The schema with this id, if any version (even soft-deleted) still carries it.
    async fn schema_by_id(&self, id: i64) -> StoreResult<Option<SchemaRecord>>;

    /// The lowest id carrying this content key, if any.
    async fn schema_by_key(&self, content_key: &str) -> StoreResult<Option<SchemaRecord>>;

    /// The ids whose record has this guid (in its printed UUID form), lowest first.
    async fn schema_ids_by_guid(&self, guid: &str) -> StoreResult<Vec<i64>>;

    /// The highest id ever allocated in the default context (0 when none).
    async fn max_schema_id(&self) -> StoreResult<i64>;

    /// Every context but the default one with its id slot, by name (see [`context`]).
    async fn contexts(&self) -> StoreResult<Vec<(String, i64)>>;

    /// The id slot of a context (`Some(0)` for the default one), `None` when it does not exist.
    async fn context_slot(&self, context: &str) -> StoreResult<Option<i64>>;

    /// Removes a context that holds no subject, soft-deleted ones included
    /// ([`StoreError::ContextNotEmpty`] otherwise); returns whether there was one to remove.
    async fn delete_context(&self, context: &str, audit: Audit<'_>) -> StoreResult<bool>;

    /// All versions of a subject, deleted ones included, oldest first.
    async fn subject_versions(&self, subject: &str) -> StoreResult<Vec<StoredVersion>>;

    /// Every subject name with whether it has at least one non-deleted version, sorted.
    async fn subjects(&self) -> StoreResult<Vec<(String, bool)>>;

    /// Up to `limit` subjects named after `subject`, by name, each with whether any of its
    /// versions is live: a page of [`Store::subjects`] read without the rest.
    async fn subjects_after(&self, subject: &str, limit: i64) -> StoreResult<Vec<(String, bool)>>;

    /// Every version of every subject (for `GET /schemas`), by subject then version.
    async fn all_versions(&self) -> StoreResult<Vec<StoredVersion>>;

    /// Up to `limit` versions after version `version` of `subject` (every version of a later
    /// subject, and the later versions of this one), by subject then version: a page of
    /// [`Store::all_versions`] read without the rest.
    async fn versions_after(
        &self,
        subject: &str,
        version: i64,
        limit: i64,
    ) -> StoreResult<Vec<StoredVersion>>;

    /// How many schemas of each type some version (deleted ones included) carries, by type.
    /// Counted by the database: `/metrics` asks on every scrape, and reading every version of
    /// a store of a million schemas took over a gigabyte.
    async fn schema_type_counts(&self) -> StoreResult<Vec<(String, u64)>>;

    /// `(subject, version, deleted)` of every version carrying schema `id`.
    async fn versions_with_id(&self, id: i64) -> StoreResult<Vec<(String, i64, bool)>>;

    /// Versions whose schema references `subject`/`version`.
    async fn referencing_versions(
        &self,
        subject: &str,
        version: i64,
    ) -> StoreResult<Vec<StoredVersion>>;

    /// Marks versions soft-deleted.
    async fn soft_delete(&self, subject: &str, versions: &[i64]) -> StoreResult<()>;

    /// Removes versions for good; when a subject has no version left its config and mode go too.
    async fn hard_delete(&self, subject: &str, versions: &[i64]) -> StoreResult<()>;

    /// Soft-deletes `versions` (or removes them for good when `permanent`, as
    /// [`Store::hard_delete`] does) atomically with `guard`, which sees the versions
    /// referencing any of them. A refusal comes back as [`StoreError::Rejected`] and leaves
    /// everything as it was.
    async fn delete_guarded(
        &self,
        subject: &str,
        versions: &[i64],
        permanent: bool,
        guard: DeleteGuard<'_>,
        audit: Audit<'_>,
    ) -> StoreResult<()>;

    async fn config(&self, scope: Scope<'_>) -> StoreResult<Option<ConfigRecord>>;
    async fn set_config(
        &self,
        scope: Scope<'_>,
        config: &ConfigRecord,
        audit: Audit<'_>,
    ) -> StoreResult<()>;
    /// Removes the scope's config and returns what it was.
    async fn delete_config(
        &self,
        scope: Scope<'_>,
        audit: Audit<'_>,
    ) -> StoreResult<Option<ConfigRecord>>;

    async fn mode(&self, scope: Scope<'_>) -> StoreResult<Option<String>>;

    /// The config and mode rows of each of `scopes`, in their order, read together: what a
    /// request judged along a subject's scope chain reads, in one round trip.
    async fn settings(&self, scopes: &[Scope<'_>]) -> StoreResult<Vec<Settings>>;

    /// [`Store::settings`] of `scopes` and [`Store::subject_versions`] of `subject`, read at
    /// once (what a registration or lookup by content reads first): one round trip on
    /// PostgreSQL. The two reads may see different moments.
    async fn settings_and_versions(
        &self,
        scopes: &[Scope<'_>],
        subject: &str,
    ) -> StoreResult<(Vec<Settings>, Vec<StoredVersion>)>;
    async fn set_mode(&self, scope: Scope<'_>, mode: &str, audit: Audit<'_>) -> StoreResult<()>;
    async fn delete_mode(&self, scope: Scope<'_>, audit: Audit<'_>) -> StoreResult<Option<String>>;

    /// Appends one entry on its own (an imported trail); returns its `seq`.
    async fn record_audit(&self, entry: &AuditEntry) -> StoreResult<i64>;

    /// Records a refused attempt (`outcome` `denied`): appended when it is the first of its
    /// kind (`key`) within [`audit_denials::DENIAL_WINDOW`], otherwise counted on that entry
    /// (see [`audit_denials`]), so refusals cannot grow the trail without bound.
    async fn record_denied(
        &self,
        entry: &AuditEntry,
        key: &audit_denials::DenialKey,
    ) -> StoreResult<()>;

    /// A page of the trail, oldest first, with the counts of repeated refusals up to date.
    async fn audit_entries(&self, query: &AuditQuery) -> StoreResult<Vec<AuditEntry>>;

    /// Removes entries older than `before` (ms); returns how many went.
    async fn prune_audit(&self, before: i64) -> StoreResult<u64>;

    /// The sequence number of the newest trail entry (0 when the trail is empty): how far the
    /// registry's change log reaches, for exporters following it.
    async fn last_audit_seq(&self) -> StoreResult<i64>;

    /// Waits until every write committed so far is durable: an answer that may have read one
    /// must not be sent before. Backends whose commits are durable when they return need not
    /// wait; the embedded store syncs commits in groups ([`group_commit`]).
    async fn settled(&self) -> StoreResult<()> {
        Ok(())
    }

    /// Whether this process is the only one writing the store, so that what it changed itself
    /// is all that can change (the embedded store: one server per data directory). The
    /// registry then keeps config and mode in memory; with several writers it reads them.
    fn only_writer(&self) -> bool {
        false
    }

    /// Whether what other writers change reaches this process now, through a change feed
    /// (PostgreSQL: while its listening connection holds). Only then may a cache of what they
    /// write be trusted to be forgotten in time.
    fn follows_changes(&self) -> bool {
        false
    }

    /// Checks that the backing storage answers (readiness); embedded stores always do.
    async fn ping(&self) -> StoreResult<()> {
        Ok(())
    }

    /// Every config scope (`None` = global), for export. The default covers the global scope
    /// and subjects that have versions; backends that can list every row override it.
    async fn all_configs(&self) -> StoreResult<Vec<(Option<String>, ConfigRecord)>> {
        let mut out = Vec::new();
        if let Some(c) = self.config(Scope::Global).await? {
            out.push((None, c));
        }
        for (subject, _) in self.subjects().await? {
            if let Some(c) = self.config(Scope::Subject(&subject)).await? {
                out.push((Some(subject), c));
            }
        }
        Ok(out)
    }

    /// Every mode scope (`None` = global), for export; the default is as for `all_configs`.
    async fn all_modes(&self) -> StoreResult<Vec<(Option<String>, String)>> {
        let mut out = Vec::new();
        if let Some(m) = self.mode(Scope::Global).await? {
            out.push((None, m));
        }
        for (subject, _) in self.subjects().await? {
            if let Some(m) = self.mode(Scope::Subject(&subject)).await? {
                out.push((Some(subject), m));
            }
        }
        Ok(out)
    }
}
