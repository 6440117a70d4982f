//! The governance store written once: its tables, and each operation's statements and row
//! mapping over a [`Tx`], for both backends ([`crate::governance_sqlite`],
//! [`crate::governance_postgres`]) to run in their own transactions.
//!
//! Consumers, deprecations and approvals are JSON documents edited inside a write
//! transaction; usage evidence is counters upserted into hourly buckets. Writes that check
//! before they write (consumer creation and edits, deprecation and approval creation) take
//! an advisory lock, so concurrent PostgreSQL servers serialize them (SQLite's writer already
//! does); edits of one deprecation or approval lock its row.

use crate::audit::AuditLine;
use crate::governance::{
    Approval, ApprovalEdit, Attribution, Consumer, ConsumerCheck, ConsumerEdit, CountBucket,
    Deprecation, DeprecationEdit, FieldBucket, FieldUsage, GovernanceError, GovernanceResult,
    GovernanceSnapshot, NewApproval, NewDeprecation, ReaderBucket, ReaderUsage, ReportingSince,
    RestoreCounts, SchemaRead, SchemaReadBucket, SchemaSightings, Stage, UsageCounts, UsageFinding,
    UsageQuery, UsageReport, bucket_start, missing_findings,
};
use crate::sql::{Lock, Row, Tx, Value, args, value_rows};
use std::collections::HashMap;

