//! Exporters: registry-to-registry replication records (Confluent's `/exporters`), each with
//! its specification (opaque JSON here; the exporter crate reads it), its state and its
//! progress through the registry's change log (the `audit_log` sequence).
//!
//! [`crate::exporters_sqlite`] and [`crate::exporters_postgres`] implement it beside the
//! registry's tables. On PostgreSQL a node runs an exporter only while it holds the
//! exporter's lease (a session advisory lock on a connection of its own), so exactly one node
//! runs each exporter and another takes over when that node's connection dies.

use crate::StoreResult;
use crate::audit::AuditLine;
use async_trait::async_trait;

/// An exporter as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExporterRecord {
    pub name: String,
    /// The exporter's specification (subjects, context, rename format, destination config).
    pub spec: String,
    /// `RUNNING`, `PAUSED`, ...
    pub state: String,
    /// The last `audit_log` sequence number whose change reached the destination; 0 before
    /// the first full copy.
    pub offset: i64,
    /// Milliseconds since the Unix epoch of the last progress or state change.
    pub ts: i64,
    /// The last error, empty while all is well.
    pub trace: String,
    /// Who created the exporter, whose rights its runs are held to (opaque JSON here; the
    /// exporter crate reads it). Empty for exporters stored before creators were recorded.
    pub creator: String,
}

/// Holds an exporter for one node while alive; dropping it lets another node take over.
pub trait Lease: Send + Sync {}

/// Exporter persistence. Writes that take an [`AuditLine`] append it in the same transaction.
#[async_trait]
pub trait ExporterStore: Send + Sync {
    /// Creates an exporter; `false` when the name is taken.
    async fn create_exporter(
        &self,
        record: &ExporterRecord,
        audit: AuditLine<'_>,
    ) -> StoreResult<bool>;

    async fn exporter(&self, name: &str) -> StoreResult<Option<ExporterRecord>>;

    /// Every exporter, by name.
    async fn exporters(&self) -> StoreResult<Vec<ExporterRecord>>;

    /// Replaces the specification and state (and, for a reset, the offset) with the record's;
    /// its creator is written back as given. `false` when there is no such exporter.
    async fn update_exporter(
        &self,
        record: &ExporterRecord,
        audit: AuditLine<'_>,
    ) -> StoreResult<bool>;

    /// Records progress (offset, time, trace) without touching spec or state.
    async fn record_progress(
        &self,
        name: &str,
        offset: i64,
        ts: i64,
        trace: &str,
    ) -> StoreResult<()>;

    /// Removes an exporter; `false` when there was none.
    async fn delete_exporter(&self, name: &str, audit: AuditLine<'_>) -> StoreResult<bool>;

    /// Takes the lease on `name` for this node, `None` while another node holds it.
    async fn lease(&self, name: &str) -> StoreResult<Option<Box<dyn Lease>>>;
}

/// The lease of a single-node store: always granted.
pub struct LocalLease;

impl Lease for LocalLease {}

/// The checks every exporter backend passes (run by each backend's tests).
pub mod suite {
    use super::*;

    fn record(name: &str, state: &str) -> ExporterRecord {
        ExporterRecord {
            name: name.into(),
            spec: format!("{{\"name\": \"{name}\"}}"),
            state: state.into(),
            offset: 0,
            ts: 1,
            trace: String::new(),
            creator: "{\"principal\": \"ops\"}".into(),
        }
    }

    /// Runs every check on an empty store; leaves it empty. Panics on the first failure.
    pub async fn run(store: &dyn ExporterStore) {
        let first = record("suite-b", "PAUSED");
        assert!(store.create_exporter(&first, None).await.expect("create"));
        assert!(
            !store.create_exporter(&first, None).await.expect("create"),
            "a taken name is refused"
        );
        let second = record("suite-a", "RUNNING");
        assert!(store.create_exporter(&second, None).await.expect("create"));
        assert_eq!(
            store.exporters().await.expect("list"),
            vec![second.clone(), first.clone()],
            "listed by name"
        );

        let mut changed = first.clone();
        changed.state = "RUNNING".into();
        changed.offset = 7;
        assert!(store.update_exporter(&changed, None).await.expect("update"));
        assert!(
            !store
                .update_exporter(&record("suite-none", "PAUSED"), None)
                .await
                .expect("update"),
            "no such exporter"
        );
        store
            .record_progress("suite-b", 42, 99, "timed out")
            .await
            .expect("progress");
        let held = store.exporter("suite-b").await.expect("read");
        let expected = ExporterRecord {
            offset: 42,
            ts: 99,
            trace: "timed out".into(),
            ..changed
        };
        assert_eq!(held, Some(expected), "progress leaves spec and state");

        assert!(store.lease("suite-b").await.expect("lease").is_some());
        for name in ["suite-a", "suite-b"] {
            assert!(store.delete_exporter(name, None).await.expect("delete"));
        }
        assert!(
            !store
                .delete_exporter("suite-a", None)
                .await
                .expect("delete")
        );
        assert_eq!(store.exporter("suite-a").await.expect("read"), None);
        assert!(store.exporters().await.expect("list").is_empty());
    }
}
