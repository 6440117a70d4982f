//! The embedded backend: SQLite in WAL mode with `synchronous=FULL`, so a write is on disk
//! before it is acknowledged. One writer connection serializes every write (and runs each
//! registration guard inside its transaction); a few reader connections serve lookups
//! concurrently, which WAL allows.

use crate::audit::{AUDIT_COLUMNS, audit_filter};
use crate::audit_denials::{Admission, DenialKey, DenialTally, FLUSH_INTERVAL};
use crate::context;
use crate::group_commit::GroupCommit;
use crate::sqlite_conn::{self, Span};
use crate::{
    Audit, AuditEntry, AuditQuery, AuditTarget, ConfigRecord, DeleteGuard, Guard, NewSchema,
    Placement, Registered, SchemaRecord, Scope, Store, StoreError, StoreResult, StoredVersion,
    context_target, delete_operation, delete_target, register_operation, registered_target,
    scope_target,
};
use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, Row, params};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

/// Schemas of each type that some version carries, by the index on `schema_id`.
pub(crate) const SCHEMA_TYPE_COUNTS: &str = "SELECT s.schema_type, COUNT(*) FROM schemas s \
     WHERE EXISTS (SELECT 1 FROM subject_versions v WHERE v.schema_id = s.id) \
     GROUP BY s.schema_type ORDER BY s.schema_type";

/// Numbered migrations, applied in order at open; each runs once, recorded in
/// `schema_migrations`.
const MIGRATIONS: &[(i64, &str)] = &[
    (
        1,
        "CREATE TABLE schemas (
        id INTEGER PRIMARY KEY,
        schema_type TEXT NOT NULL,
        schema TEXT NOT NULL,
        refs TEXT NOT NULL,
        metadata TEXT,
        rule_set TEXT,
        content_key TEXT NOT NULL
    );
    CREATE INDEX schemas_content_key ON schemas(content_key);
    CREATE TABLE subject_versions (
        subject TEXT NOT NULL,
        version INTEGER NOT NULL,
        schema_id INTEGER NOT NULL REFERENCES schemas(id),
        deleted INTEGER NOT NULL DEFAULT 0,
        created_at INTEGER NOT NULL,
        updated_at INTEGER NOT NULL,
        PRIMARY KEY (subject, version)
    );
    CREATE INDEX subject_versions_schema_id ON subject_versions(schema_id);
    CREATE TABLE schema_references (
        schema_id INTEGER NOT NULL REFERENCES schemas(id),
        ordinal INTEGER NOT NULL,
        name TEXT NOT NULL,
        subject TEXT NOT NULL,
        version INTEGER NOT NULL,
        PRIMARY KEY (schema_id, ordinal)
    );
    CREATE INDEX schema_references_target ON schema_references(subject, version);
    CREATE TABLE config (
        scope TEXT PRIMARY KEY,
        compatibility TEXT,
        extra TEXT NOT NULL
    );
    CREATE TABLE modes (
        scope TEXT PRIMARY KEY,
        mode TEXT NOT NULL
    );",
    ),
    (
        2,
        "CREATE TABLE audit_log (
        seq INTEGER PRIMARY KEY AUTOINCREMENT,
        at INTEGER NOT NULL,
        principal TEXT NOT NULL,
        source TEXT,
        operation TEXT NOT NULL,
        subject TEXT,
        version INTEGER,
        schema_id INTEGER,
        config_key TEXT,
        outcome TEXT NOT NULL,
        request_id TEXT,
        detail TEXT
    );
    CREATE INDEX audit_log_at ON audit_log(at);
    CREATE INDEX audit_log_subject ON audit_log(subject, seq);",
    ),
    (
        3,
        "ALTER TABLE schemas ADD COLUMN guid TEXT;
    CREATE INDEX schemas_guid ON schemas(guid);",
    ),
    (
        4,
        "CREATE TABLE contexts (
        name TEXT PRIMARY KEY,
        slot INTEGER NOT NULL UNIQUE
    );",
    ),
    (
        5,
        "ALTER TABLE audit_log ADD COLUMN count INTEGER NOT NULL DEFAULT 1;
    ALTER TABLE audit_log ADD COLUMN last_at INTEGER;",
    ),
];

/// The key under which global config and mode are kept; not a valid subject name.
const GLOBAL_SCOPE: &str = "__GLOBAL";
const READERS: usize = 4;

const VERSION_COLUMNS: &str = "v.subject, v.version, v.deleted, v.created_at, \
     s.id, s.schema_type, s.schema, s.refs, s.metadata, s.rule_set, s.content_key";
const SCHEMA_COLUMNS: &str =
    "s.id, s.schema_type, s.schema, s.refs, s.metadata, s.rule_set, s.content_key";

