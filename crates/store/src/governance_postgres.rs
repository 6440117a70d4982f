//! The PostgreSQL governance backend: the same tables as the embedded one (prefixed `gov_`,
//! migrations in `governance_migrations`), over a deadpool pool of tokio-postgres clients.
//!
//! Writes that check before they write (consumer creation and edits, deprecation creation)
//! take a transaction-scoped advisory lock, so concurrent servers on one database serialize
//! them; deprecation edits lock their row with `SELECT ... FOR UPDATE`.

use crate::audit::AuditLine;
use crate::governance::{
    Approval, ApprovalEdit, Attribution, Consumer, ConsumerCheck, ConsumerEdit, CountBucket,
    Deprecation, DeprecationEdit, FieldBucket, FieldUsage, GovernanceError, GovernanceResult,
    GovernanceSnapshot, GovernanceStore, NewApproval, NewDeprecation, ReaderBucket, ReaderUsage,
    ReportingSince, RestoreCounts, SchemaRead, SchemaReadBucket, SchemaSightings, UsageCounts,
    UsageFinding, UsageQuery, UsageReport, bucket_start, missing_findings,
};
use crate::governance_sqlite::{add_count, add_sighting};
use crate::pg_pool::{self, MigrationLock, PoolOptions};
use async_trait::async_trait;
use deadpool_postgres::Pool;
use tokio_postgres::types::ToSql;

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
        bucket BIGINT NOT NULL,
        subject TEXT NOT NULL,
        client_id TEXT NOT NULL,
        consumer TEXT NOT NULL,
        reader_schema_id BIGINT NOT NULL,
        reports BIGINT NOT NULL,
        decode_failures BIGINT NOT NULL,
        first_at BIGINT NOT NULL,
        last_at BIGINT NOT NULL,
        PRIMARY KEY (bucket, subject, client_id, consumer, reader_schema_id)
    );
    CREATE INDEX gov_usage_readers_subject ON gov_usage_readers(subject, bucket);
    CREATE TABLE gov_usage_fields (
        bucket BIGINT NOT NULL,
        subject TEXT NOT NULL,
        client_id TEXT NOT NULL,
        consumer TEXT NOT NULL,
        reader_schema_id BIGINT NOT NULL,
        field_path TEXT NOT NULL,
        reads BIGINT NOT NULL,
        first_at BIGINT NOT NULL,
        last_at BIGINT NOT NULL,
        PRIMARY KEY (bucket, subject, client_id, consumer, reader_schema_id, field_path)
    );
    CREATE INDEX gov_usage_fields_field ON gov_usage_fields(subject, field_path, bucket);
    CREATE TABLE gov_usage_counts (
        bucket BIGINT NOT NULL,
        subject TEXT NOT NULL,
        client_id TEXT NOT NULL,
        consumer TEXT NOT NULL,
        kind TEXT NOT NULL,
        key TEXT NOT NULL,
        detail TEXT NOT NULL,
        value BIGINT NOT NULL,
        PRIMARY KEY (bucket, subject, client_id, consumer, kind, key, detail)
    );
    CREATE TABLE gov_findings (
        id BIGSERIAL PRIMARY KEY,
        at BIGINT NOT NULL,
        body TEXT NOT NULL
    );
    CREATE INDEX gov_findings_at ON gov_findings(at);
    CREATE TABLE gov_deprecations (
        id BIGINT PRIMARY KEY,
        subject TEXT NOT NULL,
        body TEXT NOT NULL
    );
    CREATE INDEX gov_deprecations_subject ON gov_deprecations(subject);",
    ),
    (
        2,
        r#"CREATE TABLE gov_schema_reads (
        bucket BIGINT NOT NULL,
        subject TEXT COLLATE "C" NOT NULL,
        version BIGINT NOT NULL,
        schema_id BIGINT NOT NULL,
        reader TEXT NOT NULL,
        reads BIGINT NOT NULL,
        first_at BIGINT NOT NULL,
        last_at BIGINT NOT NULL,
        PRIMARY KEY (bucket, subject, version, reader)
    );
    CREATE INDEX gov_schema_reads_subject ON gov_schema_reads(subject, last_at);"#,
    ),
    (
        3,
        r#"CREATE TABLE gov_approvals (
        id BIGINT PRIMARY KEY,
        subject TEXT COLLATE "C" NOT NULL,
        body TEXT NOT NULL
    );
    CREATE INDEX gov_approvals_subject ON gov_approvals(subject, id);"#,
    ),
];

/// Advisory lock keys (arbitrary constants, spelled "cov-gov" plus a purpose digit).
const MIGRATION_LOCK: i64 = 0x636f_762d_676f_7601;
const CONSUMER_LOCK: i64 = 0x636f_762d_676f_7602;
const DEPRECATION_LOCK: i64 = 0x636f_762d_676f_7603;
const APPROVAL_LOCK: i64 = 0x636f_762d_676f_7604;

const NO_CONSUMER: &str = "";
const NO_READER: i64 = 0;

pub struct PostgresGovernanceStore {
    pool: Pool,
    /// Set once the migrations have run; a lazily opened store migrates on first use, so a
    /// node can start while its database is down.
    migrated: tokio::sync::OnceCell<()>,
}

