//! What every embedded store (registry, governance, samples) does the same way: open a
//! connection on the shared SQLite file with the durability settings, apply its numbered
//! migrations under its own ledger, and run blocking calls off the async executor.

use rusqlite::{Connection, TransactionBehavior, params};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, OnceLock};

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
    migrations: &[(i64, impl AsRef<str>)],
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
            tx.execute_batch(sql.as_ref())?;
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

/// Most writes one shared transaction holds: its members wait for its commit, so it must
/// not grow without end while writers keep arriving.
const MAX_SHARED: usize = 64;

/// How long a transaction left open for a queued writer may wait for it: should that
/// writer's request be dropped before its turn, the transaction is committed after this.
const LEFT_OPEN: std::time::Duration = std::time::Duration::from_millis(2);

/// The writer connection, its turn, and the transaction its writers share.
///
/// Concurrent writers share one transaction, each in a savepoint of it: the pages they all
/// touch (the tables' last leaves, the sequential indexes, the audit log) are written to the
/// log once per transaction instead of once per write. A writer that finishes while others
/// are queued leaves the transaction open for them; the last one commits, and every member
/// waits for that commit (and its sync) before it answers. A write that fails rolls back its
/// own savepoint only. A lone writer commits at once: nothing waits for company.
pub(crate) struct WriteTurn {
    turn: tokio::sync::Mutex<Option<Shared>>,
    /// Writers waiting for the turn: while there are some, the transaction stays open.
    queued: AtomicUsize,
    /// Used only by the holder of `turn`.
    conn: std::sync::Mutex<Connection>,
}

/// The open shared transaction.
struct Shared {
    outcome: Arc<Outcome>,
    members: usize,
}

/// How the shared transaction ended: its commit number and result.
#[derive(Default)]
struct Outcome {
    ended: OnceLock<(u64, Result<(), String>)>,
    notify: tokio::sync::Notify,
}

/// Counts a writer as queued until it holds the turn, even if its request is dropped.
struct Queued<'a>(&'a AtomicUsize);

impl Drop for Queued<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// How a write in a savepoint ended.
enum Settled<T> {
    Done(crate::StoreResult<T>),
    Panicked(Box<dyn std::any::Any + Send>),
    /// The savepoint itself failed: nothing of the transaction can be trusted.
    Broken(crate::StoreError),
}

impl WriteTurn {
    /// Takes `conn`, which must commit with `synchronous=NORMAL` (see [`write_tx_grouped`]).
    pub(crate) fn new(conn: Connection) -> Arc<WriteTurn> {
        Arc::new(WriteTurn {
            turn: tokio::sync::Mutex::new(None),
            queued: AtomicUsize::new(0),
            conn: std::sync::Mutex::new(conn),
        })
    }

    fn conn(&self) -> crate::StoreResult<std::sync::MutexGuard<'_, Connection>> {
        self.conn
            .lock()
            .map_err(|_| crate::StoreError::Backend("writer connection poisoned".into()))
    }
}

/// Like [`write_tx`], but writers share transactions ([`WriteTurn`]) and each commit is made
/// durable by `group` after the writer connection is released, so that concurrent writers
/// share one sync of the log ([`crate::group_commit`]).
///
/// Writers queue for the turn as tasks, without holding a thread: only the one whose turn it
/// is runs SQLite work, on its own thread for a [`Span::Short`] write.
pub(crate) async fn write_tx_grouped<T>(
    writer: &Arc<WriteTurn>,
    span: Span,
    group: &Arc<crate::group_commit::GroupCommit>,
    work: impl FnOnce(&Connection) -> crate::StoreResult<T>,
) -> crate::StoreResult<T> {
    group.check()?;
    let (settled, outcome) = {
        writer.queued.fetch_add(1, Ordering::SeqCst);
        let queued = Queued(&writer.queued);
        let mut open = writer.turn.lock().await;
        drop(queued);
        span.run(|| {
            let conn = writer.conn()?;
            let outcome = join(&conn, &mut open)?;
            let settled = in_savepoint(&conn, work);
            if let Settled::Broken(e) = &settled {
                abort_shared(&conn, &mut open, e);
            } else if open.as_ref().is_none_or(|o| o.members >= MAX_SHARED)
                || !close_later(writer, group, &outcome)
            {
                commit_shared(&conn, &mut open, group);
            }
            Ok::<_, crate::StoreError>((settled, outcome))
        })?
    };
    let out = match settled {
        Settled::Done(out) => out,
        Settled::Panicked(panic) => std::panic::resume_unwind(panic),
        Settled::Broken(e) => return Err(e),
    };
    let (seq, committed) = ended(&outcome).await;
    // A write that failed on what earlier members wrote (a version a concurrent delete
    // removed) answers only once their transaction has ended too: its caller decides again on
    // a fresh read, which must see what the write saw, or it would fail the same way until
    // its attempts ran out.
    let out = out?;
    group.durable(seq).await?;
    committed.map_err(crate::StoreError::Backend)?;
    Ok(out)
}

