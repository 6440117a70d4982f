//! The sample store written once: its tables (prefixed `smp_`, ledger `samples_migrations`)
//! and each operation over a [`Tx`], for [`crate::samples_sqlite`] and
//! [`crate::samples_postgres`] to run in their transactions.
//!
//! An add counts the subject's samples and inserts under an advisory lock on the subject, so
//! two PostgreSQL nodes adding at once cannot overshoot the limit.

use crate::audit::AuditLine;
use crate::samples::{LiveMark, NewSample, SampleAdded, SampleRecord, SamplesRestored};
use crate::sql::{DbResult, Lock, Row, Tx, args};
use crate::{StoreResult, sql};

pub(crate) const MIGRATIONS: &[(i64, &str)] = &[(
    1,
    "CREATE TABLE smp_samples (
        id BIGSERIAL PRIMARY KEY,
        subject TEXT COLLATE \"C\" NOT NULL,
        version BIGINT NOT NULL,
        encoding TEXT NOT NULL,
        message_name TEXT,
        payload BYTEA NOT NULL,
        created_at BIGINT NOT NULL
    );
    CREATE INDEX smp_samples_subject ON smp_samples(subject, version);
    CREATE TABLE smp_live_versions (
        subject TEXT COLLATE \"C\" NOT NULL,
        version BIGINT NOT NULL,
        marked_at BIGINT NOT NULL,
        PRIMARY KEY (subject, version)
    );",
)];

/// Advisory lock namespace of adds (first key of the two-key form), distinct from the
/// registry's; the migrations' is `0x436f_0101`.
const LOCK_SUBJECT: i32 = 0x436f_0102;

const COLUMNS: &str = "id, subject, version, encoding, message_name, payload, created_at";

fn record(r: &mut Row) -> DbResult<SampleRecord> {
    Ok(SampleRecord {
        id: r.get(0)?,
        subject: r.get(1)?,
        version: r.get(2)?,
        encoding: r.get(3)?,
        message_name: r.get(4)?,
        payload: r.get(5)?,
        created_at: r.get(6)?,
    })
}

fn records(mut rows: Vec<Row>) -> StoreResult<Vec<SampleRecord>> {
    Ok(rows.iter_mut().map(record).collect::<DbResult<_>>()?)
}

pub(crate) async fn add_sample(
    tx: &impl Tx,
    sample: &NewSample,
    limit: usize,
    audit: AuditLine<'_>,
) -> StoreResult<SampleAdded> {
    tx.lock(Lock::Named(LOCK_SUBJECT, &sample.subject)).await?;
    let held: i64 = tx
        .value(
            "SELECT COUNT(*) FROM smp_samples WHERE subject = ?1",
            args![&sample.subject],
        )
        .await?;
    if usize::try_from(held).unwrap_or(usize::MAX) >= limit {
        return Ok(SampleAdded::LimitReached { limit });
    }
    let mut row = tx
        .query_one(
            &format!(
                "INSERT INTO smp_samples(subject, version, encoding, message_name, payload, \
                 created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING {COLUMNS}"
            ),
            args![
                &sample.subject,
                sample.version,
                &sample.encoding,
                &sample.message_name,
                &sample.payload,
                chrono::Utc::now().timestamp_millis()
            ],
        )
        .await?;
    let stored = record(&mut row)?;
    sql::audit::append(tx, audit).await?;
    Ok(SampleAdded::Stored(stored))
}

pub(crate) async fn samples(
    tx: &impl Tx,
    subject: &str,
    version: Option<i64>,
) -> StoreResult<Vec<SampleRecord>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM smp_samples \
         WHERE subject = ?1 AND (CAST(?2 AS BIGINT) IS NULL OR version = ?2) ORDER BY id"
    );
    records(tx.query(&sql, args![subject, version]).await?)
}

/// Deletes the samples of `subject` among `ids`; returns the ids deleted, ascending.
pub(crate) async fn delete_samples(
    tx: &impl Tx,
    subject: &str,
    ids: &[i64],
    audit: AuditLine<'_>,
) -> StoreResult<Vec<i64>> {
    let mut removed = Vec::new();
    for id in ids {
        let n = tx
            .execute(
                "DELETE FROM smp_samples WHERE subject = ?1 AND id = ?2",
                args![subject, *id],
            )
            .await?;
        if n > 0 {
            removed.push(*id);
        }
    }
    removed.sort_unstable();
    sql::audit::append(tx, audit).await?;
    Ok(removed)
}