fn backend(e: impl std::fmt::Display) -> GovernanceError {
    GovernanceError::Backend(e.to_string())
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

fn consumer_column(value: String) -> Option<String> {
    (value != NO_CONSUMER).then_some(value)
}

fn reader_column(value: i64) -> Option<i64> {
    (value != NO_READER).then_some(value)
}

type Params = Vec<Box<dyn ToSql + Sync + Send>>;

fn refs(params: &Params) -> Vec<&(dyn ToSql + Sync)> {
    params
        .iter()
        .map(|p| p.as_ref() as &(dyn ToSql + Sync))
        .collect()
}

/// See the SQLite backend: one-bucket precision, same semantics.
fn usage_filter(query: &UsageQuery, with_field: bool, by_bucket: bool) -> (String, Params) {
    let mut params: Params = Vec::new();
    let from = if by_bucket {
        bucket_start(query.from)
    } else {
        query.from
    };
    params.push(Box::new(from));
    params.push(Box::new(query.to));
    let mut clauses = vec![
        if by_bucket {
            "bucket >= $1".to_string()
        } else {
            "last_at >= $1".to_string()
        },
        "bucket <= $2".to_string(),
    ];
    if let Some(subject) = &query.subject {
        params.push(Box::new(subject.clone()));
        clauses.push(format!("subject = ${}", params.len()));
    }
    if with_field && let Some(field) = &query.field {
        params.push(Box::new(field.clone()));
        clauses.push(format!("field_path = ${}", params.len()));
    }
    match &query.attribution {
        Attribution::Any => {}
        Attribution::Consumer(name) => {
            params.push(Box::new(name.clone()));
            clauses.push(format!("consumer = ${}", params.len()));
        }
        Attribution::Unattributed => clauses.push("consumer = ''".to_string()),
    }
    (clauses.join(" AND "), params)
}

async fn all_consumers(
    client: &impl deadpool_postgres::GenericClient,
) -> GovernanceResult<Vec<Consumer>> {
    let rows = client
        .query("SELECT body FROM gov_consumers ORDER BY name", &[])
        .await
        .map_err(backend)?;
    rows.iter()
        .map(|r| from_json(r.get::<_, &str>(0)))
        .collect()
}

async fn bind_clients(
    tx: &deadpool_postgres::Transaction<'_>,
    consumer: &Consumer,
) -> GovernanceResult<()> {
    tx.execute(
        "DELETE FROM gov_consumer_clients WHERE consumer = $1",
        &[&consumer.name],
    )
    .await
    .map_err(backend)?;
    if !consumer.is_active() {
        return Ok(());
    }
    for client in &consumer.clients {
        let holder = tx
            .query_opt(
                "SELECT consumer FROM gov_consumer_clients WHERE client_id = $1",
                &[client],
            )
            .await
            .map_err(backend)?;
        if let Some(row) = holder {
            let holder: String = row.get(0);
            return Err(GovernanceError::Conflict(format!(
                "client id '{client}' already belongs to consumer '{holder}'"
            )));
        }
        tx.execute(
            "INSERT INTO gov_consumer_clients(client_id, consumer) VALUES ($1, $2)",
            &[client, &consumer.name],
        )
        .await
        .map_err(backend)?;
    }
    Ok(())
}

/// Appends a write's audit entry inside its transaction (the registry's `audit_log`, same
/// database and schema).
async fn append(
    tx: &deadpool_postgres::Transaction<'_>,
    audit: AuditLine<'_>,
) -> GovernanceResult<()> {
    crate::postgres::append_line(tx, audit)
        .await
        .map_err(backend)
}

async fn insert_findings(
    tx: &deadpool_postgres::Transaction<'_>,
    findings: &[UsageFinding],
) -> GovernanceResult<()> {
    for finding in findings {
        tx.execute(
            "INSERT INTO gov_findings(at, body) VALUES ($1, $2)",
            &[&finding.at, &to_json(finding)?],
        )
        .await
        .map_err(backend)?;
    }
    Ok(())
}

impl PostgresGovernanceStore {
    /// Connects to `url` (`postgres://...`) and applies pending governance migrations.
    pub async fn connect(url: &str) -> GovernanceResult<PostgresGovernanceStore> {
        PostgresGovernanceStore::connect_in_schema(url, None).await
    }

    /// Like [`connect`](Self::connect), with the tables in their own PostgreSQL schema (created
    /// when missing), so that several stores can share one database.
    pub async fn connect_in_schema(
        url: &str,
        schema: Option<&str>,
    ) -> GovernanceResult<PostgresGovernanceStore> {
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| GovernanceError::Invalid(format!("invalid PostgreSQL URL: {e}")))?;
        if let Some(schema) = schema {
            if !schema
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                return Err(GovernanceError::Invalid(format!(
                    "schema name '{schema}' must be letters, digits and underscores"
                )));
            }
            let (client, connection) = config
                .connect(tokio_postgres::NoTls)
                .await
                .map_err(backend)?;
            let task = tokio::spawn(connection);
            client
                .batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
                .await
                .map_err(backend)?;
            drop(client);
            let _ = task.await;
            config.options(format!("-c search_path={schema}"));
        }
        let pool = pg_pool::build(
            config,
            PoolOptions {
                max_size: 8,
                wait: None,
                create: None,
                recycle: None,
            },
        )
        .map_err(backend)?;
        PostgresGovernanceStore::new(pool).await
    }

    /// Uses an existing pool (for instance the registry store's) and applies migrations.
    pub async fn new(pool: Pool) -> GovernanceResult<PostgresGovernanceStore> {
        let store = PostgresGovernanceStore::lazy(pool);
        store.ensure_migrated().await?;
        Ok(store)
    }

    /// Uses `pool` without touching the database; migrations run on the first operation that
    /// reaches it (for a node that starts while the database is unreachable).
    pub fn lazy(pool: Pool) -> PostgresGovernanceStore {
        PostgresGovernanceStore {
            pool,
            migrated: tokio::sync::OnceCell::new(),
        }
    }

    /// Like [`connect`](Self::connect), without connecting yet.
    pub fn open_lazy(url: &str) -> GovernanceResult<PostgresGovernanceStore> {
        let config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| GovernanceError::Invalid(format!("invalid PostgreSQL URL: {e}")))?;
        let pool = pg_pool::build(config, PoolOptions::SIDE).map_err(backend)?;
        Ok(PostgresGovernanceStore::lazy(pool))
    }

    async fn ensure_migrated(&self) -> GovernanceResult<()> {
        self.migrated
            .get_or_try_init(|| self.migrate())
            .await
            .map(|_| ())
    }

    async fn migrate(&self) -> GovernanceResult<()> {
        let mut client = self.pool.get().await.map_err(backend)?;
        pg_pool::migrate(
            &mut client,
            "governance_migrations",
            MigrationLock::Single(MIGRATION_LOCK),
            MIGRATIONS,
        )
        .await
        .map_err(backend)
    }

    /// The governance migration numbers applied so far.
    pub async fn applied_migrations(&self) -> GovernanceResult<Vec<i64>> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT version FROM governance_migrations ORDER BY version",
                &[],
            )
            .await
            .map_err(backend)?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    async fn client(&self) -> GovernanceResult<deadpool_postgres::Object> {
        self.ensure_migrated().await?;
        self.pool.get().await.map_err(backend)
    }

    async fn read_deprecation(
        client: &impl deadpool_postgres::GenericClient,
        id: i64,
        lock: bool,
    ) -> GovernanceResult<Option<Deprecation>> {
        let sql = if lock {
            "SELECT body FROM gov_deprecations WHERE id = $1 FOR UPDATE"
        } else {
            "SELECT body FROM gov_deprecations WHERE id = $1"
        };
        let row = client.query_opt(sql, &[&id]).await.map_err(backend)?;
        row.map(|r| from_json(r.get::<_, &str>(0))).transpose()
    }
}

