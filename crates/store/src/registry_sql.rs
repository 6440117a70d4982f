//! The registry store's operations, written once for SQLite and PostgreSQL over
//! [`crate::sql`]: each runs its statements on a [`Tx`] and maps the rows it gets back. The
//! backends ([`crate::sqlite`], [`crate::postgres`]) choose the connection or transaction an
//! operation runs in, and keep what truly differs: SQLite's group commit, PostgreSQL's change
//! feed and schema id sequence.

use crate::audit::{AUDIT_COLUMNS, audit_filter};
use crate::audit_denials::Bump as DenialBump;
use crate::context;
use crate::postgres::{Change, ChangeKind};
use crate::sql::{DbError, DbResult, Lock, Row, Tx, Value, args, columns_of, unnest, value_list};
use crate::{
    Audit, AuditContext, AuditEntry, AuditQuery, AuditTarget, ConfigRecord, DeleteGuard, Guard,
    NewSchema, Placement, Registered, Registration, SchemaRecord, Scope, Settings, SettingsCheck,
    SharedGuard, StoreError, StoreResult, StoredVersion, context_target, delete_operation,
    delete_target, register_operation, registered_target, scope_target,
};
use std::collections::{HashMap, HashSet};
use std::future::Future;

/// The registry's numbered migrations in the portable spelling ([`crate::sql::dialect`]),
/// applied in order, each once, recorded in `schema_migrations`: at open on SQLite, under an
/// advisory lock on PostgreSQL. Names compare byte-wise (`COLLATE "C"`) so listings sort the
/// same on both. On PostgreSQL new ids come from the `schema_ids` sequence (distinct across
/// nodes) and the content key has a hash index, because keys may be longer than a btree entry
/// allows; SQLite numbers ids from the rowid and indexes the key with its btree.
pub(crate) const MIGRATIONS: &[(i64, &str)] = &[
    (
        1,
        r#"CREATE SEQUENCE schema_ids AS BIGINT MINVALUE 1;
    CREATE TABLE schemas (
        id BIGINT PRIMARY KEY,
        schema_type TEXT NOT NULL,
        schema TEXT NOT NULL,
        refs TEXT NOT NULL,
        metadata TEXT,
        rule_set TEXT,
        content_key TEXT NOT NULL
    );
    CREATE INDEX schemas_content_key ON schemas USING hash (content_key);
    CREATE TABLE subject_versions (
        subject TEXT COLLATE "C" NOT NULL,
        version BIGINT NOT NULL,
        schema_id BIGINT NOT NULL REFERENCES schemas(id),
        deleted BOOLEAN NOT NULL DEFAULT FALSE,
        created_at BIGINT NOT NULL,
        updated_at BIGINT NOT NULL,
        PRIMARY KEY (subject, version)
    );
    CREATE INDEX subject_versions_schema_id ON subject_versions(schema_id);
    CREATE TABLE schema_references (
        schema_id BIGINT NOT NULL REFERENCES schemas(id),
        ordinal INTEGER NOT NULL,
        name TEXT NOT NULL,
        subject TEXT COLLATE "C" NOT NULL,
        version BIGINT NOT NULL,
        PRIMARY KEY (schema_id, ordinal)
    );
    CREATE INDEX schema_references_target ON schema_references(subject, version);
    CREATE TABLE config (
        scope TEXT COLLATE "C" PRIMARY KEY,
        compatibility TEXT,
        extra TEXT NOT NULL
    );
    CREATE TABLE modes (
        scope TEXT COLLATE "C" PRIMARY KEY,
        mode TEXT NOT NULL
    );"#,
    ),
    (
        2,
        r#"CREATE TABLE audit_log (
        seq BIGSERIAL PRIMARY KEY,
        at BIGINT NOT NULL,
        principal TEXT NOT NULL,
        source TEXT,
        operation TEXT NOT NULL,
        subject TEXT COLLATE "C",
        version BIGINT,
        schema_id BIGINT,
        config_key TEXT,
        outcome TEXT NOT NULL,
        request_id TEXT,
        detail TEXT
    );
    CREATE INDEX audit_log_at ON audit_log(at);
    CREATE INDEX audit_log_subject ON audit_log(subject, seq);"#,
    ),
    (
        3,
        r#"ALTER TABLE schemas ADD COLUMN guid TEXT;
    CREATE INDEX schemas_guid ON schemas(guid);"#,
    ),
    (
        4,
        r#"CREATE TABLE contexts (
        name TEXT COLLATE "C" PRIMARY KEY,
        slot BIGINT NOT NULL UNIQUE
    );"#,
    ),
    (
        5,
        r#"ALTER TABLE audit_log ADD COLUMN count BIGINT NOT NULL DEFAULT 1;
    ALTER TABLE audit_log ADD COLUMN last_at BIGINT;"#,
    ),
];

/// The key under which global config and mode are kept; not a valid subject name.
pub(crate) const GLOBAL_SCOPE: &str = "__GLOBAL";

const VERSION_COLUMNS: &str = "v.subject, v.version, v.deleted, v.created_at, \
     s.id, s.schema_type, s.schema, s.refs, s.metadata, s.rule_set, s.content_key";
pub(crate) const SCHEMA_COLUMNS: &str =
    "s.id, s.schema_type, s.schema, s.refs, s.metadata, s.rule_set, s.content_key";

pub(crate) fn scope_key<'a>(scope: Scope<'a>) -> &'a str {
    match scope {
        Scope::Global => GLOBAL_SCOPE,
        Scope::Subject(s) => s,
    }
}

fn json<T: serde::de::DeserializeOwned>(text: &str) -> DbResult<T> {
    serde_json::from_str(text).map_err(DbError::new)
}

fn json_or_none(text: Option<String>) -> DbResult<Option<serde_json::Value>> {
    text.map(|t| json(&t)).transpose()
}

/// The schema whose [`SCHEMA_COLUMNS`] start at column `at`.
pub(crate) fn schema_record(row: &mut Row, at: usize) -> DbResult<SchemaRecord> {
    let refs: String = row.get(at + 3)?;
    Ok(SchemaRecord {
        id: row.get(at)?,
        schema_type: row.get(at + 1)?,
        schema: row.get(at + 2)?,
        references: json(&refs)?,
        metadata: json_or_none(row.get(at + 4)?)?,
        rule_set: json_or_none(row.get(at + 5)?)?,
        content_key: row.get(at + 6)?,
    })
}

fn stored_version(mut row: Row) -> DbResult<StoredVersion> {
    Ok(StoredVersion {
        subject: row.get(0)?,
        version: row.get(1)?,
        deleted: row.get(2)?,
        created_at: row.get(3)?,
        schema: schema_record(&mut row, 4)?,
    })
}