/// Joins the open shared transaction, or begins one.
fn join(conn: &Connection, open: &mut Option<Shared>) -> crate::StoreResult<Arc<Outcome>> {
    if let Some(shared) = open.as_mut() {
        shared.members += 1;
        return Ok(Arc::clone(&shared.outcome));
    }
    conn.execute_batch("BEGIN IMMEDIATE")
        .map_err(|e| crate::StoreError::Backend(e.to_string()))?;
    let outcome = Arc::new(Outcome::default());
    *open = Some(Shared {
        outcome: Arc::clone(&outcome),
        members: 1,
    });
    Ok(outcome)
}

/// Runs `work` in a savepoint, released when it succeeds and rolled back when it fails or
/// panics; either way the transaction stays fit for the others unless the savepoint itself
/// fails.
fn in_savepoint<T>(
    conn: &Connection,
    work: impl FnOnce(&Connection) -> crate::StoreResult<T>,
) -> Settled<T> {
    let backend = |e: rusqlite::Error| crate::StoreError::Backend(e.to_string());
    if let Err(e) = conn.execute_batch("SAVEPOINT write") {
        return Settled::Broken(backend(e));
    }
    let out = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| work(conn)));
    let settled = match &out {
        Ok(Ok(_)) => conn.execute_batch("RELEASE write"),
        _ => conn.execute_batch("ROLLBACK TO write; RELEASE write"),
    };
    match (out, settled) {
        (_, Err(e)) => Settled::Broken(backend(e)),
        (Ok(out), Ok(())) => Settled::Done(out),
        (Err(panic), Ok(())) => Settled::Panicked(panic),
    }
}

/// Rolls the open shared transaction back and tells its members that it failed.
fn abort_shared(conn: &Connection, open: &mut Option<Shared>, reason: &crate::StoreError) {
    let Some(shared) = open.take() else { return };
    let _ = conn.execute_batch("ROLLBACK");
    let _ = shared.outcome.ended.set((0, Err(reason.to_string())));
    shared.outcome.notify.notify_waiters();
}

/// Commits the open shared transaction and tells its members how it ended.
fn commit_shared(
    conn: &Connection,
    open: &mut Option<Shared>,
    group: &Arc<crate::group_commit::GroupCommit>,
) {
    let Some(shared) = open.take() else { return };
    let (seq, committed) = group.commit(conn);
    metrics::counter!("covenant_store_shared_writes_total").increment(shared.members as u64);
    // Started even when the commit failed, so that answers waiting for it move on.
    group.start_sync();
    let _ = shared
        .outcome
        .ended
        .set((seq, committed.map_err(|e| e.to_string())));
    shared.outcome.notify.notify_waiters();
}