pub(crate) async fn delete_version_samples(
    tx: &impl Tx,
    subject: &str,
    versions: &[i64],
) -> StoreResult<usize> {
    let mut n = 0;
    for v in versions {
        n += tx
            .execute(
                "DELETE FROM smp_samples WHERE subject = ?1 AND version = ?2",
                args![subject, *v],
            )
            .await?;
        tx.execute(
            "DELETE FROM smp_live_versions WHERE subject = ?1 AND version = ?2",
            args![subject, *v],
        )
        .await?;
    }
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

pub(crate) async fn mark_live(
    tx: &impl Tx,
    subject: &str,
    version: i64,
    at_ms: i64,
    audit: AuditLine<'_>,
) -> StoreResult<()> {
    tx.execute(
        "INSERT INTO smp_live_versions(subject, version, marked_at) VALUES (?1, ?2, ?3) \
         ON CONFLICT (subject, version) DO UPDATE SET marked_at = excluded.marked_at",
        args![subject, version, at_ms],
    )
    .await?;
    sql::audit::append(tx, audit).await?;
    Ok(())
}

pub(crate) async fn unmark_live(
    tx: &impl Tx,
    subject: &str,
    version: i64,
    audit: AuditLine<'_>,
) -> StoreResult<bool> {
    let n = tx
        .execute(
            "DELETE FROM smp_live_versions WHERE subject = ?1 AND version = ?2",
            args![subject, version],
        )
        .await?;
    if n > 0 {
        sql::audit::append(tx, audit).await?;
    }
    Ok(n > 0)
}

pub(crate) async fn live_marks(tx: &impl Tx, subject: &str) -> StoreResult<Vec<(i64, i64)>> {
    let mut rows = tx
        .query(
            "SELECT version, marked_at FROM smp_live_versions WHERE subject = ?1 ORDER BY version",
            args![subject],
        )
        .await?;
    Ok(rows
        .iter_mut()
        .map(|r| Ok((r.get(0)?, r.get(1)?)))
        .collect::<DbResult<_>>()?)
}

/// Every sample and live mark; the caller's transaction makes the two agree.
pub(crate) async fn snapshot(tx: &impl Tx) -> StoreResult<(Vec<SampleRecord>, Vec<LiveMark>)> {
    let samples = records(
        tx.query(
            &format!("SELECT {COLUMNS} FROM smp_samples ORDER BY id"),
            &[],
        )
        .await?,
    )?;
    let marks = tx
        .query(
            "SELECT subject, version, marked_at FROM smp_live_versions ORDER BY subject, version",
            &[],
        )
        .await?
        .iter_mut()
        .map(|r| {
            Ok(LiveMark {
                subject: r.get(0)?,
                version: r.get(1)?,
                marked_at: r.get(2)?,
            })
        })
        .collect::<DbResult<_>>()?;
    Ok((samples, marks))
}

/// Inserts the samples not held under their id (ids are kept) and the live marks not held;
/// a sample id held with other content is a conflict and stays as it is.
pub(crate) async fn restore_samples(
    tx: &impl Tx,
    samples: &[SampleRecord],
    marks: &[LiveMark],
) -> StoreResult<SamplesRestored> {
    let mut out = SamplesRestored::default();
    for s in samples {
        let mut held = tx
            .query_opt(
                &format!("SELECT {COLUMNS} FROM smp_samples WHERE id = ?1"),
                args![s.id],
            )
            .await?;
        match held.as_mut().map(record).transpose()? {
            Some(held) if &held == s => out.present += 1,
            Some(_) => out
                .conflicts
                .push(format!("sample {} already exists with other content", s.id)),
            None => {
                tx.execute(
                    &format!(
                        "INSERT INTO smp_samples({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"
                    ),
                    args![
                        s.id,
                        &s.subject,
                        s.version,
                        &s.encoding,
                        &s.message_name,
                        &s.payload,
                        s.created_at
                    ],
                )
                .await?;
                out.samples += 1;
            }
        }
    }
    if out.samples > 0 {
        tx.ids_taken("smp_samples", "id").await?;
    }
    for m in marks {
        let n = tx
            .execute(
                "INSERT INTO smp_live_versions(subject, version, marked_at) VALUES (?1, ?2, ?3) \
                 ON CONFLICT DO NOTHING",
                args![&m.subject, m.version, m.marked_at],
            )
            .await?;
        out.live_marks += usize::from(n > 0);
        out.present += usize::from(n == 0);
    }
    Ok(out)
}

/// Implements [`crate::SampleStore`] for a backend whose `db` runs operations in its
/// transactions (`read`, `read_consistent`, `write`).
macro_rules! sample_store {
    ($store:ty) => {
        const _: () = {
            use $crate::StoreResult;
            use $crate::audit::AuditLine;
            use $crate::samples::*;
            use $crate::samples_sql as ops;

            $crate::sql::store_impl! {
                impl SampleStore for $store, ops ops, self.db;
                write fn add_sample(sample: &NewSample, limit: usize, audit: AuditLine<'_>) -> StoreResult<SampleAdded>;
                read fn samples(subject: &str, version: Option<i64>) -> StoreResult<Vec<SampleRecord>>;
                write fn delete_samples(subject: &str, ids: &[i64], audit: AuditLine<'_>) -> StoreResult<Vec<i64>>;
                write fn delete_version_samples(subject: &str, versions: &[i64]) -> StoreResult<usize>;
                write fn mark_live(subject: &str, version: i64, at_ms: i64, audit: AuditLine<'_>) -> StoreResult<()>;
                write fn unmark_live(subject: &str, version: i64, audit: AuditLine<'_>) -> StoreResult<bool>;
                read fn live_marks(subject: &str) -> StoreResult<Vec<(i64, i64)>>;
                read_consistent fn snapshot() -> StoreResult<(Vec<SampleRecord>, Vec<LiveMark>)>;
                write fn restore_samples(samples: &[SampleRecord], marks: &[LiveMark]) -> StoreResult<SamplesRestored>;
                {}
            }
        };
    };
}
pub(crate) use sample_store;
