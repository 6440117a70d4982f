//! What every PostgreSQL store (registry, governance, samples) does the same way: build a
//! deadpool pool over tokio-postgres without connecting (so a node starts while its database
//! is down), and apply its numbered migrations under an advisory lock (so nodes starting
//! together apply each one once).

use crate::sql::dialect;
use crate::sql::postgres::{Pg, in_transaction};
use deadpool_postgres::{
    BuildError, Manager, ManagerConfig, Object, Pool, RecyclingMethod, Transaction,
};
use std::time::Duration;
use tokio_postgres::NoTls;

/// Size and timeouts of a pool. Timeouts need the Tokio runtime, which every pool uses.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PoolOptions {
    pub max_size: usize,
    /// How long a caller waits for a free connection.
    pub wait: Option<Duration>,
    /// How long opening a new connection may take.
    pub create: Option<Duration>,
    /// How long checking a returned connection may take.
    pub recycle: Option<Duration>,
}

impl PoolOptions {
    /// The governance and sample stores' pools: 8 connections, 5 s to wait or connect.
    pub(crate) const SIDE: PoolOptions = PoolOptions {
        max_size: 8,
        wait: Some(Duration::from_secs(5)),
        create: Some(Duration::from_secs(5)),
        recycle: None,
    };
}

/// A pool over `config`; nothing is connected until a connection is asked for.
pub(crate) fn build(
    config: tokio_postgres::Config,
    options: PoolOptions,
) -> Result<Pool, BuildError> {
    let manager = Manager::from_config(
        config,
        NoTls,
        ManagerConfig {
            recycling_method: RecyclingMethod::Fast,
        },
    );
    Pool::builder(manager)
        .max_size(options.max_size)
        .runtime(deadpool_postgres::Runtime::Tokio1)
        .wait_timeout(options.wait)
        .create_timeout(options.create)
        .recycle_timeout(options.recycle)
        .build()
}

/// The advisory lock a store's migrations run under: the two-key form (namespace, 0) or the
/// one-key form. Each store keeps the key it always used, so nodes of different releases
/// sharing a database still exclude one another.
#[derive(Debug, Clone, Copy)]
pub(crate) enum MigrationLock {
    Pair(i32),
    Single(i64),
}

/// Applies `migrations` (numbered, in order) not yet recorded in the ledger table `ledger`, in
/// one transaction holding `lock`: several nodes may start at once; the first applies, the
/// others wait and find the work done.
pub(crate) async fn migrate(
    client: &mut tokio_postgres::Client,
    ledger: &str,
    lock: MigrationLock,
    migrations: &[(i64, impl AsRef<str>)],
) -> Result<(), tokio_postgres::Error> {
    let tx = client.transaction().await?;
    match lock {
        MigrationLock::Pair(ns) => {
            tx.execute("SELECT pg_advisory_xact_lock($1, 0)::text", &[&ns])
                .await?
        }
        MigrationLock::Single(key) => {
            tx.execute("SELECT pg_advisory_xact_lock($1)::text", &[&key])
                .await?
        }
    };
    tx.batch_execute(&format!(
        "CREATE TABLE IF NOT EXISTS {ledger} (
            version BIGINT PRIMARY KEY,
            applied_at BIGINT NOT NULL
        )"
    ))
    .await?;
    let exists = format!("SELECT 1 FROM {ledger} WHERE version = $1");
    let record = format!("INSERT INTO {ledger}(version, applied_at) VALUES ($1, $2)");
    for (number, sql) in migrations {
        if tx.query_opt(&exists, &[number]).await?.is_none() {
            tx.batch_execute(sql.as_ref()).await?;
            tx.execute(&record, &[number, &chrono::Utc::now().timestamp_millis()])
                .await?;
            tracing::info!(migration = number, ledger, "applied store migration");
        }
    }
    tx.commit().await
}

/// Tables beside the registry's (samples, profiles, exporters, DEKs) behind a pool, migrated
/// on first use so that a node can start while its database is down; their operations run
/// through [`read`](LazyTables::read) and [`write`](LazyTables::write).
pub(crate) struct LazyTables {
    pool: Pool,
    migrated: tokio::sync::OnceCell<()>,
    ledger: &'static str,
    lock: i32,
    /// In PostgreSQL's spelling.
    migrations: Vec<(i64, String)>,
}

impl LazyTables {
    /// A pool of its own for `url`; nothing is contacted yet.
    pub(crate) fn open(
        url: &str,
        ledger: &'static str,
        lock: i32,
        migrations: &'static [(i64, &'static str)],
    ) -> crate::StoreResult<LazyTables> {
        let config: tokio_postgres::Config = url.parse().map_err(store_err)?;
        let pool = build(config, PoolOptions::SIDE).map_err(store_err)?;
        Ok(LazyTables::with_pool(pool, ledger, lock, migrations))
    }

    /// Over an existing pool (for instance the registry store's).
    pub(crate) fn with_pool(
        pool: Pool,
        ledger: &'static str,
        lock: i32,
        migrations: &'static [(i64, &'static str)],
    ) -> LazyTables {
        LazyTables {
            pool,
            migrated: tokio::sync::OnceCell::new(),
            ledger,
            lock,
            migrations: dialect::migrations(migrations, dialect::postgres),
        }
    }

    /// A pooled connection, after the migrations have run once.
    pub(crate) async fn client(&self) -> crate::StoreResult<deadpool_postgres::Object> {
        self.migrated
            .get_or_try_init(|| async {
                let mut client = self.pool.get().await.map_err(store_err)?;
                migrate(
                    &mut client,
                    self.ledger,
                    MigrationLock::Pair(self.lock),
                    &self.migrations,
                )
                .await
                .map_err(store_err)
            })
            .await?;
        self.pool.get().await.map_err(store_err)
    }

    pub(crate) async fn read<T>(
        &self,
        work: impl AsyncFnOnce(&Pg<'_, Object>) -> crate::StoreResult<T>,
    ) -> crate::StoreResult<T> {
        work(&Pg::new(&self.client().await?)).await
    }

    /// Runs `work` in one repeatable-read transaction: all its statements see the same moment.
    pub(crate) async fn read_consistent<T>(
        &self,
        work: impl AsyncFnOnce(&Pg<'_, Transaction<'_>>) -> crate::StoreResult<T>,
    ) -> crate::StoreResult<T> {
        in_transaction(&mut self.client().await?, true, work).await
    }

    /// Runs `work` in a transaction that commits when it returns `Ok`.
    pub(crate) async fn write<T>(
        &self,
        work: impl AsyncFnOnce(&Pg<'_, Transaction<'_>>) -> crate::StoreResult<T>,
    ) -> crate::StoreResult<T> {
        in_transaction(&mut self.client().await?, false, work).await
    }
}

fn store_err(e: impl std::fmt::Display) -> crate::StoreError {
    crate::StoreError::Backend(e.to_string())
}
