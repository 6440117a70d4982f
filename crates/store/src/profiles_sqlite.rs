//! The embedded profile backend: in the same SQLite file as the registry store (WAL,
//! `synchronous=FULL`) with its own table, `prf_profiles`, and its own migration ledger,
//! `profiles_migrations`, so it evolves independently of the registry and sample tables.

use crate::audit::AuditLine;
use crate::profiles::{NewProfile, ProfileRecord, ProfileStore, RestoredProfiles};
use crate::sqlite_conn::blocking;
use crate::{StoreError, StoreResult};
use async_trait::async_trait;
use rusqlite::{Connection, params};
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

const MIGRATIONS: &[(i64, &str)] = &[(
    1,
    "CREATE TABLE prf_profiles (
        id INTEGER PRIMARY KEY AUTOINCREMENT,
        subject TEXT NOT NULL,
        window_from INTEGER NOT NULL,
        window_to INTEGER NOT NULL,
        records INTEGER NOT NULL,
        document TEXT NOT NULL,
        created_at INTEGER NOT NULL
    );
    CREATE INDEX prf_profiles_subject ON prf_profiles(subject, window_to, id);",
)];

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

fn now_millis() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

pub struct SqliteProfileStore {
    conn: Mutex<Connection>,
}

impl SqliteProfileStore {
    /// Opens (and migrates) the profile table in the SQLite file at `path`, usually the
    /// registry store's own file ([`crate::SqliteStore::path`]).
    pub fn open(path: &Path) -> StoreResult<SqliteProfileStore> {
        let mut conn = crate::sqlite_conn::open(path).map_err(backend)?;
        crate::sqlite_conn::migrate(&mut conn, "profiles_migrations", MIGRATIONS)
            .map_err(backend)?;
        Ok(SqliteProfileStore {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> StoreResult<MutexGuard<'_, Connection>> {
        self.conn
            .lock()
            .map_err(|_| backend("the profile store connection was poisoned"))
    }

    /// Runs `work` in an immediate transaction that commits when it returns `Ok`.
    fn write<T>(
        &self,
        work: impl FnOnce(&rusqlite::Transaction<'_>) -> StoreResult<T>,
    ) -> StoreResult<T> {
        crate::sqlite_conn::write_tx(|| self.conn(), work)
    }
}

const PROFILE_COLUMNS: &str = "id, subject, window_from, window_to, records, document, created_at";

fn read_profile(r: &rusqlite::Row<'_>) -> rusqlite::Result<ProfileRecord> {
    Ok(ProfileRecord {
        id: r.get(0)?,
        subject: r.get(1)?,
        window_from: r.get(2)?,
        window_to: r.get(3)?,
        records: r.get(4)?,
        document: r.get(5)?,
        created_at: r.get(6)?,
    })
}

impl SqliteProfileStore {
    fn query_profiles(
        &self,
        sql: &str,
        params: impl rusqlite::Params,
    ) -> StoreResult<Vec<ProfileRecord>> {
        blocking(|| {
            let conn = self.conn()?;
            let mut stmt = conn.prepare(sql).map_err(backend)?;
            stmt.query_map(params, read_profile)
                .map_err(backend)?
                .collect::<rusqlite::Result<Vec<_>>>()
                .map_err(backend)
        })
    }
}

#[async_trait]
impl ProfileStore for SqliteProfileStore {
    async fn add_profile(
        &self,
        profile: &NewProfile,
        audit: AuditLine<'_>,
    ) -> StoreResult<ProfileRecord> {
        self.write(|tx| {
            let at = now_millis();
            tx.execute(
                "INSERT INTO prf_profiles(subject, window_from, window_to, records, document, created_at)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6)",
                params![
                    profile.subject,
                    profile.window_from,
                    profile.window_to,
                    profile.records,
                    profile.document,
                    at
                ],
            )
            .map_err(backend)?;
            let id = tx.last_insert_rowid();
            crate::sqlite::append_line(tx, audit)?;
            Ok(ProfileRecord {
                id,
                subject: profile.subject.clone(),
                window_from: profile.window_from,
                window_to: profile.window_to,
                records: profile.records,
                document: profile.document.clone(),
                created_at: at,
            })
        })
    }

    async fn profiles(
        &self,
        subject: &str,
        offset: i64,
        limit: i64,
    ) -> StoreResult<Vec<ProfileRecord>> {
        self.query_profiles(
            &format!(
                "SELECT {PROFILE_COLUMNS} FROM prf_profiles WHERE subject = ?1
                 ORDER BY window_to, id LIMIT ?3 OFFSET ?2"
            ),
            params![subject, offset, limit],
        )
    }

    async fn profile(&self, subject: &str, id: i64) -> StoreResult<Option<ProfileRecord>> {
        let found = self.query_profiles(
            &format!("SELECT {PROFILE_COLUMNS} FROM prf_profiles WHERE subject = ?1 AND id = ?2"),
            params![subject, id],
        )?;
        Ok(found.into_iter().next())
    }

    async fn delete_profiles(&self, subject: &str) -> StoreResult<usize> {
        self.write(|tx| {
            tx.execute("DELETE FROM prf_profiles WHERE subject = ?1", [subject])
                .map_err(backend)
        })
    }

    async fn all_profiles(&self) -> StoreResult<Vec<ProfileRecord>> {
        self.query_profiles(
            &format!("SELECT {PROFILE_COLUMNS} FROM prf_profiles ORDER BY id"),
            [],
        )
    }

    async fn restore_profiles(&self, profiles: &[ProfileRecord]) -> StoreResult<RestoredProfiles> {
        self.write(|tx| {
            let mut restored = RestoredProfiles::default();
            for p in profiles {
                let written = tx
                    .execute(
                        "INSERT INTO prf_profiles(id, subject, window_from, window_to, records, document, created_at)
                         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) ON CONFLICT(id) DO NOTHING",
                        params![p.id, p.subject, p.window_from, p.window_to, p.records, p.document, p.created_at],
                    )
                    .map_err(backend)?;
                if written == 1 {
                    restored.written += 1;
                    continue;
                }
                let held = tx
                    .query_row(
                        &format!("SELECT {PROFILE_COLUMNS} FROM prf_profiles WHERE id = ?1"),
                        [p.id],
                        read_profile,
                    )
                    .map_err(backend)?;
                if &held != p {
                    restored.conflicts.push(p.id);
                }
            }
            Ok(restored)
        })
    }

    async fn latest_profiles(&self, subject: Option<&str>) -> StoreResult<Vec<ProfileRecord>> {
        self.query_profiles(
            &format!(
                "SELECT {PROFILE_COLUMNS} FROM prf_profiles p {}",
                latest('?')
            ),
            [subject],
        )
    }
}

/// Keeps, per subject (of every subject, or of parameter 1), the profile with the latest
/// window (the highest id among equals).
pub(crate) fn latest(marker: char) -> String {
    let cast = if marker == '$' { "::TEXT" } else { "" };
    format!(
        "WHERE ({marker}1{cast} IS NULL OR p.subject = {marker}1) AND p.id = (SELECT q.id
         FROM prf_profiles q WHERE q.subject = p.subject
         ORDER BY q.window_to DESC, q.id DESC LIMIT 1)
         ORDER BY p.subject"
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_shared_suite_passes_and_data_survives_reopening() {
        let dir = tempfile::tempdir().expect("tempdir");
        let registry = crate::SqliteStore::open(dir.path()).expect("open registry store");
        let ledger = registry.applied_migrations().expect("migrations");
        let store = SqliteProfileStore::open(registry.path()).expect("open");
        crate::profiles::suite::run(&store).await;
        drop(store);
        let reopened = SqliteProfileStore::open(registry.path()).expect("reopen");
        assert_eq!(reopened.profiles("q", 0, 10).await.expect("list").len(), 1);
        assert_eq!(
            registry.applied_migrations().expect("migrations"),
            ledger,
            "the registry's ledger is untouched"
        );
    }
}
