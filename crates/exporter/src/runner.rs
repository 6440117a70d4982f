//! The loop that runs this node's exporters: each running exporter this node holds the lease
//! of copies everything on its first run, then follows the audit trail page by page, copying
//! each changed subject whole, and records its progress after every page. A destination that
//! fails is retried with a doubling pause (up to 30 s) and the error shown as the `trace`.
//!
//! Every step runs as the exporter's creator: it starts only while the creator may still
//! administer exporters (else the exporter pauses itself, saying why), and copies a subject
//! only while the creator may read it. Subjects it may not read are skipped, and so are
//! subjects referring to them (their schemas cannot be registered without them); the trace
//! counts them without naming them, since whoever reads the status may not read them either.

use crate::authority::{Creator, ExportAuthority};
use crate::destination::{Destination, DestinationError, Registered};
use crate::keys::KeySnapshot;
use crate::spec::ExporterSpec;
use crate::{Exporters, PAUSED, RUNNING, decode, now_ms};
use covenant_registry::AuditContext;
use covenant_registry::deks::DekRegistry;
use covenant_store::context::{
    DEFAULT_CONTEXT, context_of, is_context_only, public_id, qualify_with_parent,
};
use covenant_store::exporters::{ExporterRecord, Lease};
use covenant_store::{AuditQuery, AuditTarget, Scope, Store, StoreError};
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

/// The trace of an exporter found to copy into its own source.
const THIS_REGISTRY: &str = "paused: the destination is this registry itself (its replies carry this \
     registry's instance identity); an exporter must copy to another registry";

/// Whether a config setting is the same on both sides, an empty value (null, "", [] or {})
/// being the same as none.
fn same_setting(ours: Option<&Value>, theirs: Option<&Value>) -> bool {
    let empty = |v: Option<&Value>| match v {
        None | Some(Value::Null) => true,
        Some(Value::String(s)) => s.is_empty(),
        Some(Value::Array(a)) => a.is_empty(),
        Some(Value::Object(o)) => o.is_empty(),
        Some(_) => false,
    };
    ours == theirs || (empty(ours) && empty(theirs))
}

/// The trail operations that change what an exporter copies.
fn copies(operation: &str) -> bool {
    operation.starts_with("register")
        || operation.starts_with("delete.")
        || operation.starts_with("config.")
        || operation.starts_with("dek.")
        || operation.starts_with("kek.")
}

#[derive(Debug, thiserror::Error)]
pub(crate) enum CopyError {
    #[error(transparent)]
    Destination(#[from] DestinationError),
    #[error("reading the source: {0}")]
    Source(#[from] StoreError),
    #[error("{0}")]
    Spec(String),
    /// The destination holds something else than the source where the copy would write.
    #[error("{0}")]
    Conflict(Conflict),
}

/// A difference between what an exporter wrote and what its destination holds: the trace
/// (which names no subject, as traces never do) and the audit entry's detail (which does).
#[derive(Debug)]
pub(crate) struct Conflict {
    trace: String,
    detail: String,
}

impl std::fmt::Display for Conflict {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.trace)
    }
}

impl Conflict {
    /// The destination holds `version` with another schema id than the source's.
    fn version(subject: &str, target: &str, version: i64, theirs: i64, ours: i64) -> Self {
        let what =
            format!("version {version} has schema id {theirs} at the destination and {ours} here");
        Conflict::stated(subject, target, &what)
    }

    /// The destination refused to take `version` with its id.
    fn refused(subject: &str, target: &str, version: i64, id: i64, message: &str) -> Self {
        let what =
            format!("the destination refused version {version} with schema id {id}: {message}");
        Conflict::stated(subject, target, &what)
    }

    fn stated(subject: &str, target: &str, what: &str) -> Self {
        let mend = "nothing was overwritten; remove the destination's own version (permanently) \
                    or align the source, then reset and resume the exporter";
        Conflict {
            trace: format!("conflict: {what} (the subject is named in the audit trail); {mend}"),
            detail: format!("conflict in subject {subject} (destination {target}): {what}"),
        }
    }

    /// A key of the subject's that the destination holds otherwise: `what` names the keys
    /// (for the audit entry), `unnamed` says the same without names (for the trace).
    pub(crate) fn of_keys(subject: &str, target: &str, what: &str, unnamed: &str) -> Self {
        let mend = "nothing was overwritten; remove the destination's key or export to other \
                    KEK names (kekRenameFormat), then reset and resume the exporter";
        Conflict {
            trace: format!(
                "conflict: {unnamed} (the subject and keys are named in the audit trail); {mend}"
            ),
            detail: format!("conflict in subject {subject} (destination {target}): {what}"),
        }
    }
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
        self.skipped_tally()
            .retain(|name, _| held.contains_key(name));
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