/// Versions joined with their schemas, filtered by `where_clause`, by subject and version.
pub(crate) async fn query_versions(
    tx: &impl Tx,
    where_clause: &str,
    params: &[crate::sql::Value<'_>],
) -> DbResult<Vec<StoredVersion>> {
    let sql = format!(
        "SELECT {VERSION_COLUMNS} FROM subject_versions v JOIN schemas s ON s.id = v.schema_id \
         {where_clause} ORDER BY v.subject, v.version"
    );
    tx.query(&sql, params)
        .await?
        .into_iter()
        .map(stored_version)
        .collect()
}

fn pairs<A: crate::sql::FromValue, B: crate::sql::FromValue>(
    rows: Vec<Row>,
) -> DbResult<Vec<(A, B)>> {
    rows.into_iter()
        .map(|mut r| Ok((r.get(0)?, r.get(1)?)))
        .collect()
}

pub(crate) async fn schema_by_id(tx: &impl Tx, id: i64) -> StoreResult<Option<SchemaRecord>> {
    let sql = format!(
        "SELECT {SCHEMA_COLUMNS} FROM schemas s WHERE s.id = ?1 \
         AND EXISTS(SELECT 1 FROM subject_versions v WHERE v.schema_id = s.id)"
    );
    let row = tx.query_opt(&sql, args![id]).await?;
    Ok(row.map(|mut r| schema_record(&mut r, 0)).transpose()?)
}

pub(crate) async fn schema_by_key(
    tx: &impl Tx,
    content_key: &str,
) -> StoreResult<Option<SchemaRecord>> {
    let sql = format!(
        "SELECT {SCHEMA_COLUMNS} FROM schemas s WHERE s.content_key = ?1 ORDER BY s.id LIMIT 1"
    );
    let row = tx.query_opt(&sql, args![content_key]).await?;
    Ok(row.map(|mut r| schema_record(&mut r, 0)).transpose()?)
}

pub(crate) async fn schema_ids_by_guid(tx: &impl Tx, guid: &str) -> StoreResult<Vec<i64>> {
    let rows = tx
        .query(
            "SELECT id FROM schemas WHERE guid = ?1 ORDER BY id",
            args![guid],
        )
        .await?;
    Ok(rows
        .into_iter()
        .map(|mut r| r.get(0))
        .collect::<DbResult<_>>()?)
}

pub(crate) async fn max_schema_id(tx: &impl Tx) -> StoreResult<i64> {
    Ok(tx
        .value(
            "SELECT COALESCE(MAX(id), 0) FROM schemas WHERE id <= ?1",
            args![context::MAX_PUBLIC_ID],
        )
        .await?)
}

pub(crate) async fn subject_versions(
    tx: &impl Tx,
    subject: &str,
) -> StoreResult<Vec<StoredVersion>> {
    Ok(query_versions(tx, "WHERE v.subject = ?1", args![subject]).await?)
}

/// [`settings`] of `scopes` and [`subject_versions`] of `subject`, both sent before either is
/// awaited: on PostgreSQL one round trip on one connection, where two reads one after the
/// other took two (a wake-up of both processes each).
pub(crate) async fn settings_and_versions(
    tx: &impl Tx,
    scopes: &[Scope<'_>],
    subject: &str,
) -> StoreResult<(Vec<Settings>, Vec<StoredVersion>)> {
    futures_util::future::try_join(settings(tx, scopes), subject_versions(tx, subject)).await
}

pub(crate) async fn subjects(tx: &impl Tx) -> StoreResult<Vec<(String, bool)>> {
    let rows = tx
        .query(
            "SELECT subject, MAX(CASE WHEN deleted THEN 0 ELSE 1 END) FROM subject_versions \
             GROUP BY subject ORDER BY subject",
            &[],
        )
        .await?;
    Ok(pairs(rows)?)
}

/// Up to `limit` subjects after `subject`, by name, each with whether any version is live: a
/// page of [`subjects`], a range of the primary key.
pub(crate) async fn subjects_after(
    tx: &impl Tx,
    subject: &str,
    limit: i64,
) -> StoreResult<Vec<(String, bool)>> {
    let rows = tx
        .query(
            "SELECT subject, MAX(CASE WHEN deleted THEN 0 ELSE 1 END) FROM subject_versions \
             WHERE subject > ?1 GROUP BY subject ORDER BY subject LIMIT ?2",
            args![subject, limit],
        )
        .await?;
    Ok(pairs(rows)?)
}

pub(crate) async fn all_versions(tx: &impl Tx) -> StoreResult<Vec<StoredVersion>> {
    Ok(query_versions(tx, "", &[]).await?)
}

/// Up to `limit` versions after `(subject, version)`, by subject then version: the primary
/// key's order, so each page is a range read of the index rather than the whole table.
pub(crate) async fn versions_after(
    tx: &impl Tx,
    subject: &str,
    version: i64,
    limit: i64,
) -> StoreResult<Vec<StoredVersion>> {
    let sql = format!(
        "SELECT {VERSION_COLUMNS} FROM subject_versions v JOIN schemas s ON s.id = v.schema_id \
         WHERE (v.subject, v.version) > (?1, ?2) ORDER BY v.subject, v.version LIMIT ?3"
    );
    let rows = tx.query(&sql, args![subject, version, limit]).await?;
    Ok(rows
        .into_iter()
        .map(stored_version)
        .collect::<DbResult<_>>()?)
}

/// Schemas of each type that some version carries, by the index on `schema_id`.
pub(crate) async fn schema_type_counts(tx: &impl Tx) -> StoreResult<Vec<(String, u64)>> {
    let rows = tx
        .query(
            "SELECT s.schema_type, COUNT(*) FROM schemas s \
             WHERE EXISTS (SELECT 1 FROM subject_versions v WHERE v.schema_id = s.id) \
             GROUP BY s.schema_type ORDER BY s.schema_type",
            &[],
        )
        .await?;
    Ok(pairs::<String, i64>(rows)?
        .into_iter()
        .map(|(t, n)| (t, n.max(0) as u64))
        .collect())
}

pub(crate) async fn versions_with_id(
    tx: &impl Tx,
    id: i64,
) -> StoreResult<Vec<(String, i64, bool)>> {
    let rows = tx
        .query(
            "SELECT subject, version, deleted FROM subject_versions WHERE schema_id = ?1 \
             ORDER BY subject, version",
            args![id],
        )
        .await?;
    Ok(rows
        .into_iter()
        .map(|mut r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)))
        .collect::<DbResult<_>>()?)
}