/// Leaves the transaction of `outcome` open while that costs no one time, with a task that
/// commits it when it no longer does; returns `false` (commit now) otherwise, or without a
/// runtime to run that task on.
///
/// - A writer is queued for the turn: it joins the transaction. Should it never take its turn
///   (its request dropped), the task commits after [`LEFT_OPEN`]: the members may have gone
///   too, and an open transaction holds the file's write lock.
/// - A sync of the log is running: a commit now would wait for it to end before its own sync
///   began, so the transaction stays open until then and takes in the writes that arrive
///   meanwhile; the task commits it when the sync stops. The group of a transaction is thus
///   sized by the disk's flush time. On a disk that flushes in 0.2 ms, 16 clients registering
///   new subjects went from 2.6–4.0 to 4.1–6.3 writes per commit and from 33–37 to 30–34 KB
///   written per registration, at the same rate within the machine's noise
///   (`benches/RESULTS.md`); a slower disk gathers more per commit.
fn close_later(
    writer: &Arc<WriteTurn>,
    group: &Arc<crate::group_commit::GroupCommit>,
    outcome: &Arc<Outcome>,
) -> bool {
    let queued = writer.queued.load(Ordering::SeqCst) > 0;
    if !queued && !group.syncing() {
        return false;
    }
    let Ok(runtime) = tokio::runtime::Handle::try_current() else {
        return false;
    };
    let (writer, group, outcome) = (
        Arc::clone(writer),
        Arc::clone(group),
        Arc::downgrade(outcome),
    );
    drop(runtime.spawn(async move {
        if queued {
            tokio::time::sleep(LEFT_OPEN).await;
        } else {
            group.idle().await;
        }
        // Waits for the turn rather than leaving the commit to its holder: that writer may
        // have left the transaction open earlier (for a queued writer, or a sync that has
        // since stopped), counting on this task.
        let mut open = writer.turn.lock().await;
        let still_open = open.as_ref().is_some_and(|shared| {
            outcome
                .upgrade()
                .is_some_and(|o| Arc::ptr_eq(&shared.outcome, &o))
        });
        if still_open && let Ok(conn) = writer.conn() {
            commit_shared(&conn, &mut open, &group);
        }
    }));
    true
}