    fn skipped_tally(&self) -> std::sync::MutexGuard<'_, HashMap<String, BTreeSet<String>>> {
        self.skipped.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The trace of a step that went well: how many subjects are not copied because the
    /// creator may not read them (a count; their names are not for every reader).
    fn skipped_note(&self, name: &str) -> String {
        match self.skipped_tally().get(name).map_or(0, BTreeSet::len) {
            0 => String::new(),
            1 => "1 subject skipped for authorization: the exporter's creator may not read it"
                .to_string(),
            n => format!(
                "{n} subjects skipped for authorization: the exporter's creator may not read them"
            ),
        }
    }

    /// Pauses an exporter whose creator may no longer administer exporters, saying so in
    /// its trace and in the audit trail.
    async fn pause_for_authority(&self, name: &str) -> Result<(), CopyError> {
        self.pause_saying(
            name,
            "paused: the exporter's creator no longer may administer exporters",
        )
        .await
    }

    /// Pauses a running exporter, `why` as its trace and in the audit trail.
    async fn pause_saying(&self, name: &str, why: &str) -> Result<(), CopyError> {
        self.pause_with(name, why, why).await
    }

    /// Pauses a running exporter, `why` as its trace and `detail` in the audit trail.
    async fn pause_with(&self, name: &str, why: &str, detail: &str) -> Result<(), CopyError> {
        let Some(mut current) = self.store.exporter(name).await? else {
            return Ok(());
        };
        if current.state != RUNNING {
            return Ok(());
        }
        current.state = PAUSED.into();
        current.trace = why.into();
        current.ts = now_ms();
        let audit = AuditContext {
            principal: "covenant".into(),
            ..AuditContext::default()
        };
        let entry = audit.entry(
            "exporter.pause",
            AuditTarget {
                detail: Some(format!("exporter {name} {detail}")),
                ..AuditTarget::default()
            },
        );
        tracing::warn!(exporter = %name, "{why}");
        self.store.update_exporter(&current, Some(&entry)).await?;
        self.skipped_tally().remove(name);
        self.wake.notify_one();
        Ok(())
    }

    /// One step of one exporter: the full copy if it has none yet, else the trail since its
    /// offset, page by page; all of it as the exporter's creator.
    async fn advance(&self, record: &ExporterRecord) -> Result<(), CopyError> {
        let creator = Creator::decode(&record.creator);
        if !self.authority.may_administer(&creator) {
            return self.pause_for_authority(&record.name).await;
        }
        let spec = decode(record).map_err(|e| CopyError::Spec(e.to_string()))?;
        let destination = Destination::new(&spec.config)?;
        match self.copy_step(record, &spec, &creator, &destination).await {
            // Nothing was written: the first call to the destination carried the identity.
            Err(CopyError::Destination(_)) if destination.is_this_registry() => {
                self.pause_saying(&record.name, THIS_REGISTRY).await
            }
            // A conflict stops the exporter where it is, for a person to decide.
            Err(CopyError::Conflict(conflict)) => {
                metrics::counter!("covenant_exporter_conflicts_total", "exporter" => record.name.clone())
                    .increment(1);
                self.pause_with(&record.name, &conflict.trace, &conflict.detail)
                    .await
            }
            outcome => outcome,
        }
    }

