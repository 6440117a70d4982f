//! Group commit for the embedded store: many acknowledgements per fsync.
//!
//! With `synchronous=FULL`, SQLite syncs the write-ahead log inside every COMMIT, so each
//! durable registration costs one fsync while holding the only writer connection, and
//! concurrent clients queue behind one another's syncs. Here the writer connection commits
//! with `synchronous=NORMAL` (the commit is written to the log but not synced), releases the
//! writer, and then waits until a sync of the log covers its commit. Whoever needs a sync and
//! finds none running syncs everything committed so far; those who committed meanwhile are
//! covered by the next one: one fsync for the whole group.
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
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::watch;

pub struct GroupCommit {
    /// The write-ahead log of the database (`<file>-wal`), synced to make commits durable.
    wal: PathBuf,
    /// The log, opened at the first sync and kept: a sync needs no new file descriptor, so a
    /// process short of them cannot fail one. SQLite removes the log only when its last
    /// connection closes, and the store keeps its connections open.
    wal_file: Mutex<Option<std::fs::File>>,
    /// Commits begun: each write takes the next number just before its COMMIT runs.
    begun: AtomicU64,
    /// The highest number whose COMMIT has returned (writes are serialized, so in order).
    ended: AtomicU64,
    /// Every commit numbered up to this value is durable.
    durable: watch::Sender<u64>,
    /// One sync at a time; those waiting behind it are covered by the next.
    syncing: Mutex<()>,
    /// Set when a sync failed; every later write and every answer waiting for one fails.
    poisoned: Mutex<Option<String>>,
}

impl GroupCommit {
    pub(crate) fn new(database: &std::path::Path) -> GroupCommit {
        let mut wal = database.as_os_str().to_owned();
        wal.push("-wal");
        GroupCommit {
            wal: PathBuf::from(wal),
            wal_file: Mutex::new(None),
            begun: AtomicU64::new(0),
            ended: AtomicU64::new(0),
            durable: watch::Sender::new(0),
            syncing: Mutex::new(()),
            poisoned: Mutex::new(None),
        }
    }

    fn poisoned(&self) -> Option<String> {
        self.poisoned.lock().ok().and_then(|p| p.clone())
    }

    fn refuse(reason: &str) -> StoreError {
        StoreError::Backend(format!(
            "the store could not make a write durable and refuses further work: {reason}"
        ))
    }

    /// Commits `tx` (on the writer connection, which the caller still holds) and returns its
    /// number; the caller releases the writer, then calls [`GroupCommit::make_durable`].
    pub(crate) fn commit(&self, tx: rusqlite::Transaction<'_>) -> (u64, rusqlite::Result<()>) {
        let seq = self.begun.fetch_add(1, Ordering::SeqCst) + 1;
        let result = tx.commit();
        self.ended.store(seq, Ordering::SeqCst);
        (seq, result)
    }

    /// Fails when the store was poisoned: nothing may be written after a failed sync.
    pub(crate) fn check(&self) -> StoreResult<()> {
        match self.poisoned() {
            Some(reason) => Err(Self::refuse(&reason)),
            None => Ok(()),
        }
    }

    /// Blocks until commit `seq` is durable, syncing the log if no running sync covers it.
    pub(crate) fn make_durable(&self, seq: u64) -> StoreResult<()> {
        loop {
            if *self.durable.borrow() >= seq {
                return Ok(());
            }
            self.check()?;
            let _turn = self
                .syncing
                .lock()
                .map_err(|_| Self::refuse("a sync panicked"))?;
            if *self.durable.borrow() >= seq {
                return Ok(());
            }
            let through = self.ended.load(Ordering::SeqCst);
            if let Err(e) = self.sync_log()? {
                let reason = format!("syncing {}: {e}", self.wal.display());
                tracing::error!(%reason, "write-ahead log sync failed; the store stops writing");
                if let Ok(mut p) = self.poisoned.lock() {
                    *p = Some(reason.clone());
                }
                // Wake those waiting in `settled`, who then see the poison.
                self.durable.send_modify(|_| {});
                return Err(Self::refuse(&reason));
            }
            let group = through.saturating_sub(*self.durable.borrow());
            metrics::counter!("covenant_store_wal_syncs_total").increment(1);
            metrics::counter!("covenant_store_group_commits_total").increment(group);
            self.durable.send_replace(through);
        }
    }

    /// Syncs the log. The outer error (the log could not be opened) leaves the store usable,
    /// since nothing is known to be lost; the inner one (the sync itself failed) poisons it.
    fn sync_log(&self) -> StoreResult<std::io::Result<()>> {
        let mut file = self
            .wal_file
            .lock()
            .map_err(|_| Self::refuse("a sync panicked"))?;
        if file.is_none() {
            let opened = std::fs::File::open(&self.wal).map_err(|e| {
                StoreError::Backend(format!("opening {} to sync it: {e}", self.wal.display()))
            })?;
            *file = Some(opened);
        }
        Ok(file.as_ref().map_or(Ok(()), |f| f.sync_data()))
    }

    /// Waits until every commit begun so far is durable: an answer that may have read a
    /// committed write must not leave before that write is on disk.
    pub(crate) async fn settled(&self) -> StoreResult<()> {
        let target = self.begun.load(Ordering::SeqCst);
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
}
