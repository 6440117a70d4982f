//! The PostgreSQL backend: several registry nodes share one database, which stays the single
//! source of truth.
//!
//! Isolation: every transaction runs at READ COMMITTED, and correctness comes from
//! transaction-scoped advisory locks taken as the first statement of a write, not from
//! snapshot isolation. Under READ COMMITTED each statement takes a fresh snapshot, so once a
//! lock is granted the following reads see everything the previous holder committed. (At
//! REPEATABLE READ the snapshot would be fixed by the lock statement itself and could miss the
//! previous holder's commit; SERIALIZABLE would turn contention into retryable aborts.)
//!
//! Locks, always taken in this order so that two writers cannot deadlock:
//! 1. the subject (`LOCK_SUBJECT`, hash of the name): registration, deletes, subject config and
//!    mode changes of one subject are serialized; the guard runs under it. A registration also
//!    locks the subjects its references name (all in name order), so a guarded delete of a
//!    referenced version and a registration adding a reference to it never both commit.
//! 2. the content key (`LOCK_CONTENT`): the same content registered at once on two nodes finds
//!    the id the first one committed, so one content gets one id.
//! 3. an explicit id (`LOCK_ID`, IMPORT mode only) and the id sequence (`LOCK_SEQUENCE`) when an
//!    imported id moves the sequence forward.
//!
//! Hash collisions between lock keys only serialize more than needed; they never let two
//! writers in at once. New ids come from the `schema_ids` sequence (distinct across nodes
//! without a global lock); an insert that meets an id taken by an import retries with the next
//! value.
//!
//! Registrations arriving together are written in one transaction ([`crate::pg_group`]), with
//! the same locks in the same order.
//!
//! Every write also sends `NOTIFY covenant_changes` inside its transaction, so listeners hear
//! of exactly the committed writes; see [`PostgresStore::subscribe_changes`].

use crate::audit_denials::{Admission, DenialKey, DenialTally, FLUSH_INTERVAL};
use crate::pg_group::Groups;
use crate::pg_pool::{self, MigrationLock, PoolOptions};
use crate::registry_sql::{self as ops, LOCK_SEQUENCE, RegistryTx};
use crate::sql::postgres::in_transaction;
use crate::sql::{DbError, DbResult, Lock, Tx, Value, args, dialect, postgres::Pg, unnest};
use crate::{AuditQuery, Scope, StoreError, StoreResult};
use deadpool_postgres::{GenericClient, Object, Pool, PoolError, Transaction};
use serde::{Deserialize, Serialize};
use std::str::FromStr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;
use tokio::sync::{OnceCell, broadcast};
use tokio_postgres::{AsyncMessage, NoTls};

/// Advisory lock namespaces (the first key of the two-key form).
const LOCK_MIGRATIONS: i32 = 0x436f_0001;

/// The channel every write notifies.
pub const CHANGE_CHANNEL: &str = "covenant_changes";
/// `application_name` of the listening connection, to tell it apart in `pg_stat_activity`.
pub const FEED_APPLICATION_NAME: &str = "covenant-change-feed";

const POOL_SIZE: usize = 16;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
const WAIT_TIMEOUT: Duration = Duration::from_secs(10);
/// How often the change-feed connection proves it is alive, and how long it may take.
const FEED_PROBE_EVERY: Duration = Duration::from_secs(5);
const FEED_PROBE_TIMEOUT: Duration = Duration::from_secs(5);
const FEED_BACKOFF_MIN: Duration = Duration::from_millis(100);
const FEED_BACKOFF_MAX: Duration = Duration::from_secs(5);
/// NOTIFY payloads must stay under 8000 bytes; longer ones are sent as a resync.
const MAX_PAYLOAD: usize = 7900;
const FEED_CAPACITY: usize = 4096;

/// What a committed write changed, as carried by the change feed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    /// A new schema id was created (and registered under `subject`).
    Schema,
    /// Versions of `subject` changed: registered, soft- or hard-deleted.
    Subject,
    /// The config of `subject` (or the global config when `subject` is absent) changed.
    Config,
    /// The mode of `subject` (or the global mode when `subject` is absent) changed.
    Mode,
    /// Changes may have been missed (the feed reconnected, lagged or got an unreadable
    /// payload): drop everything cached.
    Resync,
}

/// One change-feed event; also the JSON payload of `NOTIFY covenant_changes`, e.g.
/// `{"kind":"schema","subject":"orders-value","id":7,"version":3}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Change {
    pub kind: ChangeKind,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub id: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
}

