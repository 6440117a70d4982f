//! Group commit for the embedded store: many acknowledgements per fsync.
//!
//! With `synchronous=FULL`, SQLite syncs the write-ahead log inside every COMMIT, so each
//! durable registration costs one fsync while holding the only writer connection, and
//! concurrent clients queue behind one another's syncs. Here the writer connection commits
//! with `synchronous=NORMAL` (the commit is written to the log but not synced), releases the
//! writer, and then waits until a sync of the log covers its commit. One background sync runs
//! at a time and, when it ends, starts again if commits arrived meanwhile: one fsync for the
//! whole group.
//!
//! Waiting is asynchronous: a writer awaits the durable mark instead of holding a thread in
//! the fsync, so concurrent registrations do not each park a runtime thread. The sync is
//! started by the commit itself, not by the waiter, so a request abandoned by its client
//! after its commit still gets its write synced, and the answers waiting for it move on.
//!
//! What stays the same: each write is still its own transaction on the one writer connection,
//! so a registration's guard still runs inside the transaction that inserts it
//! (check-before-insert), and a write is acknowledged only once it is durable. What needs
//! care: a committed write is visible to readers before it is durable, so an answer that may
//! have read it waits too ([`GroupCommit::settled`], called before every HTTP response).
//! NORMAL keeps SQLite's own ordering (the log is synced before every checkpoint), and the
//! syncs added here only make more of the log durable sooner.
//!
//! Checkpoints (copying the log into the database file) are this module's too when the store
//! hands it a connection of its own ([`GroupCommit::with_checkpoints`]): SQLite's automatic
//! checkpoint runs inside the COMMIT that crosses its threshold, on the writer, and everything
//! queued behind the writer waits for it. Here the writer only reports the log's length after
//! each commit, and once it holds [`CHECKPOINT_PAGES`] (SQLite's own threshold) a passive
//! checkpoint runs on its own thread, one at a time and at most one every
//! [`CHECKPOINT_EVERY`]; it never blocks the writer, and SQLite syncs the log before copying
//! from it. SQLite starts the log over only when a write begins on a log wholly copied, which
//! a steady stream of commits never leaves time for: once the log holds
//! [`WRITER_CHECKPOINT_PAGES`] the writer copies what is left itself, after its commit.
//!
//! A failed fsync poisons the store: Linux may drop the unwritten pages and report success on
//! the next fsync, so nothing written afterwards could be trusted to be on disk.

use crate::{StoreError, StoreResult};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

/// The log's length in pages from which it is checkpointed (SQLite's automatic threshold).
const CHECKPOINT_PAGES: u64 = 1000;

/// The log's length in pages from which the writer checkpoints it itself, after its commit.
const WRITER_CHECKPOINT_PAGES: u64 = 4 * CHECKPOINT_PAGES;

/// The shortest time between two checkpoints, for a log that stays long (a reader holding an
/// old snapshot keeps SQLite from starting the log over).
const CHECKPOINT_EVERY: std::time::Duration = std::time::Duration::from_millis(20);

/// A connection that checkpoints the log, the log's length as the writer last reported it,
/// and when a checkpoint last began.
struct Checkpointer {
    conn: Mutex<rusqlite::Connection>,
    log_pages: Arc<AtomicU64>,
    running: AtomicBool,
    last: Mutex<Option<std::time::Instant>>,
}

pub struct GroupCommit {
    /// The write-ahead log of the database (`<file>-wal`), synced to make commits durable.
    wal: PathBuf,
    /// The log, opened with the store and kept: a sync needs no new file descriptor, so a
    /// process short of them cannot fail one. SQLite removes the log only when its last
    /// connection closes, and the store keeps its connections open.
    wal_file: std::fs::File,
    /// Commits begun: each write takes the next number just before its COMMIT runs.
    begun: AtomicU64,
    /// The highest number whose COMMIT has returned (writes are serialized, so in order).
    ended: AtomicU64,
    /// Every commit numbered up to this value is durable.
    durable: watch::Sender<u64>,
    /// Set while a background sync runs; commits made meanwhile are covered by its next round.
    syncing: AtomicBool,
    /// Told whenever the background sync stops ([`GroupCommit::idle`]).
    stopped: tokio::sync::Notify,
    /// Set when a sync failed; every later write and every answer waiting for one fails.
    poisoned: Mutex<Option<String>>,
    /// Checkpoints the log off the writer; without it the writer's own automatic checkpoint
    /// does.
    checkpointer: Option<Checkpointer>,
}

