//! The embedded DEK Registry backend: in the same SQLite file as the registry store, tables
//! `dek_keks` and `dek_deks` with their own migration ledger, `dek_registry_migrations`.

use crate::audit::AuditLine;
use crate::deks::{
    Dek, DekScope, DekStore, Kek, KeyWrite, RestoredKeys, dek_conflict, kek_conflict, props_of,
    props_text,
};
use crate::sqlite_conn::blocking;
use crate::{StoreError, StoreResult};
use async_trait::async_trait;
use rusqlite::{Connection, OptionalExtension, Transaction, params};
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

const MIGRATIONS: &[(i64, &str)] = &[(
    1,
    "CREATE TABLE dek_keks (
        name TEXT PRIMARY KEY,
        kms_type TEXT NOT NULL,
        kms_key_id TEXT NOT NULL,
        kms_props TEXT NOT NULL,
        doc TEXT,
        shared INTEGER NOT NULL,
        ts INTEGER NOT NULL,
        deleted INTEGER NOT NULL
    );
    CREATE TABLE dek_deks (
        kek_name TEXT NOT NULL,
        subject TEXT NOT NULL,
        algorithm TEXT NOT NULL,
        version INTEGER NOT NULL,
        encrypted_key_material TEXT,
        key_material TEXT,
        ts INTEGER NOT NULL,
        deleted INTEGER NOT NULL,
        PRIMARY KEY (kek_name, subject, algorithm, version)
    );",
)];

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

fn now_millis() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

pub struct SqliteDekStore {
    conn: Mutex<Connection>,
}

impl SqliteDekStore {
    /// Opens (and migrates) the key tables in the SQLite file at `path`, usually the registry
    /// store's own file ([`crate::SqliteStore::path`]).
    pub fn open(path: &Path) -> StoreResult<SqliteDekStore> {
        let mut conn = crate::sqlite_conn::open(path).map_err(backend)?;
        crate::sqlite_conn::migrate(&mut conn, "dek_registry_migrations", MIGRATIONS)
            .map_err(backend)?;
        Ok(SqliteDekStore {
            conn: Mutex::new(conn),
        })
    }

    fn conn(&self) -> StoreResult<MutexGuard<'_, Connection>> {
        self.conn
            .lock()
            .map_err(|_| backend("the DEK store connection was poisoned"))
    }

    fn write(
        &self,
        work: impl FnOnce(&Transaction<'_>) -> StoreResult<KeyWrite>,
        audit: AuditLine<'_>,
    ) -> StoreResult<KeyWrite> {
        crate::sqlite_conn::write_tx(
            || self.conn(),
            |tx| {
                let outcome = work(tx)?;
                if outcome == KeyWrite::Done {
                    crate::sqlite::append_line(tx, audit)?;
                }
                Ok(outcome)
            },
        )
    }

    fn read<T>(&self, work: impl FnOnce(&Connection) -> rusqlite::Result<T>) -> StoreResult<T> {
        blocking(|| {
            let conn = self.conn()?;
            work(&conn).map_err(backend)
        })
    }
}

const KEK_COLUMNS: &str = "name, kms_type, kms_key_id, kms_props, doc, shared, ts, deleted";
const DEK_COLUMNS: &str =
    "kek_name, subject, version, algorithm, encrypted_key_material, key_material, ts, deleted";

fn read_kek(r: &rusqlite::Row<'_>) -> rusqlite::Result<Kek> {
    Ok(Kek {
        name: r.get(0)?,
        kms_type: r.get(1)?,
        kms_key_id: r.get(2)?,
        kms_props: props_of(&r.get::<_, String>(3)?),
        doc: r.get(4)?,
        shared: r.get(5)?,
        ts: r.get(6)?,
        deleted: r.get(7)?,
    })
}

fn read_dek(r: &rusqlite::Row<'_>) -> rusqlite::Result<Dek> {
    Ok(Dek {
        kek_name: r.get(0)?,
        subject: r.get(1)?,
        version: r.get(2)?,
        algorithm: r.get(3)?,
        encrypted_key_material: r.get(4)?,
        key_material: r.get(5)?,
        ts: r.get(6)?,
        deleted: r.get(7)?,
    })
}

/// The rows of `scope`: `?1` KEK, `?2` subject, `?3` algorithm, `?4` version or null.
const IN_SCOPE: &str =
    "kek_name = ?1 AND subject = ?2 AND algorithm = ?3 AND (?4 IS NULL OR version = ?4)";

