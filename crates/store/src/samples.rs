//! What sample replay persists: historical payloads per subject version, and versions marked
//! live (still present in retained data) by an explicit call.
//!
//! SQL-free like the rest of the interface; [`crate::samples_sqlite`] and
//! [`crate::samples_postgres`] implement it. Payloads are opaque bytes: the registry checks
//! that a sample decodes with its version before storing it.
//!
//! Writes that take an [`AuditLine`] append it to the registry's `audit_log` in their own
//! transaction, and only when they change something (a refused add or a missing live mark
//! records nothing).

use crate::StoreResult;
use crate::audit::AuditLine;
use async_trait::async_trait;

/// A payload to store.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NewSample {
    pub subject: String,
    pub version: i64,
    /// `avro`, `protobuf`, `json` or `confluent`.
    pub encoding: String,
    /// Protobuf: the message's full name.
    pub message_name: Option<String>,
    pub payload: Vec<u8>,
}

/// A stored payload; ids are unique across subjects and never reused.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleRecord {
    pub id: i64,
    pub subject: String,
    pub version: i64,
    pub encoding: String,
    pub message_name: Option<String>,
    pub payload: Vec<u8>,
    /// Milliseconds since the Unix epoch.
    pub created_at: i64,
}

/// The outcome of [`SampleStore::add_sample`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SampleAdded {
    Stored(SampleRecord),
    /// The subject already holds `limit` samples; nothing was written.
    LimitReached {
        limit: usize,
    },
}

/// Sample and live-mark persistence. Implementations make acknowledged writes durable.
#[async_trait]
pub trait SampleStore: Send + Sync {
    /// Stores a sample unless the subject already holds `limit` samples; the count and the
    /// insert are one transaction, so concurrent adds cannot overshoot.
    async fn add_sample(
        &self,
        sample: &NewSample,
        limit: usize,
        audit: AuditLine<'_>,
    ) -> StoreResult<SampleAdded>;

    /// A subject's samples (of one version when given), oldest first.
    async fn samples(&self, subject: &str, version: Option<i64>) -> StoreResult<Vec<SampleRecord>>;

    /// Removes the samples of a subject with the given ids, in one transaction; returns the
    /// ids that existed (and are now gone).
    async fn delete_samples(
        &self,
        subject: &str,
        ids: &[i64],
        audit: AuditLine<'_>,
    ) -> StoreResult<Vec<i64>>;

    /// Removes every sample of the given versions (for permanent deletes); returns how many.
    async fn delete_version_samples(&self, subject: &str, versions: &[i64]) -> StoreResult<usize>;

    /// Marks a version live at `at_ms` (a later mark replaces an earlier one).
    async fn mark_live(
        &self,
        subject: &str,
        version: i64,
        at_ms: i64,
        audit: AuditLine<'_>,
    ) -> StoreResult<()>;

    /// Removes a version's live mark; false when it had none.
    async fn unmark_live(
        &self,
        subject: &str,
        version: i64,
        audit: AuditLine<'_>,
    ) -> StoreResult<bool>;

    /// `(version, marked_at)` of a subject's live marks, by version.
    async fn live_marks(&self, subject: &str) -> StoreResult<Vec<(i64, i64)>>;
}

/// Behaviour every backend must show; each backend's tests run it on a fresh store.
pub mod suite {
    use super::*;

    fn sample(subject: &str, version: i64, payload: &[u8]) -> NewSample {
        NewSample {
            subject: subject.into(),
            version,
            encoding: "avro".into(),
            message_name: None,
            payload: payload.to_vec(),
        }
    }

    /// Runs every check; panics with a description on the first failure.
    pub async fn run(store: &dyn SampleStore) {
        let SampleAdded::Stored(first) = store
            .add_sample(&sample("s", 1, &[0, 1, 255]), 3, None)
            .await
            .expect("add")
        else {
            panic!("first sample refused");
        };
        assert_eq!(first.payload, [0, 1, 255]);
        assert_eq!(first.version, 1);
        let mut proto = sample("s", 2, b"\x0a\x01x");
        proto.encoding = "protobuf".into();
        proto.message_name = Some("acme.Case".into());
        let SampleAdded::Stored(second) = store.add_sample(&proto, 3, None).await.expect("add")
        else {
            panic!("second sample refused");
        };
        assert!(second.id > first.id, "ids grow");
        assert_eq!(second.message_name.as_deref(), Some("acme.Case"));
        store
            .add_sample(&sample("other", 1, b"o"), 3, None)
            .await
            .expect("add");
        store
            .add_sample(&sample("s", 2, b"3"), 3, None)
            .await
            .expect("add");
        assert_eq!(
            store
                .add_sample(&sample("s", 3, b"4"), 3, None)
                .await
                .expect("add"),
            SampleAdded::LimitReached { limit: 3 },
            "the limit counts per subject"
        );
        let all = store.samples("s", None).await.expect("list");
        assert_eq!(all.len(), 3);
        assert_eq!(all[0], first);
        assert_eq!(store.samples("s", Some(2)).await.expect("list").len(), 2);
        assert!(store.samples("none", None).await.expect("list").is_empty());

        assert!(
            store
                .delete_samples("other", &[first.id], None)
                .await
                .expect("delete")
                .is_empty(),
            "ids are scoped to their subject"
        );
        assert_eq!(
            store
                .delete_samples("s", &[first.id, 9999], None)
                .await
                .expect("delete"),
            [first.id],
            "only the ids that existed are reported"
        );
        assert!(
            store
                .delete_samples("s", &[first.id], None)
                .await
                .expect("delete")
                .is_empty()
        );
        assert_eq!(
            store
                .delete_version_samples("s", &[2])
                .await
                .expect("purge"),
            2
        );
        assert!(store.samples("s", None).await.expect("list").is_empty());
        assert_eq!(store.samples("other", None).await.expect("list").len(), 1);

        store.mark_live("s", 2, 100, None).await.expect("mark");
        store.mark_live("s", 1, 50, None).await.expect("mark");
        store.mark_live("s", 2, 200, None).await.expect("mark");
        assert_eq!(
            store.live_marks("s").await.expect("marks"),
            [(1, 50), (2, 200)]
        );
        assert!(store.unmark_live("s", 1, None).await.expect("unmark"));
        assert!(!store.unmark_live("s", 1, None).await.expect("unmark"));
        assert_eq!(store.live_marks("s").await.expect("marks"), [(2, 200)]);
        assert!(store.live_marks("other").await.expect("marks").is_empty());
    }
}