pub struct SqliteStore {
    path: PathBuf,
    /// The writer connection: writers queue for it as tasks and share its transactions
    /// ([`sqlite_conn::WriteTurn`]).
    writer: Arc<sqlite_conn::WriteTurn>,
    /// Makes the writer's commits durable in groups ([`crate::group_commit`]).
    group: Arc<GroupCommit>,
    readers: Vec<Mutex<Connection>>,
    next_reader: AtomicUsize,
    /// Repeated refusals being counted ([`crate::audit_denials`]).
    denials: Arc<DenialTally>,
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

fn scope_key<'a>(scope: Scope<'a>) -> &'a str {
    match scope {
        Scope::Global => GLOBAL_SCOPE,
        Scope::Subject(s) => s,
    }
}

fn now_millis() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// `query_row` through the connection's statement cache: nearly every statement here runs
/// once per request, and preparing it again each time cost more than running it.
fn cached_row<T, P: rusqlite::Params>(
    conn: &Connection,
    sql: &str,
    params: P,
    f: impl FnOnce(&Row<'_>) -> rusqlite::Result<T>,
) -> rusqlite::Result<T> {
    conn.prepare_cached(sql)?.query_row(params, f)
}

/// `execute` through the connection's statement cache (see [`cached_row`]).
fn cached_execute<P: rusqlite::Params>(
    conn: &Connection,
    sql: &str,
    params: P,
) -> rusqlite::Result<usize> {
    conn.prepare_cached(sql)?.execute(params)
}

fn open_connection(path: &Path) -> StoreResult<Connection> {
    sqlite_conn::open(path).map_err(backend)
}

fn migrate(conn: &mut Connection) -> StoreResult<()> {
    sqlite_conn::migrate(conn, "schema_migrations", MIGRATIONS).map_err(backend)?;
    fill_missing_guids(conn)
}

/// Gives rows written before guids existed their guid, in one transaction; a no-op once
/// every row has one.
fn fill_missing_guids(conn: &mut Connection) -> StoreResult<()> {
    let tx = conn.transaction().map_err(backend)?;
    let rows = {
        let mut stmt = tx
            .prepare(&format!(
                "SELECT {SCHEMA_COLUMNS} FROM schemas s WHERE s.guid IS NULL"
            ))
            .map_err(backend)?;
        stmt.query_map([], |r| schema_row(r, 0))
            .map_err(backend)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(backend)?
    };
    for row in rows {
        let record = schema_record(row)?;
        cached_execute(
            &tx,
            "UPDATE schemas SET guid = ?1 WHERE id = ?2",
            params![record.guid(), record.id],
        )
        .map_err(backend)?;
    }
    tx.commit().map_err(backend)
}

fn json_or_none(text: Option<String>) -> StoreResult<Option<serde_json::Value>> {
    text.map(|t| serde_json::from_str(&t).map_err(backend))
        .transpose()
}

/// Raw row fields, decoded into records outside rusqlite's row callback so that JSON
/// decoding errors become store errors.
type SchemaRow = (
    i64,
    String,
    String,
    String,
    Option<String>,
    Option<String>,
    String,
);

fn schema_row(r: &Row<'_>, at: usize) -> rusqlite::Result<SchemaRow> {
    Ok((
        r.get(at)?,
        r.get(at + 1)?,
        r.get(at + 2)?,
        r.get(at + 3)?,
        r.get(at + 4)?,
        r.get(at + 5)?,
        r.get(at + 6)?,
    ))
}

fn schema_record(row: SchemaRow) -> StoreResult<SchemaRecord> {
    let (id, schema_type, schema, refs, metadata, rule_set, content_key) = row;
    Ok(SchemaRecord {
        id,
        schema_type,
        schema,
        references: serde_json::from_str(&refs).map_err(backend)?,
        metadata: json_or_none(metadata)?,
        rule_set: json_or_none(rule_set)?,
        content_key,
    })
}

type VersionRow = (String, i64, bool, i64, SchemaRow);

fn version_row(r: &Row<'_>) -> rusqlite::Result<VersionRow> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        schema_row(r, 4)?,
    ))
}

fn stored_version(row: VersionRow) -> StoreResult<StoredVersion> {
    let (subject, version, deleted, created_at, schema) = row;
    Ok(StoredVersion {
        subject,
        version,
        deleted,
        created_at,
        schema: schema_record(schema)?,
    })
}

fn query_versions(
    conn: &Connection,
    where_clause: &str,
    args: impl rusqlite::Params,
) -> StoreResult<Vec<StoredVersion>> {
    let sql = format!(
        "SELECT {VERSION_COLUMNS} FROM subject_versions v JOIN schemas s ON s.id = v.schema_id \
         {where_clause} ORDER BY v.subject, v.version"
    );
    let mut stmt = conn.prepare_cached(&sql).map_err(backend)?;
    let rows = stmt
        .query_map(args, version_row)
        .map_err(backend)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(backend)?;
    rows.into_iter().map(stored_version).collect()
}

