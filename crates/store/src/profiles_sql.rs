//! The profile store written once: its table (`prf_profiles`, ledger `profiles_migrations`)
//! and each operation over a [`Tx`], for [`crate::profiles_sqlite`] and
//! [`crate::profiles_postgres`] to run in their transactions.

use crate::audit::AuditLine;
use crate::profiles::{NewProfile, ProfileRecord, RestoredProfiles};
use crate::sql::{DbResult, Row, Tx, Value, args};
use crate::{StoreResult, sql};

pub(crate) const MIGRATIONS: &[(i64, &str)] = &[(
    1,
    "CREATE TABLE prf_profiles (
        id BIGSERIAL PRIMARY KEY,
        subject TEXT COLLATE \"C\" NOT NULL,
        window_from BIGINT NOT NULL,
        window_to BIGINT NOT NULL,
        records BIGINT NOT NULL,
        document TEXT NOT NULL,
        created_at BIGINT NOT NULL
    );
    CREATE INDEX prf_profiles_subject ON prf_profiles(subject, window_to, id);",
)];

const COLUMNS: &str = "id, subject, window_from, window_to, records, document, created_at";

fn profile_row(r: &mut Row) -> DbResult<ProfileRecord> {
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

/// The profiles `sql` selects (its columns [`COLUMNS`]).
async fn profiles_of(
    tx: &impl Tx,
    sql: &str,
    params: &[Value<'_>],
) -> StoreResult<Vec<ProfileRecord>> {
    let mut rows = tx.query(sql, params).await?;
    Ok(rows.iter_mut().map(profile_row).collect::<DbResult<_>>()?)
}

pub(crate) async fn add_profile(
    tx: &impl Tx,
    new: &NewProfile,
    audit: AuditLine<'_>,
) -> StoreResult<ProfileRecord> {
    let mut row = tx
        .query_one(
            &format!(
                "INSERT INTO prf_profiles(subject, window_from, window_to, records, document, \
                 created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6) RETURNING {COLUMNS}"
            ),
            args![
                &new.subject,
                new.window_from,
                new.window_to,
                new.records,
                &new.document,
                chrono::Utc::now().timestamp_millis()
            ],
        )
        .await?;
    let stored = profile_row(&mut row)?;
    sql::audit::append(tx, audit).await?;
    Ok(stored)
}

pub(crate) async fn profiles(
    tx: &impl Tx,
    subject: &str,
    offset: i64,
    limit: i64,
) -> StoreResult<Vec<ProfileRecord>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM prf_profiles WHERE subject = ?1 \
         ORDER BY window_to, id LIMIT ?3 OFFSET ?2"
    );
    profiles_of(tx, &sql, args![subject, offset, limit]).await
}

pub(crate) async fn profile(
    tx: &impl Tx,
    subject: &str,
    id: i64,
) -> StoreResult<Option<ProfileRecord>> {
    let sql = format!("SELECT {COLUMNS} FROM prf_profiles WHERE subject = ?1 AND id = ?2");
    Ok(profiles_of(tx, &sql, args![subject, id])
        .await?
        .into_iter()
        .next())
}

pub(crate) async fn delete_profiles(tx: &impl Tx, subject: &str) -> StoreResult<usize> {
    let n = tx
        .execute(
            "DELETE FROM prf_profiles WHERE subject = ?1",
            args![subject],
        )
        .await?;
    Ok(usize::try_from(n).unwrap_or(usize::MAX))
}

pub(crate) async fn all_profiles(tx: &impl Tx) -> StoreResult<Vec<ProfileRecord>> {
    let sql = format!("SELECT {COLUMNS} FROM prf_profiles ORDER BY id");
    profiles_of(tx, &sql, &[]).await
}

/// The newest profile (by window end, then id) of each subject, or of one.
pub(crate) async fn latest_profiles(
    tx: &impl Tx,
    subject: Option<&str>,
) -> StoreResult<Vec<ProfileRecord>> {
    let sql = format!(
        "SELECT {COLUMNS} FROM prf_profiles p \
         WHERE (CAST(?1 AS TEXT) IS NULL OR p.subject = ?1) AND p.id = (SELECT q.id \
         FROM prf_profiles q WHERE q.subject = p.subject \
         ORDER BY q.window_to DESC, q.id DESC LIMIT 1) \
         ORDER BY p.subject"
    );
    profiles_of(tx, &sql, args![subject]).await
}

/// Inserts the profiles not held under their id (ids are kept); an id held with other
/// content is a conflict and stays as it is.
pub(crate) async fn restore_profiles(
    tx: &impl Tx,
    profiles: &[ProfileRecord],
) -> StoreResult<RestoredProfiles> {
    let mut restored = RestoredProfiles::default();
    for p in profiles {
        let written = tx
            .execute(
                &format!(
                    "INSERT INTO prf_profiles({COLUMNS}) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7) \
                     ON CONFLICT (id) DO NOTHING"
                ),
                args![
                    p.id,
                    &p.subject,
                    p.window_from,
                    p.window_to,
                    p.records,
                    &p.document,
                    p.created_at
                ],
            )
            .await?;
        if written == 1 {
            restored.written += 1;
            continue;
        }
        let sql = format!("SELECT {COLUMNS} FROM prf_profiles WHERE id = ?1");
        if profiles_of(tx, &sql, args![p.id]).await?.first() != Some(p) {
            restored.conflicts.push(p.id);
        }
    }
    if restored.written > 0 {
        tx.ids_taken("prf_profiles", "id").await?;
    }
    Ok(restored)
}

/// Implements [`crate::ProfileStore`] for a backend whose `db` runs operations in its
/// transactions (`read`, `write`).
macro_rules! profile_store {
    ($store:ty) => {
        const _: () = {
            use $crate::StoreResult;
            use $crate::audit::AuditLine;
            use $crate::profiles::*;
            use $crate::profiles_sql as ops;

            $crate::sql::store_impl! {
                impl ProfileStore for $store, ops ops, self.db;
                write fn add_profile(profile: &NewProfile, audit: AuditLine<'_>) -> StoreResult<ProfileRecord>;
                read fn profiles(subject: &str, offset: i64, limit: i64) -> StoreResult<Vec<ProfileRecord>>;
                read fn profile(subject: &str, id: i64) -> StoreResult<Option<ProfileRecord>>;
                write fn delete_profiles(subject: &str) -> StoreResult<usize>;
                read fn latest_profiles(subject: Option<&str>) -> StoreResult<Vec<ProfileRecord>>;
                read fn all_profiles() -> StoreResult<Vec<ProfileRecord>>;
                write fn restore_profiles(profiles: &[ProfileRecord]) -> StoreResult<RestoredProfiles>;
                {}
            }
        };
    };
}
pub(crate) use profile_store;