#[async_trait]
impl GovernanceStore for PostgresGovernanceStore {
    async fn create_consumer(
        &self,
        consumer: &Consumer,
        check: ConsumerCheck<'_>,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Consumer> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&CONSUMER_LOCK])
            .await
            .map_err(backend)?;
        let existing = tx
            .query_opt(
                "SELECT 1 FROM gov_consumers WHERE name = $1",
                &[&consumer.name],
            )
            .await
            .map_err(backend)?;
        if existing.is_some() {
            return Err(GovernanceError::Conflict(format!(
                "consumer '{}' already exists",
                consumer.name
            )));
        }
        check(consumer)?;
        tx.execute(
            "INSERT INTO gov_consumers(name, body) VALUES ($1, $2)",
            &[&consumer.name, &to_json(consumer)?],
        )
        .await
        .map_err(backend)?;
        bind_clients(&tx, consumer).await?;
        append(&tx, audit).await?;
        tx.commit().await.map_err(backend)?;
        Ok(consumer.clone())
    }

    async fn modify_consumer(
        &self,
        name: &str,
        edit: ConsumerEdit<'_>,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Consumer> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&CONSUMER_LOCK])
            .await
            .map_err(backend)?;
        let row = tx
            .query_opt("SELECT body FROM gov_consumers WHERE name = $1", &[&name])
            .await
            .map_err(backend)?;
        let mut consumer: Consumer = match row {
            Some(r) => from_json(r.get::<_, &str>(0))?,
            None => {
                return Err(GovernanceError::NotFound {
                    what: "consumer",
                    key: name.to_string(),
                });
            }
        };
        edit(&mut consumer)?;
        if consumer.name != name {
            return Err(GovernanceError::Invalid(
                "a consumer's name cannot change".to_string(),
            ));
        }
        tx.execute(
            "UPDATE gov_consumers SET body = $2 WHERE name = $1",
            &[&name, &to_json(&consumer)?],
        )
        .await
        .map_err(backend)?;
        bind_clients(&tx, &consumer).await?;
        append(&tx, audit).await?;
        tx.commit().await.map_err(backend)?;
        Ok(consumer)
    }

    async fn consumer(&self, name: &str) -> GovernanceResult<Option<Consumer>> {
        let client = self.client().await?;
        let row = client
            .query_opt("SELECT body FROM gov_consumers WHERE name = $1", &[&name])
            .await
            .map_err(backend)?;
        row.map(|r| from_json(r.get::<_, &str>(0))).transpose()
    }

    async fn consumers(&self) -> GovernanceResult<Vec<Consumer>> {
        let client = self.client().await?;
        all_consumers(&client).await
    }