impl SqliteStore {
    /// Opens (or creates) the store in `dir`, applying pending migrations.
    pub fn open(dir: &Path) -> StoreResult<SqliteStore> {
        std::fs::create_dir_all(dir).map_err(backend)?;
        let path = dir.join("covenant.sqlite3");
        let mut writer = open_connection(&path)?;
        migrate(&mut writer)?;
        // Commits are synced by `group`, once for every write committed meanwhile.
        writer
            .execute_batch("PRAGMA synchronous=NORMAL;")
            .map_err(backend)?;
        let readers = (0..READERS)
            .map(|_| open_connection(&path).map(Mutex::new))
            .collect::<StoreResult<Vec<_>>>()?;
        Ok(SqliteStore {
            group: GroupCommit::new(&path)?,
            path,
            writer: sqlite_conn::WriteTurn::new(writer),
            readers,
            next_reader: AtomicUsize::new(0),
            denials: Arc::new(DenialTally::new()),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The writer turn and its group commit, for the other stores of the same file whose
    /// writes take turns with this store's (governance).
    pub(crate) fn writer_turn(&self) -> (Arc<sqlite_conn::WriteTurn>, Arc<GroupCommit>) {
        (Arc::clone(&self.writer), Arc::clone(&self.group))
    }

    /// The migration numbers applied so far.
    pub fn applied_migrations(&self) -> StoreResult<Vec<i64>> {
        let conn = self.reader()?;
        let mut stmt = conn
            .prepare("SELECT version FROM schema_migrations ORDER BY version")
            .map_err(backend)?;
        stmt.query_map([], |r| r.get(0))
            .map_err(backend)?
            .collect::<rusqlite::Result<Vec<i64>>>()
            .map_err(backend)
    }

    fn reader(&self) -> StoreResult<MutexGuard<'_, Connection>> {
        for conn in &self.readers {
            if let Ok(guard) = conn.try_lock() {
                return Ok(guard);
            }
        }
        let i = self.next_reader.fetch_add(1, Ordering::Relaxed) % self.readers.len();
        self.readers[i]
            .lock()
            .map_err(|_| backend("reader connection poisoned"))
    }

    fn read<T>(
        &self,
        span: Span,
        work: impl FnOnce(&Connection) -> StoreResult<T>,
    ) -> StoreResult<T> {
        span.run(|| {
            let conn = self.reader()?;
            work(&conn)
        })
    }

    async fn write<T>(
        &self,
        span: Span,
        work: impl FnOnce(&Connection) -> StoreResult<T>,
    ) -> StoreResult<T> {
        sqlite_conn::write_tx_grouped(&self.writer, span, &self.group, work).await
    }
}

fn register_in(
    tx: &Connection,
    subject: &str,
    candidate: &NewSchema,
    placement: Placement,
    guard: Guard<'_>,
) -> StoreResult<Registered> {
    let versions = query_versions(tx, "WHERE v.subject = ?1", [subject])?;
    if let Some(existing) = placement.existing(&versions, candidate) {
        return Ok(existing);
    }
    guard(&versions).map_err(StoreError::Rejected)?;
    check_references_live(tx, subject, candidate)?;

    let version = placement.next_version(subject, &versions)?;
    let slot = slot_for_write(tx, context::context_of(subject))?;
    let (lowest, highest) = context::slot_range(slot);

    let (id, schema_created) = match placement.id.map(|id| context::stored_id(slot, id)) {
        Some(id) => {
            let bound: Option<String> = cached_row(
                tx,
                "SELECT content_key FROM schemas WHERE id = ?1",
                [id],
                |r| r.get(0),
            )
            .optional()
            .map_err(backend)?;
            match bound {
                Some(key) if key != candidate.content_key => {
                    return Err(StoreError::IdConflict { id });
                }
                Some(_) => (id, false),
                None => (insert_schema(tx, subject, Some(id), candidate)?, true),
            }
        }
        None => {
            let found: Option<i64> = cached_row(
                tx,
                "SELECT MIN(id) FROM schemas WHERE content_key = ?1 AND id BETWEEN ?2 AND ?3",
                params![&candidate.content_key, lowest, highest],
                |r| r.get(0),
            )
            .map_err(backend)?;
            match found {
                Some(id) => (id, false),
                None => (insert_schema(tx, subject, None, candidate)?, true),
            }
        }
    };
    let now = now_millis();
    cached_execute(tx,
        "INSERT INTO subject_versions(subject, version, schema_id, deleted, created_at, updated_at) \
         VALUES (?1, ?2, ?3, 0, ?4, ?4)",
        params![subject, version, id, now],
    )
    .map_err(backend)?;
    Ok(Registered {
        id,
        version,
        created: true,
        schema_created,
    })
}

/// The slot of `context`, created with the next free slot on its first registration.
fn slot_for_write(tx: &Connection, context: &str) -> StoreResult<i64> {
    if context == context::DEFAULT_CONTEXT {
        return Ok(0);
    }
    if let Some(slot) = read_slot(tx, context)? {
        return Ok(slot);
    }
    let slot: i64 = cached_row(
        tx,
        "SELECT COALESCE(MAX(slot), 0) + 1 FROM contexts",
        [],
        |r| r.get(0),
    )
    .map_err(backend)?;
    cached_execute(
        tx,
        "INSERT INTO contexts(name, slot) VALUES (?1, ?2)",
        params![context, slot],
    )
    .map_err(backend)?;
    Ok(slot)
}

fn read_slot(conn: &Connection, context: &str) -> StoreResult<Option<i64>> {
    if context == context::DEFAULT_CONTEXT {
        return Ok(Some(0));
    }
    cached_row(
        conn,
        "SELECT slot FROM contexts WHERE name = ?1",
        [context],
        |r| r.get(0),
    )
    .optional()
    .map_err(backend)
}

/// Whether any subject (soft-deleted ones included) lives in `context`.
fn context_in_use(conn: &Connection, context: &str) -> StoreResult<bool> {
    let sql = if context == context::DEFAULT_CONTEXT {
        "SELECT EXISTS(SELECT 1 FROM subject_versions WHERE subject NOT LIKE ':.%')"
    } else {
        "SELECT EXISTS(SELECT 1 FROM subject_versions \
         WHERE substr(subject, 1, length(?1)) = ?1)"
    };
    let mut stmt = conn.prepare_cached(sql).map_err(backend)?;
    let found = if context == context::DEFAULT_CONTEXT {
        stmt.query_row([], |r| r.get(0))
    } else {
        stmt.query_row([context::context_key(context)], |r| r.get(0))
    };
    found.map_err(backend)
}

fn insert_schema(
    tx: &Connection,
    subject: &str,
    id: Option<i64>,
    candidate: &NewSchema,
) -> StoreResult<i64> {
    let id = match id {
        Some(id) => id,
        None => {
            let slot = read_slot(tx, context::context_of(subject))?.unwrap_or(0);
            let (lowest, highest) = context::slot_range(slot);
            let max: i64 = cached_row(
                tx,
                "SELECT COALESCE(MAX(id), ?1 - 1) FROM schemas WHERE id BETWEEN ?1 AND ?2",
                params![lowest, highest],
                |r| r.get(0),
            )
            .map_err(backend)?;
            max + 1
        }
    };
    let refs = serde_json::to_string(&candidate.references).map_err(backend)?;
    let metadata = candidate
        .metadata
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(backend)?;
    let rule_set = candidate
        .rule_set
        .as_ref()
        .map(serde_json::to_string)
        .transpose()
        .map_err(backend)?;
    cached_execute(
        tx,
        "INSERT INTO schemas(id, schema_type, schema, refs, metadata, rule_set, content_key, guid) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)",
        params![
            id,
            candidate.schema_type,
            candidate.schema,
            refs,
            metadata,
            rule_set,
            candidate.content_key,
            candidate.guid()
        ],
    )
    .map_err(backend)?;
    for (ordinal, r) in candidate.references.iter().enumerate() {
        cached_execute(
            tx,
            "INSERT INTO schema_references(schema_id, ordinal, name, subject, version) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
            params![
                id,
                ordinal as i64,
                r.name,
                context::qualify_with_parent(subject, &r.subject),
                r.version
            ],
        )
        .map_err(backend)?;
    }
    Ok(id)
}

fn check_versions_exist(tx: &Connection, subject: &str, versions: &[i64]) -> StoreResult<()> {
    for &version in versions {
        let exists: bool = cached_row(
            tx,
            "SELECT EXISTS(SELECT 1 FROM subject_versions WHERE subject = ?1 AND version = ?2)",
            params![subject, version],
            |r| r.get(0),
        )
        .map_err(backend)?;
        if !exists {
            return Err(StoreError::NoSuchVersion {
                subject: subject.to_string(),
                version,
            });
        }
    }
    Ok(())
}

/// Every reference of a schema about to be written must name a live version (an unqualified
/// reference names a subject of the referring subject's context).
fn check_references_live(tx: &Connection, subject: &str, candidate: &NewSchema) -> StoreResult<()> {
    for r in &candidate.references {
        let live: bool = cached_row(
            tx,
            "SELECT EXISTS(SELECT 1 FROM subject_versions \
                 WHERE subject = ?1 AND version = ?2 AND deleted = 0)",
            params![context::qualify_with_parent(subject, &r.subject), r.version],
            |row| row.get(0),
        )
        .map_err(backend)?;
        if !live {
            return Err(StoreError::NoSuchVersion {
                subject: r.subject.clone(),
                version: r.version,
            });
        }
    }
    Ok(())
}

fn soft_delete_in(tx: &Connection, subject: &str, versions: &[i64]) -> StoreResult<()> {
    check_versions_exist(tx, subject, versions)?;
    let now = now_millis();
    for version in versions {
        cached_execute(
            tx,
            "UPDATE subject_versions SET deleted = 1, updated_at = ?3 \
             WHERE subject = ?1 AND version = ?2",
            params![subject, version, now],
        )
        .map_err(backend)?;
    }
    Ok(())
}

fn hard_delete_in(tx: &Connection, subject: &str, versions: &[i64]) -> StoreResult<()> {
    check_versions_exist(tx, subject, versions)?;
    for version in versions {
        cached_execute(
            tx,
            "DELETE FROM subject_versions WHERE subject = ?1 AND version = ?2",
            params![subject, version],
        )
        .map_err(backend)?;
    }
    let left: bool = cached_row(
        tx,
        "SELECT EXISTS(SELECT 1 FROM subject_versions WHERE subject = ?1)",
        [subject],
        |r| r.get(0),
    )
    .map_err(backend)?;
    if !left {
        cached_execute(tx, "DELETE FROM config WHERE scope = ?1", [subject]).map_err(backend)?;
        cached_execute(tx, "DELETE FROM modes WHERE scope = ?1", [subject]).map_err(backend)?;
    }
    Ok(())
}

/// Versions whose schema references `subject` at one of `versions`.
fn referencing_in(
    conn: &Connection,
    subject: &str,
    versions: &[i64],
) -> StoreResult<Vec<StoredVersion>> {
    let mut out: Vec<StoredVersion> = Vec::new();
    for &version in versions {
        for v in query_versions(
            conn,
            "WHERE v.schema_id IN (SELECT schema_id FROM schema_references \
             WHERE subject = ?1 AND version = ?2)",
            params![subject, version],
        )? {
            if !out
                .iter()
                .any(|o| o.subject == v.subject && o.version == v.version)
            {
                out.push(v);
            }
        }
    }
    Ok(out)
}

fn read_config(conn: &Connection, key: &str) -> StoreResult<Option<ConfigRecord>> {
    let row: Option<(Option<String>, String)> = cached_row(
        conn,
        "SELECT compatibility, extra FROM config WHERE scope = ?1",
        [key],
        |r| Ok((r.get(0)?, r.get(1)?)),
    )
    .optional()
    .map_err(backend)?;
    row.map(|(compatibility, extra)| {
        Ok(ConfigRecord {
            compatibility,
            extra: serde_json::from_str(&extra).map_err(backend)?,
        })
    })
    .transpose()
}

fn read_mode(conn: &Connection, key: &str) -> StoreResult<Option<String>> {
    cached_row(
        conn,
        "SELECT mode FROM modes WHERE scope = ?1",
        [key],
        |r| r.get(0),
    )
    .optional()
    .map_err(backend)
}

/// Appends `entry` as stored ([`AuditEntry::for_storage`]: escaped and cut to size).
pub(crate) fn insert_audit(conn: &Connection, entry: &AuditEntry) -> StoreResult<i64> {
    let entry = &entry.for_storage();
    conn.prepare_cached(
        "INSERT INTO audit_log(at, principal, source, operation, subject, version, schema_id, \
         config_key, outcome, request_id, detail, count, last_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    )
    .map_err(backend)?
    .execute(params![
        entry.at,
        entry.principal,
        entry.source,
        entry.operation,
        entry.subject,
        entry.version,
        entry.schema_id,
        entry.config_key,
        entry.outcome,
        entry.request_id,
        entry.detail,
        entry.count,
        entry.last_at
    ])
    .map_err(backend)?;
    Ok(conn.last_insert_rowid())
}

/// Writes the counts of repeated refusals taken from `tally` onto their entries.
async fn flush_denials(
    writer: &Arc<sqlite_conn::WriteTurn>,
    group: &Arc<GroupCommit>,
    tally: &DenialTally,
) -> StoreResult<()> {
    let bumps = tally.take();
    if bumps.is_empty() {
        return Ok(());
    }
    sqlite_conn::write_tx_grouped(writer, Span::Short, group, |tx| {
        for b in &bumps {
            cached_execute(
                tx,
                "UPDATE audit_log SET count = count + ?1, \
                 last_at = MAX(COALESCE(last_at, at), ?2) WHERE seq = ?3",
                params![b.add, b.last_at, b.seq],
            )
            .map_err(backend)?;
        }
        Ok(())
    })
    .await
}

/// Records `operation` on `target` for `audit`, inside the caller's transaction.
fn audit_in(
    conn: &Connection,
    audit: Audit<'_>,
    operation: &str,
    target: AuditTarget,
) -> StoreResult<()> {
    match audit {
        Some(context) => insert_audit(conn, &context.entry(operation, target)).map(|_| ()),
        None => Ok(()),
    }
}

fn audit_row(r: &Row<'_>) -> rusqlite::Result<AuditEntry> {
    Ok(AuditEntry {
        seq: r.get(0)?,
        at: r.get(1)?,
        principal: r.get(2)?,
        source: r.get(3)?,
        operation: r.get(4)?,
        subject: r.get(5)?,
        version: r.get(6)?,
        schema_id: r.get(7)?,
        config_key: r.get(8)?,
        outcome: r.get(9)?,
        request_id: r.get(10)?,
        detail: r.get(11)?,
        count: r.get(12)?,
        last_at: r.get(13)?,
    })
}

#[async_trait]
impl Store for SqliteStore {
    async fn settled(&self) -> StoreResult<()> {
        self.group.settled().await
    }

    fn only_writer(&self) -> bool {
        true
    }

    async fn register(
        &self,
        subject: &str,
        candidate: &NewSchema,
        placement: Placement,
        guard: Guard<'_>,
        audit: Audit<'_>,
    ) -> StoreResult<Registered> {
        self.write(Span::Short, |tx| {
            let r = register_in(tx, subject, candidate, placement, guard)?;
            if r.created {
                audit_in(
                    tx,
                    audit,
                    register_operation(&placement),
                    registered_target(subject, &r),
                )?;
            }
            Ok(r)
        })
        .await
    }

    async fn schema_by_id(&self, id: i64) -> StoreResult<Option<SchemaRecord>> {
        self.read(Span::Short, |conn| {
            let sql = format!(
                "SELECT {SCHEMA_COLUMNS} FROM schemas s WHERE s.id = ?1 \
                 AND EXISTS(SELECT 1 FROM subject_versions v WHERE v.schema_id = s.id)"
            );
            let row = conn
                .prepare_cached(&sql)
                .map_err(backend)?
                .query_row([id], |r| schema_row(r, 0))
                .optional()
                .map_err(backend)?;
            row.map(schema_record).transpose()
        })
    }

    async fn schema_by_key(&self, content_key: &str) -> StoreResult<Option<SchemaRecord>> {
        self.read(Span::Short, |conn| {
            let sql = format!(
                "SELECT {SCHEMA_COLUMNS} FROM schemas s WHERE s.content_key = ?1 ORDER BY s.id LIMIT 1"
            );
            let row = conn
                .prepare_cached(&sql)
                .map_err(backend)?
                .query_row([content_key], |r| schema_row(r, 0))
                .optional()
                .map_err(backend)?;
            row.map(schema_record).transpose()
        })
    }

    async fn schema_ids_by_guid(&self, guid: &str) -> StoreResult<Vec<i64>> {
        self.read(Span::Short, |conn| {
            let mut stmt = conn
                .prepare_cached("SELECT id FROM schemas WHERE guid = ?1 ORDER BY id")
                .map_err(backend)?;
            stmt.query_map([guid], |r| r.get(0))
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<i64>>>()
                .map_err(backend)
        })
    }

    async fn max_schema_id(&self) -> StoreResult<i64> {
        self.read(Span::Short, |conn| {
            cached_row(
                conn,
                "SELECT COALESCE(MAX(id), 0) FROM schemas WHERE id <= ?1",
                [context::MAX_PUBLIC_ID],
                |r| r.get(0),
            )
            .map_err(backend)
        })
    }

    async fn subject_versions(&self, subject: &str) -> StoreResult<Vec<StoredVersion>> {
        self.read(Span::Short, |conn| {
            query_versions(conn, "WHERE v.subject = ?1", [subject])
        })
    }

    async fn subjects(&self) -> StoreResult<Vec<(String, bool)>> {
        self.read(Span::Long, |conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT subject, MAX(deleted = 0) FROM subject_versions GROUP BY subject ORDER BY subject",
                )
                .map_err(backend)?;
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(backend)
        })
    }

    async fn all_versions(&self) -> StoreResult<Vec<StoredVersion>> {
        self.read(Span::Long, |conn| query_versions(conn, "", []))
    }

    async fn schema_type_counts(&self) -> StoreResult<Vec<(String, u64)>> {
        self.read(Span::Long, |conn| {
            let mut stmt = conn.prepare_cached(SCHEMA_TYPE_COUNTS).map_err(backend)?;
            stmt.query_map([], |r| Ok((r.get(0)?, r.get::<_, i64>(1)?.max(0) as u64)))
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(backend)
        })
    }

    async fn versions_with_id(&self, id: i64) -> StoreResult<Vec<(String, i64, bool)>> {
        self.read(Span::Short, |conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT subject, version, deleted FROM subject_versions WHERE schema_id = ?1 \
                     ORDER BY subject, version",
                )
                .map_err(backend)?;
            stmt.query_map([id], |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(backend)
        })
    }

