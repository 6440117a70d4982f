//! The shared DEK Registry backend: the same tables as the embedded one, in the registry's
//! PostgreSQL database, with their own migration ledger (`dek_registry_migrations`). Writes
//! that depend on a KEK's row lock it first (`FOR UPDATE`), so a DEK cannot be created under
//! a KEK another node is deleting.

use crate::audit::AuditLine;
use crate::deks::{
    Dek, DekScope, DekStore, Kek, KeyWrite, RestoredKeys, dek_conflict, kek_conflict, props_of,
    props_text,
};
use crate::pg_pool::LazyTables;
use crate::postgres::append_line;
use crate::{StoreError, StoreResult};
use async_trait::async_trait;
use deadpool_postgres::Transaction;

const MIGRATIONS: &[(i64, &str)] = &[(
    1,
    "CREATE TABLE dek_keks (
        name TEXT COLLATE \"C\" PRIMARY KEY,
        kms_type TEXT NOT NULL,
        kms_key_id TEXT NOT NULL,
        kms_props TEXT NOT NULL,
        doc TEXT,
        shared BOOLEAN NOT NULL,
        ts BIGINT NOT NULL,
        deleted BOOLEAN NOT NULL
    );
    CREATE TABLE dek_deks (
        kek_name TEXT COLLATE \"C\" NOT NULL,
        subject TEXT COLLATE \"C\" NOT NULL,
        algorithm TEXT NOT NULL,
        version BIGINT NOT NULL,
        encrypted_key_material TEXT,
        key_material TEXT,
        ts BIGINT NOT NULL,
        deleted BOOLEAN NOT NULL,
        PRIMARY KEY (kek_name, subject, algorithm, version)
    );",
)];

/// Advisory lock namespace of the migrations (first key of the two-key form), distinct from
/// the other stores'.
const LOCK_MIGRATIONS: i32 = 0x436f_0401;

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

fn now_millis() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

pub struct PostgresDekStore {
    tables: LazyTables,
}

impl PostgresDekStore {
    /// Connects to `url` (`postgres://user@host:port/db`) and applies the migrations.
    pub async fn connect(url: &str) -> StoreResult<PostgresDekStore> {
        let store = PostgresDekStore::open_lazy(url)?;
        drop(store.tables.client().await?);
        Ok(store)
    }

    /// Like [`connect`](Self::connect), without connecting yet: migrations run on the first
    /// operation that reaches the database.
    pub fn open_lazy(url: &str) -> StoreResult<PostgresDekStore> {
        Ok(PostgresDekStore {
            tables: LazyTables::open(url, "dek_registry_migrations", LOCK_MIGRATIONS, MIGRATIONS)?,
        })
    }

    /// A transaction on a pooled connection.
    async fn client(&self) -> StoreResult<deadpool_postgres::Object> {
        self.tables.client().await
    }
}

const KEK_COLUMNS: &str = "name, kms_type, kms_key_id, kms_props, doc, shared, ts, deleted";
const DEK_COLUMNS: &str =
    "kek_name, subject, version, algorithm, encrypted_key_material, key_material, ts, deleted";

fn kek_of(r: &tokio_postgres::Row) -> StoreResult<Kek> {
    Ok(Kek {
        name: r.try_get(0).map_err(backend)?,
        kms_type: r.try_get(1).map_err(backend)?,
        kms_key_id: r.try_get(2).map_err(backend)?,
        kms_props: props_of(r.try_get(3).map_err(backend)?),
        doc: r.try_get(4).map_err(backend)?,
        shared: r.try_get(5).map_err(backend)?,
        ts: r.try_get(6).map_err(backend)?,
        deleted: r.try_get(7).map_err(backend)?,
    })
}

fn dek_of(r: &tokio_postgres::Row) -> StoreResult<Dek> {
    Ok(Dek {
        kek_name: r.try_get(0).map_err(backend)?,
        subject: r.try_get(1).map_err(backend)?,
        version: r.try_get(2).map_err(backend)?,
        algorithm: r.try_get(3).map_err(backend)?,
        encrypted_key_material: r.try_get(4).map_err(backend)?,
        key_material: r.try_get(5).map_err(backend)?,
        ts: r.try_get(6).map_err(backend)?,
        deleted: r.try_get(7).map_err(backend)?,
    })
}

/// The rows of `scope`: `$1` KEK, `$2` subject, `$3` algorithm, `$4` version or null.
const IN_SCOPE: &str = "kek_name = $1 AND subject = $2 AND algorithm = $3
    AND ($4::BIGINT IS NULL OR version = $4)";

