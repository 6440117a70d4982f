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
//! A failed fsync poisons the store: Linux may drop the unwritten pages and report success on
//! the next fsync, so nothing written afterwards could be trusted to be on disk.

use crate::{StoreError, StoreResult};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use tokio::sync::watch;

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
    /// Set when a sync failed; every later write and every answer waiting for one fails.
    poisoned: Mutex<Option<String>>,
}

impl GroupCommit {
    /// Opens the log of `database`, which an open connection in WAL mode keeps in place.
    pub(crate) fn new(database: &std::path::Path) -> StoreResult<Arc<GroupCommit>> {
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
            poisoned: Mutex::new(None),
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
        if self.syncing.swap(true, Ordering::SeqCst) {
            return;
        }
        let group = Arc::clone(self);
        match tokio::runtime::Handle::try_current() {
            Ok(handle) => drop(handle.spawn_blocking(move || group.sync_rounds())),
            Err(_) => group.sync_rounds(),
        }
    }

    /// Syncs the log until every commit that has ended is durable.
    fn sync_rounds(&self) {
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