fn count(tx: &Transaction<'_>, sql: &str, p: impl rusqlite::Params) -> StoreResult<i64> {
    tx.query_row(sql, p, |r| r.get(0)).map_err(backend)
}

#[async_trait]
impl DekStore for SqliteDekStore {
    async fn kek(&self, name: &str) -> StoreResult<Option<Kek>> {
        self.read(|c| {
            c.query_row(
                &format!("SELECT {KEK_COLUMNS} FROM dek_keks WHERE name = ?1"),
                [name],
                read_kek,
            )
            .optional()
        })
    }

    async fn kek_names(&self, deleted: bool) -> StoreResult<Vec<String>> {
        self.read(|c| {
            let mut stmt =
                c.prepare("SELECT name FROM dek_keks WHERE ?1 OR deleted = 0 ORDER BY name")?;
            stmt.query_map([deleted], |r| r.get(0))?.collect()
        })
    }

    async fn insert_kek(&self, kek: &Kek, audit: AuditLine<'_>) -> StoreResult<KeyWrite> {
        self.write(
            |tx| {
                let n = tx
                    .execute(
                        &format!(
                            "INSERT INTO dek_keks({KEK_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                             ON CONFLICT(name) DO NOTHING"
                        ),
                        params![
                            kek.name,
                            kek.kms_type,
                            kek.kms_key_id,
                            props_text(&kek.kms_props),
                            kek.doc,
                            kek.shared,
                            kek.ts,
                            kek.deleted
                        ],
                    )
                    .map_err(backend)?;
                Ok(if n == 1 { KeyWrite::Done } else { KeyWrite::Exists })
            },
            audit,
        )
    }

    async fn update_kek(&self, kek: &Kek, audit: AuditLine<'_>) -> StoreResult<KeyWrite> {
        self.write(
            |tx| {
                let n = tx
                    .execute(
                        "UPDATE dek_keks SET kms_type = ?2, kms_key_id = ?3, kms_props = ?4,
                         doc = ?5, shared = ?6, ts = ?7, deleted = ?8 WHERE name = ?1",
                        params![
                            kek.name,
                            kek.kms_type,
                            kek.kms_key_id,
                            props_text(&kek.kms_props),
                            kek.doc,
                            kek.shared,
                            kek.ts,
                            kek.deleted
                        ],
                    )
                    .map_err(backend)?;
                Ok(if n == 1 {
                    KeyWrite::Done
                } else {
                    KeyWrite::Missing
                })
            },
            audit,
        )
    }

    async fn delete_kek(
        &self,
        name: &str,
        permanent: bool,
        audit: AuditLine<'_>,
    ) -> StoreResult<KeyWrite> {
        self.write(
            |tx| {
                let deleted: Option<bool> = tx
                    .query_row(
                        "SELECT deleted FROM dek_keks WHERE name = ?1",
                        [name],
                        |r| r.get(0),
                    )
                    .optional()
                    .map_err(backend)?;
                let Some(deleted) = deleted else {
                    return Ok(KeyWrite::Missing);
                };
                let refs = if permanent {
                    "SELECT COUNT(*) FROM dek_deks WHERE kek_name = ?1"
                } else {
                    "SELECT COUNT(*) FROM dek_deks WHERE kek_name = ?1 AND deleted = 0"
                };
                match (permanent, deleted) {
                    (false, true) => return Ok(KeyWrite::Missing),
                    (true, false) => return Ok(KeyWrite::NotSoftDeleted),
                    _ => {}
                }
                if count(tx, refs, [name])? > 0 {
                    return Ok(KeyWrite::Referenced);
                }
                if permanent {
                    tx.execute("DELETE FROM dek_keks WHERE name = ?1", [name])
                } else {
                    tx.execute(
                        "UPDATE dek_keks SET deleted = 1, ts = ?2 WHERE name = ?1",
                        params![name, now_millis()],
                    )
                }
                .map_err(backend)?;
                Ok(KeyWrite::Done)
            },
            audit,
        )
    }

    async fn undelete_kek(&self, name: &str, audit: AuditLine<'_>) -> StoreResult<KeyWrite> {
        self.write(
            |tx| {
                let n = tx
                    .execute(
                        "UPDATE dek_keks SET deleted = 0, ts = ?2 WHERE name = ?1 AND deleted = 1",
                        params![name, now_millis()],
                    )
                    .map_err(backend)?;
                Ok(if n == 1 {
                    KeyWrite::Done
                } else {
                    KeyWrite::Missing
                })
            },
            audit,
        )
    }

