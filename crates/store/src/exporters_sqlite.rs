//! The embedded exporter backend: table `exp_exporters` in the registry's SQLite file, with
//! its own migration ledger. One process owns the file, so every lease is granted.

use crate::audit::AuditLine;
use crate::exporters::{ExporterRecord, ExporterStore, Lease, LocalLease};
use crate::sqlite_conn::blocking;
use crate::{StoreError, StoreResult};
use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, params};
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

const MIGRATIONS: &[(i64, &str)] = &[
    (
        1,
        "CREATE TABLE exp_exporters (
        name TEXT PRIMARY KEY,
        spec TEXT NOT NULL,
        state TEXT NOT NULL,
        progress INTEGER NOT NULL,
        ts INTEGER NOT NULL,
        trace TEXT NOT NULL
    );",
    ),
    // The principal that created each exporter: its runs are held to that principal's rights.
    (
        2,
        "ALTER TABLE exp_exporters ADD COLUMN creator TEXT NOT NULL DEFAULT '';",
    ),
];

const COLUMNS: &str = "name, spec, state, progress, ts, trace, creator";

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

fn read(r: &rusqlite::Row<'_>) -> rusqlite::Result<ExporterRecord> {
    Ok(ExporterRecord {
        name: r.get(0)?,
        spec: r.get(1)?,
        state: r.get(2)?,
        offset: r.get(3)?,
        ts: r.get(4)?,
        trace: r.get(5)?,
        creator: r.get(6)?,
    })
}

pub struct SqliteExporterStore {
    conn: Mutex<Connection>,
}

impl SqliteExporterStore {
    /// Opens (and migrates) the exporter table in the SQLite file at `path`, the registry
    /// store's own file ([`crate::SqliteStore::path`]), so writes share its audit log.
    pub fn open(path: &Path) -> StoreResult<SqliteExporterStore> {
        let mut conn = crate::sqlite_conn::open(path).map_err(backend)?;
        crate::sqlite_conn::migrate(&mut conn, "exporters_migrations", MIGRATIONS)
            .map_err(backend)?;
        Ok(SqliteExporterStore {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> StoreResult<MutexGuard<'_, Connection>> {
        self.conn
            .lock()
            .map_err(|_| backend("the exporter store connection was poisoned"))
    }

    fn write<T>(
        &self,
        work: impl FnOnce(&rusqlite::Transaction<'_>) -> StoreResult<T>,
    ) -> StoreResult<T> {
        crate::sqlite_conn::write_tx(|| self.conn(), work)
    }
}

impl SqliteExporterStore {
    /// Runs `sql` (an insert or update binding the record's columns as ?1..?7) with its audit
    /// line, appended only when a row changed; answers whether one did.
    fn write_record(
        &self,
        sql: &str,
        record: &ExporterRecord,
        audit: AuditLine<'_>,
    ) -> StoreResult<bool> {
        self.write(|tx| {
            let changed = tx
                .execute(
                    sql,
                    params![
                        record.name,
                        record.spec,
                        record.state,
                        record.offset,
                        record.ts,
                        record.trace,
                        record.creator
                    ],
                )
                .map_err(backend)?;
            if changed == 1 {
                crate::sqlite::append_line(tx, audit)?;
            }
            Ok(changed == 1)
        })
    }
}

#[async_trait]
impl ExporterStore for SqliteExporterStore {
    async fn create_exporter(
        &self,
        record: &ExporterRecord,
        audit: AuditLine<'_>,
    ) -> StoreResult<bool> {
        self.write_record(
            "INSERT INTO exp_exporters(name, spec, state, progress, ts, trace, creator) \
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(name) DO NOTHING",
            record,
            audit,
        )
    }

    async fn exporter(&self, name: &str) -> StoreResult<Option<ExporterRecord>> {
        blocking(|| {
            self.conn()?
                .query_row(
                    &format!("SELECT {COLUMNS} FROM exp_exporters WHERE name = ?1"),
                    [name],
                    read,
                )
                .optional()
                .map_err(backend)
        })
    }

    async fn exporters(&self) -> StoreResult<Vec<ExporterRecord>> {
        blocking(|| {
            let conn = self.conn()?;
            let mut stmt = conn
                .prepare(&format!(
                    "SELECT {COLUMNS} FROM exp_exporters ORDER BY name"
                ))
                .map_err(backend)?;
            stmt.query_map([], read)
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(backend)
        })
    }

    async fn update_exporter(
        &self,
        record: &ExporterRecord,
        audit: AuditLine<'_>,
    ) -> StoreResult<bool> {
        self.write_record(
            "UPDATE exp_exporters SET spec = ?2, state = ?3, progress = ?4, ts = ?5, \
             trace = ?6, creator = ?7 WHERE name = ?1",
            record,
            audit,
        )
    }

    async fn record_progress(
        &self,
        name: &str,
        offset: i64,
        ts: i64,
        trace: &str,
    ) -> StoreResult<()> {
        self.write(|tx| {
            tx.execute(
                "UPDATE exp_exporters SET progress = ?2, ts = ?3, trace = ?4 WHERE name = ?1",
                params![name, offset, ts, trace],
            )
            .map_err(backend)?;
            Ok(())
        })
    }

    async fn delete_exporter(&self, name: &str, audit: AuditLine<'_>) -> StoreResult<bool> {
        self.write(|tx| {
            let deleted = tx
                .execute("DELETE FROM exp_exporters WHERE name = ?1", [name])
                .map_err(backend)?;
            if deleted == 1 {
                crate::sqlite::append_line(tx, audit)?;
            }
            Ok(deleted == 1)
        })
    }

    async fn lease(&self, _name: &str) -> StoreResult<Option<Box<dyn Lease>>> {
        Ok(Some(Box::new(LocalLease)))
    }
}