    async fn referencing_versions(
        &self,
        subject: &str,
        version: i64,
    ) -> StoreResult<Vec<StoredVersion>> {
        self.read(Span::Short, |conn| {
            referencing_in(conn, subject, &[version])
        })
    }

    async fn soft_delete(&self, subject: &str, versions: &[i64]) -> StoreResult<()> {
        self.write(Span::Long, |tx| soft_delete_in(tx, subject, versions))
            .await
    }

    async fn hard_delete(&self, subject: &str, versions: &[i64]) -> StoreResult<()> {
        self.write(Span::Long, |tx| hard_delete_in(tx, subject, versions))
            .await
    }

    async fn delete_guarded(
        &self,
        subject: &str,
        versions: &[i64],
        permanent: bool,
        guard: DeleteGuard<'_>,
        audit: Audit<'_>,
    ) -> StoreResult<()> {
        self.write(Span::Short, |tx| {
            let referencing = referencing_in(tx, subject, versions)?;
            guard(&referencing).map_err(StoreError::Rejected)?;
            if permanent {
                hard_delete_in(tx, subject, versions)?;
            } else {
                soft_delete_in(tx, subject, versions)?;
            }
            audit_in(
                tx,
                audit,
                delete_operation(permanent),
                delete_target(subject, versions),
            )
        })
        .await
    }

