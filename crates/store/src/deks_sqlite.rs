//! The embedded DEK Registry backend: in the same SQLite file as the registry store, tables
//! `dek_keks` and `dek_deks` with their own migration ledger, `dek_registry_migrations`. The
//! operations are [`crate::deks_sql`]'s.

use crate::StoreResult;
use crate::deks_sql::{MIGRATIONS, dek_store};
use crate::sql::sqlite::LiteDb;
use std::path::Path;

pub struct SqliteDekStore {
    db: LiteDb,
}

impl SqliteDekStore {
    /// Opens (and migrates) the key tables in the SQLite file at `path`, usually the registry
    /// store's own file ([`crate::SqliteStore::path`]).
    pub fn open(path: &Path) -> StoreResult<SqliteDekStore> {
        Ok(SqliteDekStore {
            db: LiteDb::open(path, "dek_registry_migrations", MIGRATIONS, "DEK")?,
        })
    }
}

dek_store!(SqliteDekStore);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::deks::{DekStore, Kek, KeyWrite};

    #[tokio::test]
    async fn the_shared_suite_passes_and_data_survives_reopening() {
        let dir = tempfile::tempdir().expect("tempdir");
        let registry = crate::SqliteStore::open(dir.path()).expect("open registry store");
        let ledger = registry.applied_migrations().expect("migrations");
        let store = SqliteDekStore::open(registry.path()).expect("open");
        crate::deks::suite::run(&store).await;
        let kek = Kek {
            name: "kept".into(),
            kms_type: "local-kms".into(),
            kms_key_id: "k".into(),
            kms_props: Default::default(),
            doc: None,
            shared: false,
            ts: 1,
            deleted: false,
        };
        assert_eq!(
            store.insert_kek(&kek, None).await.expect("insert"),
            KeyWrite::Done
        );
        drop(store);
        let reopened = SqliteDekStore::open(registry.path()).expect("reopen");
        assert_eq!(reopened.kek("kept").await.expect("kek"), Some(kek));
        assert_eq!(
            registry.applied_migrations().expect("migrations"),
            ledger,
            "the registry's ledger is untouched"
        );
    }
}
