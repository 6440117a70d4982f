//! The embedded governance backend. It lives in the same SQLite file as the registry store
//! (WAL, `synchronous=FULL`) but keeps its own tables, prefixed `gov_`, and its own migration
//! ledger, `governance_migrations`, so the two evolve independently.
//!
//! Consumers and deprecation records are JSON documents edited inside an immediate
//! transaction; usage evidence is counters upserted into hourly buckets.

use crate::audit::AuditLine;
use crate::governance::{
    Approval, ApprovalEdit, Attribution, Consumer, ConsumerCheck, ConsumerEdit, CountBucket,
    Deprecation, DeprecationEdit, FieldBucket, FieldUsage, GovernanceError, GovernanceResult,
    GovernanceSnapshot, GovernanceStore, NewApproval, NewDeprecation, ReaderBucket, ReaderUsage,
    ReportingSince, RestoreCounts, SchemaRead, SchemaReadBucket, SchemaSightings, UsageCounts,
    UsageFinding, UsageQuery, UsageReport, bucket_start, missing_findings,
};
use crate::group_commit::GroupCommit;
use crate::sqlite_conn::{Span, WriteTurn, blocking};
use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

const MIGRATIONS: &[(i64, &str)] = &[
    (
        1,
        "CREATE TABLE gov_consumers (
        name TEXT PRIMARY KEY,
        body TEXT NOT NULL
    );
    CREATE TABLE gov_consumer_clients (
        client_id TEXT PRIMARY KEY,
        consumer TEXT NOT NULL REFERENCES gov_consumers(name)
    );
    CREATE TABLE gov_usage_readers (
        bucket INTEGER NOT NULL,
        subject TEXT NOT NULL,
        client_id TEXT NOT NULL,
        consumer TEXT NOT NULL,
        reader_schema_id INTEGER NOT NULL,
        reports INTEGER NOT NULL,
        decode_failures INTEGER NOT NULL,
        first_at INTEGER NOT NULL,
        last_at INTEGER NOT NULL,
        PRIMARY KEY (bucket, subject, client_id, consumer, reader_schema_id)
    );
    CREATE INDEX gov_usage_readers_subject ON gov_usage_readers(subject, bucket);
    CREATE TABLE gov_usage_fields (
        bucket INTEGER NOT NULL,
        subject TEXT NOT NULL,
        client_id TEXT NOT NULL,
        consumer TEXT NOT NULL,
        reader_schema_id INTEGER NOT NULL,
        field_path TEXT NOT NULL,
        reads INTEGER NOT NULL,
        first_at INTEGER NOT NULL,
        last_at INTEGER NOT NULL,
        PRIMARY KEY (bucket, subject, client_id, consumer, reader_schema_id, field_path)
    );
    CREATE INDEX gov_usage_fields_field ON gov_usage_fields(subject, field_path, bucket);
    CREATE TABLE gov_usage_counts (
        bucket INTEGER NOT NULL,
        subject TEXT NOT NULL,
        client_id TEXT NOT NULL,
        consumer TEXT NOT NULL,
        kind TEXT NOT NULL,
        key TEXT NOT NULL,
        detail TEXT NOT NULL,
        value INTEGER NOT NULL,
        PRIMARY KEY (bucket, subject, client_id, consumer, kind, key, detail)
    );
    CREATE TABLE gov_findings (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        at INTEGER NOT NULL,
        body TEXT NOT NULL
    );
    CREATE INDEX gov_findings_at ON gov_findings(at);
    CREATE TABLE gov_deprecations (
        id INTEGER PRIMARY KEY,
        subject TEXT NOT NULL,
        body TEXT NOT NULL
    );
    CREATE INDEX gov_deprecations_subject ON gov_deprecations(subject);",
    ),
    (
        2,
        "CREATE TABLE gov_schema_reads (
        bucket INTEGER NOT NULL,
        subject TEXT NOT NULL,
        version INTEGER NOT NULL,
        schema_id INTEGER NOT NULL,
        reader TEXT NOT NULL,
        reads INTEGER NOT NULL,
        first_at INTEGER NOT NULL,
        last_at INTEGER NOT NULL,
        PRIMARY KEY (bucket, subject, version, reader)
    );
    CREATE INDEX gov_schema_reads_subject ON gov_schema_reads(subject, last_at);",
    ),
    (
        3,
        "CREATE TABLE gov_approvals (
        id INTEGER PRIMARY KEY,
        subject TEXT NOT NULL,
        body TEXT NOT NULL
    );
    CREATE INDEX gov_approvals_subject ON gov_approvals(subject, id);",
    ),
];

/// Usage rows store "no consumer" and "no reader schema" as these values, which keeps them in
/// primary keys (NULLs are never equal). Registry ids start at 1, so 0 is free.
const NO_CONSUMER: &str = "";
const NO_READER: i64 = 0;

pub struct SqliteGovernanceStore {
    path: PathBuf,
    writer: Writer,
    reader: Mutex<Connection>,
}

/// Where governance writes go.
enum Writer {
    /// A connection of its own (a store opened alone: tools and tests). Beside a registry
    /// store in the same process it would contend for the file's write lock through SQLite's
    /// busy handler, which is not fair: a stream of writes on one connection can keep the
    /// other waiting for seconds.
    Own(Mutex<Connection>),
    /// The registry store's writer ([`SqliteGovernanceStore::open_beside`]): governance writes
    /// queue for the same turn as registrations, first come first served, each in a savepoint
    /// of the shared transaction, so neither kind of write can starve the other. Each
    /// governance write is bounded by the governance limits, so none holds the turn long.
    Shared {
        turn: Arc<WriteTurn>,
        group: Arc<GroupCommit>,
    },
}

