//! The embedded sample backend. It lives in the same SQLite file as the registry store (WAL,
//! `synchronous=FULL`) with its own tables, prefixed `smp_`, and its own migration ledger,
//! `samples_migrations`, so the two evolve independently.

use crate::audit::AuditLine;
use crate::samples::{
    LiveMark, NewSample, SampleAdded, SampleRecord, SampleStore, SamplesRestored,
};
use crate::{StoreError, StoreResult};
use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, TransactionBehavior, params};
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

const MIGRATIONS: &[(i64, &str)] = &[(
    1,
    "CREATE TABLE smp_samples (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        subject TEXT NOT NULL,
        version INTEGER NOT NULL,
        encoding TEXT NOT NULL,
        message_name TEXT,
        payload BLOB NOT NULL,
        created_at INTEGER NOT NULL
    );
    CREATE INDEX smp_samples_subject ON smp_samples(subject, version);
    CREATE TABLE smp_live_versions (
        subject TEXT NOT NULL,
        version INTEGER NOT NULL,
        marked_at INTEGER NOT NULL,
        PRIMARY KEY (subject, version)
    );",
)];

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

fn now_millis() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

use crate::sqlite_conn::blocking;

pub struct SqliteSampleStore {
    conn: Mutex<Connection>,
}

impl SqliteSampleStore {
    /// Opens (and migrates) the sample tables in the SQLite file at `path`, usually the
    /// registry store's own file ([`crate::SqliteStore::path`]).
    pub fn open(path: &Path) -> StoreResult<SqliteSampleStore> {
        let mut conn = crate::sqlite_conn::open(path).map_err(backend)?;
        crate::sqlite_conn::migrate(&mut conn, "samples_migrations", MIGRATIONS)
            .map_err(backend)?;
        Ok(SqliteSampleStore {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> StoreResult<MutexGuard<'_, Connection>> {
        self.conn
            .lock()
            .map_err(|_| backend("the sample store connection was poisoned"))
    }

    /// Runs `work` in an immediate transaction that commits when it returns `Ok`.
    fn write<T>(
        &self,
        work: impl FnOnce(&rusqlite::Transaction<'_>) -> StoreResult<T>,
    ) -> StoreResult<T> {
        crate::sqlite_conn::write_tx(|| self.conn(), work)
    }
}

type Row = (i64, String, i64, String, Option<String>, Vec<u8>, i64);

fn record(row: Row) -> SampleRecord {
    let (id, subject, version, encoding, message_name, payload, created_at) = row;
    SampleRecord {
        id,
        subject,
        version,
        encoding,
        message_name,
        payload,
        created_at,
    }
}

const COLUMNS: &str = "id, subject, version, encoding, message_name, payload, created_at";

fn read_row(r: &rusqlite::Row<'_>) -> rusqlite::Result<Row> {
    Ok((
        r.get(0)?,
        r.get(1)?,
        r.get(2)?,
        r.get(3)?,
        r.get(4)?,
        r.get(5)?,
        r.get(6)?,
    ))
}

#[async_trait]
impl SampleStore for SqliteSampleStore {
    async fn add_sample(
        &self,
        sample: &NewSample,
        limit: usize,
        audit: AuditLine<'_>,
    ) -> StoreResult<SampleAdded> {
        blocking(|| {
            let mut conn = self.conn()?;
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(backend)?;
            let count: i64 = tx
                .query_row(
                    "SELECT COUNT(*) FROM smp_samples WHERE subject = ?1",
                    [&sample.subject],
                    |r| r.get(0),
                )
                .map_err(backend)?;
            if usize::try_from(count).unwrap_or(usize::MAX) >= limit {
                return Ok(SampleAdded::LimitReached { limit });
            }
            let at = now_millis();
            tx.execute(
                "INSERT INTO smp_samples(subject, version, encoding, message_name, payload, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    sample.subject,
                    sample.version,
                    sample.encoding,
                    sample.message_name,
                    sample.payload,
                    at
                ],
            )
            .map_err(backend)?;
            let id = tx.last_insert_rowid();
            crate::sqlite::append_line(&tx, audit)?;
            tx.commit().map_err(backend)?;
            Ok(SampleAdded::Stored(SampleRecord {
                id,
                subject: sample.subject.clone(),
                version: sample.version,
                encoding: sample.encoding.clone(),
                message_name: sample.message_name.clone(),
                payload: sample.payload.clone(),
                created_at: at,
            }))
        })
    }

    async fn samples(&self, subject: &str, version: Option<i64>) -> StoreResult<Vec<SampleRecord>> {
        blocking(|| {
            let conn = self.conn()?;
            let mut stmt = conn
                .prepare(&format!(
                    "SELECT {COLUMNS} FROM smp_samples
                     WHERE subject = ?1 AND (?2 IS NULL OR version = ?2) ORDER BY id"
                ))
                .map_err(backend)?;
            let rows = stmt
                .query_map(params![subject, version], read_row)
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<Row>>>()
                .map_err(backend)?;
            Ok(rows.into_iter().map(record).collect())
        })
    }

    async fn delete_samples(
        &self,
        subject: &str,
        ids: &[i64],
        audit: AuditLine<'_>,
    ) -> StoreResult<Vec<i64>> {
        self.write(|tx| {
            let mut removed = Vec::new();
            for id in ids {
                let n = tx
                    .execute(
                        "DELETE FROM smp_samples WHERE subject = ?1 AND id = ?2",
                        params![subject, id],
                    )
                    .map_err(backend)?;
                if n > 0 {
                    removed.push(*id);
                }
            }
            crate::sqlite::append_line(tx, audit)?;
            Ok(removed)
        })
    }

    async fn delete_version_samples(&self, subject: &str, versions: &[i64]) -> StoreResult<usize> {
        blocking(|| {
            let mut conn = self.conn()?;
            let tx = conn.transaction().map_err(backend)?;
            let mut n = 0;
            for v in versions {
                n += tx
                    .execute(
                        "DELETE FROM smp_samples WHERE subject = ?1 AND version = ?2",
                        params![subject, v],
                    )
                    .map_err(backend)?;
                tx.execute(
                    "DELETE FROM smp_live_versions WHERE subject = ?1 AND version = ?2",
                    params![subject, v],
                )
                .map_err(backend)?;
            }
            tx.commit().map_err(backend)?;
            Ok(n)
        })
    }

    async fn mark_live(
        &self,
        subject: &str,
        version: i64,
        at_ms: i64,
        audit: AuditLine<'_>,
    ) -> StoreResult<()> {
        self.write(|tx| {
            tx.execute(
                "INSERT INTO smp_live_versions(subject, version, marked_at) VALUES (?1, ?2, ?3)
                 ON CONFLICT(subject, version) DO UPDATE SET marked_at = excluded.marked_at",
                params![subject, version, at_ms],
            )
            .map_err(backend)?;
            crate::sqlite::append_line(tx, audit)
        })
    }

    async fn unmark_live(
        &self,
        subject: &str,
        version: i64,
        audit: AuditLine<'_>,
    ) -> StoreResult<bool> {
        self.write(|tx| {
            let n = tx
                .execute(
                    "DELETE FROM smp_live_versions WHERE subject = ?1 AND version = ?2",
                    params![subject, version],
                )
                .map_err(backend)?;
            if n > 0 {
                crate::sqlite::append_line(tx, audit)?;
            }
            Ok(n > 0)
        })
    }

    async fn live_marks(&self, subject: &str) -> StoreResult<Vec<(i64, i64)>> {
        blocking(|| {
            let conn = self.conn()?;
            let mut stmt = conn
                .prepare(
                    "SELECT version, marked_at FROM smp_live_versions
                     WHERE subject = ?1 ORDER BY version",
                )
                .map_err(backend)?;
            stmt.query_map([subject], |r| Ok((r.get(0)?, r.get(1)?)))
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<(i64, i64)>>>()
                .map_err(backend)
        })
    }

    async fn snapshot(&self) -> StoreResult<(Vec<SampleRecord>, Vec<LiveMark>)> {
        blocking(|| {
            let conn = self.conn()?;
            let tx = conn.unchecked_transaction().map_err(backend)?;
            let samples = tx
                .prepare(&format!("SELECT {COLUMNS} FROM smp_samples ORDER BY id"))
                .map_err(backend)?
                .query_map([], read_row)
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<Row>>>()
                .map_err(backend)?;
            let marks = tx
                .prepare(
                    "SELECT subject, version, marked_at FROM smp_live_versions \
                     ORDER BY subject, version",
                )
                .map_err(backend)?
                .query_map([], |r| {
                    Ok(LiveMark {
                        subject: r.get(0)?,
                        version: r.get(1)?,
                        marked_at: r.get(2)?,
                    })
                })
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(backend)?;
            tx.commit().map_err(backend)?;
            Ok((samples.into_iter().map(record).collect(), marks))
        })
    }

    async fn restore_samples(
        &self,
        samples: &[SampleRecord],
        marks: &[LiveMark],
    ) -> StoreResult<SamplesRestored> {
        self.write(|tx| {
            let mut out = SamplesRestored::default();
            for s in samples {
                let held = tx
                    .query_row(
                        &format!("SELECT {COLUMNS} FROM smp_samples WHERE id = ?1"),
                        [s.id],
                        read_row,
                    )
                    .optional()
                    .map_err(backend)?;
                match held.map(record) {
                    Some(held) if &held == s => out.present += 1,
                    Some(_) => out
                        .conflicts
                        .push(format!("sample {} already exists with other content", s.id)),
                    None => {
                        // An explicit id also moves AUTOINCREMENT's counter past it.
                        tx.execute(
                            &format!("INSERT INTO smp_samples({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7)"),
                            params![s.id, s.subject, s.version, s.encoding, s.message_name, s.payload, s.created_at],
                        )
                        .map_err(backend)?;
                        out.samples += 1;
                    }
                }
            }
            for m in marks {
                let n = tx
                    .execute(
                        "INSERT INTO smp_live_versions(subject, version, marked_at) \
                         VALUES (?1, ?2, ?3) ON CONFLICT DO NOTHING",
                        params![m.subject, m.version, m.marked_at],
                    )
                    .map_err(backend)?;
                out.live_marks += n;
                out.present += 1 - n;
            }
            Ok(out)
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_shared_suite_passes_and_data_survives_reopening() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join("covenant.sqlite3");
        let store = SqliteSampleStore::open(&path).expect("open");
        crate::samples::suite::run(&store).await;
        drop(store);
        let reopened = SqliteSampleStore::open(&path).expect("reopen");
        assert_eq!(
            reopened.samples("other", None).await.expect("list").len(),
            1
        );
        assert_eq!(reopened.live_marks("s").await.expect("marks"), [(2, 200)]);
    }

    #[tokio::test]
    async fn shares_the_file_with_the_registry_store() {
        let dir = tempfile::tempdir().expect("tempdir");
        let registry = crate::SqliteStore::open(dir.path()).expect("open registry store");
        let ledger = registry.applied_migrations().expect("migrations");
        let samples = SqliteSampleStore::open(registry.path()).expect("open samples");
        assert_eq!(
            registry.applied_migrations().expect("migrations"),
            ledger,
            "the registry's ledger is untouched"
        );
        assert!(samples.samples("s", None).await.expect("list").is_empty());
    }
}
