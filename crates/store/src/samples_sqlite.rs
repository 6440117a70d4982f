//! The embedded sample backend. It lives in the same SQLite file as the registry store (WAL,
//! `synchronous=FULL`) with its own tables, prefixed `smp_`, and its own migration ledger,
//! `samples_migrations`, so the two evolve independently. The operations are
//! [`crate::samples_sql`]'s.

use crate::StoreResult;
use crate::samples_sql::{MIGRATIONS, sample_store};
use crate::sql::sqlite::LiteDb;
use std::path::Path;

pub struct SqliteSampleStore {
    db: LiteDb,
}

impl SqliteSampleStore {
    /// Opens (and migrates) the sample tables in the SQLite file at `path`, usually the
    /// registry store's own file ([`crate::SqliteStore::path`]).
    pub fn open(path: &Path) -> StoreResult<SqliteSampleStore> {
        Ok(SqliteSampleStore {
            db: LiteDb::open(path, "samples_migrations", MIGRATIONS, "sample")?,
        })
    }
}

sample_store!(SqliteSampleStore);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::samples::SampleStore;

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