    async fn config(&self, scope: Scope<'_>) -> StoreResult<Option<ConfigRecord>> {
        self.read(Span::Short, |conn| read_config(conn, scope_key(scope)))
    }

    async fn set_config(
        &self,
        scope: Scope<'_>,
        config: &ConfigRecord,
        audit: Audit<'_>,
    ) -> StoreResult<()> {
        let extra = serde_json::to_string(&config.extra).map_err(backend)?;
        self.write(Span::Short, |tx| {
            cached_execute(tx,
                "INSERT INTO config(scope, compatibility, extra) VALUES (?1, ?2, ?3) \
                 ON CONFLICT(scope) DO UPDATE SET compatibility = excluded.compatibility, extra = excluded.extra",
                params![scope_key(scope), config.compatibility, extra],
            )
            .map_err(backend)?;
            let detail = config.compatibility.clone();
            audit_in(tx, audit, "config.set", scope_target(scope, "config", detail))
        }).await
    }

    async fn delete_config(
        &self,
        scope: Scope<'_>,
        audit: Audit<'_>,
    ) -> StoreResult<Option<ConfigRecord>> {
        self.write(Span::Short, |tx| {
            let old = read_config(tx, scope_key(scope))?;
            cached_execute(
                tx,
                "DELETE FROM config WHERE scope = ?1",
                [scope_key(scope)],
            )
            .map_err(backend)?;
            if old.is_some() {
                audit_in(
                    tx,
                    audit,
                    "config.delete",
                    scope_target(scope, "config", None),
                )?;
            }
            Ok(old)
        })
        .await
    }