/// Versions whose schema references `subject` at one of `versions`, each once.
pub(crate) async fn referencing_in(
    tx: &impl Tx,
    subject: &str,
    versions: &[i64],
) -> DbResult<Vec<StoredVersion>> {
    let mut out: Vec<StoredVersion> = Vec::new();
    for version in versions {
        for v in query_versions(
            tx,
            "WHERE v.schema_id IN (SELECT schema_id FROM schema_references \
             WHERE subject = ?1 AND version = ?2)",
            args![subject, version],
        )
        .await?
        {
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

pub(crate) async fn referencing_versions(
    tx: &impl Tx,
    subject: &str,
    version: i64,
) -> StoreResult<Vec<StoredVersion>> {
    Ok(referencing_in(tx, subject, &[version]).await?)
}

pub(crate) async fn read_config(tx: &impl Tx, key: &str) -> DbResult<Option<ConfigRecord>> {
    let row = tx
        .query_opt(
            "SELECT compatibility, extra FROM config WHERE scope = ?1",
            args![key],
        )
        .await?;
    row.map(|mut r| config_record(&mut r, 0)).transpose()
}

/// The config record whose level is column `at` of `row` and whose extra settings (JSON
/// text) are the next column.
fn config_record(row: &mut Row, at: usize) -> DbResult<ConfigRecord> {
    Ok(ConfigRecord {
        compatibility: row.get(at)?,
        extra: json(&row.get::<String>(at + 1)?)?,
    })
}

pub(crate) async fn read_mode(tx: &impl Tx, key: &str) -> DbResult<Option<String>> {
    tx.value_opt("SELECT mode FROM modes WHERE scope = ?1", args![key])
        .await
}

pub(crate) async fn config(tx: &impl Tx, scope: Scope<'_>) -> StoreResult<Option<ConfigRecord>> {
    Ok(read_config(tx, scope_key(scope)).await?)
}

pub(crate) async fn mode(tx: &impl Tx, scope: Scope<'_>) -> StoreResult<Option<String>> {
    Ok(read_mode(tx, scope_key(scope)).await?)
}

/// The config and mode rows of each of `scopes`, in their order, read by one statement. A
/// registration reads a subject's whole scope chain twice (for its snapshot and just before
/// its commit); on PostgreSQL a statement per row made 16 of a registration's 29 round trips.
pub(crate) async fn settings(tx: &impl Tx, scopes: &[Scope<'_>]) -> StoreResult<Vec<Settings>> {
    let keys: Vec<&str> = scopes.iter().map(|s| scope_key(*s)).collect();
    let list = format!("IN ({})", value_list(keys.len(), 1));
    let values: Vec<Value<'_>> = keys.iter().map(|k| Value::from(*k)).collect();
    settings_where(tx, &keys, &list, &values).await
}

/// [`settings`] of PostgreSQL's groups: one statement text whatever the number of scopes
/// (see [`crate::sql::unnest`]).
async fn settings_listed(tx: &impl Tx, scopes: &[Scope<'_>]) -> StoreResult<Vec<Settings>> {
    let keys: Vec<&str> = scopes.iter().map(|s| scope_key(*s)).collect();
    let values = [Value::List(keys.iter().map(|k| Value::from(*k)).collect())];
    settings_where(tx, &keys, "= ANY(CAST(?1 AS TEXT[]))", &values).await
}

/// The rows of the scopes `keys`, which `scope {test}` selects with `values`.
async fn settings_where(
    tx: &impl Tx,
    keys: &[&str],
    test: &str,
    values: &[Value<'_>],
) -> StoreResult<Vec<Settings>> {
    let mut out = vec![Settings::default(); keys.len()];
    if keys.is_empty() {
        return Ok(out);
    }
    let sql = format!(
        "SELECT 'c', scope, compatibility, extra FROM config WHERE scope {test} \
         UNION ALL SELECT 'm', scope, mode, NULL FROM modes WHERE scope {test}"
    );
    for mut row in tx.query(&sql, values).await? {
        let (kind, scope): (String, String) = (row.get(0)?, row.get(1)?);
        let read = match kind.as_str() {
            "c" => Settings {
                config: Some(config_record(&mut row, 2)?),
                mode: None,
            },
            _ => Settings {
                config: None,
                mode: row.get(2)?,
            },
        };
        for (at, _) in keys.iter().enumerate().filter(|(_, k)| **k == scope) {
            let slot = &mut out[at];
            slot.config = slot.config.take().or_else(|| read.config.clone());
            slot.mode = slot.mode.take().or_else(|| read.mode.clone());
        }
    }
    Ok(out)
}

pub(crate) async fn all_configs(tx: &impl Tx) -> StoreResult<Vec<(Option<String>, ConfigRecord)>> {
    let rows = tx
        .query(
            "SELECT scope, compatibility, extra FROM config ORDER BY scope <> ?1, scope",
            args![GLOBAL_SCOPE],
        )
        .await?;
    Ok(rows
        .into_iter()
        .map(|mut r| {
            let scope: String = r.get(0)?;
            let record = config_record(&mut r, 1)?;
            Ok(((scope != GLOBAL_SCOPE).then_some(scope), record))
        })
        .collect::<DbResult<_>>()?)
}

pub(crate) async fn all_modes(tx: &impl Tx) -> StoreResult<Vec<(Option<String>, String)>> {
    let rows = tx
        .query(
            "SELECT scope, mode FROM modes ORDER BY scope <> ?1, scope",
            args![GLOBAL_SCOPE],
        )
        .await?;
    Ok(pairs::<String, String>(rows)?
        .into_iter()
        .map(|(scope, mode)| ((scope != GLOBAL_SCOPE).then_some(scope), mode))
        .collect())
}

pub(crate) async fn read_slot(tx: &impl Tx, context: &str) -> DbResult<Option<i64>> {
    if context == context::DEFAULT_CONTEXT {
        return Ok(Some(0));
    }
    tx.value_opt("SELECT slot FROM contexts WHERE name = ?1", args![context])
        .await
}

pub(crate) async fn contexts(tx: &impl Tx) -> StoreResult<Vec<(String, i64)>> {
    let rows = tx
        .query("SELECT name, slot FROM contexts ORDER BY name", &[])
        .await?;
    Ok(pairs(rows)?)
}

pub(crate) async fn context_slot(tx: &impl Tx, context: &str) -> StoreResult<Option<i64>> {
    Ok(read_slot(tx, context).await?)
}

fn audit_row(mut r: Row) -> DbResult<AuditEntry> {
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

/// The entries `query` asks for (the caller flushes pending refusal counts first).
pub(crate) async fn audit_entries(
    tx: &impl Tx,
    query: &AuditQuery,
) -> StoreResult<Vec<AuditEntry>> {
    let sql = format!("SELECT {AUDIT_COLUMNS} FROM audit_log {}", audit_filter());
    let rows = tx
        .query(
            &sql,
            args![
                &query.principal,
                &query.subject,
                &query.operation,
                &query.outcome,
                &query.since,
                &query.until,
                query.after,
                query.limit
            ],
        )
        .await?;
    Ok(rows.into_iter().map(audit_row).collect::<DbResult<_>>()?)
}

pub(crate) async fn last_audit_seq(tx: &impl Tx) -> StoreResult<i64> {
    Ok(tx
        .value("SELECT COALESCE(MAX(seq), 0) FROM audit_log", &[])
        .await?)
}

/// The migration numbers applied so far.
pub(crate) async fn applied_migrations(tx: &impl Tx) -> StoreResult<Vec<i64>> {
    let rows = tx
        .query(
            "SELECT version FROM schema_migrations ORDER BY version",
            &[],
        )
        .await?;
    Ok(rows
        .into_iter()
        .map(|mut r| r.get(0))
        .collect::<DbResult<_>>()?)
}

/// Gives rows written before guids existed their guid; a no-op once every row has one, and
/// safe when several PostgreSQL nodes run it at once (each writes the same derived value).
pub(crate) async fn fill_missing_guids(tx: &impl Tx) -> StoreResult<()> {
    let sql = format!("SELECT {SCHEMA_COLUMNS} FROM schemas s WHERE s.guid IS NULL");
    for mut row in tx.query(&sql, &[]).await? {
        let record = schema_record(&mut row, 0)?;
        tx.execute(
            "UPDATE schemas SET guid = ?1 WHERE id = ?2",
            args![record.guid(), record.id],
        )
        .await?;
    }
    Ok(())
}

/// The registry store's operations, implemented for a backend whose `read_short` and
/// `read_long` run an operation on a connection, `write_short` and `write_long` in a write
/// transaction (the span tells SQLite whether to leave the async thread), and `write_one` a
/// single-statement write; the methods in braces follow.
macro_rules! registry_store {
    ($store:ty, { $($extra:item)* }) => {
        const _: () = {
            use $crate::registry_sql as ops;
            use $crate::{
                Audit, AuditEntry, ConfigRecord, DeleteGuard, Guard, NewSchema, Placement,
                Registered, Registration, SchemaRecord, Scope, Settings, Store, StoreResult,
                StoredVersion,
            };

            $crate::sql::store_impl! {
                impl Store for $store, ops ops, self;
                read_short fn schema_by_id(id: i64) -> StoreResult<Option<SchemaRecord>>;
                read_short fn schema_by_key(content_key: &str) -> StoreResult<Option<SchemaRecord>>;
                read_short fn schema_ids_by_guid(guid: &str) -> StoreResult<Vec<i64>>;
                read_short fn max_schema_id() -> StoreResult<i64>;
                read_short fn subject_versions(subject: &str) -> StoreResult<Vec<StoredVersion>>;
                read_long fn subjects() -> StoreResult<Vec<(String, bool)>>;
                read_short fn subjects_after(subject: &str, limit: i64) -> StoreResult<Vec<(String, bool)>>;
                read_long fn all_versions() -> StoreResult<Vec<StoredVersion>>;
                read_long fn versions_after(subject: &str, version: i64, limit: i64) -> StoreResult<Vec<StoredVersion>>;
                read_long fn schema_type_counts() -> StoreResult<Vec<(String, u64)>>;
                read_short fn versions_with_id(id: i64) -> StoreResult<Vec<(String, i64, bool)>>;
                read_short fn referencing_versions(subject: &str, version: i64) -> StoreResult<Vec<StoredVersion>>;
                read_short fn config(scope: Scope<'_>) -> StoreResult<Option<ConfigRecord>>;
                read_short fn mode(scope: Scope<'_>) -> StoreResult<Option<String>>;
                read_short fn settings(scopes: &[Scope<'_>]) -> StoreResult<Vec<Settings>>;
                read_short fn settings_and_versions(scopes: &[Scope<'_>], subject: &str) -> StoreResult<(Vec<Settings>, Vec<StoredVersion>)>;
                read_long fn all_configs() -> StoreResult<Vec<(Option<String>, ConfigRecord)>>;
                read_long fn all_modes() -> StoreResult<Vec<(Option<String>, String)>>;
                read_long fn contexts() -> StoreResult<Vec<(String, i64)>>;
                read_short fn context_slot(context: &str) -> StoreResult<Option<i64>>;
                read_short fn last_audit_seq() -> StoreResult<i64>;
                write_short fn register(subject: &str, candidate: &NewSchema, placement: Placement, guard: Guard<'_>, audit: Audit<'_>) -> StoreResult<Registered>;
                write_long fn register_all(batch: &[Registration<'_>]) -> StoreResult<Vec<Registered>>;
                write_long fn soft_delete(subject: &str, versions: &[i64]) -> StoreResult<()>;
                write_long fn hard_delete(subject: &str, versions: &[i64]) -> StoreResult<()>;
                write_short fn delete_guarded(subject: &str, versions: &[i64], permanent: bool, guard: DeleteGuard<'_>, audit: Audit<'_>) -> StoreResult<()>;
                write_short fn set_config(scope: Scope<'_>, config: &ConfigRecord, audit: Audit<'_>) -> StoreResult<()>;
                write_short fn delete_config(scope: Scope<'_>, audit: Audit<'_>) -> StoreResult<Option<ConfigRecord>>;
                write_short fn set_mode(scope: Scope<'_>, mode: &str, audit: Audit<'_>) -> StoreResult<()>;
                write_short fn delete_mode(scope: Scope<'_>, audit: Audit<'_>) -> StoreResult<Option<String>>;
                write_long fn delete_context(context: &str, audit: Audit<'_>) -> StoreResult<bool>;
                write_one fn record_audit(entry: &AuditEntry) -> StoreResult<i64>;
                { $($extra)* }
            }
        };
    };
}
pub(crate) use registry_store;

/// Advisory lock namespaces on PostgreSQL (the first key of the two-key form); the order in
/// which a write takes them is explained in [`crate::postgres`].
pub(crate) const LOCK_SUBJECT: i32 = 0x436f_0002;
pub(crate) const LOCK_CONTENT: i32 = 0x436f_0003;
pub(crate) const LOCK_ID: i32 = 0x436f_0004;
pub(crate) const LOCK_SEQUENCE: i32 = 0x436f_0005;
pub(crate) const LOCK_SCOPE: i32 = 0x436f_0006;
pub(crate) const LOCK_CONTEXT: i32 = 0x436f_0007;

/// A transaction of the registry store: a [`Tx`] that also tells the backend what a write
/// changed. PostgreSQL sends it on its change feed when the transaction commits; SQLite, the
/// only writer of its file, has no one to tell.
pub(crate) trait RegistryTx: Tx {
    /// Whether new ids of the default context come from the `schema_ids` sequence
    /// (PostgreSQL, whose nodes must not pick the same one) rather than one more than the
    /// highest (SQLite, whose writer is alone).
    const SEQUENCE: bool;

    fn changed(&self, change: Change) -> impl Future<Output = DbResult<()>>;

    /// Each of `changes`, in order: [`RegistryTx::changed`] for each, unless the backend can
    /// tell them all in one statement.
    fn changed_all(&self, changes: Vec<Change>) -> impl Future<Output = DbResult<()>> {
        async move {
            for change in changes {
                self.changed(change).await?;
            }
            Ok(())
        }
    }

    /// After an imported id was inserted into the default context: makes the ids drawn later
    /// pass it.
    fn schema_id_taken(&self, id: i64) -> impl Future<Output = DbResult<()>>;
}

impl RegistryTx for crate::sql::sqlite::Lite<'_> {
    const SEQUENCE: bool = false;

    async fn changed(&self, _change: Change) -> DbResult<()> {
        Ok(())
    }

    /// The next id is the highest plus one: nothing to move.
    async fn schema_id_taken(&self, _id: i64) -> DbResult<()> {
        Ok(())
    }
}

fn now_millis() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

/// Records `operation` on `target` for `audit`, inside the caller's transaction.
pub(crate) async fn audit_in(
    tx: &impl Tx,
    audit: Audit<'_>,
    operation: &str,
    target: AuditTarget,
) -> DbResult<()> {
    match audit {
        Some(context) => crate::sql::audit::insert(tx, &context.entry(operation, target))
            .await
            .map(|_| ()),
        None => Ok(()),
    }
}

/// Serializes changes to one config or mode scope with the subject's other writes.
async fn lock_scope(tx: &impl Tx, scope: Scope<'_>) -> DbResult<()> {
    match scope {
        Scope::Global => tx.lock(Lock::Named(LOCK_SCOPE, GLOBAL_SCOPE)).await,
        Scope::Subject(s) => tx.lock(Lock::Named(LOCK_SUBJECT, s)).await,
    }
}

pub(crate) async fn set_config(
    tx: &impl RegistryTx,
    scope: Scope<'_>,
    config: &ConfigRecord,
    audit: Audit<'_>,
) -> StoreResult<()> {
    let extra = serde_json::to_string(&config.extra).map_err(DbError::new)?;
    lock_scope(tx, scope).await?;
    tx.execute(
        "INSERT INTO config(scope, compatibility, extra) VALUES (?1, ?2, ?3) \
         ON CONFLICT (scope) DO UPDATE SET compatibility = excluded.compatibility, \
         extra = excluded.extra",
        args![scope_key(scope), &config.compatibility, extra],
    )
    .await?;
    let target = scope_target(scope, "config", config.compatibility.clone());
    audit_in(tx, audit, "config.set", target).await?;
    tx.changed(Change::scoped(ChangeKind::Config, scope))
        .await?;
    Ok(())
}

pub(crate) async fn delete_config(
    tx: &impl RegistryTx,
    scope: Scope<'_>,
    audit: Audit<'_>,
) -> StoreResult<Option<ConfigRecord>> {
    lock_scope(tx, scope).await?;
    let old = read_config(tx, scope_key(scope)).await?;
    if old.is_some() {
        tx.execute(
            "DELETE FROM config WHERE scope = ?1",
            args![scope_key(scope)],
        )
        .await?;
        let target = scope_target(scope, "config", None);
        audit_in(tx, audit, "config.delete", target).await?;
        tx.changed(Change::scoped(ChangeKind::Config, scope))
            .await?;
    }
    Ok(old)
}

pub(crate) async fn set_mode(
    tx: &impl RegistryTx,
    scope: Scope<'_>,
    mode: &str,
    audit: Audit<'_>,
) -> StoreResult<()> {
    lock_scope(tx, scope).await?;
    tx.execute(
        "INSERT INTO modes(scope, mode) VALUES (?1, ?2) \
         ON CONFLICT (scope) DO UPDATE SET mode = excluded.mode",
        args![scope_key(scope), mode],
    )
    .await?;
    let target = scope_target(scope, "mode", Some(mode.to_string()));
    audit_in(tx, audit, "mode.set", target).await?;
    tx.changed(Change::scoped(ChangeKind::Mode, scope)).await?;
    Ok(())
}

pub(crate) async fn delete_mode(
    tx: &impl RegistryTx,
    scope: Scope<'_>,
    audit: Audit<'_>,
) -> StoreResult<Option<String>> {
    lock_scope(tx, scope).await?;
    let old = read_mode(tx, scope_key(scope)).await?;
    if old.is_some() {
        tx.execute(
            "DELETE FROM modes WHERE scope = ?1",
            args![scope_key(scope)],
        )
        .await?;
        let target = scope_target(scope, "mode", None);
        audit_in(tx, audit, "mode.delete", target).await?;
        tx.changed(Change::scoped(ChangeKind::Mode, scope)).await?;
    }
    Ok(old)
}

/// Whether any subject (soft-deleted ones included) lives in `context`.
async fn context_in_use(tx: &impl Tx, context: &str) -> DbResult<bool> {
    let row = if context == context::DEFAULT_CONTEXT {
        tx.query_opt(
            "SELECT 1 FROM subject_versions WHERE subject NOT LIKE ':.%' LIMIT 1",
            &[],
        )
        .await?
    } else {
        tx.query_opt(
            "SELECT 1 FROM subject_versions \
             WHERE substr(subject, 1, length(CAST(?1 AS TEXT))) = CAST(?1 AS TEXT) LIMIT 1",
            args![context::context_key(context)],
        )
        .await?
    };
    Ok(row.is_some())
}

pub(crate) async fn delete_context(
    tx: &impl RegistryTx,
    context: &str,
    audit: Audit<'_>,
) -> StoreResult<bool> {
    tx.lock(Lock::Named(LOCK_CONTEXT, "")).await?;
    if context_in_use(tx, context).await? {
        return Err(StoreError::ContextNotEmpty(context.to_string()));
    }
    let Some(slot) = read_slot(tx, context).await?.filter(|slot| *slot != 0) else {
        return Ok(false);
    };
    let (lowest, highest) = context::slot_range(slot);
    tx.execute(
        "DELETE FROM schema_references WHERE schema_id BETWEEN ?1 AND ?2",
        args![lowest, highest],
    )
    .await?;
    tx.execute(
        "DELETE FROM schemas WHERE id BETWEEN ?1 AND ?2",
        args![lowest, highest],
    )
    .await?;
    tx.execute("DELETE FROM contexts WHERE name = ?1", args![context])
        .await?;
    audit_in(tx, audit, "context.delete", context_target(context)).await?;
    Ok(true)
}

/// The schema id of each of `versions` of `subject`, which must all exist.
async fn existing_versions(
    tx: &impl Tx,
    subject: &str,
    versions: &[i64],
) -> StoreResult<Vec<(i64, i64)>> {
    let mut found = Vec::with_capacity(versions.len());
    for &version in versions {
        let id = tx
            .value_opt(
                "SELECT schema_id FROM subject_versions WHERE subject = ?1 AND version = ?2",
                args![subject, version],
            )
            .await?;
        match id {
            Some(id) => found.push((version, id)),
            None => {
                return Err(StoreError::NoSuchVersion {
                    subject: subject.to_string(),
                    version,
                });
            }
        }
    }
    Ok(found)
}

fn version_changed(subject: &str, id: i64, version: i64) -> Change {
    Change::new(ChangeKind::Subject, Some(subject), Some(id), Some(version))
}

async fn soft_delete_in(tx: &impl RegistryTx, subject: &str, versions: &[i64]) -> StoreResult<()> {
    let found = existing_versions(tx, subject, versions).await?;
    let now = now_millis();
    for (version, id) in found {
        tx.execute(
            "UPDATE subject_versions SET deleted = TRUE, updated_at = ?3 \
             WHERE subject = ?1 AND version = ?2",
            args![subject, version, now],
        )
        .await?;
        tx.changed(version_changed(subject, id, version)).await?;
    }
    Ok(())
}

async fn hard_delete_in(tx: &impl RegistryTx, subject: &str, versions: &[i64]) -> StoreResult<()> {
    let found = existing_versions(tx, subject, versions).await?;
    for (version, id) in found {
        tx.execute(
            "DELETE FROM subject_versions WHERE subject = ?1 AND version = ?2",
            args![subject, version],
        )
        .await?;
        tx.changed(version_changed(subject, id, version)).await?;
    }
    let left = tx
        .query_opt(
            "SELECT 1 FROM subject_versions WHERE subject = ?1 LIMIT 1",
            args![subject],
        )
        .await?;
    if left.is_none() {
        tx.execute("DELETE FROM config WHERE scope = ?1", args![subject])
            .await?;
        tx.execute("DELETE FROM modes WHERE scope = ?1", args![subject])
            .await?;
        let scope = Scope::Subject(subject);
        tx.changed(Change::scoped(ChangeKind::Config, scope))
            .await?;
        tx.changed(Change::scoped(ChangeKind::Mode, scope)).await?;
    }
    Ok(())
}

pub(crate) async fn soft_delete(
    tx: &impl RegistryTx,
    subject: &str,
    versions: &[i64],
) -> StoreResult<()> {
    tx.lock(Lock::Named(LOCK_SUBJECT, subject)).await?;
    soft_delete_in(tx, subject, versions).await
}

pub(crate) async fn hard_delete(
    tx: &impl RegistryTx,
    subject: &str,
    versions: &[i64],
) -> StoreResult<()> {
    tx.lock(Lock::Named(LOCK_SUBJECT, subject)).await?;
    hard_delete_in(tx, subject, versions).await
}

pub(crate) async fn delete_guarded(
    tx: &impl RegistryTx,
    subject: &str,
    versions: &[i64],
    permanent: bool,
    guard: DeleteGuard<'_>,
    audit: Audit<'_>,
) -> StoreResult<()> {
    // A registration referencing this subject locks it too, so no reference can appear
    // between the guard's look and the delete.
    tx.lock(Lock::Named(LOCK_SUBJECT, subject)).await?;
    let referencing = referencing_in(tx, subject, versions).await?;
    guard(&referencing).map_err(StoreError::Rejected)?;
    if permanent {
        hard_delete_in(tx, subject, versions).await?;
    } else {
        soft_delete_in(tx, subject, versions).await?;
    }
    let target = delete_target(subject, versions);
    audit_in(tx, audit, delete_operation(permanent), target).await?;
    Ok(())
}

pub(crate) async fn record_audit(tx: &impl Tx, entry: &AuditEntry) -> StoreResult<i64> {
    Ok(crate::sql::audit::insert(tx, entry).await?)
}

/// Writes the counts of repeated refusals `bumps` onto their entries.
pub(crate) async fn bump_denials(tx: &impl Tx, bumps: &[DenialBump]) -> DbResult<()> {
    for b in bumps {
        tx.execute(
            "UPDATE audit_log SET count = count + ?1, \
             last_at = GREATEST(COALESCE(last_at, at), ?2) WHERE seq = ?3",
            args![b.add, b.last_at, b.seq],
        )
        .await?;
    }
    Ok(())
}

pub(crate) async fn prune_audit(tx: &impl Tx, before: i64) -> StoreResult<u64> {
    Ok(tx
        .execute(
            "DELETE FROM audit_log WHERE COALESCE(last_at, at) < ?1",
            args![before],
        )
        .await?)
}

/// A new schema's row; `?1` is its id.
const INSERT_SCHEMA: &str = "INSERT INTO schemas(id, schema_type, schema, refs, metadata, rule_set, \
     content_key, guid) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT (id) DO NOTHING RETURNING id";
/// The same, its id drawn from PostgreSQL's `schema_ids` sequence when `?1` is NULL.
const INSERT_SCHEMA_FROM_SEQUENCE: &str = "INSERT INTO schemas(id, schema_type, schema, refs, \
     metadata, rule_set, content_key, guid) VALUES (COALESCE(?1, nextval('schema_ids')), ?2, ?3, \
     ?4, ?5, ?6, ?7, ?8) ON CONFLICT (id) DO NOTHING RETURNING id";

/// Registers `candidate` under `subject` (see [`crate::Store::register`]).
pub(crate) async fn register(
    tx: &impl RegistryTx,
    subject: &str,
    candidate: &NewSchema,
    placement: Placement,
    guard: Guard<'_>,
    audit: Audit<'_>,
) -> StoreResult<Registered> {
    let r = register_in(
        tx,
        subject,
        candidate,
        placement,
        guard,
        &mut SequenceMove::Now,
    )
    .await?;
    audited(tx, subject, placement, audit, r).await
}

/// Records a registration that created a version for `audit`.
async fn audited(
    tx: &impl RegistryTx,
    subject: &str,
    placement: Placement,
    audit: Audit<'_>,
    r: Registered,
) -> StoreResult<Registered> {
    if r.created {
        let target = registered_target(subject, &r);
        audit_in(tx, audit, register_operation(&placement), target).await?;
    }
    Ok(r)
}

/// Every registration of `batch` in this transaction, in order; the first failure fails them
/// all (the backend rolls the transaction, or SQLite's savepoint, back). Imported ids move
/// PostgreSQL's id sequence once, after the last member: moving it per member held the
/// sequence's lock from the first member to the commit, so concurrent batches ran one after
/// another (20,000 imported versions: 20.3 s one per transaction, 26.7 s in batches holding
/// the lock; figures in benches/RESULTS.md).
pub(crate) async fn register_all(
    tx: &impl RegistryTx,
    batch: &[Registration<'_>],
) -> StoreResult<Vec<Registered>> {
    let allow_all = |_: &[StoredVersion]| Ok(());
    let mut highest = SequenceMove::Deferred(0);
    let mut out = Vec::with_capacity(batch.len());
    for r in batch {
        let placement = r.placement;
        let one = register_in(
            tx,
            r.subject,
            r.candidate,
            placement,
            &allow_all,
            &mut highest,
        );
        out.push(audited(tx, r.subject, placement, r.audit, one.await?).await?);
    }
    if let SequenceMove::Deferred(id @ 1..) = highest {
        tx.schema_id_taken(id).await?;
    }
    Ok(out)
}

/// When an imported id of the default context moves PostgreSQL's id sequence past it: at once,
/// or (in a batch) once for the highest, at the end.
enum SequenceMove {
    Now,
    Deferred(i64),
}

async fn register_in(
    tx: &impl RegistryTx,
    subject: &str,
    candidate: &NewSchema,
    placement: Placement,
    guard: Guard<'_>,
    sequence: &mut SequenceMove,
) -> StoreResult<Registered> {
    tx.lock_all(LOCK_SUBJECT, &locked_subjects(subject, candidate))
        .await?;
    let versions = query_versions(tx, "WHERE v.subject = ?1", args![subject]).await?;
    if let Some(existing) = placement.existing(&versions, candidate) {
        return Ok(existing);
    }
    guard(&versions).map_err(StoreError::Rejected)?;
    check_references_live(tx, subject, candidate).await?;

    let version = placement.next_version(subject, &versions)?;
    let slot = slot_for_write(tx, context::context_of(subject)).await?;
    let (id, schema_created) = match placement.id.map(|id| context::stored_id(slot, id)) {
        Some(id) => explicit_id(tx, subject, id, candidate, sequence).await?,
        None => content_id(tx, subject, slot, candidate).await?,
    };
    Ok(write_version(tx, subject, version, id, schema_created).await?)
}

/// What a registration of `candidate` under `subject` locks: the subject and every subject it
/// references, in name order so that two registrations referencing each other's subjects
/// cannot deadlock.
fn locked_subjects<'a>(subject: &'a str, candidate: &'a NewSchema) -> Vec<&'a str> {
    let mut subjects: Vec<&str> = std::iter::once(subject)
        .chain(candidate.references.iter().map(|r| r.subject.as_str()))
        .collect();
    subjects.sort_unstable();
    subjects.dedup();
    subjects
}

/// Registers `m` alone in `tx`: its settings checked under its subjects' locks (taken as
/// [`register`] takes them, which takes them again), then [`register`].
pub(crate) async fn register_member(tx: &impl RegistryTx, m: &Member) -> StoreResult<Registered> {
    if let Some(check) = &m.settings {
        tx.lock_all(LOCK_SUBJECT, &locked_subjects(&m.subject, &m.candidate))
            .await?;
        let rows = settings(tx, &check.scopes()).await?;
        (check.unchanged)(&rows).map_err(StoreError::Rejected)?;
    }
    let audit = m.audit.as_ref();
    register(tx, &m.subject, &m.candidate, m.placement, &*m.guard, audit).await
}

/// Inserts `subject`'s new `version` of schema `id` and tells the change feed.
async fn write_version(
    tx: &impl RegistryTx,
    subject: &str,
    version: i64,
    id: i64,
    schema_created: bool,
) -> DbResult<Registered> {
    tx.execute(
        "INSERT INTO subject_versions(subject, version, schema_id, deleted, created_at, \
         updated_at) VALUES (?1, ?2, ?3, FALSE, ?4, ?4)",
        args![subject, version, id, now_millis()],
    )
    .await?;
    let r = Registered {
        id,
        version,
        created: true,
        schema_created,
    };
    tx.changed(registered_change(subject, &r)).await?;
    Ok(r)
}

/// What the change feed says of a new version: a new schema, or a new version of a known one.
fn registered_change(subject: &str, r: &Registered) -> Change {
    let kind = if r.schema_created {
        ChangeKind::Schema
    } else {
        ChangeKind::Subject
    };
    Change::new(kind, Some(subject), Some(r.id), Some(r.version))
}

/// One registration of a group ([`register_group`]), owned so that the store may write it on
/// another task than its caller's.
pub(crate) struct Member {
    pub subject: String,
    pub candidate: NewSchema,
    pub placement: Placement,
    pub guard: SharedGuard,
    /// The settings it was judged under, checked in the transaction that writes it.
    pub settings: Option<SettingsCheck>,
    pub audit: Option<AuditContext>,
}

impl Member {
    /// `candidate` under `subject`, without a settings check.
    pub(crate) fn new(
        subject: &str,
        candidate: &NewSchema,
        placement: Placement,
        guard: SharedGuard,
        audit: Audit<'_>,
    ) -> Member {
        Member {
            subject: subject.to_string(),
            candidate: candidate.clone(),
            placement,
            guard,
            settings: None,
            audit: audit.cloned(),
        }
    }

    /// Whether it may be written in a group: in the default context (whose new ids come from
    /// PostgreSQL's sequence, no context lock), without an explicit id (whose import moves the
    /// sequence) and without references (whose subjects it locks and checks). Others are
    /// written alone by [`register`].
    pub(crate) fn groupable(&self) -> bool {
        self.placement.id.is_none()
            && self.candidate.references.is_empty()
            && context::context_of(&self.subject) == context::DEFAULT_CONTEXT
    }
}

/// Registers `members` (of distinct subjects, each [`Member::groupable`]) in the one
/// transaction `tx` of a backend whose ids come from a sequence (PostgreSQL, whose group
/// writer is the only caller), each step one statement for every member at once: a group
/// takes the statements of one registration. A registration's statements sent one after
/// another (29 at first, each a wake-up of both processes: 0.7 ms of Covenant's and 0.85 ms of
/// PostgreSQL's processor time) were most of its cost; sent together but one per member, each
/// still cost the server a parse, a plan and the locks of its tables and their indexes
/// (`pg_stat_statements` and `perf`: 13 statements per registration, 0.44 ms of PostgreSQL's
/// processor time, figures in benches/RESULTS.md).
///
/// The locks are those of [`register`], in the same order (subjects by name, then content
/// keys), so groups and single writes on any node cannot deadlock; each step reads only after
/// the previous step's locks are held. A member that its guard refuses, or that finds its
/// schema already registered, gets its answer and writes nothing; the others are written, each
/// content once (the first member with it creates the schema). A database error fails the
/// whole group: the caller rolls it back and writes the members one by one.
///
/// `last_round` is called once the group's reads and schema rows are done, just before the
/// round trip that writes the versions and commits (or is dropped uncalled when the group
/// fails first): the group writer hands its queue to the next writer there.
pub(crate) async fn register_group<T: RegistryTx>(
    tx: &T,
    members: &[Member],
    last_round: impl FnOnce(),
) -> DbResult<Vec<StoreResult<Registered>>> {
    if !T::SEQUENCE {
        return Err(DbError(
            "groups are written only where new ids come from a sequence".into(),
        ));
    }
    let mut subjects: Vec<&str> = members.iter().map(|m| m.subject.as_str()).collect();
    subjects.sort_unstable();
    subjects.dedup();
    let mut keys: Vec<&str> = members
        .iter()
        .map(|m| m.candidate.content_key.as_str())
        .collect();
    keys.sort_unstable();
    keys.dedup();
    // One round trip: joined statements are sent at once and run in the order given (see
    // `sql::postgres::Pg`), so the reads run under the locks, taken as a registration alone
    // takes them (subjects, then contents, each in name order). It was five round trips.
    let (_, _, versions, settings, found) = futures_util::future::try_join5(
        tx.lock_all(LOCK_SUBJECT, &subjects),
        tx.lock_all(LOCK_CONTENT, &keys),
        group_versions(tx, &subjects),
        group_settings(tx, members),
        existing_content_ids(tx, &keys),
    )
    .await?;
    let mut answers: Vec<Option<StoreResult<Registered>>> = Vec::with_capacity(members.len());
    let mut writes: Vec<(&Member, i64)> = Vec::new();
    for m in members {
        let versions = versions
            .get(m.subject.as_str())
            .map_or(&[][..], Vec::as_slice);
        answers.push(match judge_member(m, versions, &settings) {
            Ok(Some(existing)) => Some(Ok(existing)),
            Ok(None) => match m.placement.next_version(&m.subject, versions) {
                Ok(version) => {
                    writes.push((m, version));
                    None
                }
                Err(e) => Some(Err(e)),
            },
            Err(e) => Some(Err(e)),
        });
    }
    let ids = group_content_ids(tx, &writes, found).await?;
    last_round();
    let mut written = write_group(tx, &writes, &ids).await?.into_iter();
    Ok(answers
        .into_iter()
        .map(|a| a.unwrap_or_else(|| written.next().ok_or_else(group_lost)))
        .collect())
}

/// The versions of each of `subjects` (distinct), read by one statement.
async fn group_versions<'s>(
    tx: &impl Tx,
    subjects: &[&'s str],
) -> DbResult<HashMap<&'s str, Vec<StoredVersion>>> {
    let filter = "WHERE v.subject = ANY(CAST(?1 AS TEXT[]))";
    let values = [Value::List(
        subjects.iter().map(|s| Value::from(*s)).collect(),
    )];
    let mut out: HashMap<&str, Vec<StoredVersion>> = HashMap::new();
    for v in query_versions(tx, filter, &values).await? {
        let Some(subject) = subjects.iter().find(|s| **s == v.subject) else {
            return Err(DbError(format!(
                "a group read subject {} it did not ask for",
                v.subject
            )));
        };
        out.entry(subject).or_default().push(v);
    }
    Ok(out)
}

/// Writes the group's versions, their changes and their audit entries (three statements sent
/// at once: none depends on another), and answers each write in order.
async fn write_group<T: RegistryTx>(
    tx: &T,
    writes: &[(&Member, i64)],
    ids: &HashMap<&str, (i64, bool)>,
) -> DbResult<Vec<Registered>> {
    let mut created: HashSet<i64> = HashSet::new();
    let registered: Vec<Registered> = writes
        .iter()
        .map(|(m, version)| {
            let (id, new) = ids[m.candidate.content_key.as_str()];
            Registered {
                id,
                version: *version,
                created: true,
                // The first member with a new content created its schema.
                schema_created: new && created.insert(id),
            }
        })
        .collect();
    if registered.is_empty() {
        return Ok(Vec::new());
    }
    let now = now_millis();
    let mut rows = Vec::with_capacity(writes.len() * 3);
    for ((m, _), r) in writes.iter().zip(&registered) {
        rows.extend([
            Value::from(&m.subject),
            Value::Int(r.version),
            Value::Int(r.id),
        ]);
    }
    let mut values = vec![Value::Int(now)];
    values.extend(columns_of(rows, 3));
    let insert = format!(
        "INSERT INTO subject_versions(subject, version, schema_id, deleted, created_at, \
         updated_at) SELECT s, v, i, FALSE, ?1, ?1 FROM {}",
        unnest(&["TEXT", "BIGINT", "BIGINT"], 2, "w", &["s", "v", "i"])
    );
    let changes = writes
        .iter()
        .zip(&registered)
        .map(|((m, _), r)| registered_change(&m.subject, r))
        .collect();
    let entries: Vec<AuditEntry> = writes
        .iter()
        .zip(&registered)
        .filter_map(|((m, _), r)| {
            let target = registered_target(&m.subject, r);
            let operation = register_operation(&m.placement);
            m.audit.as_ref().map(|a| a.entry(operation, target))
        })
        .collect();
    // Each sends its one statement when first polled, in this order, and the commit goes with
    // them where the transaction lets it (`Tx::commit_with_last`): one round trip in all.
    futures_util::future::try_join4(
        tx.execute(&insert, &values),
        tx.changed_all(changes),
        crate::sql::audit::insert_all(tx, &entries),
        tx.commit_with_last(),
    )
    .await?;
    Ok(registered)
}

fn group_lost() -> StoreError {
    StoreError::Backend("a registration of a group lost its result".into())
}

/// What a group member's subject already says: its existing version (nothing to write), a
/// refusal of its settings check or its guard, or `None` (write it).
fn judge_member(
    m: &Member,
    versions: &[StoredVersion],
    settings: &HashMap<Option<String>, Settings>,
) -> StoreResult<Option<Registered>> {
    if let Some(existing) = m.placement.existing(versions, &m.candidate) {
        return Ok(Some(existing));
    }
    if let Some(check) = &m.settings {
        let rows: Vec<Settings> = check
            .scopes
            .iter()
            .map(|s| settings.get(s).cloned().unwrap_or_default())
            .collect();
        (check.unchanged)(&rows).map_err(StoreError::Rejected)?;
    }
    (m.guard)(versions).map_err(StoreError::Rejected)?;
    Ok(None)
}

/// The config and mode rows of every scope the members' settings checks name, read by one
/// statement.
async fn group_settings(
    tx: &impl Tx,
    members: &[Member],
) -> DbResult<HashMap<Option<String>, Settings>> {
    let mut keys: Vec<Option<String>> = Vec::new();
    for check in members.iter().filter_map(|m| m.settings.as_ref()) {
        for key in &check.scopes {
            if !keys.contains(key) {
                keys.push(key.clone());
            }
        }
    }
    let scopes: Vec<Scope<'_>> = keys
        .iter()
        .map(|k| k.as_deref().map_or(Scope::Global, Scope::Subject))
        .collect();
    let rows = settings_listed(tx, &scopes)
        .await
        .map_err(|e| DbError(e.to_string()))?;
    Ok(keys.into_iter().zip(rows).collect())
}

/// The id of each content key the group writes: the lowest it has in the default context
/// (`found`, read under the content locks), or a new one from the sequence, with whether it is
/// new. The missing ones are inserted by one statement.
async fn group_content_ids<'m, T: RegistryTx>(
    tx: &T,
    writes: &[(&'m Member, i64)],
    found: Vec<(String, i64)>,
) -> DbResult<HashMap<&'m str, (i64, bool)>> {
    let mut firsts: Vec<&Member> = Vec::new();
    for (m, _) in writes {
        if !firsts
            .iter()
            .any(|f| f.candidate.content_key == m.candidate.content_key)
        {
            firsts.push(m);
        }
    }
    let keys: Vec<&'m str> = firsts
        .iter()
        .map(|m| m.candidate.content_key.as_str())
        .collect();
    let mut ids: HashMap<&'m str, (i64, bool)> = HashMap::new();
    for (key, id) in found {
        if let Some(key) = keys.iter().find(|k| **k == key) {
            ids.insert(key, (id, false));
        }
    }
    let missing: Vec<&Member> = firsts
        .into_iter()
        .filter(|m| !ids.contains_key(m.candidate.content_key.as_str()))
        .collect();
    for (key, id) in insert_schemas_from_sequence(tx, &missing).await? {
        if let Some(key) = keys.iter().find(|k| **k == key) {
            ids.insert(key, (id, true));
        }
    }
    if ids.len() != keys.len() {
        return Err(DbError("no schema id could be allocated".into()));
    }
    Ok(ids)
}

/// The lowest id of each of `keys` in the default context, where it has one. A lookup per
/// key, each by the content key's index: PostgreSQL reads `content_key IN (…)` by scanning the
/// table (0.9 ms a group at 30,000 schemas).
async fn existing_content_ids(tx: &impl Tx, keys: &[&str]) -> DbResult<Vec<(String, i64)>> {
    let (lowest, highest) = context::slot_range(0);
    let sql = format!(
        "SELECT k, (SELECT MIN(id) FROM schemas WHERE content_key = k AND id BETWEEN ?1 AND ?2) \
         FROM {}",
        unnest(&["TEXT"], 3, "keys", &["k"])
    );
    let keys = keys.iter().map(|k| Value::from(*k)).collect();
    let values = [Value::Int(lowest), Value::Int(highest), Value::List(keys)];
    let found: Vec<(String, Option<i64>)> = pairs(tx.query(&sql, &values).await?)?;
    Ok(found
        .into_iter()
        .filter_map(|(key, id)| Some((key, id?)))
        .collect())
}

/// Inserts the schemas of `members` (without references), their ids drawn from the
/// sequence, by one statement; returns each content key with its id. A drawn id that an
/// import took meanwhile skips its row, and the caller fails the group.
async fn insert_schemas_from_sequence(
    tx: &impl Tx,
    members: &[&Member],
) -> DbResult<Vec<(String, i64)>> {
    if members.is_empty() {
        return Ok(Vec::new());
    }
    const COLUMNS: usize = 7;
    let mut values = Vec::with_capacity(members.len() * COLUMNS);
    for m in members {
        let c = &m.candidate;
        values.extend([
            Value::from(&c.schema_type),
            Value::from(&c.schema),
            Value::from(json_text(&c.references)?),
            Value::from(c.metadata.as_ref().map(json_text).transpose()?),
            Value::from(c.rule_set.as_ref().map(json_text).transpose()?),
            Value::from(&c.content_key),
            Value::from(c.guid()),
        ]);
    }
    let rows = unnest(
        &["TEXT"; COLUMNS],
        1,
        "c",
        &["t", "s", "r", "m", "rs", "k", "g"],
    );
    let sql = format!(
        "INSERT INTO schemas(id, schema_type, schema, refs, metadata, rule_set, content_key, \
         guid) SELECT nextval('schema_ids'), t, s, r, m, rs, k, g FROM {rows} \
         ON CONFLICT (id) DO NOTHING RETURNING content_key, id"
    );
    pairs(tx.query(&sql, &columns_of(values, COLUMNS)).await?)
}

/// The id the content takes in `slot`'s context: the lowest it already has there, or a new
/// one.
async fn content_id(
    tx: &impl RegistryTx,
    subject: &str,
    slot: i64,
    candidate: &NewSchema,
) -> StoreResult<(i64, bool)> {
    tx.lock(Lock::Named(LOCK_CONTENT, &candidate.content_key))
        .await?;
    let (lowest, highest) = context::slot_range(slot);
    let found: Option<i64> = tx
        .value(
            "SELECT MIN(id) FROM schemas WHERE content_key = ?1 AND id BETWEEN ?2 AND ?3",
            args![&candidate.content_key, lowest, highest],
        )
        .await?;
    match found {
        Some(id) => Ok((id, false)),
        None => match insert_schema(tx, subject, None, candidate).await? {
            Some(id) => Ok((id, true)),
            None => Err(DbError("no schema id could be allocated".into()).into()),
        },
    }
}

/// Binds an imported id: reused when it already carries this content, refused when it carries
/// other content, created otherwise (moving PostgreSQL's sequence past it).
async fn explicit_id(
    tx: &impl RegistryTx,
    subject: &str,
    id: i64,
    candidate: &NewSchema,
    sequence: &mut SequenceMove,
) -> StoreResult<(i64, bool)> {
    tx.lock(Lock::Named(LOCK_ID, &id.to_string())).await?;
    let bound: Option<String> = tx
        .value_opt("SELECT content_key FROM schemas WHERE id = ?1", args![id])
        .await?;
    match bound {
        Some(key) if key != candidate.content_key => Err(StoreError::IdConflict { id }),
        Some(_) => Ok((id, false)),
        None => {
            if insert_schema(tx, subject, Some(id), candidate)
                .await?
                .is_none()
            {
                // Taken meanwhile by a new id allocated from the sequence.
                return Err(StoreError::IdConflict { id });
            }
            if id > 0 && context::slot_of(id) == 0 {
                match sequence {
                    SequenceMove::Now => tx.schema_id_taken(id).await?,
                    SequenceMove::Deferred(highest) => *highest = (*highest).max(id),
                }
            }
            Ok((id, true))
        }
    }
}

/// The slot of `context`, created with the next free slot on its first registration (slot
/// creation is serialized across PostgreSQL nodes).
async fn slot_for_write(tx: &impl Tx, context: &str) -> DbResult<i64> {
    if let Some(slot) = read_slot(tx, context).await? {
        return Ok(slot);
    }
    tx.lock(Lock::Named(LOCK_CONTEXT, "")).await?;
    if let Some(slot) = read_slot(tx, context).await? {
        return Ok(slot);
    }
    tx.value(
        "INSERT INTO contexts(name, slot) \
         SELECT ?1, COALESCE(MAX(slot), 0) + 1 FROM contexts RETURNING slot",
        args![context],
    )
    .await
}

/// The id a new schema of `subject`'s context takes, where the store picks it: one more than
/// the context's highest (under a per-context lock), or `None` for PostgreSQL's default
/// context, which draws from its sequence.
async fn next_context_id<T: RegistryTx>(tx: &T, subject: &str) -> DbResult<Option<i64>> {
    let context = context::context_of(subject);
    let slot = read_slot(tx, context).await?.unwrap_or(0);
    if slot == 0 && T::SEQUENCE {
        return Ok(None);
    }
    tx.lock(Lock::Named(LOCK_CONTEXT, context)).await?;
    let (lowest, highest) = context::slot_range(slot);
    tx.value(
        "SELECT COALESCE(MAX(id), CAST(?1 AS BIGINT) - 1) + 1 FROM schemas WHERE id BETWEEN ?1 AND ?2",
        args![lowest, highest],
    )
    .await
    .map(Some)
}

fn json_text<T: serde::Serialize>(value: &T) -> DbResult<String> {
    serde_json::to_string(value).map_err(DbError::new)
}

/// Inserts the schema row and its references; returns the id used, or `None` when the explicit
/// `id` is already taken. With `id: None` the context's next id is taken (in PostgreSQL's
/// default context the next sequence value, skipping values an import already holds).
async fn insert_schema<T: RegistryTx>(
    tx: &T,
    subject: &str,
    id: Option<i64>,
    candidate: &NewSchema,
) -> DbResult<Option<i64>> {
    let explicit = id.is_some();
    let id = match id {
        Some(id) => Some(id),
        None => next_context_id(tx, subject).await?,
    };
    let refs = json_text(&candidate.references)?;
    let metadata = candidate.metadata.as_ref().map(json_text).transpose()?;
    let rule_set = candidate.rule_set.as_ref().map(json_text).transpose()?;
    let guid = candidate.guid();
    let sql = if id.is_none() {
        INSERT_SCHEMA_FROM_SEQUENCE
    } else {
        INSERT_SCHEMA
    };
    let params = args![
        id,
        &candidate.schema_type,
        &candidate.schema,
        &refs,
        &metadata,
        &rule_set,
        &candidate.content_key,
        &guid
    ];
    let id: i64 = loop {
        match tx.value_opt(sql, params).await? {
            Some(id) => break id,
            None if explicit => return Ok(None),
            None if id.is_some() => return Err(DbError("a context id was taken meanwhile".into())),
            None => continue,
        }
    };
    for (ordinal, r) in candidate.references.iter().enumerate() {
        tx.execute(
            "INSERT INTO schema_references(schema_id, ordinal, name, subject, version) \
             VALUES (?1, ?2, ?3, ?4, ?5)",
            args![
                id,
                ordinal as i64,
                &r.name,
                context::qualify_with_parent(subject, &r.subject),
                r.version
            ],
        )
        .await?;
    }
    Ok(Some(id))
}

/// Every reference of a schema about to be written must name a live version (an unqualified
/// reference names a subject of the referring subject's context); on PostgreSQL the
/// referenced subjects are locked, so a concurrent delete waits for this registration (and
/// its guard then sees the new reference).
async fn check_references_live(
    tx: &impl Tx,
    subject: &str,
    candidate: &NewSchema,
) -> StoreResult<()> {
    for r in &candidate.references {
        let target = context::qualify_with_parent(subject, &r.subject);
        let live = tx
            .query_opt(
                "SELECT 1 FROM subject_versions \
                 WHERE subject = ?1 AND version = ?2 AND NOT deleted LIMIT 1",
                args![target, r.version],
            )
            .await?;
        if live.is_none() {
            return Err(StoreError::NoSuchVersion {
                subject: r.subject.clone(),
                version: r.version,
            });
        }
    }
    Ok(())
}
