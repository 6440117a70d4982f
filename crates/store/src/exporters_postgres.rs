//! The shared exporter backend: the same table as the embedded one in the registry's
//! PostgreSQL database. A node runs an exporter only while it holds a session advisory lock on
//! the exporter's name over a connection of its own; when the node dies its connection closes,
//! the lock goes with it, and the next node that asks takes the exporter over.

use crate::audit::AuditLine;
use crate::exporters::{ExporterRecord, ExporterStore, Lease};
use crate::pg_pool::LazyTables;
use crate::postgres::append_line;
use crate::{StoreError, StoreResult};
use async_trait::async_trait;

const MIGRATIONS: &[(i64, &str)] = &[
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
    // The principal that created each exporter: its runs are held to that principal's rights.
    (
        2,
        "ALTER TABLE exp_exporters ADD COLUMN creator TEXT NOT NULL DEFAULT '';",
    ),
];

/// Advisory lock namespaces (first key of the two-key form): migrations and leases.
const LOCK_MIGRATIONS: i32 = 0x436f_0301;
const LOCK_LEASE: i32 = 0x436f_0302;

const COLUMNS: &str = "name, spec, state, progress, ts, trace, creator";

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

fn read(row: &tokio_postgres::Row) -> StoreResult<ExporterRecord> {
    Ok(ExporterRecord {
        name: row.try_get(0).map_err(backend)?,
        spec: row.try_get(1).map_err(backend)?,
        state: row.try_get(2).map_err(backend)?,
        offset: row.try_get(3).map_err(backend)?,
        ts: row.try_get(4).map_err(backend)?,
        trace: row.try_get(5).map_err(backend)?,
        creator: row.try_get(6).map_err(backend)?,
    })
}

pub struct PostgresExporterStore {
    url: String,
    tables: LazyTables,
}

impl PostgresExporterStore {
    /// Like the other side stores: nothing connects until the first operation.
    pub fn open_lazy(url: &str) -> StoreResult<PostgresExporterStore> {
        Ok(PostgresExporterStore {
            url: url.to_string(),
            tables: LazyTables::open(url, "exporters_migrations", LOCK_MIGRATIONS, MIGRATIONS)?,
        })
    }

    async fn client(&self) -> StoreResult<deadpool_postgres::Object> {
        self.tables.client().await
    }

    /// Runs `sql` (an insert or update binding the record's columns as $1..$7) with its audit
    /// line, appended in the same transaction only when a row changed; answers whether one did.
    async fn write_record(
        &self,
        sql: &str,
        record: &ExporterRecord,
        audit: AuditLine<'_>,
    ) -> StoreResult<bool> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        let changed = tx
            .execute(
                sql,
                &[
                    &record.name,
                    &record.spec,
                    &record.state,
                    &record.offset,
                    &record.ts,
                    &record.trace,
                    &record.creator,
                ],
            )
            .await
            .map_err(backend)?;
        if changed == 1 {
            append_line(&tx, audit).await?;
        }
        tx.commit().await.map_err(backend)?;
        Ok(changed == 1)
    }
}

/// The connection holding a lease; the lock lives exactly as long as it.
struct PgLease {
    client: tokio_postgres::Client,
    driver: tokio::task::JoinHandle<()>,
}

impl Lease for PgLease {}

impl Drop for PgLease {
    fn drop(&mut self) {
        self.driver.abort();
    }
}

#[async_trait]
impl ExporterStore for PostgresExporterStore {
    async fn create_exporter(
        &self,
        record: &ExporterRecord,
        audit: AuditLine<'_>,
    ) -> StoreResult<bool> {
        self.write_record(
            "INSERT INTO exp_exporters(name, spec, state, progress, ts, trace, creator) \
             VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (name) DO NOTHING",
            record,
            audit,
        )
        .await
    }

    async fn exporter(&self, name: &str) -> StoreResult<Option<ExporterRecord>> {
        let client = self.client().await?;
        let row = client
            .query_opt(
                &format!("SELECT {COLUMNS} FROM exp_exporters WHERE name = $1"),
                &[&name],
            )
            .await
            .map_err(backend)?;
        row.as_ref().map(read).transpose()
    }

    async fn exporters(&self) -> StoreResult<Vec<ExporterRecord>> {
        let client = self.client().await?;
        let rows = client
            .query(
                &format!("SELECT {COLUMNS} FROM exp_exporters ORDER BY name"),
                &[],
            )
            .await
            .map_err(backend)?;
        rows.iter().map(read).collect()
    }

    async fn update_exporter(
        &self,
        record: &ExporterRecord,
        audit: AuditLine<'_>,
    ) -> StoreResult<bool> {
        self.write_record(
            "UPDATE exp_exporters SET spec = $2, state = $3, progress = $4, ts = $5, \
             trace = $6, creator = $7 WHERE name = $1",
            record,
            audit,
        )
        .await
    }

    async fn record_progress(
        &self,
        name: &str,
        offset: i64,
        ts: i64,
        trace: &str,
    ) -> StoreResult<()> {
        let client = self.client().await?;
        client
            .execute(
                "UPDATE exp_exporters SET progress = $2, ts = $3, trace = $4 WHERE name = $1",
                &[&name, &offset, &ts, &trace],
            )
            .await
            .map_err(backend)?;
        Ok(())
    }

    async fn delete_exporter(&self, name: &str, audit: AuditLine<'_>) -> StoreResult<bool> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        let deleted = tx
            .execute("DELETE FROM exp_exporters WHERE name = $1", &[&name])
            .await
            .map_err(backend)?;
        if deleted == 1 {
            append_line(&tx, audit).await?;
        }
        tx.commit().await.map_err(backend)?;
        Ok(deleted == 1)
    }

    async fn lease(&self, name: &str) -> StoreResult<Option<Box<dyn Lease>>> {
        let (client, connection) = tokio_postgres::connect(&self.url, tokio_postgres::NoTls)
            .await
            .map_err(backend)?;
        let driver = tokio::spawn(async move {
            let _ = connection.await;
        });
        let lease = PgLease { client, driver };
        let row = lease
            .client
            .query_one(
                "SELECT pg_try_advisory_lock($1, hashtext($2))",
                &[&LOCK_LEASE, &name],
            )
            .await
            .map_err(backend)?;
        let held: bool = row.try_get(0).map_err(backend)?;
        Ok(held.then(|| Box::new(lease) as Box<dyn Lease>))
    }
}