fn backend(e: impl std::fmt::Display) -> GovernanceError {
    GovernanceError::Backend(e.to_string())
}

fn open_connection(path: &Path) -> GovernanceResult<Connection> {
    crate::sqlite_conn::open(path).map_err(backend)
}

fn migrate(conn: &mut Connection) -> GovernanceResult<()> {
    crate::sqlite_conn::migrate(conn, "governance_migrations", MIGRATIONS).map_err(backend)
}

fn to_json<T: serde::Serialize>(value: &T) -> GovernanceResult<String> {
    serde_json::to_string(value).map_err(backend)
}

fn from_json<T: serde::de::DeserializeOwned>(text: &str) -> GovernanceResult<T> {
    serde_json::from_str(text).map_err(backend)
}

fn count(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn uncount(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// A sum of stored counters, read as the sums of their high and low 32 bits (each of which
/// SQLite adds without overflow), saturated at the largest count a column holds. Counters
/// saturate when they are written, so any sum of them may pass that.
fn split_sum(high: i64, low: i64) -> u64 {
    let total = (i128::from(high) << 32) + i128::from(low);
    u64::try_from(total.clamp(0, i128::from(i64::MAX))).unwrap_or(0)
}

fn consumer_column(value: String) -> Option<String> {
    (value != NO_CONSUMER).then_some(value)
}

fn reader_column(value: i64) -> Option<i64> {
    (value != NO_READER).then_some(value)
}

/// The WHERE clause shared by usage queries, with its parameters. Range precision is one
/// bucket: a bucket is in range when its latest report is not before `from` and the bucket does
/// not start after `to`.
fn usage_filter(query: &UsageQuery, with_field: bool) -> (String, Vec<rusqlite::types::Value>) {
    use rusqlite::types::Value;
    let mut clauses = vec!["last_at >= ?1".to_string(), "bucket <= ?2".to_string()];
    let mut values = vec![Value::Integer(query.from), Value::Integer(query.to)];
    if let Some(subject) = &query.subject {
        values.push(Value::Text(subject.clone()));
        clauses.push(format!("subject = ?{}", values.len()));
    }
    if with_field && let Some(field) = &query.field {
        values.push(Value::Text(field.clone()));
        clauses.push(format!("field_path = ?{}", values.len()));
    }
    match &query.attribution {
        Attribution::Any => {}
        Attribution::Consumer(name) => {
            values.push(Value::Text(name.clone()));
            clauses.push(format!("consumer = ?{}", values.len()));
        }
        Attribution::Unattributed => clauses.push("consumer = ''".to_string()),
    }
    (clauses.join(" AND "), values)
}

fn all_consumers(conn: &Connection) -> GovernanceResult<Vec<Consumer>> {
    let mut stmt = conn
        .prepare_cached("SELECT body FROM gov_consumers ORDER BY name")
        .map_err(backend)?;
    let bodies = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .map_err(backend)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(backend)?;
    bodies.iter().map(|b| from_json(b)).collect()
}

fn consumer_named(conn: &Connection, name: &str) -> GovernanceResult<Option<Consumer>> {
    let body: Option<String> = conn
        .query_row(
            "SELECT body FROM gov_consumers WHERE name = ?1",
            [name],
            |r| r.get(0),
        )
        .optional()
        .map_err(backend)?;
    body.map(|b| from_json(&b)).transpose()
}

/// Rewrites the client-id index of one consumer, refusing ids another consumer holds.
fn bind_clients(tx: &Connection, consumer: &Consumer) -> GovernanceResult<()> {
    tx.execute(
        "DELETE FROM gov_consumer_clients WHERE consumer = ?1",
        [&consumer.name],
    )
    .map_err(backend)?;
    if !consumer.is_active() {
        return Ok(());
    }
    for client in &consumer.clients {
        let holder: Option<String> = tx
            .query_row(
                "SELECT consumer FROM gov_consumer_clients WHERE client_id = ?1",
                [client],
                |r| r.get(0),
            )
            .optional()
            .map_err(backend)?;
        if let Some(holder) = holder {
            return Err(GovernanceError::Conflict(format!(
                "client id '{client}' already belongs to consumer '{holder}'"
            )));
        }
        tx.execute(
            "INSERT INTO gov_consumer_clients(client_id, consumer) VALUES (?1, ?2)",
            params![client, consumer.name],
        )
        .map_err(backend)?;
    }
    Ok(())
}

/// Appends a write's audit entry inside its transaction (the registry's `audit_log`, same file).
fn append(tx: &Connection, audit: AuditLine<'_>) -> GovernanceResult<()> {
    crate::sqlite::append_line(tx, audit).map_err(backend)
}

fn insert_findings(tx: &Connection, findings: &[UsageFinding]) -> GovernanceResult<()> {
    for finding in findings {
        tx.execute(
            "INSERT INTO gov_findings(at, body) VALUES (?1, ?2)",
            params![finding.at, to_json(finding)?],
        )
        .map_err(backend)?;
    }
    Ok(())
}

fn read_approval(conn: &Connection, id: i64) -> GovernanceResult<Option<Approval>> {
    let body: Option<String> = conn
        .prepare_cached("SELECT body FROM gov_approvals WHERE id = ?1")
        .map_err(backend)?
        .query_row([id], |r| r.get(0))
        .optional()
        .map_err(backend)?;
    body.map(|b| from_json(&b)).transpose()
}

fn read_deprecation(conn: &Connection, id: i64) -> GovernanceResult<Option<Deprecation>> {
    let body: Option<String> = conn
        .query_row(
            "SELECT body FROM gov_deprecations WHERE id = ?1",
            [id],
            |r| r.get(0),
        )
        .optional()
        .map_err(backend)?;
    body.map(|b| from_json(&b)).transpose()
}

impl SqliteGovernanceStore {
    /// Opens the governance tables in the registry's database file in `dir`.
    pub fn open(dir: &Path) -> GovernanceResult<SqliteGovernanceStore> {
        std::fs::create_dir_all(dir).map_err(backend)?;
        SqliteGovernanceStore::open_file(&dir.join("covenant.sqlite3"))
    }

    /// Opens (or creates) the governance tables in the given database file.
    pub fn open_file(path: &Path) -> GovernanceResult<SqliteGovernanceStore> {
        let mut writer = open_connection(path)?;
        migrate(&mut writer)?;
        let reader = open_connection(path)?;
        Ok(SqliteGovernanceStore {
            path: path.to_path_buf(),
            writer: Writer::Own(Mutex::new(writer)),
            reader: Mutex::new(reader),
        })
    }

    /// Opens the governance tables in `registry`'s database file, writing through the
    /// registry's own writer: registrations and governance writes take turns in arrival order
    /// instead of competing for the file's lock (see [`Writer::Shared`]).
    pub fn open_beside(
        registry: &crate::sqlite::SqliteStore,
    ) -> GovernanceResult<SqliteGovernanceStore> {
        let path = registry.path();
        let mut migrator = open_connection(path)?;
        migrate(&mut migrator)?;
        drop(migrator);
        let (turn, group) = registry.writer_turn();
        Ok(SqliteGovernanceStore {
            path: path.to_path_buf(),
            writer: Writer::Shared { turn, group },
            reader: Mutex::new(open_connection(path)?),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The governance migration numbers applied so far.
    pub fn applied_migrations(&self) -> GovernanceResult<Vec<i64>> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare("SELECT version FROM governance_migrations ORDER BY version")
                .map_err(backend)?;
            stmt.query_map([], |r| r.get(0))
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<i64>>>()
                .map_err(backend)
        })
    }

    fn read<T>(
        &self,
        work: impl FnOnce(&Connection) -> GovernanceResult<T>,
    ) -> GovernanceResult<T> {
        blocking(|| {
            let conn = self
                .reader
                .lock()
                .map_err(|_| backend("reader connection poisoned"))?;
            work(&conn)
        })
    }

    async fn write<T>(
        &self,
        work: impl FnOnce(&Connection) -> GovernanceResult<T> + Send,
    ) -> GovernanceResult<T> {
        match &self.writer {
            Writer::Own(conn) => blocking(|| {
                let mut conn = conn
                    .lock()
                    .map_err(|_| backend("writer connection poisoned"))?;
                let tx = conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .map_err(backend)?;
                let out = work(&tx)?;
                tx.commit().map_err(backend)?;
                Ok(out)
            }),
            Writer::Shared { turn, group } => {
                // A refusal rolls back this write's savepoint and comes back as it was.
                let mut refused = None;
                let out = crate::sqlite_conn::write_tx_grouped(turn, Span::Long, group, |conn| {
                    work(conn).map_err(|e| {
                        let text = e.to_string();
                        refused = Some(e);
                        crate::StoreError::Backend(text)
                    })
                })
                .await;
                out.map_err(|e| refused.take().unwrap_or_else(|| backend(e)))
            }
        }
    }
}

#[async_trait]
impl GovernanceStore for SqliteGovernanceStore {
    async fn create_consumer(
        &self,
        consumer: &Consumer,
        check: ConsumerCheck<'_>,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Consumer> {
        self.write(|tx| {
            if consumer_named(tx, &consumer.name)?.is_some() {
                return Err(GovernanceError::Conflict(format!(
                    "consumer '{}' already exists",
                    consumer.name
                )));
            }
            check(consumer)?;
            tx.execute(
                "INSERT INTO gov_consumers(name, body) VALUES (?1, ?2)",
                params![consumer.name, to_json(consumer)?],
            )
            .map_err(backend)?;
            bind_clients(tx, consumer)?;
            append(tx, audit)?;
            Ok(consumer.clone())
        })
        .await
    }

    async fn modify_consumer(
        &self,
        name: &str,
        edit: ConsumerEdit<'_>,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Consumer> {
        self.write(|tx| {
            let mut consumer =
                consumer_named(tx, name)?.ok_or_else(|| GovernanceError::NotFound {
                    what: "consumer",
                    key: name.to_string(),
                })?;
            edit(&mut consumer)?;
            if consumer.name != name {
                return Err(GovernanceError::Invalid(
                    "a consumer's name cannot change".to_string(),
                ));
            }
            tx.execute(
                "UPDATE gov_consumers SET body = ?2 WHERE name = ?1",
                params![name, to_json(&consumer)?],
            )
            .map_err(backend)?;
            bind_clients(tx, &consumer)?;
            append(tx, audit)?;
            Ok(consumer)
        })
        .await
    }

    async fn consumer(&self, name: &str) -> GovernanceResult<Option<Consumer>> {
        self.read(|conn| {
            let body: Option<String> = conn
                .query_row(
                    "SELECT body FROM gov_consumers WHERE name = ?1",
                    [name],
                    |r| r.get(0),
                )
                .optional()
                .map_err(backend)?;
            body.map(|b| from_json(&b)).transpose()
        })
    }

    async fn consumers(&self) -> GovernanceResult<Vec<Consumer>> {
        self.read(all_consumers)
    }

    async fn consumer_for_client(&self, client_id: &str) -> GovernanceResult<Option<String>> {
        self.read(|conn| {
            conn.query_row(
                "SELECT consumer FROM gov_consumer_clients WHERE client_id = ?1",
                [client_id],
                |r| r.get(0),
            )
            .optional()
            .map_err(backend)
        })
    }

    async fn record_usage(
        &self,
        report: &UsageReport,
        consumer: Option<&str>,
        findings: &[UsageFinding],
        audit: AuditLine<'_>,
    ) -> GovernanceResult<()> {
        let bucket = bucket_start(report.interval_end);
        let who = consumer.unwrap_or(NO_CONSUMER);
        let reader = report.reader_schema_id.unwrap_or(NO_READER);
        let (first, last) = (report.interval_start, report.interval_end);
        self.write(|tx| {
            tx.execute(
                "INSERT INTO gov_usage_readers(bucket, subject, client_id, consumer, reader_schema_id, \
                 reports, decode_failures, first_at, last_at) VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?7, ?8) \
                 ON CONFLICT DO UPDATE SET reports = reports + 1, \
                 decode_failures = MIN(decode_failures, 9223372036854775807 - excluded.decode_failures) \
                 + excluded.decode_failures, \
                 first_at = MIN(first_at, excluded.first_at), last_at = MAX(last_at, excluded.last_at)",
                params![
                    bucket,
                    report.subject,
                    report.client_id,
                    who,
                    reader,
                    count(report.decode_failures),
                    first,
                    last
                ],
            )
            .map_err(backend)?;
            for field in &report.fields_read {
                tx.execute(
                    "INSERT INTO gov_usage_fields(bucket, subject, client_id, consumer, reader_schema_id, \
                     field_path, reads, first_at, last_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7, ?8) \
                     ON CONFLICT DO UPDATE SET reads = reads + 1, \
                     first_at = MIN(first_at, excluded.first_at), last_at = MAX(last_at, excluded.last_at)",
                    params![bucket, report.subject, report.client_id, who, reader, field, first, last],
                )
                .map_err(backend)?;
            }
            let mut counters: Vec<(&str, String, String, u64)> = Vec::new();
            for id in &report.writer_schema_ids {
                counters.push(("writer_schema", id.to_string(), String::new(), 1));
            }
            for (version, n) in &report.records_by_version {
                counters.push(("records", version.to_string(), String::new(), *n));
            }
            for (field, values) in &report.unknown_enum_values {
                for (value, n) in values {
                    counters.push(("unknown_enum", field.clone(), value.clone(), *n));
                }
            }
            for (kind, key, detail, n) in counters {
                tx.execute(
                    "INSERT INTO gov_usage_counts(bucket, subject, client_id, consumer, kind, key, detail, value) \
                     VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
                     ON CONFLICT DO UPDATE SET \
                     value = MIN(value, 9223372036854775807 - excluded.value) + excluded.value",
                    params![bucket, report.subject, report.client_id, who, kind, key, detail, count(n)],
                )
                .map_err(backend)?;
            }
            insert_findings(tx, findings)?;
            append(tx, audit)
        })
        .await
    }

    async fn field_usage(&self, query: &UsageQuery) -> GovernanceResult<Vec<FieldUsage>> {
        let (filter, values) = usage_filter(query, true);
        let sql = format!(
            "SELECT subject, field_path, consumer, client_id, reader_schema_id, SUM(reads), \
             MIN(first_at), MAX(last_at) FROM gov_usage_fields WHERE {filter} \
             GROUP BY subject, field_path, consumer, client_id, reader_schema_id \
             ORDER BY subject, field_path, consumer, client_id, reader_schema_id"
        );
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(&sql).map_err(backend)?;
            stmt.query_map(rusqlite::params_from_iter(values), |r| {
                Ok(FieldUsage {
                    subject: r.get(0)?,
                    field: r.get(1)?,
                    consumer: consumer_column(r.get(2)?),
                    client_id: r.get(3)?,
                    reader_schema_id: reader_column(r.get(4)?),
                    reads: uncount(r.get(5)?),
                    first_at: r.get(6)?,
                    last_at: r.get(7)?,
                })
            })
            .map_err(backend)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(backend)
        })
    }

    async fn reader_usage(&self, query: &UsageQuery) -> GovernanceResult<Vec<ReaderUsage>> {
        let (filter, values) = usage_filter(query, false);
        let sql = format!(
            "SELECT subject, consumer, client_id, reader_schema_id, SUM(reports), \
             SUM(decode_failures >> 32), SUM(decode_failures & 4294967295), \
             MIN(first_at), MAX(last_at) FROM gov_usage_readers WHERE {filter} \
             GROUP BY subject, consumer, client_id, reader_schema_id \
             ORDER BY subject, consumer, client_id, reader_schema_id"
        );
        self.read(|conn| {
            let mut stmt = conn.prepare_cached(&sql).map_err(backend)?;
            stmt.query_map(rusqlite::params_from_iter(values), |r| {
                Ok(ReaderUsage {
                    subject: r.get(0)?,
                    consumer: consumer_column(r.get(1)?),
                    client_id: r.get(2)?,
                    reader_schema_id: reader_column(r.get(3)?),
                    reports: uncount(r.get(4)?),
                    decode_failures: split_sum(r.get(5)?, r.get(6)?),
                    first_at: r.get(7)?,
                    last_at: r.get(8)?,
                })
            })
            .map_err(backend)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(backend)
        })
    }

    async fn usage_counts(&self, query: &UsageQuery) -> GovernanceResult<UsageCounts> {
        // Count rows have no timestamps of their own; the bucket alone places them.
        let mut by_bucket = query.clone();
        by_bucket.from = bucket_start(query.from);
        let (filter, values) = usage_filter(&by_bucket, false);
        let filter = filter.replacen("last_at >= ?1", "bucket >= ?1", 1);
        let counts_sql = format!(
            "SELECT kind, key, detail, SUM(value >> 32), SUM(value & 4294967295) \
             FROM gov_usage_counts WHERE {filter} \
             GROUP BY kind, key, detail"
        );
        let failures_sql = format!(
            "SELECT COALESCE(SUM(decode_failures >> 32), 0), \
             COALESCE(SUM(decode_failures & 4294967295), 0) FROM gov_usage_readers WHERE {filter}"
        );
        self.read(|conn| {
            let mut out = UsageCounts::default();
            let mut stmt = conn.prepare_cached(&counts_sql).map_err(backend)?;
            let rows = stmt
                .query_map(rusqlite::params_from_iter(values.iter()), |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, String>(2)?,
                        split_sum(r.get(3)?, r.get(4)?),
                    ))
                })
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(backend)?;
            for (kind, key, detail, value) in rows {
                add_count(&mut out, &kind, key, detail, value);
            }
            out.decode_failures = conn
                .query_row(
                    &failures_sql,
                    rusqlite::params_from_iter(values.iter()),
                    |r| Ok(split_sum(r.get(0)?, r.get(1)?)),
                )
                .map_err(backend)?;
            Ok(out)
        })
    }

    async fn schema_sightings(
        &self,
        subject: &str,
        from: i64,
    ) -> GovernanceResult<SchemaSightings> {
        self.read(|conn| {
            let mut out = SchemaSightings::default();
            let mut readers = conn
                .prepare_cached(
                    "SELECT reader_schema_id, MAX(last_at) FROM gov_usage_readers \
                 WHERE subject = ?1 AND last_at >= ?2 AND reader_schema_id <> ?3 \
                 GROUP BY reader_schema_id",
                )
                .map_err(backend)?;
            let rows = readers
                .query_map(params![subject, from, NO_READER], |r| {
                    Ok((r.get::<_, i64>(0)?, r.get::<_, i64>(1)?))
                })
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(backend)?;
            for (id, at) in rows {
                out.saw_schema(id, at);
            }
            let mut counts = conn
                .prepare_cached(
                    "SELECT c.kind, c.key, MAX(r.last_at) FROM gov_usage_counts c \
                 JOIN gov_usage_readers r ON r.bucket = c.bucket AND r.subject = c.subject \
                 AND r.client_id = c.client_id AND r.consumer = c.consumer \
                 WHERE c.subject = ?1 AND c.kind IN ('writer_schema', 'records') AND c.value > 0 \
                 AND c.bucket >= ?3 AND r.last_at >= ?2 GROUP BY c.kind, c.key",
                )
                .map_err(backend)?;
            let rows = counts
                .query_map(params![subject, from, bucket_start(from)], |r| {
                    Ok((
                        r.get::<_, String>(0)?,
                        r.get::<_, String>(1)?,
                        r.get::<_, i64>(2)?,
                    ))
                })
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(backend)?;
            for (kind, key, at) in rows {
                add_sighting(&mut out, &kind, &key, at);
            }
            Ok(out)
        })
    }

    async fn reporting_since(&self, subject: &str) -> GovernanceResult<Vec<ReportingSince>> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT consumer, client_id, MIN(first_at) FROM gov_usage_readers \
                     WHERE subject = ?1 GROUP BY consumer, client_id ORDER BY consumer, client_id",
                )
                .map_err(backend)?;
            stmt.query_map([subject], |r| {
                Ok(ReportingSince {
                    consumer: consumer_column(r.get(0)?),
                    client_id: r.get(1)?,
                    first_at: r.get(2)?,
                })
            })
            .map_err(backend)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(backend)
        })
    }

    async fn prune_usage(&self, before: i64) -> GovernanceResult<u64> {
        // A bucket goes only when all of it is older than `before`.
        let cutoff = bucket_start(before);
        self.write(|tx| {
            let mut removed = 0usize;
            for table in ["gov_usage_readers", "gov_usage_fields", "gov_usage_counts"] {
                removed += tx
                    .execute(&format!("DELETE FROM {table} WHERE bucket < ?1"), [cutoff])
                    .map_err(backend)?;
            }
            removed += tx
                .execute("DELETE FROM gov_findings WHERE at < ?1", [before])
                .map_err(backend)?;
            Ok(removed as u64)
        })
        .await
    }

    async fn record_findings(&self, findings: &[UsageFinding]) -> GovernanceResult<()> {
        self.write(|tx| insert_findings(tx, findings)).await
    }

    async fn findings(&self, from: i64, to: i64) -> GovernanceResult<Vec<UsageFinding>> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT body FROM gov_findings WHERE at >= ?1 AND at <= ?2 ORDER BY at, id",
                )
                .map_err(backend)?;
            let bodies = stmt
                .query_map([from, to], |r| r.get::<_, String>(0))
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(backend)?;
            bodies.iter().map(|b| from_json(b)).collect()
        })
    }

    async fn create_deprecation(
        &self,
        new: &NewDeprecation,
        at: i64,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Deprecation> {
        self.write(|tx| {
            let id: i64 = tx
                .query_row(
                    "SELECT COALESCE(MAX(id), 0) + 1 FROM gov_deprecations",
                    [],
                    |r| r.get(0),
                )
                .map_err(backend)?;
            let record = Deprecation::from_new(id, new.clone(), at);
            tx.execute(
                "INSERT INTO gov_deprecations(id, subject, body) VALUES (?1, ?2, ?3)",
                params![id, record.target.subject(), to_json(&record)?],
            )
            .map_err(backend)?;
            append(tx, audit)?;
            Ok(record)
        })
        .await
    }

    async fn deprecation(&self, id: i64) -> GovernanceResult<Option<Deprecation>> {
        self.read(|conn| read_deprecation(conn, id))
    }

    async fn deprecations(&self, subject: Option<&str>) -> GovernanceResult<Vec<Deprecation>> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT body FROM gov_deprecations WHERE ?1 IS NULL OR subject = ?1 ORDER BY id",
                )
                .map_err(backend)?;
            let bodies = stmt
                .query_map([subject], |r| r.get::<_, String>(0))
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(backend)?;
            bodies.iter().map(|b| from_json(b)).collect()
        })
    }

    async fn modify_deprecation(
        &self,
        id: i64,
        edit: DeprecationEdit<'_>,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Deprecation> {
        self.write(|tx| {
            let mut record =
                read_deprecation(tx, id)?.ok_or_else(|| GovernanceError::NotFound {
                    what: "deprecation",
                    key: id.to_string(),
                })?;
            let target = record.target.clone();
            edit(&mut record)?;
            if record.id != id || record.target != target {
                return Err(GovernanceError::Invalid(
                    "a deprecation's id and target cannot change".to_string(),
                ));
            }
            tx.execute(
                "UPDATE gov_deprecations SET body = ?2 WHERE id = ?1",
                params![id, to_json(&record)?],
            )
            .map_err(backend)?;
            append(tx, audit)?;
            Ok(record)
        })
        .await
    }
    async fn record_reads(&self, reads: &[SchemaRead]) -> GovernanceResult<()> {
        self.write(|tx| {
            for r in reads {
                tx.prepare_cached(
                    "INSERT INTO gov_schema_reads(bucket, subject, version, schema_id, reader, reads, \
                     first_at, last_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
                     ON CONFLICT(bucket, subject, version, reader) DO UPDATE SET \
                     reads = reads + excluded.reads, first_at = MIN(first_at, excluded.first_at), \
                     last_at = MAX(last_at, excluded.last_at), schema_id = excluded.schema_id",
                )
                .map_err(backend)?
                .execute(params![
                    bucket_start(r.first_at),
                    r.subject,
                    r.version,
                    r.schema_id,
                    r.reader,
                    count(r.reads),
                    r.first_at,
                    r.last_at
                ])
                .map_err(backend)?;
            }
            Ok(())
        })
        .await
    }

    async fn schema_reads(&self, subject: &str, from: i64) -> GovernanceResult<Vec<SchemaRead>> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT version, MAX(schema_id), reader, SUM(reads), MIN(first_at), MAX(last_at) \
                     FROM gov_schema_reads WHERE subject = ?1 AND last_at >= ?2 \
                     GROUP BY reader, version ORDER BY reader, version",
                )
                .map_err(backend)?;
            stmt.query_map(params![subject, from], |r| {
                Ok(SchemaRead {
                    subject: subject.to_string(),
                    version: r.get(0)?,
                    schema_id: r.get(1)?,
                    reader: r.get(2)?,
                    reads: uncount(r.get(3)?),
                    first_at: r.get(4)?,
                    last_at: r.get(5)?,
                })
            })
            .map_err(backend)?
            .collect::<rusqlite::Result<Vec<_>>>()
            .map_err(backend)
        })
    }

    async fn create_approval(
        &self,
        new: &NewApproval,
        at: i64,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Approval> {
        self.write(|tx| {
            let id: i64 = tx
                .query_row(
                    "SELECT COALESCE(MAX(id), 0) + 1 FROM gov_approvals",
                    [],
                    |r| r.get(0),
                )
                .map_err(backend)?;
            let approval = Approval::from_new(id, new.clone(), at);
            tx.execute(
                "INSERT INTO gov_approvals(id, subject, body) VALUES (?1, ?2, ?3)",
                params![id, approval.subject, to_json(&approval)?],
            )
            .map_err(backend)?;
            append(tx, audit)?;
            Ok(approval)
        })
        .await
    }

    async fn approvals(&self, subject: Option<&str>) -> GovernanceResult<Vec<Approval>> {
        self.read(|conn| {
            let mut stmt = conn
                .prepare_cached(
                    "SELECT body FROM gov_approvals WHERE ?1 IS NULL OR subject = ?1 ORDER BY id",
                )
                .map_err(backend)?;
            let bodies = stmt
                .query_map([subject], |r| r.get::<_, String>(0))
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(backend)?;
            bodies.iter().map(|b| from_json(b)).collect()
        })
    }

    async fn modify_approval(
        &self,
        id: i64,
        edit: ApprovalEdit<'_>,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Approval> {
        self.write(|tx| {
            let before = read_approval(tx, id)?.ok_or_else(|| GovernanceError::NotFound {
                what: "approval",
                key: id.to_string(),
            })?;
            let mut approval = before.clone();
            edit(&mut approval)?;
            approval.check_edit(&before)?;
            tx.execute(
                "UPDATE gov_approvals SET body = ?2 WHERE id = ?1",
                params![id, to_json(&approval)?],
            )
            .map_err(backend)?;
            append(tx, audit)?;
            Ok(approval)
        })
        .await
    }

    async fn snapshot(&self) -> GovernanceResult<GovernanceSnapshot> {
        self.read(|conn| {
            // One read transaction: every part is of the same moment (WAL snapshot).
            let tx = conn.unchecked_transaction().map_err(backend)?;
            let out = snapshot_of(&tx)?;
            tx.commit().map_err(backend)?;
            Ok(out)
        })
    }

    async fn restore(&self, snapshot: &GovernanceSnapshot) -> GovernanceResult<RestoreCounts> {
        self.write(|tx| {
            let mut out = RestoreCounts::default();
            restore_consumers(tx, &snapshot.consumers, &mut out)?;
            restore_deprecations(tx, &snapshot.deprecations, &mut out)?;
            restore_approvals(tx, &snapshot.approvals, &mut out)?;
            restore_usage(tx, snapshot, &mut out)?;
            let held: Vec<UsageFinding> =
                bodies(tx, "SELECT body FROM gov_findings ORDER BY at, id")?;
            let missing: Vec<UsageFinding> = missing_findings(&held, &snapshot.findings)
                .into_iter()
                .cloned()
                .collect();
            out.present += snapshot.findings.len() - missing.len();
            out.findings = missing.len();
            insert_findings(tx, &missing)?;
            Ok(out)
        })
        .await
    }
}

