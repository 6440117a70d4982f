//! The exporter store written once: its table (`exp_exporters`, ledger
//! `exporters_migrations`) and each operation over a [`Tx`], for
//! [`crate::exporters_sqlite`] and [`crate::exporters_postgres`] to run in their
//! transactions. Leases differ by backend and stay with them.

use crate::audit::AuditLine;
use crate::exporters::ExporterRecord;
use crate::sql::{DbResult, Row, Tx, args};
use crate::{StoreResult, sql};

pub(crate) const MIGRATIONS: &[(i64, &str)] = &[
    (
        1,
        "CREATE TABLE exp_exporters (
        name TEXT COLLATE \"C\" PRIMARY KEY,
        spec TEXT NOT NULL,
        state TEXT NOT NULL,
        progress BIGINT NOT NULL,
        ts BIGINT NOT NULL,
        trace TEXT NOT NULL
    );",
    ),
    (
        2,
        "ALTER TABLE exp_exporters ADD COLUMN creator TEXT NOT NULL DEFAULT '';",
    ),
];

const COLUMNS: &str = "name, spec, state, progress, ts, trace, creator";

fn exporter_of(r: &mut Row) -> DbResult<ExporterRecord> {
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

/// Runs `sql` with the record's columns as `?1`..`?7` (in [`COLUMNS`] order); appends the
/// entry when it changed the row.
async fn write_record(
    tx: &impl Tx,
    sql: &str,
    r: &ExporterRecord,
    audit: AuditLine<'_>,
) -> StoreResult<bool> {
    let changed = tx
        .execute(
            sql,
            args![
                &r.name, &r.spec, &r.state, r.offset, r.ts, &r.trace, &r.creator
            ],
        )
        .await?;
    if changed == 1 {
        sql::audit::append(tx, audit).await?;
    }
    Ok(changed == 1)
}

pub(crate) async fn create_exporter(
    tx: &impl Tx,
    record: &ExporterRecord,
    audit: AuditLine<'_>,
) -> StoreResult<bool> {
    let sql = format!(
        "INSERT INTO exp_exporters({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
         ON CONFLICT (name) DO NOTHING"
    );
    write_record(tx, &sql, record, audit).await
}

pub(crate) async fn update_exporter(
    tx: &impl Tx,
    record: &ExporterRecord,
    audit: AuditLine<'_>,
) -> StoreResult<bool> {
    let sql = "UPDATE exp_exporters SET spec = ?2, state = ?3, progress = ?4, ts = ?5, \
               trace = ?6, creator = ?7 WHERE name = ?1";
    write_record(tx, sql, record, audit).await
}

pub(crate) async fn exporter(tx: &impl Tx, name: &str) -> StoreResult<Option<ExporterRecord>> {
    let sql = format!("SELECT {COLUMNS} FROM exp_exporters WHERE name = ?1");
    let mut row = tx.query_opt(&sql, args![name]).await?;
    Ok(row.as_mut().map(exporter_of).transpose()?)
}

pub(crate) async fn exporters(tx: &impl Tx) -> StoreResult<Vec<ExporterRecord>> {
    let sql = format!("SELECT {COLUMNS} FROM exp_exporters ORDER BY name");
    let mut rows = tx.query(&sql, &[]).await?;
    Ok(rows.iter_mut().map(exporter_of).collect::<DbResult<_>>()?)
}

pub(crate) async fn record_progress(
    tx: &impl Tx,
    name: &str,
    offset: i64,
    ts: i64,
    trace: &str,
) -> StoreResult<()> {
    tx.execute(
        "UPDATE exp_exporters SET progress = ?2, ts = ?3, trace = ?4 WHERE name = ?1",
        args![name, offset, ts, trace],
    )
    .await?;
    Ok(())
}

pub(crate) async fn delete_exporter(
    tx: &impl Tx,
    name: &str,
    audit: AuditLine<'_>,
) -> StoreResult<bool> {
    let deleted = tx
        .execute("DELETE FROM exp_exporters WHERE name = ?1", args![name])
        .await?;
    if deleted == 1 {
        sql::audit::append(tx, audit).await?;
    }
    Ok(deleted == 1)
}

/// Implements [`crate::exporters::ExporterStore`] for a backend whose `db` runs operations
/// in its transactions (`read`, `write`) and which grants leases itself (`grant_lease`).
macro_rules! exporter_store {
    ($store:ty) => {
        const _: () = {
            use $crate::StoreResult;
            use $crate::audit::AuditLine;
            use $crate::exporters::*;
            use $crate::exporters_sql as ops;

            $crate::sql::store_impl! {
                impl ExporterStore for $store, ops ops, self.db;
                write fn create_exporter(record: &ExporterRecord, audit: AuditLine<'_>) -> StoreResult<bool>;
                read fn exporter(name: &str) -> StoreResult<Option<ExporterRecord>>;
                read fn exporters() -> StoreResult<Vec<ExporterRecord>>;
                write fn update_exporter(record: &ExporterRecord, audit: AuditLine<'_>) -> StoreResult<bool>;
                write fn record_progress(name: &str, offset: i64, ts: i64, trace: &str) -> StoreResult<()>;
                write fn delete_exporter(name: &str, audit: AuditLine<'_>) -> StoreResult<bool>;
                {
                    async fn lease(&self, name: &str) -> StoreResult<Option<Box<dyn Lease>>> {
                        self.grant_lease(name).await
                    }
                }
            }
        };
    };
}
pub(crate) use exporter_store;