impl Change {
    pub fn resync() -> Change {
        Change {
            kind: ChangeKind::Resync,
            subject: None,
            id: None,
            version: None,
        }
    }

    pub(crate) fn new(
        kind: ChangeKind,
        subject: Option<&str>,
        id: Option<i64>,
        version: Option<i64>,
    ) -> Self {
        Change {
            kind,
            subject: subject.map(str::to_string),
            id,
            version,
        }
    }

    pub(crate) fn scoped(kind: ChangeKind, scope: Scope<'_>) -> Change {
        match scope {
            Scope::Global => Change::new(kind, None, None, None),
            Scope::Subject(s) => Change::new(kind, Some(s), None, None),
        }
    }
}

/// A PostgreSQL-backed [`Store`]: a connection pool plus one dedicated connection listening
/// for changes made by any node.
pub struct PostgresStore {
    pool: Pool,
    target: String,
    migrated: OnceCell<()>,
    changes: broadcast::Sender<Change>,
    listening: Arc<AtomicBool>,
    listener: tokio::task::JoinHandle<()>,
    /// Repeated refusals being counted ([`crate::audit_denials`]).
    denials: Arc<DenialTally>,
    /// Registrations written in groups ([`crate::pg_group`]).
    groups: Groups,
}

impl Drop for PostgresStore {
    fn drop(&mut self) {
        self.listener.abort();
    }
}

/// Renders an error with its causes; tokio-postgres puts the useful part (the server's message
/// or the OS error) in the source chain.
fn describe(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(cause) = source {
        let part = cause.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        source = cause.source();
    }
    text
}

fn pg_err(e: tokio_postgres::Error) -> StoreError {
    match e.as_db_error() {
        Some(db) => StoreError::Backend(format!(
            "PostgreSQL error {}: {}",
            db.code().code(),
            db.message()
        )),
        None => StoreError::Backend(format!("PostgreSQL: {}", describe(&e))),
    }
}

fn other_err(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

/// A readable `host:port/dbname` for messages; never includes the password.
fn describe_target(config: &tokio_postgres::Config) -> String {
    let host = config
        .get_hosts()
        .first()
        .map(|h| match h {
            tokio_postgres::config::Host::Tcp(name) => name.clone(),
            tokio_postgres::config::Host::Unix(path) => path.display().to_string(),
        })
        .unwrap_or_else(|| "localhost".to_string());
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let db = config
        .get_dbname()
        .or(config.get_user())
        .unwrap_or("postgres");
    format!("{host}:{port}/{db}")
}

/// A write's change goes on the feed with its transaction: `NOTIFY` is delivered at commit.
impl<C: GenericClient> RegistryTx for Pg<'_, C> {
    const SEQUENCE: bool = true;

    async fn changed(&self, change: Change) -> DbResult<()> {
        self.changed_all(vec![change]).await
    }

    /// One statement for all: `pg_notify` of each payload, in order.
    async fn changed_all(&self, changes: Vec<Change>) -> DbResult<()> {
        if changes.is_empty() {
            return Ok(());
        }
        let payloads = changes
            .iter()
            .map(|change| payload(change).map(Value::from))
            .collect::<DbResult<Vec<_>>>()?;
        let values = [Value::from(CHANGE_CHANNEL), Value::List(payloads)];
        let sql = format!(
            "SELECT pg_notify(?1, p) FROM {}",
            unnest(&["TEXT"], 2, "payloads", &["p"])
        );
        self.execute(&sql, &values).await.map(|_| ())
    }

    /// Moves the sequence past `id`, never back; serialized so that two imports cannot move
    /// it backwards.
    async fn schema_id_taken(&self, id: i64) -> DbResult<()> {
        self.lock(Lock::Named(LOCK_SEQUENCE, "")).await?;
        self.execute(
            "SELECT setval('schema_ids', GREATEST(?1, \
             (SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM schema_ids)))",
            args![id],
        )
        .await
        .map(|_| ())
    }
}

/// `change` as the feed carries it; one too long for a notification asks listeners to read
/// everything again.
fn payload(change: &Change) -> DbResult<String> {
    let payload = serde_json::to_string(change).map_err(DbError::new)?;
    if payload.len() <= MAX_PAYLOAD {
        return Ok(payload);
    }
    serde_json::to_string(&Change::resync()).map_err(DbError::new)
}

