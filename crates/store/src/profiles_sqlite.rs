//! The embedded profile backend: in the same SQLite file as the registry store (WAL,
//! `synchronous=FULL`) with its own table, `prf_profiles`, and its own migration ledger,
//! `profiles_migrations`, so it evolves independently of the registry and sample tables. The
//! operations are [`crate::profiles_sql`]'s.

use crate::StoreResult;
use crate::profiles_sql::{MIGRATIONS, profile_store};
use crate::sql::sqlite::LiteDb;
use std::path::Path;

pub struct SqliteProfileStore {
    db: LiteDb,
}

impl SqliteProfileStore {
    /// Opens (and migrates) the profile table in the SQLite file at `path`, usually the
    /// registry store's own file ([`crate::SqliteStore::path`]).
    pub fn open(path: &Path) -> StoreResult<SqliteProfileStore> {
        Ok(SqliteProfileStore {
            db: LiteDb::open(path, "profiles_migrations", MIGRATIONS, "profile")?,
        })
    }
}

profile_store!(SqliteProfileStore);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::profiles::ProfileStore;

    #[tokio::test]
    async fn the_shared_suite_passes_and_data_survives_reopening() {
        let dir = tempfile::tempdir().expect("tempdir");
        let registry = crate::SqliteStore::open(dir.path()).expect("open registry store");
        let ledger = registry.applied_migrations().expect("migrations");
        let store = SqliteProfileStore::open(registry.path()).expect("open");
        crate::profiles::suite::run(&store).await;
        drop(store);
        let reopened = SqliteProfileStore::open(registry.path()).expect("reopen");
        assert_eq!(reopened.profiles("q", 0, 10).await.expect("list").len(), 1);
        assert_eq!(
            registry.applied_migrations().expect("migrations"),
            ledger,
            "the registry's ledger is untouched"
        );
    }
}