/// The governance tables, prefixed `gov_`, with their own migration ledger
/// (`governance_migrations`) so they evolve apart from the registry's.
pub(crate) const MIGRATIONS: &[(i64, &str)] = &[
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

/// Advisory lock keys (arbitrary constants, spelled "cov-gov" plus a purpose digit; 1 is the
/// migrations').
const CONSUMER_LOCK: Lock<'static> = Lock::Key(0x636f_762d_676f_7602);
const DEPRECATION_LOCK: Lock<'static> = Lock::Key(0x636f_762d_676f_7603);
const APPROVAL_LOCK: Lock<'static> = Lock::Key(0x636f_762d_676f_7604);

/// Usage rows store "no consumer" and "no reader schema" as these values, which keeps them in
/// primary keys (NULLs are never equal). Registry ids start at 1, so 0 is free.
const NO_CONSUMER: &str = "";
const NO_READER: i64 = 0;

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

/// A sum of stored counters, read as the sums of their high and low 32 bits (each of which
/// adds up without overflow), saturated at the largest count a column holds. Counters
/// saturate when they are written, so any sum of them may pass that.
fn split_sum(high: i64, low: i64) -> u64 {
    let total = (i128::from(high) << 32) + i128::from(low);
    u64::try_from(total.clamp(0, i128::from(i64::MAX))).unwrap_or(0)
}

/// The two columns [`split_sum`] reads for `column`.
fn split_columns(column: &str) -> String {
    format!(
        "CAST(COALESCE(SUM({column} >> 32), 0) AS BIGINT), \
         CAST(COALESCE(SUM({column} & 4294967295), 0) AS BIGINT)"
    )
}

fn consumer_column(value: String) -> Option<String> {
    (value != NO_CONSUMER).then_some(value)
}

fn reader_column(value: i64) -> Option<i64> {
    (value != NO_READER).then_some(value)
}

fn who(consumer: &Option<String>) -> &str {
    consumer.as_deref().unwrap_or(NO_CONSUMER)
}

/// The JSON documents `sql` selects (column 0).
async fn bodies<T: serde::de::DeserializeOwned>(
    tx: &impl Tx,
    sql: &str,
    params: &[Value<'_>],
) -> GovernanceResult<Vec<T>> {
    let mut rows = tx.query(sql, params).await?;
    rows.iter_mut()
        .map(|r| from_json(&r.get::<String>(0)?))
        .collect()
}

/// The JSON document `sql` selects (column 0), if any.
async fn body<T: serde::de::DeserializeOwned>(
    tx: &impl Tx,
    sql: &str,
    params: &[Value<'_>],
) -> GovernanceResult<Option<T>> {
    let text: Option<String> = tx.value_opt(sql, params).await?;
    text.map(|b| from_json(&b)).transpose()
}

/// Rows of `sql`, each mapped by `read`.
async fn rows<T>(
    tx: &impl Tx,
    sql: &str,
    params: &[Value<'_>],
    read: impl Fn(&mut Row) -> crate::sql::DbResult<T>,
) -> GovernanceResult<Vec<T>> {
    let mut rows = tx.query(sql, params).await?;
    Ok(rows.iter_mut().map(read).collect::<Result<_, _>>()?)
}

/// The WHERE clause shared by usage queries, with its parameters. Range precision is one
/// bucket: a bucket is in range when its latest report is not before `from` (or, for rows
/// without timestamps, `by_bucket`, when it starts in the hour of `from`) and it does not
/// start after `to`.
fn usage_filter(
    query: &UsageQuery,
    with_field: bool,
    by_bucket: bool,
) -> (String, Vec<Value<'static>>) {
    let mut clauses = vec![
        if by_bucket {
            "bucket >= ?1"
        } else {
            "last_at >= ?1"
        }
        .to_string(),
        "bucket <= ?2".to_string(),
    ];
    let from = if by_bucket {
        bucket_start(query.from)
    } else {
        query.from
    };
    let mut values = vec![Value::Int(from), Value::Int(query.to)];
    let mut equal = |column: &str, value: &str| {
        values.push(Value::from(value.to_string()));
        clauses.push(format!("{column} = ?{}", values.len()));
    };
    if let Some(subject) = &query.subject {
        equal("subject", subject);
    }
    if with_field && let Some(field) = &query.field {
        equal("field_path", field);
    }
    match &query.attribution {
        Attribution::Any => {}
        Attribution::Consumer(name) => equal("consumer", name),
        Attribution::Unattributed => clauses.push("consumer = ''".to_string()),
    }
    (clauses.join(" AND "), values)
}

// Consumers.

pub(crate) async fn consumer(tx: &impl Tx, name: &str) -> GovernanceResult<Option<Consumer>> {
    body(
        tx,
        "SELECT body FROM gov_consumers WHERE name = ?1",
        args![name],
    )
    .await
}

pub(crate) async fn consumers(tx: &impl Tx) -> GovernanceResult<Vec<Consumer>> {
    bodies(tx, "SELECT body FROM gov_consumers ORDER BY name", &[]).await
}

pub(crate) async fn consumer_for_client(
    tx: &impl Tx,
    client_id: &str,
) -> GovernanceResult<Option<String>> {
    Ok(tx
        .value_opt(
            "SELECT consumer FROM gov_consumer_clients WHERE client_id = ?1",
            args![client_id],
        )
        .await?)
}

/// Rewrites the client-id index of one consumer, refusing ids another consumer holds.
async fn bind_clients(tx: &impl Tx, consumer: &Consumer) -> GovernanceResult<()> {
    tx.execute(
        "DELETE FROM gov_consumer_clients WHERE consumer = ?1",
        args![&consumer.name],
    )
    .await?;
    if !consumer.is_active() {
        return Ok(());
    }
    for client in &consumer.clients {
        if let Some(holder) = consumer_for_client(tx, client).await? {
            return Err(GovernanceError::Conflict(format!(
                "client id '{client}' already belongs to consumer '{holder}'"
            )));
        }
        tx.execute(
            "INSERT INTO gov_consumer_clients(client_id, consumer) VALUES (?1, ?2)",
            args![client, &consumer.name],
        )
        .await?;
    }
    Ok(())
}

async fn insert_consumer(tx: &impl Tx, consumer: &Consumer) -> GovernanceResult<()> {
    tx.execute(
        "INSERT INTO gov_consumers(name, body) VALUES (?1, ?2)",
        args![&consumer.name, to_json(consumer)?],
    )
    .await?;
    bind_clients(tx, consumer).await
}

pub(crate) async fn create_consumer(
    tx: &impl Tx,
    consumer: &Consumer,
    check: ConsumerCheck<'_>,
    audit: AuditLine<'_>,
) -> GovernanceResult<Consumer> {
    tx.lock(CONSUMER_LOCK).await?;
    if self::consumer(tx, &consumer.name).await?.is_some() {
        return Err(GovernanceError::Conflict(format!(
            "consumer '{}' already exists",
            consumer.name
        )));
    }
    check(consumer)?;
    insert_consumer(tx, consumer).await?;
    crate::sql::audit::append(tx, audit).await?;
    Ok(consumer.clone())
}

pub(crate) async fn modify_consumer(
    tx: &impl Tx,
    name: &str,
    edit: ConsumerEdit<'_>,
    audit: AuditLine<'_>,
) -> GovernanceResult<Consumer> {
    tx.lock(CONSUMER_LOCK).await?;
    let mut consumer = consumer(tx, name)
        .await?
        .ok_or_else(|| GovernanceError::NotFound {
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
        args![name, to_json(&consumer)?],
    )
    .await?;
    bind_clients(tx, &consumer).await?;
    crate::sql::audit::append(tx, audit).await?;
    Ok(consumer)
}

// Usage evidence.

/// The counters one report adds: writer schemas seen, records per version, unknown enum
/// values per field.
fn counters(report: &UsageReport) -> Vec<(&'static str, String, String, u64)> {
    let mut out = Vec::new();
    for id in &report.writer_schema_ids {
        out.push(("writer_schema", id.to_string(), String::new(), 1));
    }
    for (version, n) in &report.records_by_version {
        out.push(("records", version.to_string(), String::new(), *n));
    }
    for (field, values) in &report.unknown_enum_values {
        for (value, n) in values {
            out.push(("unknown_enum", field.clone(), value.clone(), *n));
        }
    }
    out
}

pub(crate) async fn record_usage(
    tx: &impl Tx,
    report: &UsageReport,
    consumer: Option<&str>,
    findings: &[UsageFinding],
    audit: AuditLine<'_>,
) -> GovernanceResult<()> {
    let bucket = bucket_start(report.interval_end);
    let who = consumer.unwrap_or(NO_CONSUMER);
    let reader = report.reader_schema_id.unwrap_or(NO_READER);
    let (first, last) = (report.interval_start, report.interval_end);
    let (subject, client) = (&report.subject, &report.client_id);
    tx.execute(
        "INSERT INTO gov_usage_readers AS u (bucket, subject, client_id, consumer, \
         reader_schema_id, reports, decode_failures, first_at, last_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, 1, ?6, ?7, ?8) \
         ON CONFLICT (bucket, subject, client_id, consumer, reader_schema_id) DO UPDATE SET \
         reports = u.reports + 1, decode_failures = LEAST(u.decode_failures, \
         9223372036854775807 - excluded.decode_failures) + excluded.decode_failures, \
         first_at = LEAST(u.first_at, excluded.first_at), \
         last_at = GREATEST(u.last_at, excluded.last_at)",
        args![
            bucket,
            subject,
            client,
            who,
            reader,
            count(report.decode_failures),
            first,
            last
        ],
    )
    .await?;
    for field in &report.fields_read {
        tx.execute(
            "INSERT INTO gov_usage_fields AS u (bucket, subject, client_id, consumer, \
             reader_schema_id, field_path, reads, first_at, last_at) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, 1, ?7, ?8) \
             ON CONFLICT (bucket, subject, client_id, consumer, reader_schema_id, field_path) \
             DO UPDATE SET reads = u.reads + 1, first_at = LEAST(u.first_at, excluded.first_at), \
             last_at = GREATEST(u.last_at, excluded.last_at)",
            args![bucket, subject, client, who, reader, field, first, last],
        )
        .await?;
    }
    for (kind, key, detail, n) in counters(report) {
        tx.execute(
            "INSERT INTO gov_usage_counts AS u (bucket, subject, client_id, consumer, kind, key, \
             detail, value) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
             ON CONFLICT (bucket, subject, client_id, consumer, kind, key, detail) DO UPDATE SET \
             value = LEAST(u.value, 9223372036854775807 - excluded.value) + excluded.value",
            args![bucket, subject, client, who, kind, key, detail, count(n)],
        )
        .await?;
    }
    insert_findings(tx, findings).await?;
    crate::sql::audit::append(tx, audit).await?;
    Ok(())
}

pub(crate) async fn field_usage(
    tx: &impl Tx,
    query: &UsageQuery,
) -> GovernanceResult<Vec<FieldUsage>> {
    let (filter, params) = usage_filter(query, true, false);
    let sql = format!(
        "SELECT subject, field_path, consumer, client_id, reader_schema_id, \
         CAST(SUM(reads) AS BIGINT), MIN(first_at), MAX(last_at) FROM gov_usage_fields \
         WHERE {filter} GROUP BY subject, field_path, consumer, client_id, reader_schema_id \
         ORDER BY subject, field_path, consumer, client_id, reader_schema_id"
    );
    rows(tx, &sql, &params, |r| {
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
    .await
}

pub(crate) async fn reader_usage(
    tx: &impl Tx,
    query: &UsageQuery,
) -> GovernanceResult<Vec<ReaderUsage>> {
    let (filter, params) = usage_filter(query, false, false);
    let sql = format!(
        "SELECT subject, consumer, client_id, reader_schema_id, CAST(SUM(reports) AS BIGINT), \
         {}, MIN(first_at), MAX(last_at) FROM gov_usage_readers WHERE {filter} \
         GROUP BY subject, consumer, client_id, reader_schema_id \
         ORDER BY subject, consumer, client_id, reader_schema_id",
        split_columns("decode_failures")
    );
    rows(tx, &sql, &params, |r| {
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
    .await
}

pub(crate) async fn usage_counts(
    tx: &impl Tx,
    query: &UsageQuery,
) -> GovernanceResult<UsageCounts> {
    // Count rows have no timestamps of their own; the bucket alone places them.
    let (filter, params) = usage_filter(query, false, true);
    let counts_sql = format!(
        "SELECT kind, key, detail, {} FROM gov_usage_counts WHERE {filter} \
         GROUP BY kind, key, detail",
        split_columns("value")
    );
    let failures_sql = format!(
        "SELECT {} FROM gov_usage_readers WHERE {filter}",
        split_columns("decode_failures")
    );
    let mut out = UsageCounts::default();
    for mut r in tx.query(&counts_sql, &params).await? {
        let kind: String = r.get(0)?;
        add_count(
            &mut out,
            &kind,
            r.get(1)?,
            r.get(2)?,
            split_sum(r.get(3)?, r.get(4)?),
        );
    }
    let mut failures = tx.query_one(&failures_sql, &params).await?;
    out.decode_failures = split_sum(failures.get(0)?, failures.get(1)?);
    Ok(out)
}

/// Adds one counter row to the summed counts.
fn add_count(out: &mut UsageCounts, kind: &str, key: String, detail: String, n: u64) {
    let add = |c: &mut u64| *c = c.saturating_add(n);
    match kind {
        "writer_schema" => {
            if let Ok(id) = key.parse::<i64>() {
                add(out.writer_schema_ids.entry(id).or_default());
            }
        }
        "records" => {
            if let Ok(version) = key.parse::<i64>() {
                add(out.records_by_version.entry(version).or_default());
            }
        }
        "unknown_enum" => add(out
            .unknown_enum_values
            .entry(key)
            .or_default()
            .entry(detail)
            .or_default()),
        _ => {}
    }
}

pub(crate) async fn schema_sightings(
    tx: &impl Tx,
    subject: &str,
    from: i64,
) -> GovernanceResult<SchemaSightings> {
    let mut out = SchemaSightings::default();
    let mut readers = tx
        .query(
            "SELECT reader_schema_id, MAX(last_at) FROM gov_usage_readers \
             WHERE subject = ?1 AND last_at >= ?2 AND reader_schema_id <> ?3 \
             GROUP BY reader_schema_id",
            args![subject, from, NO_READER],
        )
        .await?;
    for r in &mut readers {
        out.saw_schema(r.get(0)?, r.get(1)?);
    }
    let mut counts = tx
        .query(
            "SELECT c.kind, c.key, MAX(r.last_at) FROM gov_usage_counts c \
             JOIN gov_usage_readers r ON r.bucket = c.bucket AND r.subject = c.subject \
             AND r.client_id = c.client_id AND r.consumer = c.consumer \
             WHERE c.subject = ?1 AND c.kind IN ('writer_schema', 'records') AND c.value > 0 \
             AND c.bucket >= ?3 AND r.last_at >= ?2 GROUP BY c.kind, c.key",
            args![subject, from, bucket_start(from)],
        )
        .await?;
    for r in &mut counts {
        let (kind, key): (String, String) = (r.get(0)?, r.get(1)?);
        add_sighting(&mut out, &kind, &key, r.get(2)?);
    }
    Ok(out)
}

/// Adds one counted sighting (`writer_schema` keyed by global id, `records` by version);
/// keys that are not numbers are skipped.
fn add_sighting(out: &mut SchemaSightings, kind: &str, key: &str, at: i64) {
    let Ok(number) = key.parse::<i64>() else {
        return;
    };
    match kind {
        "writer_schema" => out.saw_schema(number, at),
        "records" => out.saw_version(number, at),
        _ => {}
    }
}

pub(crate) async fn reporting_since(
    tx: &impl Tx,
    subject: &str,
) -> GovernanceResult<Vec<ReportingSince>> {
    rows(
        tx,
        "SELECT consumer, client_id, MIN(first_at) FROM gov_usage_readers \
         WHERE subject = ?1 GROUP BY consumer, client_id ORDER BY consumer, client_id",
        args![subject],
        |r| {
            Ok(ReportingSince {
                consumer: consumer_column(r.get(0)?),
                client_id: r.get(1)?,
                first_at: r.get(2)?,
            })
        },
    )
    .await
}

pub(crate) async fn prune_usage(tx: &impl Tx, before: i64) -> GovernanceResult<u64> {
    // A bucket goes only when all of it is older than `before`.
    let cutoff = bucket_start(before);
    let mut removed = 0;
    for table in ["gov_usage_readers", "gov_usage_fields", "gov_usage_counts"] {
        removed += tx
            .execute(
                &format!("DELETE FROM {table} WHERE bucket < ?1"),
                args![cutoff],
            )
            .await?;
    }
    removed += tx
        .execute("DELETE FROM gov_findings WHERE at < ?1", args![before])
        .await?;
    Ok(removed)
}

/// Appends findings (also the store's `record_findings`).
pub(crate) async fn record_findings(
    tx: &impl Tx,
    findings: &[UsageFinding],
) -> GovernanceResult<()> {
    insert_findings(tx, findings).await
}

async fn insert_findings(tx: &impl Tx, findings: &[UsageFinding]) -> GovernanceResult<()> {
    for finding in findings {
        tx.execute(
            "INSERT INTO gov_findings(at, body) VALUES (?1, ?2)",
            args![finding.at, to_json(finding)?],
        )
        .await?;
    }
    Ok(())
}

pub(crate) async fn findings(
    tx: &impl Tx,
    from: i64,
    to: i64,
) -> GovernanceResult<Vec<UsageFinding>> {
    bodies(
        tx,
        "SELECT body FROM gov_findings WHERE at >= ?1 AND at <= ?2 ORDER BY at, id",
        args![from, to],
    )
    .await
}

/// Adds `reads` to their hourly buckets: entries of one bucket, subject, version and reader
/// merged first (a statement may change a row once), then upserted by statements of 64, 32,
/// …, 1 rows. A flush of the reads counted since the last one wrote a statement per entry,
/// each a round trip on PostgreSQL; the sizes are few so that each connection prepares few
/// statements.
pub(crate) async fn record_reads(tx: &impl Tx, reads: &[SchemaRead]) -> GovernanceResult<()> {
    let merged = merge_reads(reads);
    let mut rest = merged.as_slice();
    while !rest.is_empty() {
        let size = READS_PER_STATEMENT.min(1 << rest.len().ilog2());
        let (chunk, after) = rest.split_at(size);
        upsert_reads(tx, chunk).await?;
        rest = after;
    }
    Ok(())
}

/// Most rows one statement of [`record_reads`] upserts.
const READS_PER_STATEMENT: usize = 64;

/// `reads` with one entry per bucket, subject, version and reader, in the order of each key's
/// first entry: counts summed, the earliest first and latest last read, the last schema id.
fn merge_reads(reads: &[SchemaRead]) -> Vec<(i64, SchemaRead)> {
    let mut merged: Vec<(i64, SchemaRead)> = Vec::with_capacity(reads.len());
    let mut at: HashMap<(i64, &str, i64, &str), usize> = HashMap::new();
    for r in reads {
        let bucket = bucket_start(r.first_at);
        let key = (bucket, r.subject.as_str(), r.version, r.reader.as_str());
        match at.get(&key) {
            Some(&i) => {
                let m = &mut merged[i].1;
                m.reads = m.reads.saturating_add(r.reads);
                m.first_at = m.first_at.min(r.first_at);
                m.last_at = m.last_at.max(r.last_at);
                m.schema_id = r.schema_id;
            }
            None => {
                at.insert(key, merged.len());
                merged.push((bucket, r.clone()));
            }
        }
    }
    merged
}

async fn upsert_reads(tx: &impl Tx, reads: &[(i64, SchemaRead)]) -> GovernanceResult<()> {
    const COLUMNS: usize = 8;
    let mut values = Vec::with_capacity(reads.len() * COLUMNS);
    for (bucket, r) in reads {
        values.extend([
            Value::Int(*bucket),
            Value::from(&r.subject),
            Value::Int(r.version),
            Value::Int(r.schema_id),
            Value::from(&r.reader),
            Value::Int(count(r.reads)),
            Value::Int(r.first_at),
            Value::Int(r.last_at),
        ]);
    }
    let sql = format!(
        "INSERT INTO gov_schema_reads AS s (bucket, subject, version, schema_id, reader, \
         reads, first_at, last_at) VALUES {} \
         ON CONFLICT (bucket, subject, version, reader) DO UPDATE SET \
         reads = s.reads + excluded.reads, first_at = LEAST(s.first_at, excluded.first_at), \
         last_at = GREATEST(s.last_at, excluded.last_at), schema_id = excluded.schema_id",
        value_rows(reads.len(), COLUMNS, 1)
    );
    tx.execute(&sql, &values).await?;
    Ok(())
}

pub(crate) async fn schema_reads(
    tx: &impl Tx,
    subject: &str,
    from: i64,
) -> GovernanceResult<Vec<SchemaRead>> {
    rows(
        tx,
        "SELECT version, MAX(schema_id), reader, CAST(SUM(reads) AS BIGINT), MIN(first_at), \
         MAX(last_at) FROM gov_schema_reads WHERE subject = ?1 AND last_at >= ?2 \
         GROUP BY reader, version ORDER BY reader, version",
        args![subject, from],
        |r| {
            Ok(SchemaRead {
                subject: subject.to_string(),
                version: r.get(0)?,
                schema_id: r.get(1)?,
                reader: r.get(2)?,
                reads: uncount(r.get(3)?),
                first_at: r.get(4)?,
                last_at: r.get(5)?,
            })
        },
    )
    .await
}

// Deprecations and approvals: documents keyed by an id that counts up.

/// The next id of `table` (`gov_deprecations` or `gov_approvals`); the caller holds the
/// table's lock.
async fn next_id(tx: &impl Tx, table: &str) -> GovernanceResult<i64> {
    Ok(tx
        .value(
            &format!("SELECT COALESCE(MAX(id), 0) + 1 FROM {table}"),
            &[],
        )
        .await?)
}

/// One document of `table` by id; `lock` holds its row until the transaction ends.
async fn by_id<T: serde::de::DeserializeOwned>(
    tx: &impl Tx,
    table: &str,
    id: i64,
    lock: bool,
) -> GovernanceResult<Option<T>> {
    let sql = format!(
        "SELECT body FROM {table} WHERE id = ?1{}",
        if lock { " FOR UPDATE" } else { "" }
    );
    body(tx, &sql, args![id]).await
}

/// The documents of `table`, of one subject when given, by id.
async fn of_subject<T: serde::de::DeserializeOwned>(
    tx: &impl Tx,
    table: &str,
    subject: Option<&str>,
) -> GovernanceResult<Vec<T>> {
    let sql = format!(
        "SELECT body FROM {table} WHERE CAST(?1 AS TEXT) IS NULL OR subject = ?1 ORDER BY id"
    );
    bodies(tx, &sql, args![subject]).await
}

/// Creates a deprecation unless its target already has one that is not removed; the check
/// and the insert are one transaction under the deprecations' lock.
pub(crate) async fn create_deprecation(
    tx: &impl Tx,
    new: &NewDeprecation,
    at: i64,
    audit: AuditLine<'_>,
) -> GovernanceResult<Deprecation> {
    tx.lock(DEPRECATION_LOCK).await?;
    let held: Vec<Deprecation> =
        of_subject(tx, "gov_deprecations", Some(new.target.subject())).await?;
    if let Some(existing) = held
        .iter()
        .find(|d| d.target == new.target && d.stage != Stage::Removed)
    {
        return Err(GovernanceError::Conflict(format!(
            "{} already has deprecation #{} (stage '{}')",
            new.target.describe(),
            existing.id,
            existing.stage
        )));
    }
    let record = Deprecation::from_new(next_id(tx, "gov_deprecations").await?, new.clone(), at);
    insert_document(tx, "gov_deprecations", deprecation_key(&record), &record).await?;
    crate::sql::audit::append(tx, audit).await?;
    Ok(record)
}

/// Inserts one document of `table` (`gov_deprecations` or `gov_approvals`) under its id.
async fn insert_document<T: serde::Serialize>(
    tx: &impl Tx,
    table: &str,
    (id, subject): (i64, &str),
    document: &T,
) -> GovernanceResult<()> {
    tx.execute(
        &format!("INSERT INTO {table}(id, subject, body) VALUES (?1, ?2, ?3)"),
        args![id, subject, to_json(document)?],
    )
    .await?;
    Ok(())
}

pub(crate) async fn deprecation(tx: &impl Tx, id: i64) -> GovernanceResult<Option<Deprecation>> {
    by_id(tx, "gov_deprecations", id, false).await
}

pub(crate) async fn deprecations(
    tx: &impl Tx,
    subject: Option<&str>,
) -> GovernanceResult<Vec<Deprecation>> {
    of_subject(tx, "gov_deprecations", subject).await
}

pub(crate) async fn modify_deprecation(
    tx: &impl Tx,
    id: i64,
    edit: DeprecationEdit<'_>,
    audit: AuditLine<'_>,
) -> GovernanceResult<Deprecation> {
    let kept = |before: &Deprecation, after: &Deprecation| {
        if after.id != before.id || after.target != before.target {
            return Err(GovernanceError::Invalid(
                "a deprecation's id and target cannot change".to_string(),
            ));
        }
        Ok(())
    };
    edit_document(
        tx,
        ("gov_deprecations", "deprecation"),
        id,
        edit,
        kept,
        audit,
    )
    .await
}

/// Edits the document `id` of `table` (a `what` when it is missing) under its row lock:
/// `edit` changes it, `kept` checks the change against the document as it was, and the result
/// is written with its audit line.
async fn edit_document<T>(
    tx: &impl Tx,
    (table, what): (&str, &'static str),
    id: i64,
    edit: &(dyn Fn(&mut T) -> GovernanceResult<()> + Send + Sync),
    kept: impl Fn(&T, &T) -> GovernanceResult<()>,
    audit: AuditLine<'_>,
) -> GovernanceResult<T>
where
    T: serde::de::DeserializeOwned + serde::Serialize + Clone,
{
    let before: T = by_id(tx, table, id, true)
        .await?
        .ok_or_else(|| GovernanceError::NotFound {
            what,
            key: id.to_string(),
        })?;
    let mut after = before.clone();
    edit(&mut after)?;
    kept(&before, &after)?;
    tx.execute(
        &format!("UPDATE {table} SET body = ?2 WHERE id = ?1"),
        args![id, to_json(&after)?],
    )
    .await?;
    crate::sql::audit::append(tx, audit).await?;
    Ok(after)
}

pub(crate) async fn create_approval(
    tx: &impl Tx,
    new: &NewApproval,
    at: i64,
    audit: AuditLine<'_>,
) -> GovernanceResult<Approval> {
    tx.lock(APPROVAL_LOCK).await?;
    let approval = Approval::from_new(next_id(tx, "gov_approvals").await?, new.clone(), at);
    insert_document(tx, "gov_approvals", approval_key(&approval), &approval).await?;
    crate::sql::audit::append(tx, audit).await?;
    Ok(approval)
}

pub(crate) async fn approvals(
    tx: &impl Tx,
    subject: Option<&str>,
) -> GovernanceResult<Vec<Approval>> {
    of_subject(tx, "gov_approvals", subject).await
}

pub(crate) async fn modify_approval(
    tx: &impl Tx,
    id: i64,
    edit: ApprovalEdit<'_>,
    audit: AuditLine<'_>,
) -> GovernanceResult<Approval> {
    let kept = |before: &Approval, after: &Approval| after.check_edit(before);
    edit_document(tx, ("gov_approvals", "approval"), id, edit, kept, audit).await
}

// Snapshot and restore.

/// Reads every governance row; the caller's transaction makes the parts agree. Text keys
/// order bytewise on both backends.
pub(crate) async fn snapshot(tx: &impl Tx) -> GovernanceResult<GovernanceSnapshot> {
    Ok(GovernanceSnapshot {
        consumers: bodies(
            tx,
            "SELECT body FROM gov_consumers ORDER BY name COLLATE \"C\"",
            &[],
        )
        .await?,
        deprecations: bodies(tx, "SELECT body FROM gov_deprecations ORDER BY id", &[]).await?,
        approvals: bodies(tx, "SELECT body FROM gov_approvals ORDER BY id", &[]).await?,
        findings: bodies(tx, "SELECT body FROM gov_findings ORDER BY at, id", &[]).await?,
        usage_readers: rows(
            tx,
            "SELECT bucket, subject, client_id, consumer, reader_schema_id, reports, \
             CAST(decode_failures AS BIGINT), first_at, last_at FROM gov_usage_readers \
             ORDER BY bucket, subject COLLATE \"C\", client_id COLLATE \"C\", \
             consumer COLLATE \"C\", reader_schema_id",
            &[],
            reader_bucket,
        )
        .await?,
        usage_fields: rows(
            tx,
            "SELECT bucket, subject, client_id, consumer, reader_schema_id, field_path, reads, \
             first_at, last_at FROM gov_usage_fields \
             ORDER BY bucket, subject COLLATE \"C\", client_id COLLATE \"C\", \
             consumer COLLATE \"C\", reader_schema_id, field_path COLLATE \"C\"",
            &[],
            field_bucket,
        )
        .await?,
        usage_counts: rows(
            tx,
            "SELECT bucket, subject, client_id, consumer, kind, key, detail, \
             CAST(value AS BIGINT) FROM gov_usage_counts ORDER BY bucket, subject COLLATE \"C\", \
             client_id COLLATE \"C\", consumer COLLATE \"C\", kind COLLATE \"C\", \
             key COLLATE \"C\", detail COLLATE \"C\"",
            &[],
            count_bucket,
        )
        .await?,
        schema_reads: rows(
            tx,
            "SELECT bucket, subject, version, schema_id, reader, reads, first_at, last_at \
             FROM gov_schema_reads ORDER BY bucket, subject COLLATE \"C\", version, \
             reader COLLATE \"C\"",
            &[],
            read_bucket,
        )
        .await?,
    })
}

fn reader_bucket(r: &mut Row) -> crate::sql::DbResult<ReaderBucket> {
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
}

fn field_bucket(r: &mut Row) -> crate::sql::DbResult<FieldBucket> {
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
}

fn count_bucket(r: &mut Row) -> crate::sql::DbResult<CountBucket> {
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
}

fn read_bucket(r: &mut Row) -> crate::sql::DbResult<SchemaReadBucket> {
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
}

/// Imports a snapshot: what is not held goes in, what is held the same is counted present,
/// what is held otherwise is a conflict and stays as it is.
pub(crate) async fn restore(
    tx: &impl Tx,
    snapshot: &GovernanceSnapshot,
) -> GovernanceResult<RestoreCounts> {
    // The same locks as the workflow's writes, so a restore and a live edit serialize.
    for lock in [CONSUMER_LOCK, DEPRECATION_LOCK, APPROVAL_LOCK] {
        tx.lock(lock).await?;
    }
    let mut out = RestoreCounts::default();
    restore_consumers(tx, &snapshot.consumers, &mut out).await?;
    let deprecations = ("gov_deprecations", "deprecation");
    out.deprecations += restore_by_id(
        tx,
        deprecations,
        &snapshot.deprecations,
        deprecation_key,
        &mut out,
    )
    .await?;
    let approvals = ("gov_approvals", "approval");
    out.approvals +=
        restore_by_id(tx, approvals, &snapshot.approvals, approval_key, &mut out).await?;
    restore_usage(tx, snapshot, &mut out).await?;
    let held: Vec<UsageFinding> =
        bodies(tx, "SELECT body FROM gov_findings ORDER BY at, id", &[]).await?;
    let missing: Vec<UsageFinding> = missing_findings(&held, &snapshot.findings)
        .into_iter()
        .cloned()
        .collect();
    out.present += snapshot.findings.len() - missing.len();
    out.findings = missing.len();
    insert_findings(tx, &missing).await?;
    Ok(out)
}

/// Inserts the consumers not yet held by name (with their client ids).
async fn restore_consumers(
    tx: &impl Tx,
    consumers: &[Consumer],
    out: &mut RestoreCounts,
) -> GovernanceResult<()> {
    for consumer in consumers {
        match self::consumer(tx, &consumer.name).await? {
            Some(held) if &held == consumer => out.present += 1,
            Some(_) => out.conflicts.push(format!(
                "consumer '{}' already exists with other content",
                consumer.name
            )),
            None => {
                insert_consumer(tx, consumer).await?;
                out.consumers += 1;
            }
        }
    }
    Ok(())
}

fn deprecation_key(d: &Deprecation) -> (i64, &str) {
    (d.id, d.target.subject())
}

fn approval_key(a: &Approval) -> (i64, &str) {
    (a.id, &a.subject)
}

/// Inserts the documents of `table` not yet held under their id (ids are kept: findings,
/// the trail and registrations' audit entries refer to them); returns how many went in.
async fn restore_by_id<T>(
    tx: &impl Tx,
    (table, what): (&str, &str),
    documents: &[T],
    key: impl Fn(&T) -> (i64, &str),
    out: &mut RestoreCounts,
) -> GovernanceResult<usize>
where
    T: PartialEq + serde::Serialize + serde::de::DeserializeOwned,
{
    let mut inserted = 0;
    for document in documents {
        let (id, _) = key(document);
        match by_id::<T>(tx, table, id, true).await? {
            Some(held) if &held == document => out.present += 1,
            Some(_) => out
                .conflicts
                .push(format!("{what} {id} already exists with other content")),
            None => {
                insert_document(tx, table, key(document), document).await?;
                inserted += 1;
            }
        }
    }
    Ok(inserted)
}

/// Inserts usage buckets under their primary keys; a key already held keeps its counters
/// (adding to them would double the evidence on a second import).
async fn restore_usage(
    tx: &impl Tx,
    snapshot: &GovernanceSnapshot,
    out: &mut RestoreCounts,
) -> GovernanceResult<()> {
    let mut written = 0u64;
    for r in &snapshot.usage_readers {
        written += tx
            .execute(
                "INSERT INTO gov_usage_readers(bucket, subject, client_id, consumer, \
                 reader_schema_id, reports, decode_failures, first_at, last_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT DO NOTHING",
                args![
                    r.bucket,
                    &r.subject,
                    &r.client_id,
                    who(&r.consumer),
                    r.reader_schema_id.unwrap_or(NO_READER),
                    count(r.reports),
                    count(r.decode_failures),
                    r.first_at,
                    r.last_at
                ],
            )
            .await?;
    }
    for f in &snapshot.usage_fields {
        written += tx
            .execute(
                "INSERT INTO gov_usage_fields(bucket, subject, client_id, consumer, \
                 reader_schema_id, field_path, reads, first_at, last_at) \
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9) ON CONFLICT DO NOTHING",
                args![
                    f.bucket,
                    &f.subject,
                    &f.client_id,
                    who(&f.consumer),
                    f.reader_schema_id.unwrap_or(NO_READER),
                    &f.field,
                    count(f.reads),
                    f.first_at,
                    f.last_at
                ],
            )
            .await?;
    }
    for c in &snapshot.usage_counts {
        written += tx
            .execute(
                "INSERT INTO gov_usage_counts(bucket, subject, client_id, consumer, kind, key, \
                 detail, value) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT DO NOTHING",
                args![
                    c.bucket,
                    &c.subject,
                    &c.client_id,
                    who(&c.consumer),
                    &c.kind,
                    &c.key,
                    &c.detail,
                    count(c.value)
                ],
            )
            .await?;
    }
    for b in &snapshot.schema_reads {
        let r = &b.read;
        written += tx
            .execute(
                "INSERT INTO gov_schema_reads(bucket, subject, version, schema_id, reader, reads, \
                 first_at, last_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) ON CONFLICT DO NOTHING",
                args![
                    b.bucket,
                    &r.subject,
                    r.version,
                    r.schema_id,
                    &r.reader,
                    count(r.reads),
                    r.first_at,
                    r.last_at
                ],
            )
            .await?;
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

/// Implements [`crate::GovernanceStore`] for a backend that provides `read`, `write` and
/// `read_consistent` (one snapshot for several statements), each running an operation above
/// in its transaction.
macro_rules! governance_store {
    ($store:ty) => {
        const _: () = {
            use $crate::audit::AuditLine;
            use $crate::governance::*;
            use $crate::governance_sql as ops;

            $crate::sql::store_impl! {
                impl GovernanceStore for $store, ops ops, self;
                write fn create_consumer(consumer: &Consumer, check: ConsumerCheck<'_>, audit: AuditLine<'_>) -> GovernanceResult<Consumer>;
                write fn modify_consumer(name: &str, edit: ConsumerEdit<'_>, audit: AuditLine<'_>) -> GovernanceResult<Consumer>;
                read fn consumer(name: &str) -> GovernanceResult<Option<Consumer>>;
                read fn consumers() -> GovernanceResult<Vec<Consumer>>;
                read fn consumer_for_client(client_id: &str) -> GovernanceResult<Option<String>>;
                write fn record_usage(report: &UsageReport, consumer: Option<&str>, findings: &[UsageFinding], audit: AuditLine<'_>) -> GovernanceResult<()>;
                read fn field_usage(query: &UsageQuery) -> GovernanceResult<Vec<FieldUsage>>;
                read fn reader_usage(query: &UsageQuery) -> GovernanceResult<Vec<ReaderUsage>>;
                read fn usage_counts(query: &UsageQuery) -> GovernanceResult<UsageCounts>;
                read fn schema_sightings(subject: &str, from: i64) -> GovernanceResult<SchemaSightings>;
                read fn reporting_since(subject: &str) -> GovernanceResult<Vec<ReportingSince>>;
                write fn prune_usage(before: i64) -> GovernanceResult<u64>;
                write fn record_findings(findings: &[UsageFinding]) -> GovernanceResult<()>;
                read fn findings(from: i64, to: i64) -> GovernanceResult<Vec<UsageFinding>>;
                write fn create_deprecation(new: &NewDeprecation, at: i64, audit: AuditLine<'_>) -> GovernanceResult<Deprecation>;
                read fn deprecation(id: i64) -> GovernanceResult<Option<Deprecation>>;
                read fn deprecations(subject: Option<&str>) -> GovernanceResult<Vec<Deprecation>>;
                write fn modify_deprecation(id: i64, edit: DeprecationEdit<'_>, audit: AuditLine<'_>) -> GovernanceResult<Deprecation>;
                write fn record_reads(reads: &[SchemaRead]) -> GovernanceResult<()>;
                read fn schema_reads(subject: &str, from: i64) -> GovernanceResult<Vec<SchemaRead>>;
                write fn create_approval(new: &NewApproval, at: i64, audit: AuditLine<'_>) -> GovernanceResult<Approval>;
                read fn approvals(subject: Option<&str>) -> GovernanceResult<Vec<Approval>>;
                write fn modify_approval(id: i64, edit: ApprovalEdit<'_>, audit: AuditLine<'_>) -> GovernanceResult<Approval>;
                read_consistent fn snapshot() -> GovernanceResult<GovernanceSnapshot>;
                write fn restore(snapshot: &GovernanceSnapshot) -> GovernanceResult<RestoreCounts>;
                {}
            }
        };
    };
}
pub(crate) use governance_store;