    async fn copy_step(
        &self,
        record: &ExporterRecord,
        spec: &ExporterSpec,
        creator: &Creator,
        destination: &Destination,
    ) -> Result<(), CopyError> {
        let source = self.registry.store().clone();
        let last = source.last_audit_seq().await?;
        metrics::gauge!("covenant_exporter_lag", "exporter" => record.name.clone())
            .set((last - record.offset).max(0) as f64);
        let mut copier = Copier {
            spec,
            destination,
            source: source.as_ref(),
            deks: self.registry.deks().ok(),
            keys: None,
            authority: self.authority.as_ref(),
            creator,
            done: HashSet::new(),
            skipped: BTreeSet::new(),
        };
        if record.offset == 0 {
            let mut contexts = BTreeSet::from([DEFAULT_CONTEXT.to_string()]);
            for (subject, _) in source.subjects().await? {
                contexts.insert(context_of(&subject).to_string());
                if spec.exports(&subject) {
                    copier.copy(subject, 0).await?;
                }
            }
            // Subjects with keys and no schema (yet) have their keys copied too.
            for subject in copier.subjects_with_keys().await? {
                copier.copy(subject, 0).await?;
            }
            for context in &contexts {
                copier.copy_context_config(context).await?;
            }
            let skipped = copier.skipped_exported();
            self.skipped_tally().insert(record.name.clone(), skipped);
            // Changes made during the copy are in the trail after `last`: copied next time.
            let note = self.skipped_note(&record.name);
            return Ok(self
                .store
                .record_progress(&record.name, last, now_ms(), &note)
                .await?);
        }
        // What this node has not yet counted (its first step since it took the exporter):
        // every exported subject the creator may not read.
        let known = self.skipped_tally().get(&record.name).cloned();
        let mut retry = match known {
            Some(known) => known,
            None => {
                let mut unreadable = BTreeSet::new();
                for (subject, _) in source.subjects().await? {
                    if spec.exports(&subject) && !self.authority.may_read(creator, &subject) {
                        unreadable.insert(subject);
                    }
                }
                self.skipped_tally()
                    .insert(record.name.clone(), unreadable.clone());
                unreadable
            }
        };
        // Skipped subjects the creator may read by now are copied whole, as if they changed.
        retry.retain(|s| spec.exports(s) && self.authority.may_read(creator, s));
        for subject in retry {
            copier.copy(subject, 0).await?;
        }
        self.settle_skips(&record.name, &copier);
        let mut offset = record.offset;
        let mut trace = record.trace.clone();
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
            if !self.authority.may_administer(creator) {
                return self.pause_for_authority(&record.name).await;
            }
            let copied = || entries.iter().filter(|e| copies(&e.operation));
            let changed: BTreeSet<&str> = copied()
                .filter_map(|e| e.subject.as_deref())
                .filter(|s| !is_context_only(s) && spec.exports(s))
                .collect();
            // Config changes of a whole context: the global scope, or a context's key.
            let contexts: BTreeSet<&str> = copied()
                .filter(|e| e.operation.starts_with("config."))
                .filter_map(|e| match e.subject.as_deref() {
                    None => Some(DEFAULT_CONTEXT),
                    Some(key) if is_context_only(key) => Some(context_of(key)),
                    Some(_) => None,
                })
                .collect();
            copier.done.clear();
            copier.skipped.clear();
            copier.keys = None;
            for subject in changed {
                copier.copy(subject.to_string(), 0).await?;
            }
            // A KEK changed (its description, its deleted state): every subject with keys
            // is copied again, which writes only what differs.
            if copied().any(|e| e.operation.starts_with("kek.")) {
                for subject in copier.subjects_with_keys().await? {
                    copier.copy(subject, 0).await?;
                }
            }
            for context in contexts {
                copier.copy_context_config(context).await?;
            }
            self.settle_skips(&record.name, &copier);
            offset = newest;
            trace = self.skipped_note(&record.name);
            self.store
                .record_progress(&record.name, offset, now_ms(), &trace)
                .await?;
            if (entries.len() as i64) < PAGE {
                break;
            }
        }
        let note = self.skipped_note(&record.name);
        if offset == record.offset && trace != note {
            self.store
                .record_progress(&record.name, offset, now_ms(), &note)
                .await?;
        }
        metrics::gauge!("covenant_exporter_lag", "exporter" => record.name.clone())
            .set((last - offset).max(0) as f64);
        Ok(())
    }

    /// Folds what a copier did into the exporter's tally: subjects it copied leave it, the
    /// exported subjects it skipped join it.
    fn settle_skips(&self, name: &str, copier: &Copier<'_>) {
        let skipped = copier.skipped_exported();
        let mut tally = self.skipped_tally();
        let entry = tally.entry(name.to_string()).or_default();
        entry.retain(|s| !copier.done.contains(s) || copier.skipped.contains(s));
        entry.extend(skipped);
    }
}

/// Copies subjects to the destination: what it lacks is written with the source's ids and
/// version numbers, deletes follow, the subject's config replaces the destination's, and its
/// keys follow (`keys.rs`).
pub(crate) struct Copier<'a> {
    pub(crate) spec: &'a ExporterSpec,
    pub(crate) destination: &'a Destination,
    source: &'a dyn Store,
    /// This registry's DEK Registry, if it has one.
    pub(crate) deks: Option<&'a DekRegistry>,
    /// Its keys, read once per page of work.
    pub(crate) keys: Option<KeySnapshot>,
    pub(crate) authority: &'a dyn ExportAuthority,
    pub(crate) creator: &'a Creator,
    /// Subjects already copied in this step (references are copied before their referrers).
    done: HashSet<String>,
    /// Subjects not copied in this step because the creator may not read them, or because
    /// they refer to such a subject.
    skipped: BTreeSet<String>,
}

