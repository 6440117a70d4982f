//! The shared profile backend: the same table as the embedded one, in the registry's
//! PostgreSQL database, with its own migration ledger (`profiles_migrations`).

use crate::audit::AuditLine;
use crate::pg_pool::LazyTables;
use crate::postgres::append_line;
use crate::profiles::{NewProfile, ProfileRecord, ProfileStore, RestoredProfiles};
use crate::{StoreError, StoreResult};
use async_trait::async_trait;

const MIGRATIONS: &[(i64, &str)] = &[(
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

/// Advisory lock namespace of the migrations (first key of the two-key form), distinct from
/// the registry's and the sample store's.
const LOCK_MIGRATIONS: i32 = 0x436f_0201;

fn backend(e: impl std::fmt::Display) -> StoreError {
    StoreError::Backend(e.to_string())
}

fn now_millis() -> i64 {
    chrono::Utc::now().timestamp_millis()
}

pub struct PostgresProfileStore {
    tables: LazyTables,
}

impl PostgresProfileStore {
    /// Connects to `url` (`postgres://user@host:port/db`) and applies the migrations.
    pub async fn connect(url: &str) -> StoreResult<PostgresProfileStore> {
        let store = PostgresProfileStore::open_lazy(url)?;
        drop(store.client().await?);
        Ok(store)
    }

    /// Like [`connect`](Self::connect), without connecting yet: migrations run on the first
    /// operation that reaches the database.
    pub fn open_lazy(url: &str) -> StoreResult<PostgresProfileStore> {
        Ok(PostgresProfileStore {
            tables: LazyTables::open(url, "profiles_migrations", LOCK_MIGRATIONS, MIGRATIONS)?,
        })
    }

    /// A pooled connection, after the migrations have run once.
    async fn client(&self) -> StoreResult<deadpool_postgres::Object> {
        self.tables.client().await
    }
}

const PROFILE_COLUMNS: &str = "id, subject, window_from, window_to, records, document, created_at";

fn profile_record(row: &tokio_postgres::Row) -> StoreResult<ProfileRecord> {
    Ok(ProfileRecord {
        id: row.try_get(0).map_err(backend)?,
        subject: row.try_get(1).map_err(backend)?,
        window_from: row.try_get(2).map_err(backend)?,
        window_to: row.try_get(3).map_err(backend)?,
        records: row.try_get(4).map_err(backend)?,
        document: row.try_get(5).map_err(backend)?,
        created_at: row.try_get(6).map_err(backend)?,
    })
}

#[async_trait]
impl ProfileStore for PostgresProfileStore {
    async fn add_profile(
        &self,
        profile: &NewProfile,
        audit: AuditLine<'_>,
    ) -> StoreResult<ProfileRecord> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        let row = tx
            .query_one(
                &format!(
                    "INSERT INTO prf_profiles(subject, window_from, window_to, records, document, created_at)
                     VALUES ($1, $2, $3, $4, $5, $6) RETURNING {PROFILE_COLUMNS}"
                ),
                &[
                    &profile.subject,
                    &profile.window_from,
                    &profile.window_to,
                    &profile.records,
                    &profile.document,
                    &now_millis(),
                ],
            )
            .await
            .map_err(backend)?;
        let stored = profile_record(&row)?;
        append_line(&tx, audit).await?;
        tx.commit().await.map_err(backend)?;
        Ok(stored)
    }

    async fn profiles(
        &self,
        subject: &str,
        offset: i64,
        limit: i64,
    ) -> StoreResult<Vec<ProfileRecord>> {
        let client = self.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT {PROFILE_COLUMNS} FROM prf_profiles WHERE subject = $1
                     ORDER BY window_to, id LIMIT $3 OFFSET $2"
                ),
                &[&subject, &offset, &limit],
            )
            .await
            .map_err(backend)?;
        rows.iter().map(profile_record).collect()
    }

    async fn profile(&self, subject: &str, id: i64) -> StoreResult<Option<ProfileRecord>> {
        let client = self.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT {PROFILE_COLUMNS} FROM prf_profiles WHERE subject = $1 AND id = $2"
                ),
                &[&subject, &id],
            )
            .await
            .map_err(backend)?;
        rows.first().map(profile_record).transpose()
    }

    async fn delete_profiles(&self, subject: &str) -> StoreResult<usize> {
        let client = self.client().await?;
        let n = client
            .execute("DELETE FROM prf_profiles WHERE subject = $1", &[&subject])
            .await
            .map_err(backend)?;
        Ok(usize::try_from(n).unwrap_or(usize::MAX))
    }

    async fn all_profiles(&self) -> StoreResult<Vec<ProfileRecord>> {
        let client = self.client().await?;
        let rows = client
            .query(
                &format!("SELECT {PROFILE_COLUMNS} FROM prf_profiles ORDER BY id"),
                &[],
            )
            .await
            .map_err(backend)?;
        rows.iter().map(profile_record).collect()
    }

    async fn restore_profiles(&self, profiles: &[ProfileRecord]) -> StoreResult<RestoredProfiles> {
        let mut client = self.client().await?;
        let tx = client.transaction().await.map_err(backend)?;
        let mut restored = RestoredProfiles::default();
        for p in profiles {
            let written = tx
                .execute(
                    "INSERT INTO prf_profiles(id, subject, window_from, window_to, records, document, created_at)
                     VALUES ($1, $2, $3, $4, $5, $6, $7) ON CONFLICT (id) DO NOTHING",
                    &[&p.id, &p.subject, &p.window_from, &p.window_to, &p.records, &p.document, &p.created_at],
                )
                .await
                .map_err(backend)?;
            if written == 1 {
                restored.written += 1;
                continue;
            }
            let held = tx
                .query_one(
                    &format!("SELECT {PROFILE_COLUMNS} FROM prf_profiles WHERE id = $1"),
                    &[&p.id],
                )
                .await
                .map_err(backend)?;
            if &profile_record(&held)? != p {
                restored.conflicts.push(p.id);
            }
        }
        // New profiles continue after the restored ids (the sequence never moves back).
        tx.execute(
            "SELECT setval(pg_get_serial_sequence('prf_profiles', 'id'),
                    GREATEST((SELECT COALESCE(MAX(id), 1) FROM prf_profiles),
                             (SELECT last_value FROM prf_profiles_id_seq)))",
            &[],
        )
        .await
        .map_err(backend)?;
        tx.commit().await.map_err(backend)?;
        Ok(restored)
    }

    async fn latest_profiles(&self, subject: Option<&str>) -> StoreResult<Vec<ProfileRecord>> {
        let client = self.client().await?;
        let rows = client
            .query(
                &format!(
                    "SELECT {PROFILE_COLUMNS} FROM prf_profiles p {}",
                    crate::profiles_sqlite::latest('$')
                ),
                &[&subject],
            )
            .await
            .map_err(backend)?;
        rows.iter().map(profile_record).collect()
    }
}
