//! The PostgreSQL governance backend: the same tables as the embedded one (prefixed `gov_`,
//! migrations in `governance_migrations`), over a deadpool pool of tokio-postgres clients.
//! The operations are [`crate::governance_sql`]'s; this file holds the pool and runs them in
//! its transactions.

use crate::governance::{GovernanceError, GovernanceResult};
use crate::governance_sql::{MIGRATIONS, governance_store};
use crate::pg_pool::{self, MigrationLock, PoolOptions};
use crate::sql::dialect;
use crate::sql::postgres::{Pg, in_transaction};
use deadpool_postgres::{Object, Pool, Transaction};

/// The migrations' advisory lock key ("cov-gov" and 1; the operations' keys follow it).
const MIGRATION_LOCK: i64 = 0x636f_762d_676f_7601;

pub struct PostgresGovernanceStore {
    pool: Pool,
    /// Set once the migrations have run; a lazily opened store migrates on first use, so a
    /// node can start while its database is down.
    migrated: tokio::sync::OnceCell<()>,
}

fn backend(e: impl std::fmt::Display) -> GovernanceError {
    GovernanceError::Backend(e.to_string())
}

impl PostgresGovernanceStore {
    /// Connects to `url` (`postgres://...`) and applies pending governance migrations.
    pub async fn connect(url: &str) -> GovernanceResult<PostgresGovernanceStore> {
        PostgresGovernanceStore::connect_in_schema(url, None).await
    }

    /// Like [`connect`](Self::connect), with the tables in their own PostgreSQL schema (created
    /// when missing), so that several stores can share one database.
    pub async fn connect_in_schema(
        url: &str,
        schema: Option<&str>,
    ) -> GovernanceResult<PostgresGovernanceStore> {
        let mut config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| GovernanceError::Invalid(format!("invalid PostgreSQL URL: {e}")))?;
        if let Some(schema) = schema {
            if !schema
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
            {
                return Err(GovernanceError::Invalid(format!(
                    "schema name '{schema}' must be letters, digits and underscores"
                )));
            }
            let (client, connection) = config
                .connect(tokio_postgres::NoTls)
                .await
                .map_err(backend)?;
            let task = tokio::spawn(connection);
            client
                .batch_execute(&format!("CREATE SCHEMA IF NOT EXISTS {schema}"))
                .await
                .map_err(backend)?;
            drop(client);
            let _ = task.await;
            config.options(format!("-c search_path={schema}"));
        }
        let pool = pg_pool::build(
            config,
            PoolOptions {
                max_size: 8,
                wait: None,
                create: None,
                recycle: None,
            },
        )
        .map_err(backend)?;
        PostgresGovernanceStore::new(pool).await
    }

    /// Uses an existing pool (for instance the registry store's) and applies migrations.
    pub async fn new(pool: Pool) -> GovernanceResult<PostgresGovernanceStore> {
        let store = PostgresGovernanceStore::lazy(pool);
        store.ensure_migrated().await?;
        Ok(store)
    }

    /// Uses `pool` without touching the database; migrations run on the first operation that
    /// reaches it (for a node that starts while the database is unreachable).
    pub fn lazy(pool: Pool) -> PostgresGovernanceStore {
        PostgresGovernanceStore {
            pool,
            migrated: tokio::sync::OnceCell::new(),
        }
    }

    /// Like [`connect`](Self::connect), without connecting yet.
    pub fn open_lazy(url: &str) -> GovernanceResult<PostgresGovernanceStore> {
        let config: tokio_postgres::Config = url
            .parse()
            .map_err(|e| GovernanceError::Invalid(format!("invalid PostgreSQL URL: {e}")))?;
        let pool = pg_pool::build(config, PoolOptions::SIDE).map_err(backend)?;
        Ok(PostgresGovernanceStore::lazy(pool))
    }

    async fn ensure_migrated(&self) -> GovernanceResult<()> {
        self.migrated
            .get_or_try_init(|| self.migrate())
            .await
            .map(|_| ())
    }

    async fn migrate(&self) -> GovernanceResult<()> {
        let mut client = self.pool.get().await.map_err(backend)?;
        pg_pool::migrate(
            &mut client,
            "governance_migrations",
            MigrationLock::Single(MIGRATION_LOCK),
            &dialect::migrations(MIGRATIONS, dialect::postgres),
        )
        .await
        .map_err(backend)
    }

    /// The governance migration numbers applied so far.
    pub async fn applied_migrations(&self) -> GovernanceResult<Vec<i64>> {
        let client = self.client().await?;
        let rows = client
            .query(
                "SELECT version FROM governance_migrations ORDER BY version",
                &[],
            )
            .await
            .map_err(backend)?;
        Ok(rows.iter().map(|r| r.get(0)).collect())
    }

    async fn client(&self) -> GovernanceResult<deadpool_postgres::Object> {
        self.ensure_migrated().await?;
        self.pool.get().await.map_err(backend)
    }

    async fn read<T>(
        &self,
        work: impl AsyncFnOnce(&Pg<'_, Object>) -> GovernanceResult<T>,
    ) -> GovernanceResult<T> {
        let client = self.client().await?;
        work(&Pg::new(&client)).await
    }

    /// Runs `work` in one repeatable-read transaction: all its statements see the same moment.
    async fn read_consistent<T>(
        &self,
        work: impl AsyncFnOnce(&Pg<'_, Transaction<'_>>) -> GovernanceResult<T>,
    ) -> GovernanceResult<T> {
        in_transaction(&mut self.client().await?, true, work).await
    }

    async fn write<T>(
        &self,
        work: impl AsyncFnOnce(&Pg<'_, Transaction<'_>>) -> GovernanceResult<T>,
    ) -> GovernanceResult<T> {
        in_transaction(&mut self.client().await?, false, work).await
    }
}

governance_store!(PostgresGovernanceStore);