    async fn mode(&self, scope: Scope<'_>) -> StoreResult<Option<String>> {
        self.read(Span::Short, |conn| read_mode(conn, scope_key(scope)))
    }

    async fn set_mode(&self, scope: Scope<'_>, mode: &str, audit: Audit<'_>) -> StoreResult<()> {
        self.write(Span::Short, |tx| {
            cached_execute(
                tx,
                "INSERT INTO modes(scope, mode) VALUES (?1, ?2) \
                 ON CONFLICT(scope) DO UPDATE SET mode = excluded.mode",
                params![scope_key(scope), mode],
            )
            .map_err(backend)?;
            let detail = Some(mode.to_string());
            audit_in(tx, audit, "mode.set", scope_target(scope, "mode", detail))
        })
        .await
    }

    async fn delete_mode(&self, scope: Scope<'_>, audit: Audit<'_>) -> StoreResult<Option<String>> {
        self.write(Span::Short, |tx| {
            let old = read_mode(tx, scope_key(scope))?;
            cached_execute(tx, "DELETE FROM modes WHERE scope = ?1", [scope_key(scope)])
                .map_err(backend)?;
            if old.is_some() {
                audit_in(tx, audit, "mode.delete", scope_target(scope, "mode", None))?;
            }
            Ok(old)
        })
        .await
    }

