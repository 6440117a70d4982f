//! Answers to the producer's hot path, by the request's content.
//!
//! Every serializer that does not cache calls `POST /subjects/{s}` (lookup) or
//! `POST /subjects/{s}/versions` (register) when its producer starts, with a schema the
//! registry has usually seen already. Answering those from the store means parsing the
//! schema, hashing its identity and reading the subject's versions; answering from here costs
//! one hash of the request.
//!
//! The key is a SHA-256 of everything that decides the answer (the route, its flags, the
//! subject and the request body as the domain sees it), so two different requests never share
//! an entry. What a request may inherit from the store (config, mode, the latest version's
//! metadata, a `-1` reference to another subject's latest version) is handled by
//! invalidation: a registration forgets its subject, and every other write (deletes, config,
//! mode, contexts) forgets everything; on PostgreSQL the change feed does the same for other
//! nodes' writes. Requests whose answer depends on more than that (samples, an explicit id or
//! version, a reference to a latest version) are never cached.
//!
//! Staleness after a write is ruled out by an epoch: every invalidation bumps it, and an
//! answer computed from a store read is kept only when no invalidation happened since just
//! before that read.

use crate::SchemaRequest;
use bytes::Bytes;
use covenant_store::{ConfigRecord, SchemaRecord, Settings, StoredVersion};
use hashlink::LruCache;
use sha2::{Digest, Sha256};
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, OnceLock};

/// The request an answer is for: a SHA-256 of its route, flags, subject and body.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) struct RequestKey([u8; 32]);

/// The routes whose answers are cached, with the flags that change their answer.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Route {
    Lookup { normalize: bool, deleted: bool },
    Register { normalize: bool },
}

impl RequestKey {
    /// The key of `request` on `route` for `subject`, or `None` when its answer depends on
    /// more than the subject's versions and the settings (see the module comment).
    pub(crate) fn of(route: Route, subject: &str, request: &SchemaRequest) -> Option<RequestKey> {
        let cacheable = request.samples.is_empty()
            && request.id.is_none()
            && matches!(request.version, None | Some(0))
            && request.references.iter().all(|r| r.version > 0);
        if !cacheable {
            return None;
        }
        let mut h = Sha256::new();
        let flags: [u8; 3] = match route {
            Route::Lookup { normalize, deleted } => [b'l', normalize as u8, deleted as u8],
            Route::Register { normalize } => [b'r', normalize as u8, 0],
        };
        h.update(flags);
        // Every variable-length part is length-prefixed, so no two requests hash alike by
        // moving bytes from one part to the next.
        let mut part = |bytes: &[u8]| {
            h.update((bytes.len() as u64).to_le_bytes());
            h.update(bytes);
        };
        part(subject.as_bytes());
        part(request.schema.as_bytes());
        part(request.schema_type.as_deref().unwrap_or("\0").as_bytes());
        for r in &request.references {
            part(r.name.as_bytes());
            part(r.subject.as_bytes());
            part(&r.version.to_le_bytes());
        }
        part(b"\0end-of-references");
        let json = |v: &Option<serde_json::Value>| v.as_ref().map(|v| v.to_string());
        part(
            json(&request.metadata)
                .as_deref()
                .unwrap_or("\0")
                .as_bytes(),
        );
        part(
            json(&request.rule_set)
                .as_deref()
                .unwrap_or("\0")
                .as_bytes(),
        );
        Some(RequestKey(h.finalize().into()))
    }
}

/// A cached answer: one version of the subject it is cached under. The schema is shared with
/// the id cache's record, so an entry costs its key, a few words beside the schema text and,
/// once a hit has been answered, the response body.
#[derive(Debug, Clone)]
pub struct Answer {
    pub version: i64,
    pub deleted: bool,
    pub created_at: i64,
    pub schema: Arc<SchemaRecord>,
    /// The response body the server made from this answer (in the form it answers a request
    /// that names no `format`), kept so that every later hit sends the same bytes instead of
    /// building them again. It is dropped with the answer, so no invalidation can miss it.
    rendered: Arc<OnceLock<Bytes>>,
}

impl Answer {
    pub(crate) fn of(v: &StoredVersion, schema: Arc<SchemaRecord>) -> Answer {
        Answer::new(v.version, v.deleted, v.created_at, schema)
    }

    pub(crate) fn new(
        version: i64,
        deleted: bool,
        created_at: i64,
        schema: Arc<SchemaRecord>,
    ) -> Answer {
        Answer {
            version,
            deleted,
            created_at,
            schema,
            rendered: Arc::default(),
        }
    }

