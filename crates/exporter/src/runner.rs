//! The loop that runs this node's exporters: each running exporter this node holds the lease
//! of copies everything on its first run, then follows the audit trail page by page, copying
//! each changed subject whole, and records its progress after every page. A destination that
//! fails is retried with a doubling pause (up to 30 s) and the error shown as the `trace`.

use crate::destination::{Destination, DestinationError};
use crate::spec::ExporterSpec;
use crate::{Exporters, RUNNING, decode, now_ms};
use covenant_store::context::{public_id, qualify_with_parent};
use covenant_store::exporters::{ExporterRecord, Lease};
use covenant_store::{AuditQuery, Scope, Store, StoreError};
use serde_json::{Value, json};
use std::collections::{BTreeSet, HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How often the loop looks for work when nothing wakes it.
const TICK: Duration = Duration::from_millis(500);
/// Trail entries read per page; progress is recorded after each.
const PAGE: i64 = 500;
const MAX_BACKOFF: Duration = Duration::from_secs(30);
/// How deep references are followed to copy what a schema refers to first.
const REFERENCE_DEPTH: usize = 32;

/// The trail operations that change what an exporter copies.
fn copies(operation: &str) -> bool {
    operation.starts_with("register")
        || operation.starts_with("delete.")
        || operation.starts_with("config.")
}

#[derive(Debug, thiserror::Error)]
enum CopyError {
    #[error(transparent)]
    Destination(#[from] DestinationError),
    #[error("reading the source: {0}")]
    Source(#[from] StoreError),
    #[error("{0}")]
    Spec(String),
}

/// An exporter this node runs: its lease, its step in progress (each exporter steps in a task
/// of its own, so a destination that never answers delays no other exporter), and when it may
/// try again after a failure.
struct Held {
    _lease: Box<dyn Lease>,
    step: Option<tokio::task::JoinHandle<Result<(), CopyError>>>,
    failures: u32,
    retry_at: Instant,
}

impl Drop for Held {
    /// A paused or deleted exporter stops at once, mid-step (every step is idempotent).
    fn drop(&mut self) {
        if let Some(step) = &self.step {
            step.abort();
        }
    }
}

impl Exporters {
    /// Starts the loop on the current runtime; it lives as long as the process.
    pub fn spawn(self: &Arc<Self>) -> tokio::task::JoinHandle<()> {
        let exporters = self.clone();
        tokio::spawn(async move { exporters.run().await })
    }

    async fn run(self: Arc<Self>) {
        let mut held: HashMap<String, Held> = HashMap::new();
        loop {
            if let Err(e) = self.tick(&mut held).await {
                tracing::warn!(error = %e, "exporters: cannot read their records");
            }
            tokio::select! {
                _ = self.wake.notified() => {}
                _ = tokio::time::sleep(TICK) => {}
            }
        }
    }

    async fn tick(self: &Arc<Self>, held: &mut HashMap<String, Held>) -> Result<(), StoreError> {
        let records = self.store.exporters().await?;
        // Paused or deleted exporters give their lease back.
        held.retain(|name, _| {
            records
                .iter()
                .any(|r| &r.name == name && r.state == RUNNING)
        });
        for record in records.iter().filter(|r| r.state == RUNNING) {
            if !held.contains_key(&record.name) {
                match self.store.lease(&record.name).await {
                    Ok(Some(lease)) => {
                        tracing::info!(exporter = %record.name, "exporter runs on this node");
                        held.insert(
                            record.name.clone(),
                            Held {
                                _lease: lease,
                                step: None,
                                failures: 0,
                                retry_at: Instant::now(),
                            },
                        );
                    }
                    Ok(None) => continue,
                    Err(e) => {
                        tracing::warn!(exporter = %record.name, error = %e, "exporter lease");
                        continue;
                    }
                }
            }
            let Some(state) = held.get_mut(&record.name) else {
                continue;
            };
            match state.step.take() {
                Some(step) if !step.is_finished() => {
                    state.step = Some(step);
                    continue;
                }
                Some(step) => {
                    let outcome = step
                        .await
                        .unwrap_or_else(|e| Err(CopyError::Spec(format!("the step stopped: {e}"))));
                    self.settle(record, state, outcome).await?;
                }
                None => {}
            }
            if Instant::now() < state.retry_at {
                continue;
            }
            let (exporters, record) = (self.clone(), record.clone());
            state.step = Some(tokio::spawn(
                async move { exporters.advance(&record).await },
            ));
        }
        Ok(())
    }

    /// Records how a step ended: a failure pauses the exporter a little longer each time and
    /// shows the error as its trace.
    async fn settle(
        &self,
        record: &ExporterRecord,
        state: &mut Held,
        outcome: Result<(), CopyError>,
    ) -> Result<(), StoreError> {
        match outcome {
            Ok(()) => state.failures = 0,
            Err(e) => {
                state.failures = state.failures.saturating_add(1);
                let pause = Duration::from_millis(250 << state.failures.min(7));
                state.retry_at = Instant::now() + pause.min(MAX_BACKOFF);
                tracing::warn!(exporter = %record.name, error = %e, "exporter failed; retrying");
                let current = self.store.exporter(&record.name).await?;
                let offset = current.map_or(record.offset, |c| c.offset);
                self.store
                    .record_progress(&record.name, offset, now_ms(), &e.to_string())
                    .await?;
            }
        }
        Ok(())
    }

    /// One step of one exporter: the full copy if it has none yet, else the trail since its
    /// offset, page by page.
    async fn advance(&self, record: &ExporterRecord) -> Result<(), CopyError> {
        let spec = decode(record).map_err(|e| CopyError::Spec(e.to_string()))?;
        let destination = Destination::new(&spec.config)?;
        let source = self.registry.store().clone();
        let last = source.last_audit_seq().await?;
        metrics::gauge!("covenant_exporter_lag", "exporter" => record.name.clone())
            .set((last - record.offset).max(0) as f64);
        let mut copier = Copier {
            spec: &spec,
            destination: &destination,
            source: source.as_ref(),
            done: HashSet::new(),
        };
        if record.offset == 0 {
            for (subject, _) in source.subjects().await? {
                if spec.exports(&subject) {
                    copier.copy(subject, 0).await?;
                }
            }
            // Changes made during the copy are in the trail after `last`: copied next time.
            return Ok(self
                .store
                .record_progress(&record.name, last, now_ms(), "")
                .await?);
        }
        let mut offset = record.offset;
        loop {
            let query = AuditQuery {
                after: offset,
                limit: PAGE,
                outcome: Some("ok".into()),
                ..AuditQuery::default()
            };
            let entries = source.audit_entries(&query).await?;
            let Some(newest) = entries.last().map(|e| e.seq) else {
                break;
            };
            let changed: BTreeSet<&str> = entries
                .iter()
                .filter(|e| copies(&e.operation))
                .filter_map(|e| e.subject.as_deref())
                .filter(|s| spec.exports(s))
                .collect();
            copier.done.clear();
            for subject in changed {
                copier.copy(subject.to_string(), 0).await?;
            }
            offset = newest;
            self.store
                .record_progress(&record.name, offset, now_ms(), "")
                .await?;
            if (entries.len() as i64) < PAGE {
                break;
            }
        }
        if offset == record.offset && !record.trace.is_empty() {
            self.store
                .record_progress(&record.name, offset, now_ms(), "")
                .await?;
        }
        metrics::gauge!("covenant_exporter_lag", "exporter" => record.name.clone())
            .set((last - offset).max(0) as f64);
        Ok(())
    }
}

/// Copies subjects to the destination: what it lacks is written with the source's ids and
/// version numbers, deletes follow, and the subject's config replaces the destination's.
struct Copier<'a> {
    spec: &'a ExporterSpec,
    destination: &'a Destination,
    source: &'a dyn Store,
    /// Subjects already copied in this step (references are copied before their referrers).
    done: HashSet<String>,
}

type CopyFuture<'f> = Pin<Box<dyn Future<Output = Result<(), CopyError>> + Send + 'f>>;

impl Copier<'_> {
    fn copy(&mut self, subject: String, depth: usize) -> CopyFuture<'_> {
        Box::pin(async move {
            if depth > REFERENCE_DEPTH || !self.done.insert(subject.clone()) {
                return Ok(());
            }
            let versions = self.source.subject_versions(&subject).await?;
            let target = self.spec.destination_subject(&subject);
            let held = self.destination.versions(&target, true).await?;
            let live = self.destination.versions(&target, false).await?;
            let mut import_mode = false;
            for v in &versions {
                if !held.contains(&v.version) {
                    for r in &v.schema.references {
                        let referenced = qualify_with_parent(&subject, &r.subject);
                        self.copy(referenced, depth + 1).await?;
                    }
                    if !import_mode {
                        self.destination.import_mode(&target).await?;
                        import_mode = true;
                    }
                    let body = self.version_body(&subject, v);
                    self.destination.register(&target, &body).await?;
                    if v.deleted {
                        self.destination
                            .delete_version(&target, v.version, false)
                            .await?;
                    }
                } else if v.deleted && live.contains(&v.version) {
                    self.destination
                        .delete_version(&target, v.version, false)
                        .await?;
                }
            }
            for gone in held
                .iter()
                .filter(|n| !versions.iter().any(|v| v.version == **n))
            {
                if live.contains(gone) {
                    self.destination
                        .delete_version(&target, *gone, false)
                        .await?;
                }
                self.destination
                    .delete_version(&target, *gone, true)
                    .await?;
            }
            self.copy_config(&subject, &target).await
        })
    }

    fn version_body(&self, subject: &str, v: &covenant_store::StoredVersion) -> Value {
        let references: Vec<Value> = v
            .schema
            .references
            .iter()
            .map(|r| {
                let referenced = qualify_with_parent(subject, &r.subject);
                json!({
                    "name": r.name,
                    "subject": self.spec.destination_subject(&referenced),
                    "version": r.version,
                })
            })
            .collect();
        let mut body = json!({
            "schema": v.schema.schema,
            "schemaType": v.schema.schema_type,
            "references": references,
            "id": public_id(v.schema.id),
            "version": v.version,
        });
        if let Some(object) = body.as_object_mut() {
            if let Some(metadata) = &v.schema.metadata {
                object.insert("metadata".into(), metadata.clone());
            }
            if let Some(rule_set) = &v.schema.rule_set {
                object.insert("ruleSet".into(), rule_set.clone());
            }
        }
        body
    }

    /// The subject's own config, without `alias` (which names a source subject).
    async fn copy_config(&self, subject: &str, target: &str) -> Result<(), CopyError> {
        match self.source.config(Scope::Subject(subject)).await? {
            Some(config) => {
                let mut body = serde_json::Map::new();
                for (k, v) in config.extra {
                    if k != "alias" {
                        body.insert(k, v);
                    }
                }
                if let Some(level) = config.compatibility {
                    body.insert("compatibility".into(), Value::String(level));
                }
                if !body.is_empty() {
                    self.destination
                        .put_config(target, &Value::Object(body))
                        .await?;
                }
            }
            None => self.destination.delete_config(target).await?,
        }
        Ok(())
    }
}