async fn migrate(pool: &Pool, target: &str) -> StoreResult<()> {
    let mut client = pool.get().await.map_err(|e| pool_err(e, target))?;
    pg_pool::migrate(
        &mut client,
        "schema_migrations",
        MigrationLock::Pair(LOCK_MIGRATIONS),
        &dialect::migrations(ops::MIGRATIONS, dialect::postgres),
    )
    .await
    .map_err(pg_err)?;
    fill_missing_guids(&client).await
}

/// Gives rows written before guids existed their guid; a no-op once every row has one, and
/// safe when several nodes run it at once (each writes the same derived value).
async fn fill_missing_guids(client: &deadpool_postgres::Client) -> StoreResult<()> {
    ops::fill_missing_guids(&Pg::new(client)).await
}

pub(crate) fn pool_err(e: PoolError, target: &str) -> StoreError {
    match e {
        PoolError::Backend(e) => match e.as_db_error() {
            Some(_) => pg_err(e),
            None => StoreError::Backend(format!(
                "PostgreSQL at {target} is unreachable: {}",
                describe(&e)
            )),
        },
        PoolError::Timeout(_) => StoreError::Backend(format!(
            "PostgreSQL at {target} is unreachable: timed out waiting for a connection"
        )),
        other => StoreError::Backend(format!("PostgreSQL at {target}: {other}")),
    }
}

impl PostgresStore {
    /// Connects to `url` (`postgres://user:password@host:port/dbname`), applies pending
    /// migrations, and starts the change feed. Fails with [`StoreError::Backend`] when the
    /// database is unreachable.
    pub async fn connect(url: &str) -> StoreResult<PostgresStore> {
        let store = PostgresStore::open_lazy(url)?;
        store.ensure_schema().await?;
        Ok(store)
    }

    /// Prepares the pool and the change feed without touching the database, so a node can
    /// start while the database is down; migrations run on the first operation that reaches
    /// it. Fails only on a malformed URL. Must be called within a Tokio runtime.
    pub fn open_lazy(url: &str) -> StoreResult<PostgresStore> {
        let mut config = tokio_postgres::Config::from_str(url).map_err(|e| {
            StoreError::Backend(format!("invalid PostgreSQL URL: {}", describe(&e)))
        })?;
        config
            .connect_timeout(CONNECT_TIMEOUT)
            .keepalives(true)
            .keepalives_idle(Duration::from_secs(30));
        if config.get_application_name().is_none() {
            config.application_name("covenant");
        }
        let target = describe_target(&config);
        let pool = pg_pool::build(
            config.clone(),
            PoolOptions {
                max_size: POOL_SIZE,
                wait: Some(WAIT_TIMEOUT),
                create: Some(CONNECT_TIMEOUT),
                recycle: Some(CONNECT_TIMEOUT),
            },
        )
        .map_err(other_err)?;
        let (changes, _) = broadcast::channel(FEED_CAPACITY);
        let listening = Arc::new(AtomicBool::new(false));
        let mut feed_config = config.clone();
        feed_config.application_name(FEED_APPLICATION_NAME);
        let listener = tokio::spawn(listen(
            feed_config,
            target.clone(),
            changes.clone(),
            listening.clone(),
        ));
        Ok(PostgresStore {
            groups: Groups::start(pool.clone(), target.clone()),
            pool,
            target,
            migrated: OnceCell::new(),
            changes,
            listening,
            listener,
            denials: Arc::new(DenialTally::new()),
        })
    }

    /// Applies pending migrations (once per store; retried after a failure).
    pub async fn ensure_schema(&self) -> StoreResult<()> {
        self.migrated
            .get_or_try_init(|| migrate(&self.pool, &self.target))
            .await
            .map(|_| ())
    }

    /// Registrations written in groups of more than one so far ([`crate::pg_group`]).
    pub fn grouped_registrations(&self) -> u64 {
        self.groups.grouped()
    }

    /// Writes `member` with the registrations queued with it ([`crate::pg_group`]), or alone
    /// in a transaction of its own when it cannot be grouped.
    async fn write_member(&self, member: ops::Member) -> StoreResult<crate::Registered> {
        if !member.groupable() {
            return self
                .write_short(async |tx| ops::register_member(tx, &member).await)
                .await;
        }
        self.ensure_schema().await?;
        self.groups.register(member).await
    }

    /// `host:port/dbname` of the database, for logs.
    pub fn target(&self) -> &str {
        &self.target
    }

    /// The migration numbers applied so far.
    pub async fn applied_migrations(&self) -> StoreResult<Vec<i64>> {
        self.read_short(async |tx| ops::applied_migrations(tx).await)
            .await
    }

