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
