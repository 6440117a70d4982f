//! The embedded backend: SQLite in WAL mode with `synchronous=FULL`, so a write is on disk
//! before it is acknowledged. One writer connection serializes every write (and runs each
//! registration guard inside its transaction); a few reader connections serve lookups
//! concurrently, which WAL allows.

use crate::audit_denials::{Admission, DenialKey, DenialTally, FLUSH_INTERVAL};
use crate::group_commit::GroupCommit;
use crate::registry_sql as ops;
use crate::sql::{dialect, ready, sqlite::Lite};
use crate::sqlite_conn::{self, Span};
use crate::{AuditQuery, StoreError, StoreResult};
use rusqlite::Connection;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

const READERS: usize = 4;

pub struct SqliteStore {
    path: PathBuf,
    /// The writer connection: writers queue for it as tasks and share its transactions
    /// ([`sqlite_conn::WriteTurn`]).
    writer: Arc<sqlite_conn::WriteTurn>,
    /// Makes the writer's commits durable in groups ([`crate::group_commit`]).
    group: Arc<GroupCommit>,
    readers: Vec<Mutex<Connection>>,
    next_reader: AtomicUsize,
    /// Repeated refusals being counted ([`crate::audit_denials`]).
    denials: Arc<DenialTally>,
}

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

fn open_connection(path: &Path) -> StoreResult<Connection> {
    sqlite_conn::open(path).map_err(backend)
}

fn migrate(conn: &mut Connection) -> StoreResult<()> {
    let migrations = dialect::migrations(ops::MIGRATIONS, dialect::sqlite);
    sqlite_conn::migrate(conn, "schema_migrations", &migrations).map_err(backend)?;
    fill_missing_guids(conn)
}

/// Gives rows written before guids existed their guid, in one transaction; a no-op once
/// every row has one.
fn fill_missing_guids(conn: &mut Connection) -> StoreResult<()> {
    let tx = conn.transaction().map_err(backend)?;
    ready(ops::fill_missing_guids(&Lite(&tx)))?;
    tx.commit().map_err(backend)
}

impl SqliteStore {
    /// Opens (or creates) the store in `dir`, applying pending migrations.
    pub fn open(dir: &Path) -> StoreResult<SqliteStore> {
        std::fs::create_dir_all(dir).map_err(backend)?;
        let path = dir.join("covenant.sqlite3");
        let mut writer = open_connection(&path)?;
        migrate(&mut writer)?;
        // Commits are synced by `group`, once for every write committed meanwhile, and the
        // log is copied into the database by `group`'s checkpoints, off the writer (see
        // `GroupCommit::start_checkpoint`). Each write runs in a savepoint of a shared
        // transaction; with the default temp store SQLite journals every page a savepoint
        // touches to a temporary file, one `pwrite` each. The writer keeps that journal in
        // memory: it holds the pages of one write at most (readers keep the default, so a
        // large sort of theirs does not grow the heap). Both together took about a quarter off
        // writing 20,000 imported versions (benches/RESULTS.md).
        writer
            .execute_batch("PRAGMA synchronous=NORMAL; PRAGMA temp_store=MEMORY;")
            .map_err(backend)?;
        let readers = (0..READERS)
            .map(|_| open_connection(&path).map(Mutex::new))
            .collect::<StoreResult<Vec<_>>>()?;
        Ok(SqliteStore {
            group: GroupCommit::with_checkpoints(&path, open_connection(&path)?, &mut writer)?,
            path,
            writer: sqlite_conn::WriteTurn::new(writer),
            readers,
            next_reader: AtomicUsize::new(0),
            denials: Arc::new(DenialTally::new()),
        })
    }

    /// The database file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// The writer turn and its group commit, for the other stores of the same file whose
    /// writes take turns with this store's (governance).
    pub(crate) fn writer_turn(&self) -> (Arc<sqlite_conn::WriteTurn>, Arc<GroupCommit>) {
        (Arc::clone(&self.writer), Arc::clone(&self.group))
    }

    /// The migration numbers applied so far.
    pub fn applied_migrations(&self) -> StoreResult<Vec<i64>> {
        self.read(Span::Short, |conn| {
            ready(ops::applied_migrations(&Lite(conn)))
        })
    }