    /// Checks that the database answers: one pooled round trip.
    pub async fn ping(&self) -> StoreResult<()> {
        let client = self.client().await?;
        client.simple_query("SELECT 1").await.map_err(pg_err)?;
        Ok(())
    }

    /// Changes committed by any node on this database, this one included.
    ///
    /// Delay bound: a notification reaches listeners when the writing transaction commits
    /// (PostgreSQL delivers to an idle listening session at once; in practice milliseconds).
    /// If the listening connection drops, that is noticed at once when the socket closes, or
    /// within `FEED_PROBE_EVERY + FEED_PROBE_TIMEOUT` (10 s) when the network silently stalls;
    /// reconnection is retried with backoff from 100 ms up to 5 s, and every (re)connection
    /// emits [`ChangeKind::Resync`] because changes made meanwhile were not heard. So a cache
    /// that drops what a change names, and everything on `Resync` or on a lagged receiver, is
    /// stale for at most about 15 s after a feed outage ends, and by milliseconds otherwise.
    /// While [`PostgresStore::is_listening`] is false, caches should not be trusted.
    pub fn subscribe_changes(&self) -> broadcast::Receiver<Change> {
        self.changes.subscribe()
    }

    /// Whether the change feed currently holds a listening connection.
    pub fn is_listening(&self) -> bool {
        self.listening.load(Ordering::SeqCst)
    }