    async fn dek(
        &self,
        kek_name: &str,
        subject: &str,
        algorithm: &str,
        version: Option<i64>,
        deleted: bool,
    ) -> StoreResult<Option<Dek>> {
        self.read(|c| {
            c.query_row(
                &format!(
                    "SELECT {DEK_COLUMNS} FROM dek_deks WHERE {IN_SCOPE} AND (?5 OR deleted = 0)
                     ORDER BY version DESC LIMIT 1"
                ),
                params![kek_name, subject, algorithm, version, deleted],
                read_dek,
            )
            .optional()
        })
    }

    async fn dek_subjects(&self, kek_name: &str, deleted: bool) -> StoreResult<Vec<String>> {
        self.read(|c| {
            let mut stmt = c.prepare(
                "SELECT DISTINCT subject FROM dek_deks WHERE kek_name = ?1 AND (?2 OR deleted = 0)
                 ORDER BY subject",
            )?;
            stmt.query_map(params![kek_name, deleted], |r| r.get(0))?
                .collect()
        })
    }

    async fn dek_versions(
        &self,
        kek_name: &str,
        subject: &str,
        algorithm: &str,
        deleted: bool,
    ) -> StoreResult<Vec<i64>> {
        self.read(|c| {
            let mut stmt = c.prepare(
                "SELECT version FROM dek_deks WHERE kek_name = ?1 AND subject = ?2
                 AND algorithm = ?3 AND (?4 OR deleted = 0) ORDER BY version",
            )?;
            stmt.query_map(params![kek_name, subject, algorithm, deleted], |r| r.get(0))?
                .collect()
        })
    }

    async fn insert_dek(&self, dek: &Dek, audit: AuditLine<'_>) -> StoreResult<KeyWrite> {
        self.write(
            |tx| {
                let live = count(
                    tx,
                    "SELECT COUNT(*) FROM dek_keks WHERE name = ?1 AND deleted = 0",
                    [&dek.kek_name],
                )?;
                if live == 0 {
                    return Ok(KeyWrite::KekMissing);
                }
                let n = tx
                    .execute(
                        &format!(
                            "INSERT INTO dek_deks({DEK_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                             ON CONFLICT DO NOTHING"
                        ),
                        params![
                            dek.kek_name,
                            dek.subject,
                            dek.version,
                            dek.algorithm,
                            dek.encrypted_key_material,
                            dek.key_material,
                            dek.ts,
                            dek.deleted
                        ],
                    )
                    .map_err(backend)?;
                Ok(if n == 1 { KeyWrite::Done } else { KeyWrite::Exists })
            },
            audit,
        )
    }

    async fn delete_deks(
        &self,
        scope: DekScope<'_>,
        permanent: bool,
        audit: AuditLine<'_>,
    ) -> StoreResult<KeyWrite> {
        let key = params![
            scope.kek_name,
            scope.subject,
            scope.algorithm,
            scope.version
        ];
        self.write(
            |tx| {
                let live = count(
                    tx,
                    &format!("SELECT COUNT(*) FROM dek_deks WHERE {IN_SCOPE} AND deleted = 0"),
                    key,
                )?;
                if !permanent {
                    if live == 0 {
                        return Ok(KeyWrite::Missing);
                    }
                    tx.execute(
                        &format!(
                            "UPDATE dek_deks SET deleted = 1, ts = ?5 WHERE {IN_SCOPE} AND deleted = 0"
                        ),
                        params![
                            scope.kek_name,
                            scope.subject,
                            scope.algorithm,
                            scope.version,
                            now_millis()
                        ],
                    )
                    .map_err(backend)?;
                    return Ok(KeyWrite::Done);
                }
                if live > 0 {
                    return Ok(KeyWrite::NotSoftDeleted);
                }
                let n = tx
                    .execute(&format!("DELETE FROM dek_deks WHERE {IN_SCOPE}"), key)
                    .map_err(backend)?;
                Ok(if n > 0 { KeyWrite::Done } else { KeyWrite::Missing })
            },
            audit,
        )
    }

