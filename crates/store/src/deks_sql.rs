//! The DEK Registry store written once: its tables (`dek_keks`, `dek_deks`, ledger
//! `dek_registry_migrations`) and each operation over a [`Tx`], for
//! [`crate::deks_sqlite`] and [`crate::deks_postgres`] to run in their transactions.
//!
//! Writes that depend on a KEK's row lock it first (`FOR UPDATE` on PostgreSQL), so a DEK
//! cannot be created under a KEK another node is deleting.

use crate::audit::AuditLine;
use crate::deks::{
    Dek, DekScope, Kek, KeyWrite, RestoredKeys, dek_conflict, kek_conflict, props_of, props_text,
};
use crate::sql::{DbResult, Row, Tx, Value, args};
use crate::{StoreResult, sql};

pub(crate) const MIGRATIONS: &[(i64, &str)] = &[(
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

const KEK_COLUMNS: &str = "name, kms_type, kms_key_id, kms_props, doc, shared, ts, deleted";
const DEK_COLUMNS: &str =
    "kek_name, subject, version, algorithm, encrypted_key_material, key_material, ts, deleted";

/// The rows of a scope: `?1` KEK, `?2` subject, `?3` algorithm, `?4` version or null.
const IN_SCOPE: &str = "kek_name = ?1 AND subject = ?2 AND algorithm = ?3 \
                        AND (CAST(?4 AS BIGINT) IS NULL OR version = ?4)";

fn now_millis() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

fn kek_of(r: &mut Row) -> DbResult<Kek> {
    Ok(Kek {
        name: r.get(0)?,
        kms_type: r.get(1)?,
        kms_key_id: r.get(2)?,
        kms_props: props_of(&r.get::<String>(3)?),
        doc: r.get(4)?,
        shared: r.get(5)?,
        ts: r.get(6)?,
        deleted: r.get(7)?,
    })
}

fn dek_of(r: &mut Row) -> DbResult<Dek> {
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

/// A KEK's columns in [`KEK_COLUMNS`] order: the parameters of its insert and its update.
fn kek_params(k: &Kek) -> [Value<'_>; 8] {
    [
        Value::from(&k.name),
        Value::from(&k.kms_type),
        Value::from(&k.kms_key_id),
        Value::from(props_text(&k.kms_props)),
        Value::from(&k.doc),
        Value::from(k.shared),
        Value::from(k.ts),
        Value::from(k.deleted),
    ]
}

/// A DEK's columns in [`DEK_COLUMNS`] order.
fn dek_params(d: &Dek) -> [Value<'_>; 8] {
    [
        Value::from(&d.kek_name),
        Value::from(&d.subject),
        Value::from(d.version),
        Value::from(&d.algorithm),
        Value::from(&d.encrypted_key_material),
        Value::from(&d.key_material),
        Value::from(d.ts),
        Value::from(d.deleted),
    ]
}

fn scope_params<'a>(scope: &DekScope<'a>) -> [Value<'a>; 4] {
    [
        Value::from(scope.kek_name),
        Value::from(scope.subject),
        Value::from(scope.algorithm),
        Value::from(scope.version),
    ]
}

/// Appends the entry when the write was done.
async fn finish(tx: &impl Tx, outcome: KeyWrite, audit: AuditLine<'_>) -> StoreResult<KeyWrite> {
    if outcome == KeyWrite::Done {
        sql::audit::append(tx, audit).await?;
    }
    Ok(outcome)
}

/// [`finish`] for a statement on one key: `Done` when it changed a row, else `Missing`.
async fn finish_changed(tx: &impl Tx, changed: u64, audit: AuditLine<'_>) -> StoreResult<KeyWrite> {
    let outcome = if changed > 0 {
        KeyWrite::Done
    } else {
        KeyWrite::Missing
    };
    finish(tx, outcome, audit).await
}

/// Whether the KEK is soft-deleted, its row locked until the transaction ends; `None` when
/// it does not exist.
async fn lock_kek(tx: &impl Tx, name: &str) -> StoreResult<Option<bool>> {
    Ok(tx
        .value_opt(
            "SELECT deleted FROM dek_keks WHERE name = ?1 FOR UPDATE",
            args![name],
        )
        .await?)
}

async fn insert_kek_row(tx: &impl Tx, k: &Kek) -> StoreResult<bool> {
    let sql = format!(
        "INSERT INTO dek_keks({KEK_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
         ON CONFLICT (name) DO NOTHING"
    );
    Ok(tx.execute(&sql, &kek_params(k)).await? == 1)
}

async fn insert_dek_row(tx: &impl Tx, d: &Dek) -> StoreResult<bool> {
    let sql = format!(
        "INSERT INTO dek_deks({DEK_COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
         ON CONFLICT DO NOTHING"
    );
    Ok(tx.execute(&sql, &dek_params(d)).await? == 1)
}

pub(crate) async fn kek(tx: &impl Tx, name: &str) -> StoreResult<Option<Kek>> {
    let sql = format!("SELECT {KEK_COLUMNS} FROM dek_keks WHERE name = ?1");
    let mut row = tx.query_opt(&sql, args![name]).await?;
    Ok(row.as_mut().map(kek_of).transpose()?)
}

pub(crate) async fn kek_names(tx: &impl Tx, deleted: bool) -> StoreResult<Vec<String>> {
    let mut rows = tx
        .query(
            "SELECT name FROM dek_keks WHERE ?1 OR NOT deleted ORDER BY name",
            args![deleted],
        )
        .await?;
    Ok(rows.iter_mut().map(|r| r.get(0)).collect::<DbResult<_>>()?)
}

pub(crate) async fn insert_kek(
    tx: &impl Tx,
    kek: &Kek,
    audit: AuditLine<'_>,
) -> StoreResult<KeyWrite> {
    let outcome = if insert_kek_row(tx, kek).await? {
        KeyWrite::Done
    } else {
        KeyWrite::Exists
    };
    finish(tx, outcome, audit).await
}

pub(crate) async fn update_kek(
    tx: &impl Tx,
    kek: &Kek,
    audit: AuditLine<'_>,
) -> StoreResult<KeyWrite> {
    let n = tx
        .execute(
            "UPDATE dek_keks SET kms_type = ?2, kms_key_id = ?3, kms_props = ?4, \
             doc = ?5, shared = ?6, ts = ?7, deleted = ?8 WHERE name = ?1",
            &kek_params(kek),
        )
        .await?;
    finish_changed(tx, n, audit).await
}

pub(crate) async fn delete_kek(
    tx: &impl Tx,
    name: &str,
    permanent: bool,
    audit: AuditLine<'_>,
) -> StoreResult<KeyWrite> {
    let Some(deleted) = lock_kek(tx, name).await? else {
        return Ok(KeyWrite::Missing);
    };
    match (permanent, deleted) {
        (false, true) => return Ok(KeyWrite::Missing),
        (true, false) => return Ok(KeyWrite::NotSoftDeleted),
        _ => {}
    }
    let refs = if permanent {
        "SELECT COUNT(*) FROM dek_deks WHERE kek_name = ?1"
    } else {
        "SELECT COUNT(*) FROM dek_deks WHERE kek_name = ?1 AND NOT deleted"
    };
    if tx.value::<i64>(refs, args![name]).await? > 0 {
        return Ok(KeyWrite::Referenced);
    }
    if permanent {
        tx.execute("DELETE FROM dek_keks WHERE name = ?1", args![name])
            .await?;
    } else {
        tx.execute(
            "UPDATE dek_keks SET deleted = TRUE, ts = ?2 WHERE name = ?1",
            args![name, now_millis()],
        )
        .await?;
    }
    finish(tx, KeyWrite::Done, audit).await
}

pub(crate) async fn undelete_kek(
    tx: &impl Tx,
    name: &str,
    audit: AuditLine<'_>,
) -> StoreResult<KeyWrite> {
    let n = tx
        .execute(
            "UPDATE dek_keks SET deleted = FALSE, ts = ?2 WHERE name = ?1 AND deleted",
            args![name, now_millis()],
        )
        .await?;
    finish_changed(tx, n, audit).await
}

pub(crate) async fn dek(
    tx: &impl Tx,
    kek_name: &str,
    subject: &str,
    algorithm: &str,
    version: Option<i64>,
    deleted: bool,
) -> StoreResult<Option<Dek>> {
    let scope = DekScope {
        kek_name,
        subject,
        algorithm,
        version,
    };
    let sql = format!(
        "SELECT {DEK_COLUMNS} FROM dek_deks WHERE {IN_SCOPE} AND (?5 OR NOT deleted) \
         ORDER BY version DESC LIMIT 1"
    );
    let [k, s, a, v] = scope_params(&scope);
    let mut row = tx
        .query_opt(&sql, &[k, s, a, v, Value::from(deleted)])
        .await?;
    Ok(row.as_mut().map(dek_of).transpose()?)
}

pub(crate) async fn dek_subjects(
    tx: &impl Tx,
    kek_name: &str,
    deleted: bool,
) -> StoreResult<Vec<String>> {
    let mut rows = tx
        .query(
            "SELECT DISTINCT subject FROM dek_deks WHERE kek_name = ?1 AND (?2 OR NOT deleted) \
             ORDER BY subject",
            args![kek_name, deleted],
        )
        .await?;
    Ok(rows.iter_mut().map(|r| r.get(0)).collect::<DbResult<_>>()?)
}

pub(crate) async fn dek_versions(
    tx: &impl Tx,
    kek_name: &str,
    subject: &str,
    algorithm: &str,
    deleted: bool,
) -> StoreResult<Vec<i64>> {
    let mut rows = tx
        .query(
            "SELECT version FROM dek_deks WHERE kek_name = ?1 AND subject = ?2 \
             AND algorithm = ?3 AND (?4 OR NOT deleted) ORDER BY version",
            args![kek_name, subject, algorithm, deleted],
        )
        .await?;
    Ok(rows.iter_mut().map(|r| r.get(0)).collect::<DbResult<_>>()?)
}

pub(crate) async fn insert_dek(
    tx: &impl Tx,
    dek: &Dek,
    audit: AuditLine<'_>,
) -> StoreResult<KeyWrite> {
    if lock_kek(tx, &dek.kek_name).await? != Some(false) {
        return Ok(KeyWrite::KekMissing);
    }
    let outcome = if insert_dek_row(tx, dek).await? {
        KeyWrite::Done
    } else {
        KeyWrite::Exists
    };
    finish(tx, outcome, audit).await
}

/// Confluent's `rewrap`: a DEK's encrypted material replaced (re-encrypted by a newer version
/// of its KEK's KMS key), its deletion state set as given; `Missing` when it is not held.
pub(crate) async fn rewrap_dek(
    tx: &impl Tx,
    dek: &Dek,
    audit: AuditLine<'_>,
) -> StoreResult<KeyWrite> {
    if lock_kek(tx, &dek.kek_name).await? != Some(false) {
        return Ok(KeyWrite::KekMissing);
    }
    let n = tx
        .execute(
            "UPDATE dek_deks SET encrypted_key_material = ?5, deleted = ?6, ts = ?7 \
             WHERE kek_name = ?1 AND subject = ?2 AND algorithm = ?3 AND version = ?4",
            args![
                dek.kek_name.as_str(),
                dek.subject.as_str(),
                dek.algorithm.as_str(),
                dek.version,
                dek.encrypted_key_material.as_deref(),
                dek.deleted,
                dek.ts
            ],
        )
        .await?;
    finish_changed(tx, n, audit).await
}

pub(crate) async fn delete_deks(
    tx: &impl Tx,
    scope: DekScope<'_>,
    permanent: bool,
    audit: AuditLine<'_>,
) -> StoreResult<KeyWrite> {
    lock_kek(tx, scope.kek_name).await?;
    let key = scope_params(&scope);
    let live: i64 = tx
        .value(
            &format!("SELECT COUNT(*) FROM dek_deks WHERE {IN_SCOPE} AND NOT deleted"),
            &key,
        )
        .await?;
    let outcome = if !permanent {
        if live == 0 {
            return Ok(KeyWrite::Missing);
        }
        let [k, s, a, v] = key;
        tx.execute(
            &format!(
                "UPDATE dek_deks SET deleted = TRUE, ts = ?5 WHERE {IN_SCOPE} AND NOT deleted"
            ),
            &[k, s, a, v, Value::from(now_millis())],
        )
        .await?;
        KeyWrite::Done
    } else if live > 0 {
        return Ok(KeyWrite::NotSoftDeleted);
    } else if tx
        .execute(&format!("DELETE FROM dek_deks WHERE {IN_SCOPE}"), &key)
        .await?
        > 0
    {
        KeyWrite::Done
    } else {
        KeyWrite::Missing
    };
    finish(tx, outcome, audit).await
}

pub(crate) async fn undelete_deks(
    tx: &impl Tx,
    scope: DekScope<'_>,
    audit: AuditLine<'_>,
) -> StoreResult<KeyWrite> {
    let [k, s, a, v] = scope_params(&scope);
    let n = tx
        .execute(
            &format!("UPDATE dek_deks SET deleted = FALSE, ts = ?5 WHERE {IN_SCOPE} AND deleted"),
            &[k, s, a, v, Value::from(now_millis())],
        )
        .await?;
    finish_changed(tx, n, audit).await
}

/// Inserts the keys not held (KEKs by name, DEKs by their key); a key held with other content
/// is a conflict and stays as it is.
pub(crate) async fn restore_keys(
    tx: &impl Tx,
    keks: &[Kek],
    deks: &[Dek],
) -> StoreResult<RestoredKeys> {
    let mut restored = RestoredKeys::default();
    for k in keks {
        if insert_kek_row(tx, k).await? {
            restored.written += 1;
        } else if kek(tx, &k.name).await?.as_ref() != Some(k) {
            restored.conflicts.push(kek_conflict(k));
        }
    }
    for d in deks {
        if insert_dek_row(tx, d).await? {
            restored.written += 1;
            continue;
        }
        let held = dek(
            tx,
            &d.kek_name,
            &d.subject,
            &d.algorithm,
            Some(d.version),
            true,
        )
        .await?;
        if held.as_ref() != Some(d) {
            restored.conflicts.push(dek_conflict(d));
        }
    }
    Ok(restored)
}

/// How many KEKs and DEKs (every version) are held, soft-deleted ones included.
pub(crate) async fn key_counts(tx: &impl Tx) -> StoreResult<(u64, u64)> {
    let mut row = tx
        .query_one(
            "SELECT (SELECT COUNT(*) FROM dek_keks), (SELECT COUNT(*) FROM dek_deks)",
            &[],
        )
        .await?;
    let (keks, deks): (i64, i64) = (row.get(0)?, row.get(1)?);
    Ok((keks.max(0) as u64, deks.max(0) as u64))
}

/// Each KEK with each subject it has DEKs for, by KEK then subject; soft-deleted KEKs and
/// DEKs only with `deleted`.
pub(crate) async fn kek_subjects(
    tx: &impl Tx,
    deleted: bool,
) -> StoreResult<Vec<(String, String)>> {
    let mut rows = tx
        .query(
            "SELECT DISTINCT d.kek_name, d.subject FROM dek_deks d \
             JOIN dek_keks k ON k.name = d.kek_name \
             WHERE ?1 OR (NOT d.deleted AND NOT k.deleted) ORDER BY d.kek_name, d.subject",
            args![deleted],
        )
        .await?;
    Ok(rows
        .iter_mut()
        .map(|r| Ok((r.get(0)?, r.get(1)?)))
        .collect::<DbResult<_>>()?)
}

pub(crate) async fn all_keys(tx: &impl Tx) -> StoreResult<(Vec<Kek>, Vec<Dek>)> {
    let mut keks = tx
        .query(
            &format!("SELECT {KEK_COLUMNS} FROM dek_keks ORDER BY name"),
            &[],
        )
        .await?;
    let mut deks = tx
        .query(
            &format!(
                "SELECT {DEK_COLUMNS} FROM dek_deks ORDER BY kek_name, subject, algorithm, version"
            ),
            &[],
        )
        .await?;
    Ok((
        keks.iter_mut().map(kek_of).collect::<DbResult<_>>()?,
        deks.iter_mut().map(dek_of).collect::<DbResult<_>>()?,
    ))
}

/// Implements [`crate::deks::DekStore`] for a backend whose `db` runs operations in its
/// transactions (`read`, `read_consistent`, `write`).
macro_rules! dek_store {
    ($store:ty) => {
        const _: () = {
            use $crate::StoreResult;
            use $crate::audit::AuditLine;
            use $crate::deks::*;
            use $crate::deks_sql as ops;

            $crate::sql::store_impl! {
                impl DekStore for $store, ops ops, self.db;
                read fn kek(name: &str) -> StoreResult<Option<Kek>>;
                read fn kek_names(deleted: bool) -> StoreResult<Vec<String>>;
                write fn insert_kek(kek: &Kek, audit: AuditLine<'_>) -> StoreResult<KeyWrite>;
                write fn update_kek(kek: &Kek, audit: AuditLine<'_>) -> StoreResult<KeyWrite>;
                write fn delete_kek(name: &str, permanent: bool, audit: AuditLine<'_>) -> StoreResult<KeyWrite>;
                write fn undelete_kek(name: &str, audit: AuditLine<'_>) -> StoreResult<KeyWrite>;
                read fn dek(kek_name: &str, subject: &str, algorithm: &str, version: Option<i64>, deleted: bool) -> StoreResult<Option<Dek>>;
                read fn dek_subjects(kek_name: &str, deleted: bool) -> StoreResult<Vec<String>>;
                read fn dek_versions(kek_name: &str, subject: &str, algorithm: &str, deleted: bool) -> StoreResult<Vec<i64>>;
                write fn insert_dek(dek: &Dek, audit: AuditLine<'_>) -> StoreResult<KeyWrite>;
                write fn rewrap_dek(dek: &Dek, audit: AuditLine<'_>) -> StoreResult<KeyWrite>;
                write fn delete_deks(scope: DekScope<'_>, permanent: bool, audit: AuditLine<'_>) -> StoreResult<KeyWrite>;
                write fn undelete_deks(scope: DekScope<'_>, audit: AuditLine<'_>) -> StoreResult<KeyWrite>;
                read_consistent fn all_keys() -> StoreResult<(Vec<Kek>, Vec<Dek>)>;
                read fn key_counts() -> StoreResult<(u64, u64)>;
                read fn kek_subjects(deleted: bool) -> StoreResult<Vec<(String, String)>>;
                write fn restore_keys(keks: &[Kek], deks: &[Dek]) -> StoreResult<RestoredKeys>;
                {}
            }
        };
    };
}
pub(crate) use dek_store;