/// Whether the subject is on the destination (copied, or being copied further up the
/// chain of references) rather than skipped.
type CopyFuture<'f> = Pin<Box<dyn Future<Output = Result<bool, CopyError>> + Send + 'f>>;

impl Copier<'_> {
    /// The skipped subjects the exporter's patterns match (a referenced subject outside
    /// them is accounted for by its referrer).
    fn skipped_exported(&self) -> BTreeSet<String> {
        self.skipped
            .iter()
            .filter(|s| self.spec.exports(s))
            .cloned()
            .collect()
    }

    fn copy(&mut self, subject: String, depth: usize) -> CopyFuture<'_> {
        Box::pin(async move {
            if self.skipped.contains(&subject) {
                return Ok(false);
            }
            if depth > REFERENCE_DEPTH || self.done.contains(&subject) {
                return Ok(true);
            }
            if !self.authority.may_read(self.creator, &subject) {
                self.skipped.insert(subject);
                return Ok(false);
            }
            let versions = self.source.subject_versions(&subject).await?;
            // A schema referring to a subject the creator may not read cannot be copied
            // without it: decided before asking the destination anything.
            let blocked = versions.iter().flat_map(|v| &v.schema.references).any(|r| {
                let referenced = qualify_with_parent(&subject, &r.subject);
                !self.authority.may_read(self.creator, &referenced)
            });
            if blocked {
                self.skipped.insert(subject);
                return Ok(false);
            }
            self.done.insert(subject.clone());
            let target = self.spec.destination_subject(&subject);
            let held = self.destination.versions(&target, true).await?;
            let live = self.destination.versions(&target, false).await?;
            let mut import_mode = false;
            for v in &versions {
                if !held.contains(&v.version) {
                    for r in &v.schema.references {
                        let referenced = qualify_with_parent(&subject, &r.subject);
                        if !self.copy(referenced, depth + 1).await? {
                            self.skipped.insert(subject);
                            return Ok(false);
                        }
                    }
                    if !import_mode {
                        self.destination.import_mode(&target).await?;
                        import_mode = true;
                    }
                    let body = self.version_body(&subject, v);
                    if let Registered::Refused(message) =
                        self.destination.register(&target, &body).await?
                    {
                        let id = public_id(v.schema.id);
                        return Err(CopyError::Conflict(Conflict::refused(
                            &subject, &target, v.version, id, &message,
                        )));
                    }
                    if v.deleted {
                        self.destination
                            .delete_version(&target, v.version, false)
                            .await?;
                    }
                } else if let Some(theirs) = self.destination.version_id(&target, v.version).await?
                    && theirs != public_id(v.schema.id)
                {
                    let ours = public_id(v.schema.id);
                    return Err(CopyError::Conflict(Conflict::version(
                        &subject, &target, v.version, theirs, ours,
                    )));
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
            self.copy_config(&subject, &target).await?;
            self.copy_keys(&subject, &target).await?;
            Ok(true)
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

    /// The subject's own config, without `alias` (which names a source subject), written
    /// only when the destination's differs: a config already in place is not written again,
    /// so copying settles (an unchanged subject writes nothing, and two registries exporting
    /// to each other stop once they agree).
    async fn copy_config(&self, subject: &str, target: &str) -> Result<(), CopyError> {
        self.copy_config_of(Scope::Subject(subject), target).await
    }

    /// The config of a source context the exporter owns (the global config for the default
    /// context), onto its place at the destination ([`ExporterSpec::context_config_target`]).
    /// An unset global config is not copied: the destination keeps its own default.
    async fn copy_context_config(&self, context: &str) -> Result<(), CopyError> {
        let Some(target) = self.spec.context_config_target(context) else {
            return Ok(());
        };
        let key = covenant_store::context::context_key(context);
        let scope = if context == covenant_store::context::DEFAULT_CONTEXT {
            if self.source.config(Scope::Global).await?.is_none() {
                return Ok(());
            }
            Scope::Global
        } else {
            Scope::Subject(&key)
        };
        self.copy_config_of(scope, &target).await
    }

    async fn copy_config_of(&self, scope: Scope<'_>, target: &str) -> Result<(), CopyError> {
        match self.source.config(scope).await? {
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
                if body.is_empty() {
                    return Ok(());
                }
                let held = self.destination.config(target).await?;
                let in_place = held.is_some_and(|held| {
                    body.iter().all(|(k, v)| same_setting(Some(v), held.get(k)))
                });
                if !in_place {
                    self.destination
                        .put_config(target, &Value::Object(body))
                        .await?;
                }
            }
            None => {
                if self.destination.config(target).await?.is_some() {
                    self.destination.delete_config(target).await?;
                }
            }
        }
        Ok(())
    }
}