impl GroupCommit {
    /// Opens the log of `database`, which an open connection in WAL mode keeps in place.
    #[cfg(test)]
    pub(crate) fn new(database: &std::path::Path) -> StoreResult<Arc<GroupCommit>> {
        Self::build(database, None)
    }

    /// [`GroupCommit::new`] that also checkpoints the log, on `conn` (a connection of its own
    /// on the same database), in place of `writer`'s automatic checkpoint: the WAL hook set
    /// here replaces it (SQLite's automatic checkpoint is itself a WAL hook, so a later
    /// `wal_autocheckpoint` pragma on `writer` would undo this), and the writer only reports
    /// the log's length after each commit.
    pub(crate) fn with_checkpoints(
        database: &std::path::Path,
        conn: rusqlite::Connection,
        writer: &mut rusqlite::Connection,
    ) -> StoreResult<Arc<GroupCommit>> {
        let log_pages = Arc::new(AtomicU64::new(0));
        let reported = Arc::clone(&log_pages);
        writer
            .wal_hook(Some(move |wal: &mut rusqlite::hooks::Wal, pages: i32| {
                let pages = u64::try_from(pages).unwrap_or(0);
                reported.store(pages, Ordering::SeqCst);
                if pages >= WRITER_CHECKPOINT_PAGES {
                    // Under a steady stream of commits the log is never wholly copied when a
                    // write begins, and only then does SQLite start it over: it grew to
                    // 400 MB over an import of 20,000 versions. The writer copies what the
                    // checkpoints left, as SQLite's automatic checkpoint does, so that the next
                    // write starts the log over.
                    if let Err(e) = wal.checkpoint_v2(rusqlite::wal::CheckpointMode::PASSIVE) {
                        tracing::debug!(error = %e, "checkpoint deferred");
                    }
                }
                Ok(())
            }))
            .map_err(|e| StoreError::Backend(format!("watching the log: {e}")))?;
        let checkpointer = Checkpointer {
            conn: Mutex::new(conn),
            log_pages,
            running: AtomicBool::new(false),
            last: Mutex::new(None),
        };
        Self::build(database, Some(checkpointer))
    }

    fn build(
        database: &std::path::Path,
        checkpointer: Option<Checkpointer>,
    ) -> StoreResult<Arc<GroupCommit>> {
        let mut wal = database.as_os_str().to_owned();
        wal.push("-wal");
        let wal = PathBuf::from(wal);
        let wal_file = std::fs::File::open(&wal).map_err(|e| {
            StoreError::Backend(format!("opening {} to sync it: {e}", wal.display()))
        })?;
        Ok(Arc::new(GroupCommit {
            wal,
            wal_file,
            begun: AtomicU64::new(0),
            ended: AtomicU64::new(0),
            durable: watch::Sender::new(0),
            syncing: AtomicBool::new(false),
            stopped: tokio::sync::Notify::new(),
            poisoned: Mutex::new(None),
            checkpointer,
        }))
    }

    fn poisoned(&self) -> Option<String> {
        self.poisoned.lock().ok().and_then(|p| p.clone())
    }

    fn refuse(reason: &str) -> StoreError {
        StoreError::Backend(format!(
            "the store could not make a write durable and refuses further work: {reason}"
        ))
    }

