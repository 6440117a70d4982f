//! What the registry keeps in memory (schemas and parsed schemas by id in [`crate::cache`],
//! answers by request content in [`crate::answers`]) and when it forgets it.

use crate::answers::{Answer, Answers, RequestKey, Route};
use crate::cache::{self, IdCache};
use crate::{Registry, SchemaRequest};
use covenant_schema::ParsedSchema;
use covenant_store::SchemaRecord;
use covenant_store::postgres::{Change, ChangeKind};
use std::sync::Arc;

/// What the id caches hold, for metrics and tests of their bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheUsage {
    pub records: usize,
    pub parsed: usize,
    /// Cached lookup and registration answers.
    pub answers: usize,
    pub capacity: usize,
    /// Estimated bytes of the record and parsed-schema caches (see `cache.rs`).
    pub records_bytes: usize,
    pub parsed_bytes: usize,
}

impl Registry {
    /// Bounds each id cache (records, parsed schemas) to `entries` ids; 0 caches nothing.
    pub fn with_cache_entries(mut self, entries: usize) -> Registry {
        self.by_id = IdCache::new(entries, cache::DEFAULT_RECORD_CACHE_BYTES);
        self.parsed = IdCache::new(entries, cache::DEFAULT_PARSED_CACHE_BYTES);
        self.answers = Answers::new(entries);
        self
    }

    /// How many ids the record and parsed-schema caches hold now, and their common bound.
    pub fn cache_usage(&self) -> CacheUsage {
        CacheUsage {
            records: self.by_id.len(),
            parsed: self.parsed.len(),
            answers: self.answers.len(),
            capacity: self.by_id.capacity(),
            records_bytes: self.by_id.bytes(),
            parsed_bytes: self.parsed.bytes(),
        }
    }

    pub(crate) fn cached(&self, id: i64) -> Option<Arc<SchemaRecord>> {
        self.by_id.get(id)
    }

    pub(crate) fn remember(&self, record: Arc<SchemaRecord>) {
        let bytes = cache::record_size(&record);
        self.by_id.insert(record.id, record, bytes);
    }

    pub(crate) fn forget_all(&self) {
        self.by_id.clear();
        self.parsed.clear();
        self.answers.clear();
    }

    /// Keeps what this node holds in memory true to `change`, committed by any node sharing
    /// the store (this one included) and told by the store's change feed.
    pub fn follow(&self, change: &Change) {
        let subject = change.subject.as_deref();
        match change.kind {
            ChangeKind::Subject => {
                // A delete may change answers of other subjects that refer to it.
                self.invalidate(change.id);
                self.answers.forget_answers();
            }
            // New ids are never cached negatively, but the subject's answers change.
            ChangeKind::Schema => self.forget_answers(subject),
            // Requests inherit config and mode: every answer goes, and the scope's rows.
            ChangeKind::Config | ChangeKind::Mode => {
                self.answers.scope_changed(subject.map(str::to_string));
            }
            ChangeKind::Resync => self.changes_missed(),
        }
        if let (ChangeKind::Subject | ChangeKind::Schema, Some(subject)) = (change.kind, subject) {
            self.known_subjects.seen(subject);
        }
    }

    /// The change feed may have missed changes (it reconnected, or its reader lagged): nothing
    /// kept from other nodes' writes is trusted any more.
    pub fn changes_missed(&self) {
        self.forget_all();
        self.known_subjects.start_over();
    }

    /// Drops what is cached for schema `id`, or everything with `None`: another node sharing
    /// the store changed it (permanent deletes are the only change that can stale an id).
    pub fn invalidate(&self, id: Option<i64>) {
        match id {
            None => self.forget_all(),
            Some(id) => {
                self.by_id.remove(id);
                self.parsed.remove(id);
            }
        }
    }

    /// Drops the cached answers for `subject` (all of them with `None`): another node
    /// registered under it, or changed settings that requests inherit.
    pub fn forget_answers(&self, subject: Option<&str>) {
        match subject {
            Some(subject) => {
                self.answers.forget_subject(subject);
            }
            None => self.answers.clear(),
        }
    }

    /// The answer a registration of `request` would give when it is cached: an existing
    /// version, returned without touching the store.
    pub fn registered(
        &self,
        subject: &str,
        request: &SchemaRequest,
        normalize: bool,
    ) -> Option<Answer> {
        let key = RequestKey::of(Route::Register { normalize }, subject, request)?;
        self.answers.get(subject, &key)
    }

    /// The answer [`Registry::lookup`] would give when it is cached, without touching the
    /// store.
    pub fn looked_up(
        &self,
        subject: &str,
        request: &SchemaRequest,
        normalize: bool,
        deleted: bool,
    ) -> Option<Answer> {
        let key = RequestKey::of(Route::Lookup { normalize, deleted }, subject, request)?;
        self.answers.get(subject, &key)
    }

    pub(crate) fn cached_parsed(&self, id: i64) -> Option<Arc<ParsedSchema>> {
        self.parsed.get(id)
    }
}