    async fn consumer_for_client(&self, client_id: &str) -> GovernanceResult<Option<String>> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                "SELECT consumer FROM gov_consumer_clients WHERE client_id = $1",
                &[&client_id],
            )
            .await
            .map_err(backend)?;
        Ok(row.map(|r| r.get(0)))
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
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        tx.execute(
            "INSERT INTO gov_usage_readers AS u (bucket, subject, client_id, consumer, reader_schema_id, \
             reports, decode_failures, first_at, last_at) VALUES ($1, $2, $3, $4, $5, 1, $6, $7, $8) \
             ON CONFLICT (bucket, subject, client_id, consumer, reader_schema_id) DO UPDATE SET \
             reports = u.reports + 1, decode_failures = \
             LEAST(u.decode_failures, 9223372036854775807 - excluded.decode_failures) + excluded.decode_failures, \
             first_at = LEAST(u.first_at, excluded.first_at), last_at = GREATEST(u.last_at, excluded.last_at)",
            &[
                &bucket,
                &report.subject,
                &report.client_id,
                &who,
                &reader,
                &count(report.decode_failures),
                &first,
                &last,
            ],
        )
        .await
        .map_err(backend)?;
        for field in &report.fields_read {
            tx.execute(
                "INSERT INTO gov_usage_fields AS u (bucket, subject, client_id, consumer, reader_schema_id, \
                 field_path, reads, first_at, last_at) VALUES ($1, $2, $3, $4, $5, $6, 1, $7, $8) \
                 ON CONFLICT (bucket, subject, client_id, consumer, reader_schema_id, field_path) DO UPDATE SET \
                 reads = u.reads + 1, first_at = LEAST(u.first_at, excluded.first_at), \
                 last_at = GREATEST(u.last_at, excluded.last_at)",
                &[&bucket, &report.subject, &report.client_id, &who, &reader, field, &first, &last],
            )
            .await
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
                "INSERT INTO gov_usage_counts AS u (bucket, subject, client_id, consumer, kind, key, detail, value) \
                 VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                 ON CONFLICT (bucket, subject, client_id, consumer, kind, key, detail) DO UPDATE SET \
                 value = LEAST(u.value, 9223372036854775807 - excluded.value) + excluded.value",
                &[&bucket, &report.subject, &report.client_id, &who, &kind, &key, &detail, &count(n)],
            )
            .await
            .map_err(backend)?;
        }
        insert_findings(&tx, findings).await?;
        append(&tx, audit).await?;
        tx.commit().await.map_err(backend)
    }

    async fn field_usage(&self, query: &UsageQuery) -> GovernanceResult<Vec<FieldUsage>> {
        let (filter, params) = usage_filter(query, true, false);
        let sql = format!(
            "SELECT subject, field_path, consumer, client_id, reader_schema_id, SUM(reads)::BIGINT, \
             MIN(first_at), MAX(last_at) FROM gov_usage_fields WHERE {filter} \
             GROUP BY subject, field_path, consumer, client_id, reader_schema_id \
             ORDER BY subject, field_path, consumer, client_id, reader_schema_id"
        );
        let client = self.client().await?;
        let rows = client.query(&sql, &refs(&params)).await.map_err(backend)?;
        Ok(rows
            .iter()
            .map(|r| FieldUsage {
                subject: r.get(0),
                field: r.get(1),
                consumer: consumer_column(r.get(2)),
                client_id: r.get(3),
                reader_schema_id: reader_column(r.get(4)),
                reads: uncount(r.get(5)),
                first_at: r.get(6),
                last_at: r.get(7),
            })
            .collect())
    }

    async fn reader_usage(&self, query: &UsageQuery) -> GovernanceResult<Vec<ReaderUsage>> {
        let (filter, params) = usage_filter(query, false, false);
        let sql = format!(
            "SELECT subject, consumer, client_id, reader_schema_id, SUM(reports)::BIGINT, \
             LEAST(SUM(decode_failures), 9223372036854775807)::BIGINT, MIN(first_at), MAX(last_at) \
             FROM gov_usage_readers \
             WHERE {filter} GROUP BY subject, consumer, client_id, reader_schema_id \
             ORDER BY subject, consumer, client_id, reader_schema_id"
        );
        let client = self.client().await?;
        let rows = client.query(&sql, &refs(&params)).await.map_err(backend)?;
        Ok(rows
            .iter()
            .map(|r| ReaderUsage {
                subject: r.get(0),
                consumer: consumer_column(r.get(1)),
                client_id: r.get(2),
                reader_schema_id: reader_column(r.get(3)),
                reports: uncount(r.get(4)),
                decode_failures: uncount(r.get(5)),
                first_at: r.get(6),
                last_at: r.get(7),
            })
            .collect())
    }

    async fn usage_counts(&self, query: &UsageQuery) -> GovernanceResult<UsageCounts> {
        let (filter, params) = usage_filter(query, false, true);
        let client = self.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT kind, key, detail, LEAST(SUM(value), 9223372036854775807)::BIGINT \
                     FROM gov_usage_counts \
                     WHERE {filter} GROUP BY kind, key, detail"
                ),
                &refs(&params),
            )
            .await
            .map_err(backend)?;
        let mut out = UsageCounts::default();
        for r in &rows {
            let kind: String = r.get(0);
            add_count(&mut out, &kind, r.get(1), r.get(2), uncount(r.get(3)));
        }
        let failures: i64 = client
            .query_one(
                &format!(
                    "SELECT LEAST(COALESCE(SUM(decode_failures), 0), 9223372036854775807)::BIGINT \
                     FROM gov_usage_readers \
                     WHERE {filter}"
                ),
                &refs(&params),
            )
            .await
            .map_err(backend)?
            .get(0);
        out.decode_failures = uncount(failures);
        Ok(out)
    }

    async fn schema_sightings(
        &self,
        subject: &str,
        from: i64,
    ) -> GovernanceResult<SchemaSightings> {
        let client = self.client().await?;
        let mut out = SchemaSightings::default();
        let readers = client
            .query(
                "SELECT reader_schema_id, MAX(last_at) FROM gov_usage_readers \
                 WHERE subject = $1 AND last_at >= $2 AND reader_schema_id <> $3 \
                 GROUP BY reader_schema_id",
                &[&subject, &from, &NO_READER],
            )
            .await
            .map_err(backend)?;
        for r in &readers {
            out.saw_schema(r.get(0), r.get(1));
        }
        let counts = client
            .query(
                "SELECT c.kind, c.key, MAX(r.last_at) FROM gov_usage_counts c \
                 JOIN gov_usage_readers r ON r.bucket = c.bucket AND r.subject = c.subject \
                 AND r.client_id = c.client_id AND r.consumer = c.consumer \
                 WHERE c.subject = $1 AND c.kind IN ('writer_schema', 'records') AND c.value > 0 \
                 AND c.bucket >= $3 AND r.last_at >= $2 GROUP BY c.kind, c.key",
                &[&subject, &from, &bucket_start(from)],
            )
            .await
            .map_err(backend)?;
        for r in &counts {
            let kind: String = r.get(0);
            let key: String = r.get(1);
            add_sighting(&mut out, &kind, &key, r.get(2));
        }
        Ok(out)
    }

    async fn reporting_since(&self, subject: &str) -> GovernanceResult<Vec<ReportingSince>> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT consumer, client_id, MIN(first_at) FROM gov_usage_readers \
                 WHERE subject = $1 GROUP BY consumer, client_id ORDER BY consumer, client_id",
                &[&subject],
            )
            .await
            .map_err(backend)?;
        Ok(rows
            .iter()
            .map(|r| ReportingSince {
                consumer: consumer_column(r.get(0)),
                client_id: r.get(1),
                first_at: r.get(2),
            })
            .collect())
    }

    async fn prune_usage(&self, before: i64) -> GovernanceResult<u64> {
        let cutoff = bucket_start(before);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        let mut removed = 0;
        for table in ["gov_usage_readers", "gov_usage_fields", "gov_usage_counts"] {
            removed += tx
                .execute(
                    &format!("DELETE FROM {table} WHERE bucket < $1"),
                    &[&cutoff],
                )
                .await
                .map_err(backend)?;
        }
        removed += tx
            .execute("DELETE FROM gov_findings WHERE at < $1", &[&before])
            .await
            .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        Ok(removed)
    }

    async fn record_findings(&self, findings: &[UsageFinding]) -> GovernanceResult<()> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        insert_findings(&tx, findings).await?;
        tx.commit().await.map_err(backend)
    }

    async fn findings(&self, from: i64, to: i64) -> GovernanceResult<Vec<UsageFinding>> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT body FROM gov_findings WHERE at >= $1 AND at <= $2 ORDER BY at, id",
                &[&from, &to],
            )
            .await
            .map_err(backend)?;
        rows.iter()
            .map(|r| from_json(r.get::<_, &str>(0)))
            .collect()
    }

    async fn create_deprecation(
        &self,
        new: &NewDeprecation,
        at: i64,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Deprecation> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&DEPRECATION_LOCK])
            .await
            .map_err(backend)?;
        let id: i64 = tx
            .query_one("SELECT COALESCE(MAX(id), 0) + 1 FROM gov_deprecations", &[])
            .await
            .map_err(backend)?
            .get(0);
        let record = Deprecation::from_new(id, new.clone(), at);
        tx.execute(
            "INSERT INTO gov_deprecations(id, subject, body) VALUES ($1, $2, $3)",
            &[&id, &record.target.subject(), &to_json(&record)?],
        )
        .await
        .map_err(backend)?;
        append(&tx, audit).await?;
        tx.commit().await.map_err(backend)?;
        Ok(record)
    }

    async fn deprecation(&self, id: i64) -> GovernanceResult<Option<Deprecation>> {
        let client = self.client().await?;
        PostgresGovernanceStore::read_deprecation(&client, id, false).await
    }

    async fn deprecations(&self, subject: Option<&str>) -> GovernanceResult<Vec<Deprecation>> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT body FROM gov_deprecations WHERE $1::TEXT IS NULL OR subject = $1 ORDER BY id",
                &[&subject],
            )
            .await
            .map_err(backend)?;
        rows.iter()
            .map(|r| from_json(r.get::<_, &str>(0)))
            .collect()
    }

    async fn modify_deprecation(
        &self,
        id: i64,
        edit: DeprecationEdit<'_>,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Deprecation> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        let mut record = PostgresGovernanceStore::read_deprecation(&tx, id, true)
            .await?
            .ok_or_else(|| GovernanceError::NotFound {
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
            "UPDATE gov_deprecations SET body = $2 WHERE id = $1",
            &[&id, &to_json(&record)?],
        )
        .await
        .map_err(backend)?;
        append(&tx, audit).await?;
        tx.commit().await.map_err(backend)?;
        Ok(record)
    }
    async fn record_reads(&self, reads: &[SchemaRead]) -> GovernanceResult<()> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        for r in reads {
            tx.execute(
                "INSERT INTO gov_schema_reads(bucket, subject, version, schema_id, reader, reads, \
                 first_at, last_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                 ON CONFLICT (bucket, subject, version, reader) DO UPDATE SET \
                 reads = gov_schema_reads.reads + excluded.reads, \
                 first_at = LEAST(gov_schema_reads.first_at, excluded.first_at), \
                 last_at = GREATEST(gov_schema_reads.last_at, excluded.last_at), \
                 schema_id = excluded.schema_id",
                &[
                    &bucket_start(r.first_at),
                    &r.subject,
                    &r.version,
                    &r.schema_id,
                    &r.reader,
                    &count(r.reads),
                    &r.first_at,
                    &r.last_at,
                ],
            )
            .await
            .map_err(backend)?;
        }
        tx.commit().await.map_err(backend)
    }

    async fn schema_reads(&self, subject: &str, from: i64) -> GovernanceResult<Vec<SchemaRead>> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT version, MAX(schema_id), reader, SUM(reads)::BIGINT, MIN(first_at), \
                 MAX(last_at) FROM gov_schema_reads WHERE subject = $1 AND last_at >= $2 \
                 GROUP BY reader, version ORDER BY reader, version",
                &[&subject, &from],
            )
            .await
            .map_err(backend)?;
        rows.iter()
            .map(|r| {
                Ok(SchemaRead {
                    subject: subject.to_string(),
                    version: r.try_get(0).map_err(backend)?,
                    schema_id: r.try_get(1).map_err(backend)?,
                    reader: r.try_get(2).map_err(backend)?,
                    reads: uncount(r.try_get(3).map_err(backend)?),
                    first_at: r.try_get(4).map_err(backend)?,
                    last_at: r.try_get(5).map_err(backend)?,
                })
            })
            .collect()
    }

    async fn create_approval(
        &self,
        new: &NewApproval,
        at: i64,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Approval> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        tx.execute("SELECT pg_advisory_xact_lock($1)", &[&APPROVAL_LOCK])
            .await
            .map_err(backend)?;
        let id: i64 = tx
            .query_one("SELECT COALESCE(MAX(id), 0) + 1 FROM gov_approvals", &[])
            .await
            .map_err(backend)?
            .get(0);
        let approval = Approval::from_new(id, new.clone(), at);
        tx.execute(
            "INSERT INTO gov_approvals(id, subject, body) VALUES ($1, $2, $3)",
            &[&id, &approval.subject, &to_json(&approval)?],
        )
        .await
        .map_err(backend)?;
        append(&tx, audit).await?;
        tx.commit().await.map_err(backend)?;
        Ok(approval)
    }

    async fn approvals(&self, subject: Option<&str>) -> GovernanceResult<Vec<Approval>> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT body FROM gov_approvals WHERE $1::TEXT IS NULL OR subject = $1 ORDER BY id",
                &[&subject],
            )
            .await
            .map_err(backend)?;
        rows.iter()
            .map(|r| from_json(r.get::<_, &str>(0)))
            .collect()
    }

    async fn modify_approval(
        &self,
        id: i64,
        edit: ApprovalEdit<'_>,
        audit: AuditLine<'_>,
    ) -> GovernanceResult<Approval> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        let before =
            read_approval(&tx, id, true)
                .await?
                .ok_or_else(|| GovernanceError::NotFound {
                    what: "approval",
                    key: id.to_string(),
                })?;
        let mut approval = before.clone();
        edit(&mut approval)?;
        approval.check_edit(&before)?;
        tx.execute(
            "UPDATE gov_approvals SET body = $2 WHERE id = $1",
            &[&id, &to_json(&approval)?],
        )
        .await
        .map_err(backend)?;
        append(&tx, audit).await?;
        tx.commit().await.map_err(backend)?;
        Ok(approval)
    }

    async fn snapshot(&self) -> GovernanceResult<GovernanceSnapshot> {
        let mut client = self.client().await?;
        // One repeatable-read transaction: every part is of the same moment.
        let tx = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(backend)?;
        let out = snapshot_of(&tx).await?;
        tx.commit().await.map_err(backend)?;
        Ok(out)
    }

    async fn restore(&self, snapshot: &GovernanceSnapshot) -> GovernanceResult<RestoreCounts> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        // The same locks as the workflow's writes, so a restore and a live edit serialize.
        for lock in [CONSUMER_LOCK, DEPRECATION_LOCK, APPROVAL_LOCK] {
            tx.execute("SELECT pg_advisory_xact_lock($1)", &[&lock])
                .await
                .map_err(backend)?;
        }
        let mut out = RestoreCounts::default();
        restore_consumers(&tx, &snapshot.consumers, &mut out).await?;
        restore_deprecations(&tx, &snapshot.deprecations, &mut out).await?;
        restore_approvals(&tx, &snapshot.approvals, &mut out).await?;
        restore_usage(&tx, snapshot, &mut out).await?;
        let held: Vec<UsageFinding> =
            bodies(&tx, "SELECT body FROM gov_findings ORDER BY at, id").await?;
        let missing: Vec<UsageFinding> = missing_findings(&held, &snapshot.findings)
            .into_iter()
            .cloned()
            .collect();
        out.present += snapshot.findings.len() - missing.len();
        out.findings = missing.len();
        insert_findings(&tx, &missing).await?;
        tx.commit().await.map_err(backend)?;
        Ok(out)
    }
}