    /// Commits the transaction open on `conn` (the writer connection, which the caller still
    /// holds) and returns its number; the caller calls [`GroupCommit::start_sync`] at once,
    /// releases the writer, then awaits [`GroupCommit::durable`].
    pub(crate) fn commit(&self, conn: &rusqlite::Connection) -> (u64, rusqlite::Result<()>) {
        let seq = self.begun.fetch_add(1, Ordering::SeqCst) + 1;
        let result = conn.execute_batch("COMMIT");
        if result.is_err() && !conn.is_autocommit() {
            // A failed COMMIT may leave the transaction open; nothing of it may stay.
            let _ = conn.execute_batch("ROLLBACK");
        }
        self.ended.store(seq, Ordering::SeqCst);
        (seq, result)
    }

    /// Marks a sync as running without starting one, as a slow disk would keep it running;
    /// `false` when one already was.
    #[cfg(test)]
    pub(crate) fn hold_sync(&self) -> bool {
        !self.syncing.swap(true, Ordering::SeqCst)
    }

    /// Ends the sync [`GroupCommit::hold_sync`] marked, as its thread would.
    #[cfg(test)]
    pub(crate) fn end_held_sync(&self) {
        self.sync_rounds();
    }

    /// How many commits have begun.
    #[cfg(test)]
    pub(crate) fn commits(&self) -> u64 {
        self.begun.load(Ordering::SeqCst)
    }

    /// Fails when the store was poisoned: nothing may be written after a failed sync.
    pub(crate) fn check(&self) -> StoreResult<()> {
        match self.poisoned() {
            Some(reason) => Err(Self::refuse(&reason)),
            None => Ok(()),
        }
    }