    async fn undelete_deks(
        &self,
        scope: DekScope<'_>,
        audit: AuditLine<'_>,
    ) -> StoreResult<KeyWrite> {
        self.write(
            |tx| {
                let n = tx
                    .execute(
                        &format!(
                            "UPDATE dek_deks SET deleted = 0, ts = ?5 WHERE {IN_SCOPE} AND deleted = 1"
                        ),
                        params![
                            scope.kek_name,
                            scope.subject,
                            scope.algorithm,
                            scope.version,
                            now_millis()
                        ],
                    )
                    .map_err(backend)?;
                Ok(if n > 0 { KeyWrite::Done } else { KeyWrite::Missing })
            },
            audit,
        )
    }

    async fn restore_keys(&self, keks: &[Kek], deks: &[Dek]) -> StoreResult<RestoredKeys> {
        crate::sqlite_conn::write_tx(
            || self.conn(),
            |tx| {
                let mut restored = RestoredKeys::default();
                for k in keks {
                    let n = tx
                        .execute(
                            &format!(
                                "INSERT INTO dek_keks({KEK_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                                 ON CONFLICT(name) DO NOTHING"
                            ),
                            params![
                                k.name,
                                k.kms_type,
                                k.kms_key_id,
                                props_text(&k.kms_props),
                                k.doc,
                                k.shared,
                                k.ts,
                                k.deleted
                            ],
                        )
                        .map_err(backend)?;
                    if n == 1 {
                        restored.written += 1;
                        continue;
                    }
                    let held = tx
                        .query_row(
                            &format!("SELECT {KEK_COLUMNS} FROM dek_keks WHERE name = ?1"),
                            [&k.name],
                            read_kek,
                        )
                        .map_err(backend)?;
                    if &held != k {
                        restored.conflicts.push(kek_conflict(k));
                    }
                }
                for d in deks {
                    let n = tx
                        .execute(
                            &format!(
                                "INSERT INTO dek_deks({DEK_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8)
                                 ON CONFLICT DO NOTHING"
                            ),
                            params![
                                d.kek_name,
                                d.subject,
                                d.version,
                                d.algorithm,
                                d.encrypted_key_material,
                                d.key_material,
                                d.ts,
                                d.deleted
                            ],
                        )
                        .map_err(backend)?;
                    if n == 1 {
                        restored.written += 1;
                        continue;
                    }
                    let held = tx
                        .query_row(
                            &format!("SELECT {DEK_COLUMNS} FROM dek_deks WHERE {IN_SCOPE}"),
                            params![d.kek_name, d.subject, d.algorithm, d.version],
                            read_dek,
                        )
                        .map_err(backend)?;
                    if &held != d {
                        restored.conflicts.push(dek_conflict(d));
                    }
                }
                Ok(restored)
            },
        )
    }

    async fn all_keys(&self) -> StoreResult<(Vec<Kek>, Vec<Dek>)> {
        self.read(|c| {
            let keks = c
                .prepare(&format!("SELECT {KEK_COLUMNS} FROM dek_keks ORDER BY name"))?
                .query_map([], read_kek)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            let deks = c
                .prepare(&format!(
                    "SELECT {DEK_COLUMNS} FROM dek_deks ORDER BY kek_name, subject, algorithm, version"
                ))?
                .query_map([], read_dek)?
                .collect::<rusqlite::Result<Vec<_>>>()?;
            Ok((keks, deks))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_shared_suite_passes_and_data_survives_reopening() {
        let dir = tempfile::tempdir().expect("tempdir");
        let registry = crate::SqliteStore::open(dir.path()).expect("open registry store");
        let ledger = registry.applied_migrations().expect("migrations");
        let store = SqliteDekStore::open(registry.path()).expect("open");
        crate::deks::suite::run(&store).await;
        let kek = Kek {
            name: "kept".into(),
            kms_type: "local-kms".into(),
            kms_key_id: "k".into(),
            kms_props: Default::default(),
            doc: None,
            shared: false,
            ts: 1,
            deleted: false,
        };
        assert_eq!(
            store.insert_kek(&kek, None).await.expect("insert"),
            KeyWrite::Done
        );
        drop(store);
        let reopened = SqliteDekStore::open(registry.path()).expect("reopen");
        assert_eq!(reopened.kek("kept").await.expect("kek"), Some(kek));
        assert_eq!(
            registry.applied_migrations().expect("migrations"),
            ledger,
            "the registry's ledger is untouched"
        );
    }
}