type Tx<'a> = deadpool_postgres::Transaction<'a>;

/// Every body of one JSON-document table, in key order.
async fn bodies<T: serde::de::DeserializeOwned>(
    tx: &Tx<'_>,
    sql: &str,
) -> GovernanceResult<Vec<T>> {
    let rows = tx.query(sql, &[]).await.map_err(backend)?;
    rows.iter()
        .map(|r| from_json(r.get::<_, &str>(0)))
        .collect()
}

/// Reads every governance row inside the caller's transaction.
async fn snapshot_of(tx: &Tx<'_>) -> GovernanceResult<GovernanceSnapshot> {
    let readers = tx
        .query(
            "SELECT bucket, subject, client_id, consumer, reader_schema_id, reports, \
             decode_failures, first_at, last_at FROM gov_usage_readers \
             ORDER BY bucket, subject COLLATE \"C\", client_id COLLATE \"C\", \
             consumer COLLATE \"C\", reader_schema_id",
            &[],
        )
        .await
        .map_err(backend)?;
    let fields = tx
        .query(
            "SELECT bucket, subject, client_id, consumer, reader_schema_id, field_path, reads, \
             first_at, last_at FROM gov_usage_fields \
             ORDER BY bucket, subject COLLATE \"C\", client_id COLLATE \"C\", \
             consumer COLLATE \"C\", reader_schema_id, field_path COLLATE \"C\"",
            &[],
        )
        .await
        .map_err(backend)?;
    let counts = tx
        .query(
            "SELECT bucket, subject, client_id, consumer, kind, key, detail, value \
             FROM gov_usage_counts ORDER BY bucket, subject COLLATE \"C\", \
             client_id COLLATE \"C\", consumer COLLATE \"C\", kind COLLATE \"C\", \
             key COLLATE \"C\", detail COLLATE \"C\"",
            &[],
        )
        .await
        .map_err(backend)?;
    let reads = tx
        .query(
            "SELECT bucket, subject, version, schema_id, reader, reads, first_at, last_at \
             FROM gov_schema_reads ORDER BY bucket, subject COLLATE \"C\", version, \
             reader COLLATE \"C\"",
            &[],
        )
        .await
        .map_err(backend)?;
    Ok(GovernanceSnapshot {
        consumers: bodies(
            tx,
            "SELECT body FROM gov_consumers ORDER BY name COLLATE \"C\"",
        )
        .await?,
        deprecations: bodies(tx, "SELECT body FROM gov_deprecations ORDER BY id").await?,
        approvals: bodies(tx, "SELECT body FROM gov_approvals ORDER BY id").await?,
        findings: bodies(tx, "SELECT body FROM gov_findings ORDER BY at, id").await?,
        usage_readers: readers.iter().map(reader_bucket).collect(),
        usage_fields: fields.iter().map(field_bucket).collect(),
        usage_counts: counts.iter().map(count_bucket).collect(),
        schema_reads: reads.iter().map(read_bucket).collect(),
    })
}

