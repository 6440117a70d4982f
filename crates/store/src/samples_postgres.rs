//! The shared sample backend: the same tables as the embedded one, in the registry's
//! PostgreSQL database, with their own migration ledger (`samples_migrations`). The
//! operations are [`crate::samples_sql`]'s.

use crate::StoreResult;
use crate::pg_pool::LazyTables;
use crate::samples_sql::{MIGRATIONS, sample_store};
use deadpool_postgres::Pool;

/// Advisory lock namespace of the migrations (first key of the two-key form), distinct from
/// the registry's.
const LOCK_MIGRATIONS: i32 = 0x436f_0101;

pub struct PostgresSampleStore {
    db: LazyTables,
}

impl PostgresSampleStore {
    /// Connects to `url` (`postgres://user@host:port/db`) and applies the migrations.
    pub async fn connect(url: &str) -> StoreResult<PostgresSampleStore> {
        let store = PostgresSampleStore::open_lazy(url)?;
        drop(store.db.client().await?);
        Ok(store)
    }

    /// Like [`connect`](Self::connect), without connecting yet: migrations run on the first
    /// operation that reaches the database.
    pub fn open_lazy(url: &str) -> StoreResult<PostgresSampleStore> {
        Ok(PostgresSampleStore {
            db: LazyTables::open(url, "samples_migrations", LOCK_MIGRATIONS, MIGRATIONS)?,
        })
    }

    /// Uses an existing pool (for instance the registry store's) and applies the migrations.
    pub async fn with_pool(pool: Pool) -> StoreResult<PostgresSampleStore> {
        let store = PostgresSampleStore {
            db: LazyTables::with_pool(pool, "samples_migrations", LOCK_MIGRATIONS, MIGRATIONS),
        };
        drop(store.db.client().await?);
        Ok(store)
    }
}

sample_store!(PostgresSampleStore);