    async fn contexts(&self) -> StoreResult<Vec<(String, i64)>> {
        self.read(Span::Long, |conn| {
            let mut stmt = conn
                .prepare_cached("SELECT name, slot FROM contexts ORDER BY name")
                .map_err(backend)?;
            stmt.query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(backend)
        })
    }

    async fn context_slot(&self, context: &str) -> StoreResult<Option<i64>> {
        self.read(Span::Short, |conn| read_slot(conn, context))
    }

    async fn delete_context(&self, context: &str, audit: Audit<'_>) -> StoreResult<bool> {
        self.write(Span::Long, |tx| {
            if context_in_use(tx, context)? {
                return Err(StoreError::ContextNotEmpty(context.to_string()));
            }
            let Some(slot) = read_slot(tx, context)?.filter(|slot| *slot != 0) else {
                return Ok(false);
            };
            let (lowest, highest) = context::slot_range(slot);
            cached_execute(
                tx,
                "DELETE FROM schema_references WHERE schema_id BETWEEN ?1 AND ?2",
                params![lowest, highest],
            )
            .map_err(backend)?;
            cached_execute(
                tx,
                "DELETE FROM schemas WHERE id BETWEEN ?1 AND ?2",
                params![lowest, highest],
            )
            .map_err(backend)?;
            cached_execute(tx, "DELETE FROM contexts WHERE name = ?1", [context])
                .map_err(backend)?;
            audit_in(tx, audit, "context.delete", context_target(context))?;
            Ok(true)
        })
        .await
    }