    pub fn to_version(&self, subject: &str) -> StoredVersion {
        StoredVersion {
            subject: subject.to_string(),
            version: self.version,
            deleted: self.deleted,
            created_at: self.created_at,
            schema: self.schema.as_ref().clone(),
        }
    }

    /// The response body kept by [`Answer::keep_rendered`], if a hit has been answered.
    pub fn rendered(&self) -> Option<Bytes> {
        self.rendered.get().cloned()
    }

    /// Keeps the body the server answered this request with. The body must depend only on
    /// the request's key and this answer; the first body kept stays.
    pub fn keep_rendered(&self, body: Bytes) {
        let _ = self.rendered.set(body);
    }
}

/// Answers grouped by subject (so a registration forgets its subject's at once), the least
/// recently used subjects evicted first, at most `capacity` answers in all.
pub(crate) struct Answers {
    inner: Mutex<Inner>,
    capacity: usize,
}

struct Inner {
    /// Bumped by every invalidation; see the module comment.
    epoch: u64,
    /// Bumped by every change of config or mode rows (and by a clear): rows read before it
    /// moved are not kept. Apart from `epoch`, which every registration moves, so that a busy
    /// store does not keep the rows from ever loading.
    rows_epoch: u64,
    len: usize,
    subjects: LruCache<String, Vec<(RequestKey, Answer)>>,
    /// Each subject's alias target (`None`: no alias), read from its config, which every
    /// subject-addressed read follows first.
    aliases: LruCache<String, Option<String>>,
    /// Every config and mode row: where this process is the store's only writer
    /// ([`covenant_store::Store::only_writer`]), what config and mode reads answer from; where
    /// other nodes write too, what a new subject's registration is judged by before its commit
    /// checks them (`Registry::alias_target_for_registration`), each scope forgotten when the
    /// change feed tells of its change. Whole, so that a scope without a row, like every new
    /// subject's, is answered without reading the store.
    rows: Option<Rows>,
}

/// Config and mode rows by scope (`None`: the global scope).
#[derive(Debug, Default)]
pub(crate) struct Rows {
    pub configs: HashMap<Option<String>, ConfigRecord>,
    pub modes: HashMap<Option<String>, String>,
    /// Scopes changed since the rows were read, to be read again one by one: reloading every
    /// row after each change would make a loop of config changes quadratic.
    pub unknown: HashSet<Option<String>>,
}

/// Distinct requests kept per subject: a subject is asked with a handful of spellings of its
/// schemas at most (whitespace, key order); more only churns.
const PER_SUBJECT: usize = 16;

impl Answers {
    pub(crate) fn new(capacity: usize) -> Answers {
        Answers {
            inner: Mutex::new(Inner {
                epoch: 0,
                rows_epoch: 0,
                len: 0,
                subjects: LruCache::new_unbounded(),
                aliases: LruCache::new(capacity),
                rows: None,
            }),
            capacity,
        }
    }

    /// The epoch to pass to [`Answers::insert`]: read it before reading the store.
    pub(crate) fn epoch(&self) -> u64 {
        self.inner.lock().map(|i| i.epoch).unwrap_or(u64::MAX)
    }

    /// The epoch to pass to [`Answers::load_rows`] and [`Answers::known_again`]: read it
    /// before reading the rows from the store.
    pub(crate) fn rows_epoch(&self) -> u64 {
        self.inner.lock().map(|i| i.rows_epoch).unwrap_or(u64::MAX)
    }

    pub(crate) fn get(&self, subject: &str, key: &RequestKey) -> Option<Answer> {
        let mut inner = self.inner.lock().ok()?;
        let entries = inner.subjects.get(subject)?;
        entries
            .iter()
            .find(|(k, _)| k == key)
            .map(|(_, a)| a.clone())
    }