/// Every body of one JSON-document table, in key order.
fn bodies<T: serde::de::DeserializeOwned>(
    conn: &Connection,
    sql: &str,
) -> GovernanceResult<Vec<T>> {
    let mut stmt = conn.prepare(sql).map_err(backend)?;
    let texts = stmt
        .query_map([], |r| r.get::<_, String>(0))
        .map_err(backend)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(backend)?;
    texts.iter().map(|b| from_json(b)).collect()
}

fn rows<T>(
    conn: &Connection,
    sql: &str,
    read: impl FnMut(&rusqlite::Row<'_>) -> rusqlite::Result<T>,
) -> GovernanceResult<Vec<T>> {
    let mut stmt = conn.prepare(sql).map_err(backend)?;
    stmt.query_map([], read)
        .map_err(backend)?
        .collect::<rusqlite::Result<Vec<_>>>()
        .map_err(backend)
}

/// Reads every governance row; the caller holds a read transaction so the parts agree.
fn snapshot_of(conn: &Connection) -> GovernanceResult<GovernanceSnapshot> {
    Ok(GovernanceSnapshot {
        consumers: all_consumers(conn)?,
        deprecations: bodies(conn, "SELECT body FROM gov_deprecations ORDER BY id")?,
        approvals: bodies(conn, "SELECT body FROM gov_approvals ORDER BY id")?,
        findings: bodies(conn, "SELECT body FROM gov_findings ORDER BY at, id")?,
        usage_readers: rows(
            conn,
            "SELECT bucket, subject, client_id, consumer, reader_schema_id, reports, \
             CAST(decode_failures AS INTEGER), first_at, last_at FROM gov_usage_readers \
             ORDER BY bucket, subject, client_id, consumer, reader_schema_id",
            |r| {
                Ok(ReaderBucket {
                    bucket: r.get(0)?,
                    subject: r.get(1)?,
                    client_id: r.get(2)?,
                    consumer: consumer_column(r.get(3)?),
                    reader_schema_id: reader_column(r.get(4)?),
                    reports: uncount(r.get(5)?),
                    decode_failures: uncount(r.get(6)?),
                    first_at: r.get(7)?,
                    last_at: r.get(8)?,
                })
            },
        )?,
        usage_fields: rows(
            conn,
            "SELECT bucket, subject, client_id, consumer, reader_schema_id, field_path, reads, \
             first_at, last_at FROM gov_usage_fields \
             ORDER BY bucket, subject, client_id, consumer, reader_schema_id, field_path",
            |r| {
                Ok(FieldBucket {
                    bucket: r.get(0)?,
                    subject: r.get(1)?,
                    client_id: r.get(2)?,
                    consumer: consumer_column(r.get(3)?),
                    reader_schema_id: reader_column(r.get(4)?),
                    field: r.get(5)?,
                    reads: uncount(r.get(6)?),
                    first_at: r.get(7)?,
                    last_at: r.get(8)?,
                })
            },
        )?,
        usage_counts: rows(
            conn,
            "SELECT bucket, subject, client_id, consumer, kind, key, detail, CAST(value AS INTEGER) \
             FROM gov_usage_counts ORDER BY bucket, subject, client_id, consumer, kind, key, detail",
            |r| {
                Ok(CountBucket {
                    bucket: r.get(0)?,
                    subject: r.get(1)?,
                    client_id: r.get(2)?,
                    consumer: consumer_column(r.get(3)?),
                    kind: r.get(4)?,
                    key: r.get(5)?,
                    detail: r.get(6)?,
                    value: uncount(r.get(7)?),
                })
            },
        )?,
        schema_reads: rows(
            conn,
            "SELECT bucket, subject, version, schema_id, reader, reads, first_at, last_at \
             FROM gov_schema_reads ORDER BY bucket, subject, version, reader",
            |r| {
                Ok(SchemaReadBucket {
                    bucket: r.get(0)?,
                    read: SchemaRead {
                        subject: r.get(1)?,
                        version: r.get(2)?,
                        schema_id: r.get(3)?,
                        reader: r.get(4)?,
                        reads: uncount(r.get(5)?),
                        first_at: r.get(6)?,
                        last_at: r.get(7)?,
                    },
                })
            },
        )?,
    })
}

/// Inserts the consumers not yet held by name (with their client ids); a name held with
/// other content is a conflict and stays as it is.
fn restore_consumers(
    tx: &Connection,
    consumers: &[Consumer],
    out: &mut RestoreCounts,
) -> GovernanceResult<()> {
    for consumer in consumers {
        let held: Option<String> = tx
            .query_row(
                "SELECT body FROM gov_consumers WHERE name = ?1",
                [&consumer.name],
                |r| r.get(0),
            )
            .optional()
            .map_err(backend)?;
        match held.map(|b| from_json::<Consumer>(&b)).transpose()? {
            Some(held) if &held == consumer => out.present += 1,
            Some(_) => out.conflicts.push(format!(
                "consumer '{}' already exists with other content",
                consumer.name
            )),
            None => {
                tx.execute(
                    "INSERT INTO gov_consumers(name, body) VALUES (?1, ?2)",
                    params![consumer.name, to_json(consumer)?],
                )
                .map_err(backend)?;
                bind_clients(tx, consumer)?;
                out.consumers += 1;
            }
        }
    }
    Ok(())
}

/// Inserts the deprecations not yet held under their id (ids are kept: findings and the
/// trail refer to them); an id held with another record is a conflict.
fn restore_deprecations(
    tx: &Connection,
    deprecations: &[Deprecation],
    out: &mut RestoreCounts,
) -> GovernanceResult<()> {
    for record in deprecations {
        match read_deprecation(tx, record.id)? {
            Some(held) if &held == record => out.present += 1,
            Some(_) => out.conflicts.push(format!(
                "deprecation {} already exists with other content",
                record.id
            )),
            None => {
                tx.execute(
                    "INSERT INTO gov_deprecations(id, subject, body) VALUES (?1, ?2, ?3)",
                    params![record.id, record.target.subject(), to_json(record)?],
                )
                .map_err(backend)?;
                out.deprecations += 1;
            }
        }
    }
    Ok(())
}

/// Inserts the approvals not yet held under their id (registrations' audit entries name
/// them); an id held with another approval is a conflict.
fn restore_approvals(
    tx: &Connection,
    approvals: &[Approval],
    out: &mut RestoreCounts,
) -> GovernanceResult<()> {
    for approval in approvals {
        match read_approval(tx, approval.id)? {
            Some(held) if &held == approval => out.present += 1,
            Some(_) => out.conflicts.push(format!(
                "approval {} already exists with other content",
                approval.id
            )),
            None => {
                tx.execute(
                    "INSERT INTO gov_approvals(id, subject, body) VALUES (?1, ?2, ?3)",
                    params![approval.id, approval.subject, to_json(approval)?],
                )
                .map_err(backend)?;
                out.approvals += 1;
            }
        }
    }
    Ok(())
}

/// Inserts usage buckets under their primary keys; a key already held keeps its counters
/// (adding to them would double the evidence on a second import).
fn restore_usage(
    tx: &Connection,
    snapshot: &GovernanceSnapshot,
    out: &mut RestoreCounts,
) -> GovernanceResult<()> {
    let who = |c: &Option<String>| c.clone().unwrap_or_else(|| NO_CONSUMER.to_string());
    let mut written = 0usize;
    let mut total = 0usize;
    for r in &snapshot.usage_readers {
        total += 1;
        written += tx
            .prepare_cached(
                "INSERT INTO gov_usage_readers(bucket, subject, client_id, consumer, \
                 reader_schema_id, reports, decode_failures, first_at, last_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT DO NOTHING",
            )
            .map_err(backend)?
            .execute(params![
                r.bucket,
                r.subject,
                r.client_id,
                who(&r.consumer),
                r.reader_schema_id.unwrap_or(NO_READER),
                count(r.reports),
                count(r.decode_failures),
                r.first_at,
                r.last_at
            ])
            .map_err(backend)?;
    }
    for f in &snapshot.usage_fields {
        total += 1;
        written += tx
            .prepare_cached(
                "INSERT INTO gov_usage_fields(bucket, subject, client_id, consumer, \
                 reader_schema_id, field_path, reads, first_at, last_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT DO NOTHING",
            )
            .map_err(backend)?
            .execute(params![
                f.bucket,
                f.subject,
                f.client_id,
                who(&f.consumer),
                f.reader_schema_id.unwrap_or(NO_READER),
                f.field,
                count(f.reads),
                f.first_at,
                f.last_at
            ])
            .map_err(backend)?;
    }
    for c in &snapshot.usage_counts {
        total += 1;
        written += tx
            .prepare_cached(
                "INSERT INTO gov_usage_counts(bucket, subject, client_id, consumer, kind, key, \
                 detail, value) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT DO NOTHING",
            )
            .map_err(backend)?
            .execute(params![
                c.bucket,
                c.subject,
                c.client_id,
                who(&c.consumer),
                c.kind,
                c.key,
                c.detail,
                count(c.value)
            ])
            .map_err(backend)?;
    }
    for b in &snapshot.schema_reads {
        let r = &b.read;
        total += 1;
        written += tx
            .prepare_cached(
                "INSERT INTO gov_schema_reads(bucket, subject, version, schema_id, reader, reads, \
                 first_at, last_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT DO NOTHING",
            )
            .map_err(backend)?
            .execute(params![
                b.bucket,
                r.subject,
                r.version,
                r.schema_id,
                r.reader,
                count(r.reads),
                r.first_at,
                r.last_at
            ])
            .map_err(backend)?;
    }
    out.usage_rows += written;
    out.present += total - written;
    Ok(())
}

/// Adds one counter row to the summed counts.
/// Adds one counted sighting (`writer_schema` keyed by global id, `records` by version);
/// keys that are not numbers are skipped.
pub(crate) fn add_sighting(out: &mut SchemaSightings, kind: &str, key: &str, at: i64) {
    let Ok(number) = key.parse::<i64>() else {
        return;
    };
    match kind {
        "writer_schema" => out.saw_schema(number, at),
        "records" => out.saw_version(number, at),
        _ => {}
    }
}

pub(crate) fn add_count(out: &mut UsageCounts, kind: &str, key: String, detail: String, n: u64) {
    match kind {
        "writer_schema" => {
            if let Ok(id) = key.parse::<i64>() {
                let c = out.writer_schema_ids.entry(id).or_default();
                *c = c.saturating_add(n);
            }
        }
        "records" => {
            if let Ok(version) = key.parse::<i64>() {
                let c = out.records_by_version.entry(version).or_default();
                *c = c.saturating_add(n);
            }
        }
        "unknown_enum" => {
            let c = out
                .unknown_enum_values
                .entry(key)
                .or_default()
                .entry(detail)
                .or_default();
            *c = c.saturating_add(n);
        }
        _ => {}
    }
}