    fn reader(&self) -> StoreResult<MutexGuard<'_, Connection>> {
        for conn in &self.readers {
            if let Ok(guard) = conn.try_lock() {
                return Ok(guard);
            }
        }
        let i = self.next_reader.fetch_add(1, Ordering::Relaxed) % self.readers.len();
        self.readers[i]
            .lock()
            .map_err(|_| backend("reader connection poisoned"))
    }

    fn read<T>(
        &self,
        span: Span,
        work: impl FnOnce(&Connection) -> StoreResult<T>,
    ) -> StoreResult<T> {
        span.run(|| {
            let conn = self.reader()?;
            work(&conn)
        })
    }

    /// Runs a registry operation on a reader, on this thread.
    async fn read_short<T>(
        &self,
        work: impl AsyncFnOnce(&Lite<'_>) -> StoreResult<T>,
    ) -> StoreResult<T> {
        self.read(Span::Short, |conn| ready(work(&Lite(conn))))
    }

    /// Runs a registry operation on a reader, off the async thread (a long listing).
    async fn read_long<T>(
        &self,
        work: impl AsyncFnOnce(&Lite<'_>) -> StoreResult<T>,
    ) -> StoreResult<T> {
        self.read(Span::Long, |conn| ready(work(&Lite(conn))))
    }

    /// Runs a registry operation in the writer's (shared) transaction, on this thread.
    async fn write_short<T>(
        &self,
        work: impl AsyncFnOnce(&Lite<'_>) -> StoreResult<T>,
    ) -> StoreResult<T> {
        self.write(Span::Short, |tx| ready(work(&Lite(tx)))).await
    }

    /// Runs a registry operation in the writer's (shared) transaction, off the async thread.
    async fn write_long<T>(
        &self,
        work: impl AsyncFnOnce(&Lite<'_>) -> StoreResult<T>,
    ) -> StoreResult<T> {
        self.write(Span::Long, |tx| ready(work(&Lite(tx)))).await
    }

    /// A single-statement write: the same as [`write_short`](Self::write_short).
    async fn write_one<T>(
        &self,
        work: impl AsyncFnOnce(&Lite<'_>) -> StoreResult<T>,
    ) -> StoreResult<T> {
        self.write_short(work).await
    }

    async fn write<T>(
        &self,
        span: Span,
        work: impl FnOnce(&Connection) -> StoreResult<T>,
    ) -> StoreResult<T> {
        sqlite_conn::write_tx_grouped(&self.writer, span, &self.group, work).await
    }
}

/// Writes the counts of repeated refusals taken from `tally` onto their entries.
async fn flush_denials(
    writer: &Arc<sqlite_conn::WriteTurn>,
    group: &Arc<GroupCommit>,
    tally: &DenialTally,
) -> StoreResult<()> {
    let bumps = tally.take();
    if bumps.is_empty() {
        return Ok(());
    }
    sqlite_conn::write_tx_grouped(writer, Span::Short, group, |tx| {
        Ok(ready(ops::bump_denials(&Lite(tx), &bumps))?)
    })
    .await
}

crate::registry_sql::registry_store!(SqliteStore, {
    async fn settled(&self) -> StoreResult<()> {
        self.group.settled().await
    }

    fn only_writer(&self) -> bool {
        true
    }

    async fn record_denied(&self, entry: &AuditEntry, key: &DenialKey) -> StoreResult<()> {
        let schedule_flush = match self.denials.admit(entry, key) {
            Admission::Counted { schedule_flush } => schedule_flush,
            Admission::Append(first) => {
                let (entry, key) = *first;
                match self
                    .write_one(async |tx| ops::record_audit(tx, &entry).await)
                    .await
                {
                    Ok(seq) => self.denials.opened(&key, seq),
                    Err(e) => {
                        self.denials.abandoned(&key);
                        return Err(e);
                    }
                }
            }
        };
        if schedule_flush {
            let (writer, group, tally) = (
                self.writer.clone(),
                self.group.clone(),
                self.denials.clone(),
            );
            let flush = async move {
                tokio::time::sleep(FLUSH_INTERVAL).await;
                if let Err(e) = flush_denials(&writer, &group, &tally).await {
                    tracing::error!(error = %e, "could not count repeated refusals in the audit trail");
                }
            };
            match tokio::runtime::Handle::try_current() {
                Ok(runtime) => drop(runtime.spawn(flush)),
                Err(_) => flush_denials(&self.writer, &self.group, &self.denials).await?,
            }
        }
        Ok(())
    }

    async fn audit_entries(&self, query: &AuditQuery) -> StoreResult<Vec<AuditEntry>> {
        if self.denials.has_pending() {
            flush_denials(&self.writer, &self.group, &self.denials).await?;
        }
        self.read_long(async |tx| ops::audit_entries(tx, query).await)
            .await
    }

    async fn prune_audit(&self, before: i64) -> StoreResult<u64> {
        flush_denials(&self.writer, &self.group, &self.denials).await?;
        self.write_long(async |tx| ops::prune_audit(tx, before).await)
            .await
    }
});
