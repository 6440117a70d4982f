//! The shared DEK Registry backend: the same tables as the embedded one, in the registry's
//! PostgreSQL database, with their own migration ledger (`dek_registry_migrations`). The
//! operations are [`crate::deks_sql`]'s.

use crate::StoreResult;
use crate::deks_sql::{MIGRATIONS, dek_store};
use crate::pg_pool::LazyTables;

/// Advisory lock namespace of the migrations (first key of the two-key form), distinct from
/// the other stores'.
const LOCK_MIGRATIONS: i32 = 0x436f_0401;

pub struct PostgresDekStore {
    db: LazyTables,
}

impl PostgresDekStore {
    /// Connects to `url` (`postgres://user@host:port/db`) and applies the migrations.
    pub async fn connect(url: &str) -> StoreResult<PostgresDekStore> {
        let store = PostgresDekStore::open_lazy(url)?;
        drop(store.db.client().await?);
        Ok(store)
    }

    /// Like [`connect`](Self::connect), without connecting yet: migrations run on the first
    /// operation that reaches the database.
    pub fn open_lazy(url: &str) -> StoreResult<PostgresDekStore> {
        Ok(PostgresDekStore {
            db: LazyTables::open(url, "dek_registry_migrations", LOCK_MIGRATIONS, MIGRATIONS)?,
        })
    }
}

dek_store!(PostgresDekStore);
