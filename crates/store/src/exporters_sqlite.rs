//! The embedded exporter backend: table `exp_exporters` in the registry's SQLite file, with
//! its own migration ledger. One process owns the file, so every lease is granted. The
//! operations are [`crate::exporters_sql`]'s.

use crate::StoreResult;
use crate::exporters::{Lease, LocalLease};
use crate::exporters_sql::{MIGRATIONS, exporter_store};
use crate::sql::sqlite::LiteDb;
use std::path::Path;

pub struct SqliteExporterStore {
    db: LiteDb,
}

impl SqliteExporterStore {
    /// Opens (and migrates) the exporter table in the SQLite file at `path`, the registry
    /// store's own file ([`crate::SqliteStore::path`]), so writes share its audit log.
    pub fn open(path: &Path) -> StoreResult<SqliteExporterStore> {
        Ok(SqliteExporterStore {
            db: LiteDb::open(path, "exporters_migrations", MIGRATIONS, "exporter")?,
        })
    }

    async fn grant_lease(&self, _name: &str) -> StoreResult<Option<Box<dyn Lease>>> {
        Ok(Some(Box::new(LocalLease)))
    }
}

exporter_store!(SqliteExporterStore);

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_shared_suite_passes() {
        let dir = tempfile::tempdir().expect("tempdir");
        let registry = crate::SqliteStore::open(dir.path()).expect("open registry store");
        let store = SqliteExporterStore::open(registry.path()).expect("open");
        crate::exporters::suite::run(&store).await;
    }
}
