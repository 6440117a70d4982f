//! The shared exporter backend: the same table as the embedded one in the registry's
//! PostgreSQL database. A node runs an exporter only while it holds a session advisory lock on
//! the exporter's name over a connection of its own; when the node dies its connection closes,
//! the lock goes with it, and the next node that asks takes the exporter over.

use crate::exporters::Lease;
use crate::exporters_sql::{MIGRATIONS, exporter_store};
use crate::pg_pool::LazyTables;
use crate::{StoreError, StoreResult};

/// Advisory lock namespaces (first key of the two-key form): migrations and leases.
const LOCK_MIGRATIONS: i32 = 0x436f_0301;
const LOCK_LEASE: i32 = 0x436f_0302;

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

pub struct PostgresExporterStore {
    url: String,
    db: LazyTables,
}

impl PostgresExporterStore {
    /// Like the other side stores: nothing connects until the first operation.
    pub fn open_lazy(url: &str) -> StoreResult<PostgresExporterStore> {
        Ok(PostgresExporterStore {
            url: url.to_string(),
            db: LazyTables::open(url, "exporters_migrations", LOCK_MIGRATIONS, MIGRATIONS)?,
        })
    }

    /// A session advisory lock on `name` over a connection of its own, if no other node holds
    /// it.
    async fn grant_lease(&self, name: &str) -> StoreResult<Option<Box<dyn Lease>>> {
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

exporter_store!(PostgresExporterStore);