/// How the shared transaction of `outcome` ended, once it has.
async fn ended(outcome: &Outcome) -> (u64, Result<(), String>) {
    loop {
        let notified = outcome.notify.notified();
        tokio::pin!(notified);
        notified.as_mut().enable();
        if let Some(ended) = outcome.ended.get() {
            return ended.clone();
        }
        notified.await;
    }
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

    struct Writer {
        dir: tempfile::TempDir,
        group: Arc<crate::group_commit::GroupCommit>,
        turn: Arc<WriteTurn>,
    }

    fn shared_writer() -> Writer {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("w.sqlite3");
        let conn = open(&path).expect("open");
        conn.execute_batch("PRAGMA synchronous=NORMAL; CREATE TABLE t (n INTEGER UNIQUE);")
            .expect("table");
        Writer {
            group: crate::group_commit::GroupCommit::new(&path).expect("group"),
            dir,
            turn: WriteTurn::new(conn),
        }
    }

    fn backend(e: rusqlite::Error) -> crate::StoreError {
        crate::StoreError::Backend(e.to_string())
    }

    impl Writer {
        /// Inserts `n` as one write; a negative `n` inserts and then fails.
        fn insert(
            &self,
            n: i64,
        ) -> impl std::future::Future<Output = crate::StoreResult<i64>> + use<> {
            let (group, turn) = (self.group.clone(), self.turn.clone());
            async move {
                write_tx_grouped(&turn, Span::Short, &group, |c| {
                    c.execute("INSERT INTO t VALUES (?1)", [n])
                        .map_err(backend)?;
                    if n < 0 {
                        return Err(crate::StoreError::Backend("refused".into()));
                    }
                    Ok(n)
                })
                .await
            }
        }

        fn stored(&self) -> Vec<i64> {
            let conn = open(&self.dir.path().join("w.sqlite3")).expect("reader");
            conn.prepare("SELECT n FROM t ORDER BY n")
                .and_then(|mut s| s.query_map([], |r| r.get(0))?.collect())
                .expect("rows")
        }

        /// Marks a sync as running, then writes 1, which its transaction holds open meanwhile.
        async fn write_one_during_a_sync(
            &self,
        ) -> tokio::task::JoinHandle<crate::StoreResult<i64>> {
            assert!(self.group.hold_sync(), "no sync was running");
            let first = tokio::spawn(self.insert(1));
            self.open_with(1).await;
            first
        }

        /// Ends the sync [`Writer::write_one_during_a_sync`] marked, as its thread would.
        async fn end_sync(&self) {
            let group = self.group.clone();
            tokio::task::spawn_blocking(move || group.end_held_sync())
                .await
                .expect("sync ended");
        }

        /// Waits (at most 10 s) until a transaction is left open holding `members` writes.
        async fn open_with(&self, members: usize) {
            let open = async {
                while self.turn.turn.lock().await.as_ref().map(|s| s.members) != Some(members) {
                    tokio::time::sleep(std::time::Duration::from_millis(1)).await;
                }
            };
            tokio::time::timeout(std::time::Duration::from_secs(10), open)
                .await
                .unwrap_or_else(|_| panic!("no transaction left open with {members} writes"));
        }

        /// Queues `writers` behind the turn, then lets them run.
        async fn queued_behind_the_turn(&self, writers: Vec<i64>) -> Vec<crate::StoreResult<i64>> {
            let held = self.turn.turn.lock().await;
            let count = writers.len();
            let tasks: Vec<_> = writers
                .into_iter()
                .map(|n| tokio::spawn(self.insert(n)))
                .collect();
            while self.turn.queued.load(Ordering::SeqCst) < count {
                tokio::time::sleep(std::time::Duration::from_millis(1)).await;
            }
            drop(held);
            let mut out = Vec::new();
            for t in tasks {
                out.push(t.await.expect("task"));
            }
            out
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn queued_writers_share_one_transaction_and_one_commit() {
        let w = shared_writer();
        let results = w.queued_behind_the_turn((1..=10).collect()).await;
        assert!(results.iter().all(|r| r.is_ok()), "{results:?}");
        assert_eq!(w.group.commits(), 1, "ten writes, one commit");
        assert_eq!(w.stored(), (1..=10).collect::<Vec<_>>());
        // A writer alone commits at once.
        w.insert(11).await.expect("alone");
        assert_eq!(w.group.commits(), 2);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_write_leaves_the_others_of_its_transaction() {
        let w = shared_writer();
        // -3 inserts then fails; 2 collides with the UNIQUE column after the first 2.
        let results = w.queued_behind_the_turn(vec![1, 2, -3, 2, 4]).await;
        let ok: Vec<bool> = results.iter().map(|r| r.is_ok()).collect();
        // The two writes of 2 run in either order: exactly one of them is stored.
        assert!(ok[0] && !ok[2] && ok[4], "{results:?}");
        assert!(ok[1] != ok[3], "{results:?}");
        assert_eq!(w.stored(), vec![1, 2, 4]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_write_answers_after_its_transaction_ends() {
        let w = shared_writer();
        let (release, gate) = std::sync::mpsc::channel::<()>();
        let gate = std::sync::Mutex::new(gate);
        let held = w.turn.turn.lock().await;
        let first = tokio::spawn(w.insert(5));
        while w.turn.queued.load(Ordering::SeqCst) < 1 {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        // Collides with the first, uncommitted 5.
        let failing = tokio::spawn(w.insert(5));
        while w.turn.queued.load(Ordering::SeqCst) < 2 {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        // The last member keeps the transaction open until released.
        let (group, turn) = (w.group.clone(), w.turn.clone());
        let last = tokio::spawn(async move {
            write_tx_grouped(&turn, Span::Short, &group, move |c| {
                let _ = gate.lock().expect("gate").recv();
                c.execute("INSERT INTO t VALUES (6)", []).map_err(backend)
            })
            .await
        });
        while w.turn.queued.load(Ordering::SeqCst) < 3 {
            tokio::time::sleep(std::time::Duration::from_millis(1)).await;
        }
        drop(held);
        let releaser = tokio::spawn(async move {
            tokio::time::sleep(std::time::Duration::from_millis(300)).await;
            let _ = release.send(());
        });
        let failed = failing.await.expect("task");
        assert!(failed.is_err(), "{failed:?}");
        // What the failed write saw is there for a fresh read.
        assert!(w.stored().contains(&5), "{:?}", w.stored());
        first.await.expect("task").expect("first");
        last.await.expect("task").expect("last");
        releaser.await.expect("releaser");
        assert_eq!(w.stored(), vec![5, 6]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_transaction_left_open_for_a_writer_that_never_came_is_committed() {
        let w = shared_writer();
        // A member wrote and left the transaction open for a queued writer whose request was
        // then dropped; the member's own request may be gone too.
        let outcome = {
            let mut open = w.turn.turn.lock().await;
            let conn = w.turn.conn().expect("conn");
            let outcome = join(&conn, &mut open).expect("begin");
            let settled = in_savepoint(&conn, |c| {
                c.execute("INSERT INTO t VALUES (7)", []).map_err(backend)
            });
            assert!(matches!(settled, Settled::Done(Ok(1))));
            // Alone, with no sync running, a write commits at once.
            assert!(!close_later(&w.turn, &w.group, &outcome));
            w.turn.queued.fetch_add(1, Ordering::SeqCst);
            assert!(close_later(&w.turn, &w.group, &outcome));
            w.turn.queued.fetch_sub(1, Ordering::SeqCst);
            outcome
        };
        let (seq, committed) =
            tokio::time::timeout(std::time::Duration::from_secs(10), ended(&outcome))
                .await
                .expect("committed without its writers");
        committed.expect("committed");
        w.group.durable(seq).await.expect("durable");
        assert_eq!(w.stored(), vec![7]);
        assert!(w.turn.turn.lock().await.is_none());
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writes_made_while_the_log_is_synced_share_the_commit_after_it() {
        let w = shared_writer();
        let first = w.write_one_during_a_sync().await;
        let second = tokio::spawn(w.insert(2));
        w.open_with(2).await;
        assert_eq!(
            w.group.commits(),
            0,
            "nothing committed while the sync runs"
        );
        assert!(w.stored().is_empty(), "nothing visible before the commit");
        w.end_sync().await;
        assert_eq!(first.await.expect("task").expect("first"), 1);
        assert_eq!(second.await.expect("task").expect("second"), 2);
        assert_eq!(
            w.group.commits(),
            1,
            "two writes, one commit after the sync"
        );
        assert_eq!(w.stored(), vec![1, 2]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_transaction_left_open_while_the_turn_is_held_as_the_sync_stops_is_committed() {
        // A writer holds the turn as the sync stops, having decided while it ran to leave the
        // transaction open: the tasks waiting for the sync wait for the turn too, and commit.
        let w = shared_writer();
        let first = w.write_one_during_a_sync().await;
        let held = w.turn.turn.lock().await;
        let outcome = Arc::clone(&held.as_ref().expect("open").outcome);
        assert!(close_later(&w.turn, &w.group, &outcome), "left open");
        w.end_sync().await;
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        drop(held);
        let answered = tokio::time::timeout(std::time::Duration::from_secs(10), first).await;
        assert_eq!(
            answered.expect("committed").expect("task").expect("write"),
            1
        );
        assert_eq!(w.stored(), vec![1]);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn concurrent_writers_during_real_syncs_all_commit() {
        // Transactions left open while syncs run, and writers taking the turn as those syncs
        // stop: every write ends committed and durable, none left in an open transaction.
        let w = Arc::new(shared_writer());
        let writers: Vec<_> = (0..16)
            .map(|t| {
                let w = Arc::clone(&w);
                tokio::spawn(async move {
                    for k in 0..40 {
                        w.insert(t * 1000 + k).await.expect("write");
                    }
                })
            })
            .collect();
        let all = async {
            for writer in writers {
                writer.await.expect("writer");
            }
        };
        tokio::time::timeout(std::time::Duration::from_secs(60), all)
            .await
            .expect("every write answered");
        assert_eq!(w.stored().len(), 16 * 40);
        assert!(w.group.commits() < 16 * 40, "writes shared commits");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_panicking_write_rolls_back_alone_and_the_panic_goes_on() {
        let w = shared_writer();
        let (group, turn) = (w.group.clone(), w.turn.clone());
        let panicked = tokio::spawn(async move {
            write_tx_grouped(&turn, Span::Short, &group, |c| {
                c.execute("INSERT INTO t VALUES (5)", []).map_err(backend)?;
                panic!("a bug in a write");
                #[allow(unreachable_code)]
                Ok(())
            })
            .await
        })
        .await;
        assert!(panicked.is_err_and(|e| e.is_panic()));
        w.insert(6).await.expect("the writer goes on");
        assert_eq!(w.stored(), vec![6]);
        assert!(w.turn.turn.lock().await.is_none());
    }
}
