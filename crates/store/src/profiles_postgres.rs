//! The shared profile backend: the same table as the embedded one, in the registry's
//! PostgreSQL database, with its own migration ledger (`profiles_migrations`). The operations
//! are [`crate::profiles_sql`]'s.

use crate::StoreResult;
use crate::pg_pool::LazyTables;
use crate::profiles_sql::{MIGRATIONS, profile_store};

/// Advisory lock namespace of the migrations (first key of the two-key form).
const LOCK_MIGRATIONS: i32 = 0x436f_0201;

pub struct PostgresProfileStore {
    db: LazyTables,
}

impl PostgresProfileStore {
    /// Connects to `url` (`postgres://user@host:port/db`) and applies the migrations.
    pub async fn connect(url: &str) -> StoreResult<PostgresProfileStore> {
        let store = PostgresProfileStore::open_lazy(url)?;
        drop(store.db.client().await?);
        Ok(store)
    }

    /// Like [`connect`](Self::connect), without connecting yet: migrations run on the first
    /// operation that reaches the database.
    pub fn open_lazy(url: &str) -> StoreResult<PostgresProfileStore> {
        Ok(PostgresProfileStore {
            db: LazyTables::open(url, "profiles_migrations", LOCK_MIGRATIONS, MIGRATIONS)?,
        })
    }
}

profile_store!(PostgresProfileStore);
