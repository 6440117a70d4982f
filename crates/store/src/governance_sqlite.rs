//! The embedded governance backend. It lives in the same SQLite file as the registry store
//! (WAL, `synchronous=FULL`) but keeps its own tables, prefixed `gov_`, and its own migration
//! ledger, `governance_migrations`, so the two evolve independently. The operations are
//! [`crate::governance_sql`]'s; this file opens the connections and runs them there.

use crate::governance::{GovernanceError, GovernanceResult};
use crate::governance_sql::{MIGRATIONS, governance_store};
use crate::group_commit::GroupCommit;
use crate::sql::{dialect, ready, sqlite::Lite};
use crate::sqlite_conn::{Span, WriteTurn, blocking};
use rusqlite::{Connection, TransactionBehavior};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

pub struct SqliteGovernanceStore {
    path: PathBuf,
    writer: Writer,
    reader: Mutex<Connection>,
}

/// Where governance writes go.
enum Writer {
    /// A connection of its own (a store opened alone: tools and tests). Beside a registry
    /// store in the same process it would contend for the file's write lock through SQLite's
    /// busy handler, which is not fair: a stream of writes on one connection can keep the
    /// other waiting for seconds.
    Own(Mutex<Connection>),
    /// The registry store's writer ([`SqliteGovernanceStore::open_beside`]): governance writes
    /// queue for the same turn as registrations, first come first served, each in a savepoint
    /// of the shared transaction, so neither kind of write can starve the other. Each
    /// governance write is bounded by the governance limits, so none holds the turn long.
    Shared {
        turn: Arc<WriteTurn>,
        group: Arc<GroupCommit>,
    },
}

fn backend(e: impl std::fmt::Display) -> GovernanceError {
    GovernanceError::Backend(e.to_string())
}

fn open_connection(path: &Path) -> GovernanceResult<Connection> {
    crate::sqlite_conn::open(path).map_err(backend)
}

fn migrate(conn: &mut Connection) -> GovernanceResult<()> {
    let migrations = dialect::migrations(MIGRATIONS, dialect::sqlite);
    crate::sqlite_conn::migrate(conn, "governance_migrations", &migrations).map_err(backend)
}

impl SqliteGovernanceStore {
    /// Opens the governance tables in the registry's database file in `dir`.
    pub fn open(dir: &Path) -> GovernanceResult<SqliteGovernanceStore> {
        std::fs::create_dir_all(dir).map_err(backend)?;
        SqliteGovernanceStore::open_file(&dir.join("covenant.sqlite3"))
    }

    /// Opens (or creates) the governance tables in the given database file.
    pub fn open_file(path: &Path) -> GovernanceResult<SqliteGovernanceStore> {
        let mut writer = open_connection(path)?;
        migrate(&mut writer)?;
        let reader = open_connection(path)?;
        Ok(SqliteGovernanceStore {
            path: path.to_path_buf(),
            writer: Writer::Own(Mutex::new(writer)),
            reader: Mutex::new(reader),
        })
    }

    /// Opens the governance tables in `registry`'s database file, writing through the
    /// registry's own writer: registrations and governance writes take turns in arrival order
    /// instead of competing for the file's lock (see [`Writer::Shared`]).
    pub fn open_beside(
        registry: &crate::sqlite::SqliteStore,
    ) -> GovernanceResult<SqliteGovernanceStore> {
        let path = registry.path();
        let mut migrator = open_connection(path)?;
        migrate(&mut migrator)?;
        drop(migrator);
        let (turn, group) = registry.writer_turn();
        Ok(SqliteGovernanceStore {
            path: path.to_path_buf(),
            writer: Writer::Shared { turn, group },
            reader: Mutex::new(open_connection(path)?),
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The governance migration numbers applied so far.
    pub fn applied_migrations(&self) -> GovernanceResult<Vec<i64>> {
        self.on_reader(false, async |tx| {
            let mut rows = crate::sql::Tx::query(
                tx,
                "SELECT version FROM governance_migrations ORDER BY version",
                &[],
            )
            .await?;
            Ok(rows
                .iter_mut()
                .map(|r| r.get(0))
                .collect::<Result<_, _>>()?)
        })
    }

    /// Runs `work` on the reader connection; `consistent` puts it in one read transaction, so
    /// that all its statements see the same moment (a WAL snapshot).
    fn on_reader<T>(
        &self,
        consistent: bool,
        work: impl AsyncFnOnce(&Lite<'_>) -> GovernanceResult<T>,
    ) -> GovernanceResult<T> {
        blocking(|| {
            let conn = self
                .reader
                .lock()
                .map_err(|_| backend("reader connection poisoned"))?;
            if !consistent {
                return ready(work(&Lite(&conn)));
            }
            let tx = conn.unchecked_transaction().map_err(backend)?;
            let out = ready(work(&Lite(&tx)))?;
            tx.commit().map_err(backend)?;
            Ok(out)
        })
    }

    async fn read<T>(
        &self,
        work: impl AsyncFnOnce(&Lite<'_>) -> GovernanceResult<T>,
    ) -> GovernanceResult<T> {
        self.on_reader(false, work)
    }

    async fn read_consistent<T>(
        &self,
        work: impl AsyncFnOnce(&Lite<'_>) -> GovernanceResult<T>,
    ) -> GovernanceResult<T> {
        self.on_reader(true, work)
    }

    /// Runs `work` in a write transaction: an immediate one on the store's own writer, or a
    /// savepoint of the registry writer's shared transaction.
    async fn write<T>(
        &self,
        work: impl AsyncFnOnce(&Lite<'_>) -> GovernanceResult<T> + Send,
    ) -> GovernanceResult<T> {
        match &self.writer {
            Writer::Own(conn) => blocking(|| {
                let mut conn = conn
                    .lock()
                    .map_err(|_| backend("writer connection poisoned"))?;
                let tx = conn
                    .transaction_with_behavior(TransactionBehavior::Immediate)
                    .map_err(backend)?;
                let out = ready(work(&Lite(&tx)))?;
                tx.commit().map_err(backend)?;
                Ok(out)
            }),
            Writer::Shared { turn, group } => {
                // A refusal rolls back this write's savepoint and comes back as it was.
                let mut refused = None;
                let out = crate::sqlite_conn::write_tx_grouped(turn, Span::Long, group, |conn| {
                    ready(work(&Lite(conn))).map_err(|e| {
                        let text = e.to_string();
                        refused = Some(e);
                        crate::StoreError::Backend(text)
                    })
                })
                .await;
                out.map_err(|e| refused.take().unwrap_or_else(|| backend(e)))
            }
        }
    }
}

governance_store!(SqliteGovernanceStore);