    /// Makes sure a sync will cover every commit made so far: starts the background sync
    /// unless one is running, which then covers them in its next round. Called right after a
    /// commit, on the same thread, so that no commit is left unsynced.
    pub(crate) fn start_sync(self: &Arc<Self>) {
        self.start_checkpoint();
        if self.syncing.swap(true, Ordering::SeqCst) {
            return;
        }
        let group = Arc::clone(self);
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(move || group.sync_rounds())),
            Err(_) => group.sync_rounds(),
        }
    }

    /// Starts a passive checkpoint on its own thread once the log holds [`CHECKPOINT_PAGES`],
    /// unless one is running or the last began less than [`CHECKPOINT_EVERY`] ago. A
    /// checkpoint that fails (the database busy, say) is only logged: the log keeps its frames
    /// and the next one copies them.
    fn start_checkpoint(self: &Arc<Self>) {
        let Some(checkpointer) = &self.checkpointer else {
            return;
        };
        if checkpointer.log_pages.load(Ordering::SeqCst) < CHECKPOINT_PAGES {
            return;
        }
        let now = std::time::Instant::now();
        {
            let Ok(mut last) = checkpointer.last.lock() else {
                return;
            };
            let recent = last.is_some_and(|at| now.duration_since(at) < CHECKPOINT_EVERY);
            if recent || checkpointer.running.swap(true, Ordering::SeqCst) {
                return;
            }
            *last = Some(now);
        }
        let group = Arc::clone(self);
        let run = move || {
            if let Some(checkpointer) = &group.checkpointer {
                if let Ok(conn) = checkpointer.conn.lock()
                    && let Err(e) = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
                {
                    tracing::debug!(error = %e, "checkpoint deferred");
                }
                metrics::counter!("covenant_store_checkpoints_total").increment(1);
                checkpointer.running.store(false, Ordering::SeqCst);
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(run)),
            Err(_) => run(),
        }
    }

    /// Syncs the log until every commit that has ended is durable, then tells those waiting
    /// for the sync to stop ([`GroupCommit::idle`]).
    fn sync_rounds(&self) {
        self.sync_while_pending();
        self.stopped.notify_waiters();
    }

    fn sync_while_pending(&self) {
        loop {
            let through = self.ended.load(Ordering::SeqCst);
            if through <= *self.durable.borrow() {
                self.syncing.store(false, Ordering::SeqCst);
                // A commit that ended after the load above found `syncing` still set and
                // started nothing: take the work back unless it started a sync of its own.
                let pending = self.ended.load(Ordering::SeqCst) > *self.durable.borrow();
                if pending && !self.syncing.swap(true, Ordering::SeqCst) {
                    continue;
                }
                return;
            }
            if self.check().is_err() {
                self.syncing.store(false, Ordering::SeqCst);
                return;
            }
            if let Err(e) = self.wal_file.sync_data() {
                let reason = format!("syncing {}: {e}", self.wal.display());
                tracing::error!(%reason, "write-ahead log sync failed; the store stops writing");
                self.poison(reason);
                self.syncing.store(false, Ordering::SeqCst);
                return;
            }
            let group = through.saturating_sub(*self.durable.borrow());
            metrics::counter!("covenant_store_wal_syncs_total").increment(1);
            metrics::counter!("covenant_store_group_commits_total").increment(group);
            self.durable.send_replace(through);
        }
    }

    /// Waits until no sync of the log is running. A commit made while one runs is not made
    /// durable by it but by the next round, so a transaction may stay open meanwhile and take
    /// in the writes that arrive until then ([`crate::sqlite_conn::write_tx_grouped`]).
    pub(crate) async fn idle(&self) {
        loop {
            let stopped = self.stopped.notified();
            tokio::pin!(stopped);
            stopped.as_mut().enable();
            if !self.syncing() {
                return;
            }
            stopped.await;
        }
    }

    /// Whether a sync of the log is running.
    pub(crate) fn syncing(&self) -> bool {
        self.syncing.load(Ordering::SeqCst)
    }

    fn poison(&self, reason: String) {
        if let Ok(mut p) = self.poisoned.lock() {
            *p = Some(reason);
        }
        // Wake those waiting for the durable mark, who then see the poison.
        self.durable.send_modify(|_| {});
    }

    /// Waits until commit `seq` is durable.
    pub(crate) async fn durable(&self, seq: u64) -> StoreResult<()> {
        self.wait_through(seq).await
    }

    async fn wait_through(&self, target: u64) -> StoreResult<()> {
        let mut durable = self.durable.subscribe();
        if *durable.borrow() >= target {
            return Ok(());
        }
        let poisoned = || self.poisoned.lock().is_ok_and(|p| p.is_some());
        durable
            .wait_for(|d| *d >= target || poisoned())
            .await
            .map_err(|_| Self::refuse("closed"))?;
        self.check()
    }

    /// Waits until every commit begun so far is durable: an answer that may have read a
    /// committed write must not leave before that write is on disk.
    pub(crate) async fn settled(&self) -> StoreResult<()> {
        self.wait_through(self.begun.load(Ordering::SeqCst)).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rusqlite::Connection;
    use std::time::Duration;

    fn wal_database(dir: &std::path::Path) -> (Connection, Arc<GroupCommit>) {
        let path = dir.join("db.sqlite3");
        let conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; CREATE TABLE t (n INTEGER);",
        )
        .unwrap();
        let group = GroupCommit::new(&path).unwrap();
        (conn, group)
    }

    fn insert(conn: &mut Connection, group: &Arc<GroupCommit>, n: i64) -> u64 {
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        conn.execute("INSERT INTO t VALUES (?1)", [n]).unwrap();
        let (seq, committed) = group.commit(conn);
        group.start_sync();
        committed.unwrap();
        seq
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_commit_nobody_waits_for_is_still_synced() {
        let dir = tempfile::tempdir().unwrap();
        let (mut conn, group) = wal_database(dir.path());
        // The writer's request was abandoned after its commit: nobody awaits `durable`.
        let seq = insert(&mut conn, &group, 1);
        tokio::time::timeout(Duration::from_secs(10), group.settled())
            .await
            .expect("an answer waiting behind the abandoned commit moves on")
            .unwrap();
        assert!(*group.durable.borrow() >= seq);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn commits_made_during_a_sync_are_covered_by_the_next_round() {
        let dir = tempfile::tempdir().unwrap();
        let (mut conn, group) = wal_database(dir.path());
        let mut last = 0;
        for n in 0..200 {
            last = insert(&mut conn, &group, n);
        }
        tokio::time::timeout(Duration::from_secs(10), group.durable(last))
            .await
            .expect("the last commit becomes durable")
            .unwrap();
        assert_eq!(*group.durable.borrow(), last);
        // The sync ends its rounds once it finds nothing left to cover.
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while group.syncing.load(Ordering::SeqCst) {
            assert!(std::time::Instant::now() < deadline, "a sync kept running");
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_log_is_checkpointed_off_the_writer_once_long() {
        let dir = tempfile::tempdir().unwrap();
        let (path, mut conn, group) = checkpointed_database(dir.path());
        let file_pages = || std::fs::metadata(&path).unwrap().len() / 4096;
        // Below the threshold nothing is copied: the rows are in the log only.
        let mut last = 0;
        for n in 0..200 {
            last = insert_padded(&mut conn, &group, n);
        }
        group.durable(last).await.unwrap();
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert!(file_pages() < 10, "{} pages copied early", file_pages());
        // Past it, a checkpoint of the group's copies the log into the database file.
        for n in 200..1200 {
            last = insert_padded(&mut conn, &group, n);
        }
        group.durable(last).await.unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(10);
        while file_pages() < 500 {
            assert!(
                std::time::Instant::now() < deadline,
                "the log was not checkpointed: the database file has {} pages",
                file_pages()
            );
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn the_writer_keeps_the_log_short_when_checkpoints_fall_behind() {
        let dir = tempfile::tempdir().unwrap();
        let (path, mut conn, group) = checkpointed_database(dir.path());
        // The background checkpoints never catch up (here: they cannot run at all), as under
        // a steady stream of commits, when the log is never wholly copied as a write begins.
        let held = group.checkpointer.as_ref().unwrap().conn.lock().unwrap();
        let mut last = 0;
        for n in 0..6_000 {
            last = insert_padded(&mut conn, &group, n);
        }
        drop(held);
        group.durable(last).await.unwrap();
        let mut wal = path.as_os_str().to_owned();
        wal.push("-wal");
        let pages = std::fs::metadata(&wal).unwrap().len() / 4096;
        // The commits wrote about 18,000 pages: without the writer's own checkpoints the log
        // holds them all. With them it stays near 4,000 pages (16 MiB).
        assert!(pages < 5_000, "the log grew to {pages} pages");
    }

    /// A database in WAL mode whose writer `conn` is watched by a group that checkpoints.
    fn checkpointed_database(
        dir: &std::path::Path,
    ) -> (std::path::PathBuf, Connection, Arc<GroupCommit>) {
        let path = dir.join("db.sqlite3");
        let mut conn = Connection::open(&path).unwrap();
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL; CREATE TABLE t (n INTEGER, pad BLOB);",
        )
        .unwrap();
        let checkpoints = Connection::open(&path).unwrap();
        let group = GroupCommit::with_checkpoints(&path, checkpoints, &mut conn).unwrap();
        (path, conn, group)
    }

    fn insert_padded(conn: &mut Connection, group: &Arc<GroupCommit>, n: i64) -> u64 {
        conn.execute_batch("BEGIN IMMEDIATE").unwrap();
        conn.execute("INSERT INTO t VALUES (?1, zeroblob(4000))", [n])
            .unwrap();
        let (seq, committed) = group.commit(conn);
        group.start_sync();
        committed.unwrap();
        seq
    }

    #[test]
    fn without_a_runtime_the_sync_runs_in_place() {
        let dir = tempfile::tempdir().unwrap();
        let (mut conn, group) = wal_database(dir.path());
        let seq = insert(&mut conn, &group, 1);
        assert_eq!(*group.durable.borrow(), seq);
    }

    #[test]
    fn a_poisoned_group_refuses_writes_and_answers() {
        let dir = tempfile::tempdir().unwrap();
        let (_conn, group) = wal_database(dir.path());
        group.poison("disk gone".into());
        assert!(group.check().is_err());
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        group.begun.fetch_add(1, Ordering::SeqCst);
        let settled = runtime.block_on(async {
            tokio::time::timeout(Duration::from_secs(10), group.settled()).await
        });
        let err = settled.expect("no hang").unwrap_err();
        assert!(err.to_string().contains("disk gone"), "{err}");
    }
}