fn reader_bucket(r: &tokio_postgres::Row) -> ReaderBucket {
    ReaderBucket {
        bucket: r.get(0),
        subject: r.get(1),
        client_id: r.get(2),
        consumer: consumer_column(r.get(3)),
        reader_schema_id: reader_column(r.get(4)),
        reports: uncount(r.get(5)),
        decode_failures: uncount(r.get(6)),
        first_at: r.get(7),
        last_at: r.get(8),
    }
}

fn field_bucket(r: &tokio_postgres::Row) -> FieldBucket {
    FieldBucket {
        bucket: r.get(0),
        subject: r.get(1),
        client_id: r.get(2),
        consumer: consumer_column(r.get(3)),
        reader_schema_id: reader_column(r.get(4)),
        field: r.get(5),
        reads: uncount(r.get(6)),
        first_at: r.get(7),
        last_at: r.get(8),
    }
}

fn count_bucket(r: &tokio_postgres::Row) -> CountBucket {
    CountBucket {
        bucket: r.get(0),
        subject: r.get(1),
        client_id: r.get(2),
        consumer: consumer_column(r.get(3)),
        kind: r.get(4),
        key: r.get(5),
        detail: r.get(6),
        value: uncount(r.get(7)),
    }
}

fn read_bucket(r: &tokio_postgres::Row) -> SchemaReadBucket {
    SchemaReadBucket {
        bucket: r.get(0),
        read: SchemaRead {
            subject: r.get(1),
            version: r.get(2),
            schema_id: r.get(3),
            reader: r.get(4),
            reads: uncount(r.get(5)),
            first_at: r.get(6),
            last_at: r.get(7),
        },
    }
}

