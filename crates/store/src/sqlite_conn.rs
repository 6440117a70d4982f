//! What every embedded store (registry, governance, samples) does the same way: open a
//! connection on the shared SQLite file with the durability settings, apply its numbered
//! migrations under its own ledger, and run blocking calls off the async executor.

use rusqlite::{Connection, TransactionBehavior, params};
use std::path::Path;

/// WAL lets readers run beside the one writer; `synchronous=FULL` puts each commit on disk
/// before it is acknowledged; the busy timeout lets the stores sharing the file wait for one
/// another's write locks instead of failing.
const PRAGMAS: &str = "PRAGMA journal_mode=WAL;
     PRAGMA synchronous=FULL;
     PRAGMA foreign_keys=ON;
     PRAGMA busy_timeout=10000;";

/// Opens a connection on the database file at `path` with the durability settings.
pub(crate) fn open(path: &Path) -> rusqlite::Result<Connection> {
    let conn = Connection::open(path)?;
    conn.execute_batch(PRAGMAS)?;
    // Plans are fixed when a statement is prepared. Without this, SQLite (built with STAT4)
    // prepares a cached statement again on every step after a new value is bound to a
    // parameter it might plan on, which cost a quarter of a registration's time.
    conn.set_db_config(
        rusqlite::config::DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG,
        true,
    )?;
    // Room for every statement a store runs, so none is prepared twice.
    conn.set_prepared_statement_cache_capacity(64);
    Ok(conn)
}

/// Applies `migrations` (numbered, in order) not yet recorded in the ledger table `ledger`,
/// each in its own immediate transaction so that two processes opening the file at once apply
/// each migration once.
pub(crate) fn migrate(
    conn: &mut Connection,
    ledger: &str,
    migrations: &[(i64, &str)],
) -> rusqlite::Result<()> {
    conn.execute_batch(&format!(
        "CREATE TABLE IF NOT EXISTS {ledger} (
            version INTEGER PRIMARY KEY,
            applied_at INTEGER NOT NULL
        );"
    ))?;
    let exists = format!("SELECT EXISTS(SELECT 1 FROM {ledger} WHERE version = ?1)");
    let record = format!("INSERT INTO {ledger}(version, applied_at) VALUES (?1, ?2)");
    for (number, sql) in migrations {
        let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
        let applied: bool = tx.query_row(&exists, [number], |r| r.get(0))?;
        if !applied {
            tx.execute_batch(sql)?;
            tx.execute(
                &record,
                params![number, chrono::Utc::now().timestamp_millis()],
            )?;
            tracing::info!(migration = number, ledger, "applied store migration");
        }
        tx.commit()?;
    }
    Ok(())
}

/// Runs `work` in an immediate (write-locking) transaction on `conn`, off the async threads,
/// committing when it returns `Ok` and rolling back otherwise.
pub(crate) fn write_tx<C, T>(
    conn: impl FnOnce() -> crate::StoreResult<C>,
    work: impl FnOnce(&rusqlite::Transaction<'_>) -> crate::StoreResult<T>,
) -> crate::StoreResult<T>
where
    C: std::ops::DerefMut<Target = Connection>,
{
    let backend = |e: rusqlite::Error| crate::StoreError::Backend(e.to_string());
    blocking(|| {
        let mut conn = conn()?;
        let tx = conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(backend)?;
        let out = work(&tx)?;
        tx.commit().map_err(backend)?;
        Ok(out)
    })
}

/// Like [`write_tx`], but the commit is made durable by `group` after the writer connection
/// is released, so that concurrent writers share one sync of the log
/// ([`crate::group_commit`]). The connection must commit with `synchronous=NORMAL`.
///
/// Writers queue for `turn` as tasks, without holding a thread: only the one whose turn it is
/// runs SQLite work, on its own thread for a [`Span::Short`] write.
pub(crate) async fn write_tx_grouped<C, T>(
    turn: &tokio::sync::Mutex<()>,
    span: Span,
    conn: impl FnOnce() -> crate::StoreResult<C>,
    group: &std::sync::Arc<crate::group_commit::GroupCommit>,
    work: impl FnOnce(&rusqlite::Transaction<'_>) -> crate::StoreResult<T>,
) -> crate::StoreResult<T>
where
    C: std::ops::DerefMut<Target = Connection>,
{
    let backend = |e: rusqlite::Error| crate::StoreError::Backend(e.to_string());
    group.check()?;
    let (out, seq, committed) = {
        let _turn = turn.lock().await;
        span.run(|| {
            let mut conn = conn()?;
            let tx = conn
                .transaction_with_behavior(TransactionBehavior::Immediate)
                .map_err(backend)?;
            let out = work(&tx)?;
            let (seq, committed) = group.commit(tx);
            // Started even when the commit failed, so that answers waiting for it move on.
            group.start_sync();
            Ok::<_, crate::StoreError>((out, seq, committed))
        })?
    };
    group.durable(seq).await?;
    committed.map_err(backend)?;
    Ok(out)
}

/// How long a piece of store work may hold the thread of the task that asks for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Span {
    /// A read or write by key: a few pages, some microseconds. It runs in place: handing the
    /// runtime's worker to another thread first (`block_in_place`) costs more than the work,
    /// and under load those hand-offs were most of a registration's context switches.
    Short,
    /// Work that grows with the store (listings, scans, bulk deletes): the worker is handed to
    /// another thread first, so that other clients keep being served meanwhile.
    Long,
}

impl Span {
    pub(crate) fn run<T>(self, work: impl FnOnce() -> T) -> T {
        match self {
            Span::Short => work(),
            Span::Long => blocking(work),
        }
    }
}

/// Runs blocking store work without stalling other tasks on a multi-threaded runtime.
pub(crate) fn blocking<T>(work: impl FnOnce() -> T) -> T {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) if handle.runtime_flavor() == tokio::runtime::RuntimeFlavor::MultiThread => {
            tokio::task::block_in_place(work)
        }
        _ => work(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn opens_durable_and_migrates_once() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("t.sqlite3");
        let migrations: &[(i64, &str)] = &[
            (1, "CREATE TABLE a (x INTEGER);"),
            (2, "CREATE TABLE b (y INTEGER);"),
        ];
        let mut conn = open(&path).expect("open");
        let mode: String = conn
            .query_row("PRAGMA journal_mode", [], |r| r.get(0))
            .expect("journal mode");
        assert_eq!(mode, "wal");
        let sync: i64 = conn
            .query_row("PRAGMA synchronous", [], |r| r.get(0))
            .expect("synchronous");
        assert_eq!(sync, 2, "synchronous=FULL");
        migrate(&mut conn, "t_migrations", migrations).expect("migrate");
        // A second process opening the same file finds everything applied.
        let mut again = open(&path).expect("reopen");
        migrate(&mut again, "t_migrations", migrations).expect("migrate again");
        let applied: Vec<i64> = again
            .prepare("SELECT version FROM t_migrations ORDER BY version")
            .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
            .expect("ledger");
        assert_eq!(applied, vec![1, 2]);
    }
}