    async fn record_audit(&self, entry: &AuditEntry) -> StoreResult<i64> {
        self.write(Span::Short, |tx| insert_audit(tx, entry)).await
    }

    async fn record_denied(&self, entry: &AuditEntry, key: &DenialKey) -> StoreResult<()> {
        let schedule_flush = match self.denials.admit(entry, key) {
            Admission::Counted { schedule_flush } => schedule_flush,
            Admission::Append(first) => {
                let (entry, key) = *first;
                match self.write(Span::Short, |tx| insert_audit(tx, &entry)).await {
                    Ok(seq) => self.denials.opened(&key, seq),
                    Err(e) => {
                        self.denials.abandoned(&key);
                        return Err(e);
                    }
                }
            }
        };
        if schedule_flush {
            let (writer, group, tally) = (
                self.writer.clone(),
                self.group.clone(),
                self.denials.clone(),
            );
            let flush = async move {
                tokio::time::sleep(FLUSH_INTERVAL).await;
                if let Err(e) = flush_denials(&writer, &group, &tally).await {
                    tracing::error!(error = %e, "could not count repeated refusals in the audit trail");
                }
            };
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => drop(runtime.spawn(flush)),
                Err(_) => flush_denials(&self.writer, &self.group, &self.denials).await?,
            }
        }
        Ok(())
    }

    async fn audit_entries(&self, query: &AuditQuery) -> StoreResult<Vec<AuditEntry>> {
        if self.denials.has_pending() {
            flush_denials(&self.writer, &self.group, &self.denials).await?;
        }
        let sql = format!(
            "SELECT {AUDIT_COLUMNS} FROM audit_log {}",
            audit_filter('?')
        );
        self.read(Span::Long, |conn| {
            let mut stmt = conn.prepare_cached(&sql).map_err(backend)?;
            stmt.query_map(
                params![
                    query.principal,
                    query.subject,
                    query.operation,
                    query.outcome,
                    query.since,
                    query.until,
                    query.after,
                    query.limit
                ],
                audit_row,
            )
            .map_err(backend)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(backend)
        })
    }

    async fn all_configs(&self) -> StoreResult<Vec<(Option<String>, ConfigRecord)>> {
        self.read(Span::Long, |conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT scope, compatibility, extra FROM config ORDER BY scope <> ?1, scope",
                )
                .map_err(backend)?;
            let rows = stmt
                .query_map([GLOBAL_SCOPE], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, Option<String>>(1)?,
                        r.get::<_, String>(2)?,
                    ))
                })
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(backend)?;
            rows.into_iter()
                .map(|(scope, compatibility, extra)| {
                    let record = ConfigRecord {
                        compatibility,
                        extra: serde_json::from_str(&extra).map_err(backend)?,
                    };
                    Ok(((scope != GLOBAL_SCOPE).then_some(scope), record))
                })
                .collect()
        })
    }

    async fn all_modes(&self) -> StoreResult<Vec<(Option<String>, String)>> {
        self.read(Span::Long, |conn| {
            let mut stmt = conn
                .prepare_cached("SELECT scope, mode FROM modes ORDER BY scope <> ?1, scope")
                .map_err(backend)?;
            stmt.query_map([GLOBAL_SCOPE], |r| {
                let scope: String = r.get(0)?;
                Ok(((scope != GLOBAL_SCOPE).then_some(scope), r.get(1)?))
            })
            .map_err(backend)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(backend)
        })
    }

    async fn last_audit_seq(&self) -> StoreResult<i64> {
        self.read(Span::Short, |conn| {
            cached_row(
                conn,
                "SELECT COALESCE(MAX(seq), 0) FROM audit_log",
                [],
                |r| r.get(0),
            )
            .map_err(backend)
        })
    }

    async fn prune_audit(&self, before: i64) -> StoreResult<u64> {
        flush_denials(&self.writer, &self.group, &self.denials).await?;
        self.write(Span::Long, |tx| {
            let n = cached_execute(
                tx,
                "DELETE FROM audit_log WHERE COALESCE(last_at, at) < ?1",
                [before],
            )
            .map_err(backend)?;
            Ok(n as u64)
        })
        .await
    }
}