/// See the SQLite backend: consumers not held by name are inserted with their client ids.
async fn restore_consumers(
    tx: &Tx<'_>,
    consumers: &[Consumer],
    out: &mut RestoreCounts,
) -> GovernanceResult<()> {
    for consumer in consumers {
        let held = tx
            .query_opt(
                "SELECT body FROM gov_consumers WHERE name = $1",
                &[&consumer.name],
            )
            .await
            .map_err(backend)?;
        match held
            .map(|r| from_json::<Consumer>(r.get::<_, &str>(0)))
            .transpose()?
        {
            Some(held) if &held == consumer => out.present += 1,
            Some(_) => out.conflicts.push(format!(
                "consumer '{}' already exists with other content",
                consumer.name
            )),
            None => {
                tx.execute(
                    "INSERT INTO gov_consumers(name, body) VALUES ($1, $2)",
                    &[&consumer.name, &to_json(consumer)?],
                )
                .await
                .map_err(backend)?;
                bind_clients(tx, consumer).await?;
                out.consumers += 1;
            }
        }
    }
    Ok(())
}

/// See the SQLite backend: deprecations keep their ids; an id held otherwise is a conflict.
async fn restore_deprecations(
    tx: &Tx<'_>,
    deprecations: &[Deprecation],
    out: &mut RestoreCounts,
) -> GovernanceResult<()> {
    for record in deprecations {
        match PostgresGovernanceStore::read_deprecation(tx, record.id, true).await? {
            Some(held) if &held == record => out.present += 1,
            Some(_) => out.conflicts.push(format!(
                "deprecation {} already exists with other content",
                record.id
            )),
            None => {
                tx.execute(
                    "INSERT INTO gov_deprecations(id, subject, body) VALUES ($1, $2, $3)",
                    &[&record.id, &record.target.subject(), &to_json(record)?],
                )
                .await
                .map_err(backend)?;
                out.deprecations += 1;
            }
        }
    }
    Ok(())
}