/// Whether the KEK is soft-deleted, locking its row; `None` when there is none.
async fn lock_kek(tx: &Transaction<'_>, name: &str) -> StoreResult<Option<bool>> {
    let row = tx
        .query_opt(
            "SELECT deleted FROM dek_keks WHERE name = $1 FOR UPDATE",
            &[&name],
        )
        .await
        .map_err(backend)?;
    row.map(|r| r.try_get(0).map_err(backend)).transpose()
}

/// Names the result type of a write's work, which its early returns leave open.
fn in_tx<F: std::future::Future<Output = StoreResult<KeyWrite>>>(work: F) -> F {
    work
}

/// Appends `audit` when `outcome` is [`KeyWrite::Done`], and commits.
async fn finish(
    tx: Transaction<'_>,
    outcome: KeyWrite,
    audit: AuditLine<'_>,
) -> StoreResult<KeyWrite> {
    if outcome == KeyWrite::Done {
        append_line(&tx, audit).await?;
    }
    tx.commit().await.map_err(backend)?;
    Ok(outcome)
}

async fn count(
    tx: &Transaction<'_>,
    sql: &str,
    p: &[&(dyn tokio_postgres::types::ToSql + Sync)],
) -> StoreResult<i64> {
    let row = tx.query_one(sql, p).await.map_err(backend)?;
    row.try_get(0).map_err(backend)
}

#[async_trait]
impl DekStore for PostgresDekStore {
    async fn kek(&self, name: &str) -> StoreResult<Option<Kek>> {
        let client = self.tables.client().await?;
        let row = client
            .query_opt(
                &format!("SELECT {KEK_COLUMNS} FROM dek_keks WHERE name = $1"),
                &[&name],
            )
            .await
            .map_err(backend)?;
        row.as_ref().map(kek_of).transpose()
    }

    async fn kek_names(&self, deleted: bool) -> StoreResult<Vec<String>> {
        let client = self.tables.client().await?;
        let rows = client
            .query(
                "SELECT name FROM dek_keks WHERE $1 OR NOT deleted ORDER BY name",
                &[&deleted],
            )
            .await
            .map_err(backend)?;
        rows.iter().map(|r| r.try_get(0).map_err(backend)).collect()
    }

    async fn insert_kek(&self, kek: &Kek, audit: AuditLine<'_>) -> StoreResult<KeyWrite> {
        let props = props_text(&kek.kms_props);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        let outcome = in_tx(async {
            let n = tx
                .execute(
                    &format!(
                        "INSERT INTO dek_keks({KEK_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                         ON CONFLICT (name) DO NOTHING"
                    ),
                    &kek_params(kek, &props),
                )
                .await
                .map_err(backend)?;
            Ok(if n == 1 {
                KeyWrite::Done
            } else {
                KeyWrite::Exists
            })
        })
        .await?;
        finish(tx, outcome, audit).await
    }

    async fn update_kek(&self, kek: &Kek, audit: AuditLine<'_>) -> StoreResult<KeyWrite> {
        let props = props_text(&kek.kms_props);
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        let outcome = in_tx(async {
            let n = tx
                .execute(
                    "UPDATE dek_keks SET kms_type = $2, kms_key_id = $3, kms_props = $4,
                     doc = $5, shared = $6, ts = $7, deleted = $8 WHERE name = $1",
                    &kek_params(kek, &props),
                )
                .await
                .map_err(backend)?;
            Ok(if n == 1 {
                KeyWrite::Done
            } else {
                KeyWrite::Missing
            })
        })
        .await?;
        finish(tx, outcome, audit).await
    }