    /// Runs a registry operation on a pooled connection.
    async fn read_short<T>(
        &self,
        work: impl AsyncFnOnce(&Pg<'_, Object>) -> StoreResult<T>,
    ) -> StoreResult<T> {
        work(&Pg::new(&self.client().await?)).await
    }

    /// The same as [`read_short`](Self::read_short): a pooled connection waits without a
    /// thread.
    async fn read_long<T>(
        &self,
        work: impl AsyncFnOnce(&Pg<'_, Object>) -> StoreResult<T>,
    ) -> StoreResult<T> {
        self.read_short(work).await
    }

    /// Runs a registry operation in a READ COMMITTED transaction that commits when it returns
    /// `Ok`.
    async fn write_short<T>(
        &self,
        work: impl AsyncFnOnce(&Pg<'_, Transaction<'_>>) -> StoreResult<T>,
    ) -> StoreResult<T> {
        in_transaction(&mut self.client().await?, false, work).await
    }

    /// The same as [`write_short`](Self::write_short).
    async fn write_long<T>(
        &self,
        work: impl AsyncFnOnce(&Pg<'_, Transaction<'_>>) -> StoreResult<T>,
    ) -> StoreResult<T> {
        self.write_short(work).await
    }

    /// A single-statement write, on a pooled connection without a transaction around it.
    async fn write_one<T>(
        &self,
        work: impl AsyncFnOnce(&Pg<'_, Object>) -> StoreResult<T>,
    ) -> StoreResult<T> {
        self.read_short(work).await
    }

    async fn client(&self) -> StoreResult<deadpool_postgres::Object> {
        self.ensure_schema().await?;
        self.pool.get().await.map_err(|e| pool_err(e, &self.target))
    }
}

/// Keeps one connection listening on [`CHANGE_CHANNEL`], forwarding notifications to `sender`
/// and reconnecting with backoff whenever the connection fails.
async fn listen(
    config: tokio_postgres::Config,
    target: String,
    sender: broadcast::Sender<Change>,
    listening: Arc<AtomicBool>,
) {
    let mut backoff = FEED_BACKOFF_MIN;
    loop {
        match config.connect(NoTls).await {
            Ok((client, mut connection)) => {
                let forward = sender.clone();
                let mut pump = tokio::spawn(async move {
                    loop {
                        match std::future::poll_fn(|cx| connection.poll_message(cx)).await {
                            Some(Ok(AsyncMessage::Notification(n))) => {
                                let change = serde_json::from_str::<Change>(n.payload())
                                    .unwrap_or_else(|_| Change::resync());
                                // No receivers is fine: nobody caches yet.
                                let _ = forward.send(change);
                            }
                            Some(Ok(_)) => {}
                            Some(Err(e)) => {
                                tracing::warn!(error = %describe(&e), "change feed connection failed");
                                break;
                            }
                            None => break,
                        }
                    }
                });
                let listen_sql = format!("LISTEN {CHANGE_CHANNEL}");
                match client.batch_execute(&listen_sql).await {
                    Ok(()) => {
                        backoff = FEED_BACKOFF_MIN;
                        listening.store(true, Ordering::SeqCst);
                        let _ = sender.send(Change::resync());
                        tracing::debug!(%target, "change feed listening");
                        loop {
                            tokio::select! {
                                _ = &mut pump => break,
                                _ = tokio::time::sleep(FEED_PROBE_EVERY) => {
                                    let probe = tokio::time::timeout(
                                        FEED_PROBE_TIMEOUT,
                                        client.simple_query("SELECT 1"),
                                    )
                                    .await;
                                    if !matches!(probe, Ok(Ok(_))) {
                                        tracing::warn!(%target, "change feed connection stopped answering");
                                        break;
                                    }
                                }
                            }
                        }
                        listening.store(false, Ordering::SeqCst);
                    }
                    Err(e) => {
                        tracing::warn!(%target, error = %describe(&e), "change feed could not listen");
                    }
                }
                pump.abort();
            }
            Err(e) => {
                tracing::debug!(%target, error = %describe(&e), "change feed cannot connect");
            }
        }
        tokio::time::sleep(backoff).await;
        backoff = (backoff * 2).min(FEED_BACKOFF_MAX);
    }
}

/// Writes the counts of repeated refusals taken from `tally` onto their entries.
async fn flush_denials(client: &impl GenericClient, tally: &DenialTally) -> StoreResult<()> {
    Ok(ops::bump_denials(&Pg::new(client), &tally.take()).await?)
}

crate::registry_sql::registry_store!(PostgresStore, {
    async fn ping(&self) -> StoreResult<()> {
        PostgresStore::ping(self).await
    }

    fn follows_changes(&self) -> bool {
        self.is_listening()
    }

    /// Written with the registrations queued with it, in one transaction
    /// ([`crate::pg_group`]); alone when it cannot be grouped.
    async fn register_shared(
        &self,
        subject: &str,
        candidate: &NewSchema,
        placement: Placement,
        guard: crate::SharedGuard,
        audit: Audit<'_>,
    ) -> StoreResult<Registered> {
        let member = ops::Member::new(subject, candidate, placement, guard, audit);
        self.write_member(member).await
    }

    /// The settings are read in the transaction that writes the registration, under its
    /// subject's lock: for a group, by one statement sent with its versions' read, so the
    /// check costs no round trip of its own (the read before the write made one of a new
    /// subject's three before its commit).
    async fn register_checked(
        &self,
        subject: &str,
        candidate: &NewSchema,
        placement: Placement,
        guard: crate::SharedGuard,
        settings: crate::SettingsCheck,
        audit: Audit<'_>,
    ) -> StoreResult<Registered> {
        let member = ops::Member {
            settings: Some(settings),
            ..ops::Member::new(subject, candidate, placement, guard, audit)
        };
        self.write_member(member).await
    }

    async fn record_denied(&self, entry: &AuditEntry, key: &DenialKey) -> StoreResult<()> {
        let schedule_flush = match self.denials.admit(entry, key) {
            Admission::Counted { schedule_flush } => schedule_flush,
            Admission::Append(first) => {
                let (entry, key) = *first;
                let appended = self
                    .write_one(async |tx| ops::record_audit(tx, &entry).await)
                    .await;
                match appended {
                    Ok(seq) => self.denials.opened(&key, seq),
                    Err(e) => {
                        self.denials.abandoned(&key);
                        return Err(e);
                    }
                }
            }
        };
        if schedule_flush {
            let (pool, tally) = (self.pool.clone(), self.denials.clone());
            let flush = async move {
                tokio::time::sleep(FLUSH_INTERVAL).await;
                let flushed = match pool.get().await {
                    Ok(client) => flush_denials(&client, &tally).await,
                    Err(e) => Err(other_err(e.to_string())),
                };
                if let Err(e) = flushed {
                    tracing::error!(error = %e, "could not count repeated refusals in the audit trail");
                }
            };
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => drop(runtime.spawn(flush)),
                Err(_) => flush_denials(&self.client().await?, &self.denials).await?,
            }
        }
        Ok(())
    }

    async fn audit_entries(&self, wanted: &AuditQuery) -> StoreResult<Vec<AuditEntry>> {
        let client = self.client().await?;
        if self.denials.has_pending() {
            flush_denials(&client, &self.denials).await?;
        }
        drop(client);
        self.read_long(async |tx| ops::audit_entries(tx, wanted).await)
            .await
    }

    async fn prune_audit(&self, before: i64) -> StoreResult<u64> {
        let client = self.client().await?;
        flush_denials(&client, &self.denials).await?;
        ops::prune_audit(&Pg::new(&client), before).await
    }
});