async fn read_approval(
    client: &impl deadpool_postgres::GenericClient,
    id: i64,
    lock: bool,
) -> GovernanceResult<Option<Approval>> {
    let sql = if lock {
        "SELECT body FROM gov_approvals WHERE id = $1 FOR UPDATE"
    } else {
        "SELECT body FROM gov_approvals WHERE id = $1"
    };
    let row = client.query_opt(sql, &[&id]).await.map_err(backend)?;
    row.map(|r| from_json(r.get::<_, &str>(0))).transpose()
}

/// See the SQLite backend: approvals go in under their ids.
async fn restore_approvals(
    tx: &Tx<'_>,
    approvals: &[Approval],
    out: &mut RestoreCounts,
) -> GovernanceResult<()> {
    for approval in approvals {
        match read_approval(tx, approval.id, true).await? {
            Some(held) if &held == approval => out.present += 1,
            Some(_) => out.conflicts.push(format!(
                "approval {} already exists with other content",
                approval.id
            )),
            None => {
                tx.execute(
                    "INSERT INTO gov_approvals(id, subject, body) VALUES ($1, $2, $3)",
                    &[&approval.id, &approval.subject, &to_json(approval)?],
                )
                .await
                .map_err(backend)?;
                out.approvals += 1;
            }
        }
    }
    Ok(())
}

/// See the SQLite backend: buckets go in under their keys, a key already held is left alone.
async fn restore_usage(
    tx: &Tx<'_>,
    snapshot: &GovernanceSnapshot,
    out: &mut RestoreCounts,
) -> GovernanceResult<()> {
    let who = |c: &Option<String>| c.clone().unwrap_or_else(|| NO_CONSUMER.to_string());
    let mut written = 0u64;
    let readers = tx
        .prepare(
            "INSERT INTO gov_usage_readers(bucket, subject, client_id, consumer, reader_schema_id, \
             reports, decode_failures, first_at, last_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING",
        )
        .await
        .map_err(backend)?;
    for r in &snapshot.usage_readers {
        let params: [&(dyn ToSql + Sync); 9] = [
            &r.bucket,
            &r.subject,
            &r.client_id,
            &who(&r.consumer),
            &r.reader_schema_id.unwrap_or(NO_READER),
            &count(r.reports),
            &count(r.decode_failures),
            &r.first_at,
            &r.last_at,
        ];
        written += tx.execute(&readers, &params).await.map_err(backend)?;
    }
    let fields = tx
        .prepare(
            "INSERT INTO gov_usage_fields(bucket, subject, client_id, consumer, reader_schema_id, \
             field_path, reads, first_at, last_at) \
             VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING",
        )
        .await
        .map_err(backend)?;
    for f in &snapshot.usage_fields {
        let params: [&(dyn ToSql + Sync); 9] = [
            &f.bucket,
            &f.subject,
            &f.client_id,
            &who(&f.consumer),
            &f.reader_schema_id.unwrap_or(NO_READER),
            &f.field,
            &count(f.reads),
            &f.first_at,
            &f.last_at,
        ];
        written += tx.execute(&fields, &params).await.map_err(backend)?;
    }
    let counts = tx
        .prepare(
            "INSERT INTO gov_usage_counts(bucket, subject, client_id, consumer, kind, key, detail, \
             value) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING",
        )
        .await
        .map_err(backend)?;
    for c in &snapshot.usage_counts {
        let params: [&(dyn ToSql + Sync); 8] = [
            &c.bucket,
            &c.subject,
            &c.client_id,
            &who(&c.consumer),
            &c.kind,
            &c.key,
            &c.detail,
            &count(c.value),
        ];
        written += tx.execute(&counts, &params).await.map_err(backend)?;
    }
    let reads = tx
        .prepare(
            "INSERT INTO gov_schema_reads(bucket, subject, version, schema_id, reader, reads, \
             first_at, last_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) ON CONFLICT DO NOTHING",
        )
        .await
        .map_err(backend)?;
    for b in &snapshot.schema_reads {
        let r = &b.read;
        let params: [&(dyn ToSql + Sync); 8] = [
            &b.bucket,
            &r.subject,
            &r.version,
            &r.schema_id,
            &r.reader,
            &count(r.reads),
            &r.first_at,
            &r.last_at,
        ];
        written += tx.execute(&reads, &params).await.map_err(backend)?;
    }
    let total = snapshot.usage_readers.len()
        + snapshot.usage_fields.len()
        + snapshot.usage_counts.len()
        + snapshot.schema_reads.len();
    let written = usize::try_from(written).unwrap_or(total);
    out.usage_rows += written;
    out.present += total.saturating_sub(written);
    Ok(())
}