    async fn delete_kek(
        &self,
        name: &str,
        permanent: bool,
        audit: AuditLine<'_>,
    ) -> StoreResult<KeyWrite> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        let outcome = in_tx(async {
            let Some(deleted) = lock_kek(&tx, name).await? else {
                return Ok(KeyWrite::Missing);
            };
            match (permanent, deleted) {
                (false, true) => return Ok(KeyWrite::Missing),
                (true, false) => return Ok(KeyWrite::NotSoftDeleted),
                _ => {}
            }
            let refs = if permanent {
                "SELECT COUNT(*) FROM dek_deks WHERE kek_name = $1"
            } else {
                "SELECT COUNT(*) FROM dek_deks WHERE kek_name = $1 AND NOT deleted"
            };
            if count(&tx, refs, &[&name]).await? > 0 {
                return Ok(KeyWrite::Referenced);
            }
            if permanent {
                tx.execute("DELETE FROM dek_keks WHERE name = $1", &[&name])
                    .await
            } else {
                tx.execute(
                    "UPDATE dek_keks SET deleted = TRUE, ts = $2 WHERE name = $1",
                    &[&name, &now_millis()],
                )
                .await
            }
            .map_err(backend)?;
            Ok(KeyWrite::Done)
        })
        .await?;
        finish(tx, outcome, audit).await
    }

    async fn undelete_kek(&self, name: &str, audit: AuditLine<'_>) -> StoreResult<KeyWrite> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        let outcome = in_tx(async {
            let n = tx
                .execute(
                    "UPDATE dek_keks SET deleted = FALSE, ts = $2 WHERE name = $1 AND deleted",
                    &[&name, &now_millis()],
                )
                .await
                .map_err(backend)?;
            Ok(if n == 1 {
                KeyWrite::Done
            } else {
                KeyWrite::Missing
            })
        })
        .await?;
        finish(tx, outcome, audit).await
    }

    async fn dek(
        &self,
        kek_name: &str,
        subject: &str,
        algorithm: &str,
        version: Option<i64>,
        deleted: bool,
    ) -> StoreResult<Option<Dek>> {
        let client = self.tables.client().await?;
        let row = client
            .query_opt(
                &format!(
                    "SELECT {DEK_COLUMNS} FROM dek_deks WHERE {IN_SCOPE} AND ($5 OR NOT deleted)
                     ORDER BY version DESC LIMIT 1"
                ),
                &[&kek_name, &subject, &algorithm, &version, &deleted],
            )
            .await
            .map_err(backend)?;
        row.as_ref().map(dek_of).transpose()
    }

    async fn dek_subjects(&self, kek_name: &str, deleted: bool) -> StoreResult<Vec<String>> {
        let client = self.tables.client().await?;
        let rows = client
            .query(
                "SELECT DISTINCT subject FROM dek_deks WHERE kek_name = $1 AND ($2 OR NOT deleted)
                 ORDER BY subject",
                &[&kek_name, &deleted],
            )
            .await
            .map_err(backend)?;
        rows.iter().map(|r| r.try_get(0).map_err(backend)).collect()
    }

    async fn dek_versions(
        &self,
        kek_name: &str,
        subject: &str,
        algorithm: &str,
        deleted: bool,
    ) -> StoreResult<Vec<i64>> {
        let client = self.tables.client().await?;
        let rows = client
            .query(
                "SELECT version FROM dek_deks WHERE kek_name = $1 AND subject = $2
                 AND algorithm = $3 AND ($4 OR NOT deleted) ORDER BY version",
                &[&kek_name, &subject, &algorithm, &deleted],
            )
            .await
            .map_err(backend)?;
        rows.iter().map(|r| r.try_get(0).map_err(backend)).collect()
    }

    async fn insert_dek(&self, dek: &Dek, audit: AuditLine<'_>) -> StoreResult<KeyWrite> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        let outcome = in_tx(async {
            if lock_kek(&tx, &dek.kek_name).await? != Some(false) {
                return Ok(KeyWrite::KekMissing);
            }
            let n = tx
                .execute(
                    &format!(
                        "INSERT INTO dek_deks({DEK_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                         ON CONFLICT DO NOTHING"
                    ),
                    &[
                        &dek.kek_name,
                        &dek.subject,
                        &dek.version,
                        &dek.algorithm,
                        &dek.encrypted_key_material,
                        &dek.key_material,
                        &dek.ts,
                        &dek.deleted,
                    ],
                )
                .await
                .map_err(backend)?;
            Ok(if n == 1 {
                KeyWrite::Done
            } else {
                KeyWrite::Exists
            })
        })
        .await?;
        finish(tx, outcome, audit).await
    }

    async fn delete_deks(
        &self,
        scope: DekScope<'_>,
        permanent: bool,
        audit: AuditLine<'_>,
    ) -> StoreResult<KeyWrite> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        let outcome = in_tx(async {
            lock_kek(&tx, scope.kek_name).await?;
            let key: [&(dyn tokio_postgres::types::ToSql + Sync); 4] = [
                &scope.kek_name,
                &scope.subject,
                &scope.algorithm,
                &scope.version,
            ];
            let live = count(
                &tx,
                &format!("SELECT COUNT(*) FROM dek_deks WHERE {IN_SCOPE} AND NOT deleted"),
                &key,
            )
            .await?;
            if !permanent {
                if live == 0 {
                    return Ok(KeyWrite::Missing);
                }
                tx.execute(
                    &format!(
                        "UPDATE dek_deks SET deleted = TRUE, ts = $5 WHERE {IN_SCOPE} AND NOT deleted"
                    ),
                    &[
                        &scope.kek_name,
                        &scope.subject,
                        &scope.algorithm,
                        &scope.version,
                        &now_millis(),
                    ],
                )
                .await
                .map_err(backend)?;
                return Ok(KeyWrite::Done);
            }
            if live > 0 {
                return Ok(KeyWrite::NotSoftDeleted);
            }
            let n = tx
                .execute(&format!("DELETE FROM dek_deks WHERE {IN_SCOPE}"), &key)
                .await
                .map_err(backend)?;
            Ok(if n > 0 { KeyWrite::Done } else { KeyWrite::Missing })})
        .await?;
        finish(tx, outcome, audit).await
    }

    async fn undelete_deks(
        &self,
        scope: DekScope<'_>,
        audit: AuditLine<'_>,
    ) -> StoreResult<KeyWrite> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        let outcome = in_tx(async {
            let n = tx
                .execute(
                    &format!(
                        "UPDATE dek_deks SET deleted = FALSE, ts = $5 WHERE {IN_SCOPE} AND deleted"
                    ),
                    &[
                        &scope.kek_name,
                        &scope.subject,
                        &scope.algorithm,
                        &scope.version,
                        &now_millis(),
                    ],
                )
                .await
                .map_err(backend)?;
            Ok(if n > 0 {
                KeyWrite::Done
            } else {
                KeyWrite::Missing
            })
        })
        .await?;
        finish(tx, outcome, audit).await
    }

    async fn restore_keys(&self, keks: &[Kek], deks: &[Dek]) -> StoreResult<RestoredKeys> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        let mut restored = RestoredKeys::default();
        for k in keks {
            let props = props_text(&k.kms_props);
            let n = tx
                .execute(
                    &format!(
                        "INSERT INTO dek_keks({KEK_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                         ON CONFLICT (name) DO NOTHING"
                    ),
                    &kek_params(k, &props),
                )
                .await
                .map_err(backend)?;
            if n == 1 {
                restored.written += 1;
                continue;
            }
            let held = tx
                .query_one(
                    &format!("SELECT {KEK_COLUMNS} FROM dek_keks WHERE name = $1"),
                    &[&k.name],
                )
                .await
                .map_err(backend)?;
            if &kek_of(&held)? != k {
                restored.conflicts.push(kek_conflict(k));
            }
        }
        for d in deks {
            let n = tx
                .execute(
                    &format!(
                        "INSERT INTO dek_deks({DEK_COLUMNS}) VALUES ($1, $2, $3, $4, $5, $6, $7, $8)
                         ON CONFLICT DO NOTHING"
                    ),
                    &[
                        &d.kek_name,
                        &d.subject,
                        &d.version,
                        &d.algorithm,
                        &d.encrypted_key_material,
                        &d.key_material,
                        &d.ts,
                        &d.deleted,
                    ],
                )
                .await
                .map_err(backend)?;
            if n == 1 {
                restored.written += 1;
                continue;
            }
            let held = tx
                .query_one(
                    &format!("SELECT {DEK_COLUMNS} FROM dek_deks WHERE {IN_SCOPE}"),
                    &[&d.kek_name, &d.subject, &d.algorithm, &Some(d.version)],
                )
                .await
                .map_err(backend)?;
            if &dek_of(&held)? != d {
                restored.conflicts.push(dek_conflict(d));
            }
        }
        tx.commit().await.map_err(backend)?;
        Ok(restored)
    }

    async fn all_keys(&self) -> StoreResult<(Vec<Kek>, Vec<Dek>)> {
        let client = self.tables.client().await?;
        let keks = client
            .query(
                &format!("SELECT {KEK_COLUMNS} FROM dek_keks ORDER BY name"),
                &[],
            )
            .await
            .map_err(backend)?;
        let deks = client
            .query(
                &format!(
                    "SELECT {DEK_COLUMNS} FROM dek_deks ORDER BY kek_name, subject, algorithm, version"
                ),
                &[],
            )
            .await
            .map_err(backend)?;
        Ok((
            keks.iter().map(kek_of).collect::<StoreResult<_>>()?,
            deks.iter().map(dek_of).collect::<StoreResult<_>>()?,
        ))
    }
}

/// A KEK's columns in `KEK_COLUMNS` order (`props`: its `kms_props` as stored text), the
/// parameters of both its insert and its update.
fn kek_params<'a>(
    kek: &'a Kek,
    props: &'a String,
) -> [&'a (dyn tokio_postgres::types::ToSql + Sync); 8] {
    [
        &kek.name,
        &kek.kms_type,
        &kek.kms_key_id,
        props,
        &kek.doc,
        &kek.shared,
        &kek.ts,
        &kek.deleted,
    ]
}