    /// Keeps `answer`, computed from a store read made after `epoch` was read, unless an
    /// invalidation happened since (the answer may then be stale).
    pub(crate) fn insert(&self, epoch: u64, subject: &str, key: RequestKey, answer: Answer) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        if inner.epoch != epoch || self.capacity == 0 {
            return;
        }
        let added = match inner.subjects.get_mut(subject) {
            Some(entries) => {
                if entries.iter().any(|(k, _)| *k == key) {
                    return;
                }
                if entries.len() >= PER_SUBJECT {
                    entries.remove(0);
                    0
                } else {
                    1
                }
            }
            None => {
                inner.subjects.insert(subject.to_string(), Vec::new());
                1
            }
        };
        if let Some(entries) = inner.subjects.get_mut(subject) {
            entries.push((key, answer));
        }
        inner.len += added;
        while inner.len > self.capacity {
            match inner.subjects.remove_lru() {
                Some((_, evicted)) => inner.len -= evicted.len(),
                None => break,
            }
        }
    }

    /// The cached alias target of `subject`: `Some(None)` when it has no alias.
    pub(crate) fn alias(&self, subject: &str) -> Option<Option<String>> {
        self.inner.lock().ok()?.aliases.get(subject).cloned()
    }

    /// Keeps the alias target read from the store after `epoch` was read, like
    /// [`Answers::insert`]. Config changes clear every answer, so they drop these too.
    pub(crate) fn insert_alias(&self, epoch: u64, subject: &str, target: Option<String>) {
        if let Ok(mut inner) = self.inner.lock()
            && inner.epoch == epoch
            && self.capacity > 0
        {
            inner.aliases.insert(subject.to_string(), target);
        }
    }

    /// The config row of `scope` (`Some(None)`: it has none), or `None` when the rows are
    /// not loaded.
    pub(crate) fn config(&self, scope: &Option<String>) -> Option<Option<ConfigRecord>> {
        let inner = self.inner.lock().ok()?;
        let rows = inner.rows.as_ref().filter(|r| !r.unknown.contains(scope))?;
        Some(rows.configs.get(scope).cloned())
    }

    /// The mode row of `scope`, like [`Answers::config`].
    pub(crate) fn mode(&self, scope: &Option<String>) -> Option<Option<String>> {
        let inner = self.inner.lock().ok()?;
        let rows = inner.rows.as_ref().filter(|r| !r.unknown.contains(scope))?;
        Some(rows.modes.get(scope).cloned())
    }

    /// The rows of `scopes`, in order, when every one of them is known (loaded and not
    /// changed since).
    pub(crate) fn rows_of(&self, scopes: &[Option<String>]) -> Option<Vec<Settings>> {
        let inner = self.inner.lock().ok()?;
        let rows = inner.rows.as_ref()?;
        scopes
            .iter()
            .map(|scope| {
                (!rows.unknown.contains(scope)).then(|| Settings {
                    config: rows.configs.get(scope).cloned(),
                    mode: rows.modes.get(scope).cloned(),
                })
            })
            .collect()
    }

    /// Whether the rows of `scope` are known (loaded and not changed since).
    pub(crate) fn knows(&self, scope: &Option<String>) -> bool {
        self.inner
            .lock()
            .is_ok_and(|i| i.rows.as_ref().is_some_and(|r| !r.unknown.contains(scope)))
    }

    /// Whether anything is kept at all (a capacity of 0 keeps nothing).
    pub(crate) fn keeps(&self) -> bool {
        self.capacity > 0
    }

    /// Whether the rows are loaded, so that a miss is one changed scope, not all of them.
    pub(crate) fn rows_loaded(&self) -> bool {
        self.inner.lock().is_ok_and(|i| i.rows.is_some())
    }

    /// Keeps the config and mode rows of one changed scope, read after `epoch`
    /// ([`Answers::rows_epoch`]) was read.
    pub(crate) fn known_again(
        &self,
        epoch: u64,
        scope: Option<String>,
        config: Option<ConfigRecord>,
        mode: Option<String>,
    ) {
        let Ok(mut inner) = self.inner.lock() else {
            return;
        };
        if inner.rows_epoch != epoch {
            return;
        }
        if let Some(rows) = inner.rows.as_mut() {
            match config {
                Some(c) => rows.configs.insert(scope.clone(), c),
                None => rows.configs.remove(&scope),
            };
            match mode {
                Some(m) => rows.modes.insert(scope.clone(), m),
                None => rows.modes.remove(&scope),
            };
            rows.unknown.remove(&scope);
        }
    }

    /// A write changed the config or mode of `scope` (or removed them with its subject): every
    /// answer may inherit it, and its rows must be read again.
    pub(crate) fn scope_changed(&self, scope: Option<String>) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.epoch += 1;
            inner.rows_epoch += 1;
            inner.subjects.clear();
            inner.aliases.clear();
            inner.len = 0;
            if let Some(rows) = inner.rows.as_mut() {
                rows.unknown.insert(scope);
            }
        }
    }

    /// Keeps every config and mode row, read after `epoch` ([`Answers::rows_epoch`]) was
    /// read.
    pub(crate) fn load_rows(&self, epoch: u64, rows: Rows) {
        if let Ok(mut inner) = self.inner.lock()
            && inner.rows_epoch == epoch
            && self.capacity > 0
        {
            inner.rows = Some(rows);
        }
    }

    /// Forgets the answers of `subject`; returns the new epoch.
    pub(crate) fn forget_subject(&self, subject: &str) -> u64 {
        let Ok(mut inner) = self.inner.lock() else {
            return u64::MAX;
        };
        inner.epoch += 1;
        if let Some(evicted) = inner.subjects.remove(subject) {
            inner.len -= evicted.len();
        }
        inner.epoch
    }

    /// Forgets every answer and alias but keeps the config and mode rows: what another node's
    /// registration may change.
    pub(crate) fn forget_answers(&self) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.epoch += 1;
            inner.subjects.clear();
            inner.aliases.clear();
            inner.len = 0;
        }
    }

    pub(crate) fn clear(&self) {
        if let Ok(mut inner) = self.inner.lock() {
            inner.epoch += 1;
            inner.rows_epoch += 1;
            inner.subjects.clear();
            inner.aliases.clear();
            inner.rows = None;
            inner.len = 0;
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.inner.lock().map(|i| i.len).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use covenant_store::SchemaRef;

    fn request(schema: &str) -> SchemaRequest {
        SchemaRequest {
            schema: schema.to_string(),
            ..SchemaRequest::default()
        }
    }

    fn answer(id: i64) -> Answer {
        Answer::new(
            1,
            false,
            0,
            Arc::new(SchemaRecord {
                id,
                schema_type: "AVRO".into(),
                schema: "\"int\"".into(),
                references: vec![],
                metadata: None,
                rule_set: None,
                content_key: String::new(),
            }),
        )
    }

    const LOOKUP: Route = Route::Lookup {
        normalize: false,
        deleted: false,
    };

    #[test]
    fn keys_tell_routes_flags_subjects_and_bodies_apart() {
        let r = request("\"int\"");
        let key = |route, subject| RequestKey::of(route, subject, &r).unwrap();
        let register = Route::Register { normalize: false };
        let deleted = Route::Lookup {
            normalize: false,
            deleted: true,
        };
        assert_ne!(key(LOOKUP, "a"), key(register, "a"));
        assert_ne!(key(LOOKUP, "a"), key(deleted, "a"));
        assert_ne!(key(LOOKUP, "a"), key(LOOKUP, "b"));
        assert_eq!(key(LOOKUP, "a"), key(LOOKUP, "a"));
        // Bytes moved between the subject and the schema do not make the same key.
        let moved = RequestKey::of(LOOKUP, "a\"", &request("int\"")).unwrap();
        assert_ne!(key(LOOKUP, "a"), moved);
        let mut typed = request("\"int\"");
        typed.schema_type = Some("AVRO".into());
        assert_ne!(RequestKey::of(LOOKUP, "a", &typed), Some(key(LOOKUP, "a")));
    }

    #[test]
    fn requests_that_depend_on_more_are_not_cached() {
        let mut r = request("\"int\"");
        r.version = Some(-1);
        assert!(RequestKey::of(LOOKUP, "a", &r).is_none());
        let mut r = request("\"int\"");
        r.id = Some(7);
        assert!(RequestKey::of(LOOKUP, "a", &r).is_none());
        let mut r = request("\"int\"");
        r.references.push(SchemaRef {
            name: "x".into(),
            subject: "x".into(),
            version: -1,
        });
        assert!(RequestKey::of(LOOKUP, "a", &r).is_none());
        r.references[0].version = 2;
        assert!(RequestKey::of(LOOKUP, "a", &r).is_some());
    }

    #[test]
    fn a_kept_body_lives_and_dies_with_its_answer() {
        let answers = Answers::new(100);
        let key = RequestKey::of(LOOKUP, "s", &request("\"int\"")).unwrap();
        answers.insert(answers.epoch(), "s", key, answer(1));
        let hit = answers.get("s", &key).expect("cached");
        assert_eq!(
            hit.rendered(),
            None,
            "nothing is kept before a hit is answered"
        );
        hit.keep_rendered(Bytes::from_static(b"first"));
        hit.keep_rendered(Bytes::from_static(b"second"));
        let again = answers.get("s", &key).expect("cached");
        assert_eq!(again.rendered(), Some(Bytes::from_static(b"first")));
        answers.forget_subject("s");
        answers.insert(answers.epoch(), "s", key, answer(2));
        let fresh = answers.get("s", &key).expect("cached again");
        assert_eq!(fresh.rendered(), None, "a new answer starts without a body");
    }

    #[test]
    fn an_answer_read_before_an_invalidation_is_not_kept() {
        let answers = Answers::new(100);
        let key = RequestKey::of(LOOKUP, "s", &request("\"int\"")).unwrap();
        let before = answers.epoch();
        answers.forget_subject("other");
        answers.insert(before, "s", key, answer(1));
        assert!(
            answers.get("s", &key).is_none(),
            "kept a possibly stale answer"
        );
        answers.insert(answers.epoch(), "s", key, answer(1));
        assert_eq!(answers.get("s", &key).map(|a| a.schema.id), Some(1));
        answers.forget_subject("s");
        assert!(answers.get("s", &key).is_none());
        answers.insert(answers.epoch(), "s", key, answer(1));
        answers.clear();
        assert!(answers.get("s", &key).is_none());
        assert_eq!(answers.len(), 0);
    }

    #[test]
    fn aliases_are_kept_until_a_clear_and_only_when_read_in_time() {
        let answers = Answers::new(10);
        let before = answers.epoch();
        answers.clear();
        answers.insert_alias(before, "a", Some("b".into()));
        assert_eq!(answers.alias("a"), None, "read before a config change");
        answers.insert_alias(answers.epoch(), "a", Some("b".into()));
        answers.insert_alias(answers.epoch(), "c", None);
        assert_eq!(answers.alias("a"), Some(Some("b".into())));
        assert_eq!(answers.alias("c"), Some(None));
        answers.forget_subject("a");
        assert_eq!(
            answers.alias("a"),
            Some(Some("b".into())),
            "registrations keep aliases"
        );
        answers.clear();
        assert_eq!(answers.alias("a"), None);
    }

    #[test]
    fn never_holds_more_than_its_capacity() {
        let answers = Answers::new(10);
        for i in 0..100 {
            let subject = format!("s{}", i % 7);
            let key = RequestKey::of(LOOKUP, &subject, &request(&i.to_string())).unwrap();
            answers.insert(answers.epoch(), &subject, key, answer(i));
            assert!(answers.len() <= 10, "{} answers after {i}", answers.len());
        }
        let none = Answers::new(0);
        let key = RequestKey::of(LOOKUP, "s", &request("1")).unwrap();
        none.insert(none.epoch(), "s", key, answer(1));
        assert!(none.get("s", &key).is_none());
    }

    fn config(level: &str) -> ConfigRecord {
        ConfigRecord {
            compatibility: Some(level.to_string()),
            extra: Default::default(),
        }
    }

    #[test]
    fn loaded_rows_answer_scopes_without_a_row_until_one_changes() {
        let answers = Answers::new(10);
        let s = Some("s".to_string());
        assert_eq!(answers.config(&s), None, "nothing is known before loading");
        let mut rows = Rows::default();
        rows.configs.insert(None, config("FULL"));
        rows.modes.insert(s.clone(), "READONLY".into());
        answers.load_rows(answers.rows_epoch(), rows);
        assert_eq!(answers.config(&None), Some(Some(config("FULL"))));
        assert_eq!(answers.config(&Some("new".into())), Some(None));
        assert_eq!(answers.mode(&s), Some(Some("READONLY".into())));

        let before = answers.rows_epoch();
        answers.scope_changed(s.clone());
        assert_eq!(answers.config(&s), None, "a changed scope is read again");
        assert_eq!(answers.mode(&s), None);
        assert_eq!(
            answers.config(&None),
            Some(Some(config("FULL"))),
            "others stay"
        );
        answers.known_again(before, s.clone(), Some(config("NONE")), None);
        assert_eq!(answers.config(&s), None, "read before the change: not kept");
        answers.known_again(answers.rows_epoch(), s.clone(), Some(config("NONE")), None);
        assert_eq!(answers.config(&s), Some(Some(config("NONE"))));
        assert_eq!(answers.mode(&s), Some(None));

        let before = answers.rows_epoch();
        answers.clear();
        answers.load_rows(before, Rows::default());
        assert_eq!(
            answers.config(&None),
            None,
            "rows read before a clear are not kept"
        );
    }

    #[test]
    fn rows_load_while_registrations_come_and_go() {
        let answers = Answers::new(10);
        let before = answers.rows_epoch();
        answers.forget_subject("s");
        answers.forget_answers();
        let mut rows = Rows::default();
        rows.configs.insert(None, config("FULL"));
        answers.load_rows(before, rows);
        let global_and_new = [None, Some("new".to_string())];
        let known = answers.rows_of(&global_and_new).expect("loaded");
        assert_eq!(known[0].config, Some(config("FULL")));
        assert_eq!(known[1], Settings::default(), "a scope without rows");
        answers.scope_changed(Some("new".into()));
        assert_eq!(
            answers.rows_of(&global_and_new),
            None,
            "one of them changed"
        );
        assert!(answers.rows_of(&[None]).is_some(), "the others stay known");
        assert!(answers.knows(&None) && !answers.knows(&Some("new".into())));
    }
}
