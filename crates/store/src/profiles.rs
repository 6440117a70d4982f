//! What the registry keeps of the data itself: profile documents of a subject's records over
//! time, each with the window of records it describes.
//!
//! SQL-free like the rest of the interface; [`crate::profiles_sqlite`] and
//! [`crate::profiles_postgres`] implement it, beside the registry's tables with their own
//! migration ledger. Documents are opaque text here: the registry validates them.

use crate::StoreResult;
use crate::audit::AuditLine;
use async_trait::async_trait;

/// A data profile to store: the document as written by `covenant profile`, opaque here (the
/// registry validates it), and the time window of the records it describes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewProfile {
    pub subject: String,
    /// Milliseconds since the Unix epoch, inclusive.
    pub window_from: i64,
    /// Milliseconds since the Unix epoch; profiles are ordered by it.
    pub window_to: i64,
    pub records: i64,
    pub document: String,
}

/// A stored profile; ids are unique across subjects and never reused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProfileRecord {
    pub id: i64,
    pub subject: String,
    pub window_from: i64,
    pub window_to: i64,
    pub records: i64,
    pub document: String,
    pub created_at: i64,
}

/// Profile persistence. Implementations make acknowledged writes durable; a write that takes
/// an [`AuditLine`] appends it to the registry's `audit_log` in the same transaction.
#[async_trait]
pub trait ProfileStore: Send + Sync {
    /// Stores a profile, with its audit line in the same transaction.
    async fn add_profile(
        &self,
        profile: &NewProfile,
        audit: AuditLine<'_>,
    ) -> StoreResult<ProfileRecord>;

    /// A page of a subject's profiles, oldest window first (`window_to`, then id).
    async fn profiles(
        &self,
        subject: &str,
        offset: i64,
        limit: i64,
    ) -> StoreResult<Vec<ProfileRecord>>;

    /// One profile of a subject.
    async fn profile(&self, subject: &str, id: i64) -> StoreResult<Option<ProfileRecord>>;

    /// Removes every profile of a subject (for permanent deletes); returns how many.
    async fn delete_profiles(&self, subject: &str) -> StoreResult<usize>;

    /// The newest profile (latest `window_to`, then highest id) of every subject (or of one),
    /// by subject.
    async fn latest_profiles(&self, subject: Option<&str>) -> StoreResult<Vec<ProfileRecord>>;

    /// Every stored profile, by id (for export).
    async fn all_profiles(&self) -> StoreResult<Vec<ProfileRecord>>;

    /// Writes profiles as they are (ids and times kept), in one transaction, for import. An
    /// id already held is left as it is: skipped when equal, listed in the answer when its
    /// content differs; so a second import of the same dump writes nothing. New profiles
    /// continue after the highest id.
    async fn restore_profiles(&self, profiles: &[ProfileRecord]) -> StoreResult<RestoredProfiles>;
}

/// What [`ProfileStore::restore_profiles`] did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RestoredProfiles {
    pub written: usize,
    /// Ids held with other content, left as they were.
    pub conflicts: Vec<i64>,
}

/// Behaviour every backend must show; each backend's tests run it on a fresh store.
pub mod suite {
    use super::*;

    fn new_profile(subject: &str, to: i64, records: i64) -> NewProfile {
        NewProfile {
            subject: subject.into(),
            window_from: to - 10,
            window_to: to,
            records,
            document: format!("{{\"records\": {records}}}"),
        }
    }

    /// Runs every check; panics with a description on the first failure.
    pub async fn run(store: &dyn ProfileStore) {
        let later = store
            .add_profile(&new_profile("p", 200, 2), None)
            .await
            .expect("add");
        let earlier = store
            .add_profile(&new_profile("p", 100, 1), None)
            .await
            .expect("add");
        assert!(earlier.id > later.id, "ids grow");
        assert_eq!(earlier.document, "{\"records\": 1}");
        store
            .add_profile(&new_profile("q", 50, 5), None)
            .await
            .expect("add");
        let listed = store.profiles("p", 0, 10).await.expect("list");
        assert_eq!(
            listed,
            [earlier.clone(), later.clone()],
            "ordered by window"
        );
        assert_eq!(
            store.profiles("p", 1, 10).await.expect("page"),
            std::slice::from_ref(&later)
        );
        assert_eq!(
            store.profiles("p", 0, 1).await.expect("page"),
            std::slice::from_ref(&earlier)
        );
        assert_eq!(
            store.profile("p", later.id).await.expect("get"),
            Some(later.clone())
        );
        assert_eq!(
            store.profile("q", later.id).await.expect("get"),
            None,
            "ids are scoped to their subject"
        );
        let all = store.all_profiles().await.expect("all");
        assert_eq!(all.len(), 3);
        assert!(all.windows(2).all(|w| w[0].id < w[1].id), "by id");
        assert_eq!(
            store.restore_profiles(&all).await.expect("restore"),
            RestoredProfiles::default(),
            "restoring what is held writes nothing"
        );
        let mut moved = all[0].clone();
        moved.id = all[2].id + 10;
        moved.subject = "m".into();
        let mut changed = all[1].clone();
        changed.document = "{}".into();
        let restored = store
            .restore_profiles(&[moved.clone(), changed.clone()])
            .await
            .expect("restore");
        assert_eq!(
            (restored.written, restored.conflicts),
            (1, vec![changed.id])
        );
        assert_eq!(
            store.profile(&moved.subject, moved.id).await.expect("get"),
            Some(moved.clone())
        );
        let next = store
            .add_profile(&new_profile("q", 60, 6), None)
            .await
            .expect("add");
        assert!(next.id > moved.id, "new ids continue after restored ones");
        assert_eq!(store.delete_profiles("q").await.expect("delete"), 2);
        assert_eq!(store.delete_profiles("m").await.expect("delete"), 1);
        store.restore_profiles(&all[2..]).await.expect("put q back");
        let latest = store.latest_profiles(None).await.expect("latest");
        assert_eq!(
            latest
                .iter()
                .map(|p| (p.subject.as_str(), p.records))
                .collect::<Vec<_>>(),
            [("p", 2), ("q", 5)],
            "the latest window wins, not the latest insert"
        );
        let of_q = store.latest_profiles(Some("q")).await.expect("latest");
        assert_eq!(of_q.len(), 1);
        assert_eq!(of_q[0].records, 5);
        assert!(
            store
                .latest_profiles(Some("none"))
                .await
                .expect("latest")
                .is_empty()
        );
        assert_eq!(store.delete_profiles("p").await.expect("delete"), 2);
        assert!(store.profiles("p", 0, 10).await.expect("list").is_empty());
        assert!(store.profile("p", later.id).await.expect("get").is_none());
        assert_eq!(store.profiles("q", 0, 10).await.expect("list").len(), 1);
    }
}
