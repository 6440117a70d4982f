//! The shared sample backend: the same tables as the embedded one, in the registry's
//! PostgreSQL database, with their own migration ledger (`samples_migrations`).
//!
//! An add counts the subject's samples and inserts under a transaction-scoped advisory lock
//! on the subject, so two nodes adding at once cannot overshoot the limit.

use crate::audit::AuditLine;
use crate::pg_pool::LazyTables;
use crate::postgres::append_line;
use crate::samples::{
    LiveMark, NewSample, SampleAdded, SampleRecord, SampleStore, SamplesRestored,
};
use crate::{StoreError, StoreResult};
use async_trait::async_trait;
use deadpool_postgres::Pool;

const MIGRATIONS: &[(i64, &str)] = &[(
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

/// Advisory lock namespaces (first key of the two-key form), distinct from the registry's.
const LOCK_MIGRATIONS: i32 = 0x436f_0101;
const LOCK_SUBJECT: i32 = 0x436f_0102;

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

fn now_millis() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

pub struct PostgresSampleStore {
    tables: LazyTables,
}

impl PostgresSampleStore {
    /// Connects to `url` (`postgres://user@host:port/db`) and applies the migrations.
    pub async fn connect(url: &str) -> StoreResult<PostgresSampleStore> {
        let store = PostgresSampleStore::open_lazy(url)?;
        drop(store.client().await?);
        Ok(store)
    }

    /// Like [`connect`](Self::connect), without connecting yet: migrations run on the first
    /// operation that reaches the database.
    pub fn open_lazy(url: &str) -> StoreResult<PostgresSampleStore> {
        Ok(PostgresSampleStore {
            tables: LazyTables::open(url, "samples_migrations", LOCK_MIGRATIONS, MIGRATIONS)?,
        })
    }

    /// Uses an existing pool (for instance the registry store's) and applies the migrations.
    pub async fn with_pool(pool: Pool) -> StoreResult<PostgresSampleStore> {
        let store = PostgresSampleStore {
            tables: LazyTables::with_pool(pool, "samples_migrations", LOCK_MIGRATIONS, MIGRATIONS),
        };
        drop(store.client().await?);
        Ok(store)
    }

    /// A pooled connection, after the migrations have run once.
    async fn client(&self) -> StoreResult<deadpool_postgres::Object> {
        self.tables.client().await
    }
}

fn record(row: &tokio_postgres::Row) -> StoreResult<SampleRecord> {
    Ok(SampleRecord {
        id: row.try_get(0).map_err(backend)?,
        subject: row.try_get(1).map_err(backend)?,
        version: row.try_get(2).map_err(backend)?,
        encoding: row.try_get(3).map_err(backend)?,
        message_name: row.try_get(4).map_err(backend)?,
        payload: row.try_get(5).map_err(backend)?,
        created_at: row.try_get(6).map_err(backend)?,
    })
}

const COLUMNS: &str = "id, subject, version, encoding, message_name, payload, created_at";

#[async_trait]
impl SampleStore for PostgresSampleStore {
    async fn add_sample(
        &self,
        sample: &NewSample,
        limit: usize,
        audit: AuditLine<'_>,
    ) -> StoreResult<SampleAdded> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        tx.execute(
            "SELECT pg_advisory_xact_lock($1, hashtext($2))",
            &[&LOCK_SUBJECT, &sample.subject],
        )
        .await
        .map_err(backend)?;
        let count: i64 = tx
            .query_one(
                "SELECT COUNT(*) FROM smp_samples WHERE subject = $1",
                &[&sample.subject],
            )
            .await
            .map_err(backend)?
            .try_get(0)
            .map_err(backend)?;
        if usize::try_from(count).unwrap_or(usize::MAX) >= limit {
            return Ok(SampleAdded::LimitReached { limit });
        }
        let row = tx
            .query_one(
                &format!(
                    "INSERT INTO smp_samples(subject, version, encoding, message_name, payload, created_at)
                     VALUES ($1, $2, $3, $4, $5, $6) RETURNING {COLUMNS}"
                ),
                &[
                    &sample.subject,
                    &sample.version,
                    &sample.encoding,
                    &sample.message_name,
                    &sample.payload,
                    &now_millis(),
                ],
            )
            .await
            .map_err(backend)?;
        let stored = record(&row)?;
        append_line(&tx, audit).await?;
        tx.commit().await.map_err(backend)?;
        Ok(SampleAdded::Stored(stored))
    }

    async fn samples(&self, subject: &str, version: Option<i64>) -> StoreResult<Vec<SampleRecord>> {
        let client = self.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT {COLUMNS} FROM smp_samples
                     WHERE subject = $1 AND ($2::BIGINT IS NULL OR version = $2) ORDER BY id"
                ),
                &[&subject, &version],
            )
            .await
            .map_err(backend)?;
        rows.iter().map(record).collect()
    }

    async fn delete_samples(
        &self,
        subject: &str,
        ids: &[i64],
        audit: AuditLine<'_>,
    ) -> StoreResult<Vec<i64>> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        let rows = tx
            .query(
                "DELETE FROM smp_samples WHERE subject = $1 AND id = ANY($2) RETURNING id",
                &[&subject, &ids],
            )
            .await
            .map_err(backend)?;
        let mut removed = rows
            .iter()
            .map(|r| r.try_get(0).map_err(backend))
            .collect::<StoreResult<Vec<i64>>>()?;
        removed.sort_unstable();
        append_line(&tx, audit).await?;
        tx.commit().await.map_err(backend)?;
        Ok(removed)
    }

    async fn delete_version_samples(&self, subject: &str, versions: &[i64]) -> StoreResult<usize> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        let versions = versions.to_vec();
        let n = tx
            .execute(
                "DELETE FROM smp_samples WHERE subject = $1 AND version = ANY($2)",
                &[&subject, &versions],
            )
            .await
            .map_err(backend)?;
        tx.execute(
            "DELETE FROM smp_live_versions WHERE subject = $1 AND version = ANY($2)",
            &[&subject, &versions],
        )
        .await
        .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    async fn mark_live(
        &self,
        subject: &str,
        version: i64,
        at_ms: i64,
        audit: AuditLine<'_>,
    ) -> StoreResult<()> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        tx.execute(
            "INSERT INTO smp_live_versions(subject, version, marked_at) VALUES ($1, $2, $3)
             ON CONFLICT (subject, version) DO UPDATE SET marked_at = EXCLUDED.marked_at",
            &[&subject, &version, &at_ms],
        )
        .await
        .map_err(backend)?;
        append_line(&tx, audit).await?;
        tx.commit().await.map_err(backend)
    }

    async fn unmark_live(
        &self,
        subject: &str,
        version: i64,
        audit: AuditLine<'_>,
    ) -> StoreResult<bool> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        let n = tx
            .execute(
                "DELETE FROM smp_live_versions WHERE subject = $1 AND version = $2",
                &[&subject, &version],
            )
            .await
            .map_err(backend)?;
        if n > 0 {
            append_line(&tx, audit).await?;
        }
        tx.commit().await.map_err(backend)?;
        Ok(n > 0)
    }

    async fn live_marks(&self, subject: &str) -> StoreResult<Vec<(i64, i64)>> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT version, marked_at FROM smp_live_versions WHERE subject = $1 ORDER BY version",
                &[&subject],
            )
            .await
            .map_err(backend)?;
        rows.iter()
            .map(|r| {
                Ok((
                    r.try_get(0).map_err(backend)?,
                    r.try_get(1).map_err(backend)?,
                ))
            })
            .collect()
    }

    async fn snapshot(&self) -> StoreResult<(Vec<SampleRecord>, Vec<LiveMark>)> {
        let mut client = self.client().await?;
        let tx = client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
            .map_err(backend)?;
        let rows = tx
            .query(
                &format!("SELECT {COLUMNS} FROM smp_samples ORDER BY id"),
                &[],
            )
            .await
            .map_err(backend)?;
        let samples = rows.iter().map(record).collect::<StoreResult<Vec<_>>>()?;
        let marks = tx
            .query(
                "SELECT subject, version, marked_at FROM smp_live_versions ORDER BY subject, version",
                &[],
            )
            .await
            .map_err(backend)?
            .iter()
            .map(|r| {
                Ok(LiveMark {
                    subject: r.try_get(0).map_err(backend)?,
                    version: r.try_get(1).map_err(backend)?,
                    marked_at: r.try_get(2).map_err(backend)?,
                })
            })
            .collect::<StoreResult<Vec<_>>>()?;
        tx.commit().await.map_err(backend)?;
        Ok((samples, marks))
    }

    async fn restore_samples(
        &self,
        samples: &[SampleRecord],
        marks: &[LiveMark],
    ) -> StoreResult<SamplesRestored> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        let mut out = SamplesRestored::default();
        for s in samples {
            let held = tx
                .query_opt(
                    &format!("SELECT {COLUMNS} FROM smp_samples WHERE id = $1"),
                    &[&s.id],
                )
                .await
                .map_err(backend)?;
            match held.as_ref().map(record).transpose()? {
                Some(held) if &held == s => out.present += 1,
                Some(_) => out
                    .conflicts
                    .push(format!("sample {} already exists with other content", s.id)),
                None => {
                    tx.execute(
                        &format!(
                            "INSERT INTO smp_samples({COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7)"
                        ),
                        &[
                            &s.id,
                            &s.subject,
                            &s.version,
                            &s.encoding,
                            &s.message_name,
                            &s.payload,
                            &s.created_at,
                        ],
                    )
                    .await
                    .map_err(backend)?;
                    out.samples += 1;
                }
            }
        }
        // Explicit ids leave the id sequence behind: move it past the highest id held, never
        // back (ids are not reused).
        if out.samples > 0 {
            tx.execute(
                "SELECT setval(pg_get_serial_sequence('smp_samples', 'id'), \
                 GREATEST((SELECT MAX(id) FROM smp_samples), \
                 nextval(pg_get_serial_sequence('smp_samples', 'id'))))",
                &[],
            )
            .await
            .map_err(backend)?;
        }
        for m in marks {
            let n = tx
                .execute(
                    "INSERT INTO smp_live_versions(subject, version, marked_at) VALUES ($1, $2, $3) \
                     ON CONFLICT DO NOTHING",
                    &[&m.subject, &m.version, &m.marked_at],
                )
                .await
                .map_err(backend)?;
            out.live_marks += usize::from(n > 0);
            out.present += usize::from(n == 0);
        }
        tx.commit().await.map_err(backend)?;
        Ok(out)
    }
}
