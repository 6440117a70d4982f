//! Which subjects exist, as far as this node knows, on a store with other writers: what lets a
//! registration of a new subject skip reading the store before it is judged.
//!
//! Why: on PostgreSQL a registration read the subject's settings and versions (one round trip
//! of two statements) before judging, and read them again under the subject's lock when it
//! committed. For a subject that does not exist yet the first read finds nothing, and it was
//! about half of the statements the database ran for a new subject. With this index (and the
//! config and mode rows kept in [`crate::answers`]) such a registration is judged against "no
//! versions" and the cached rows, and the commit's own read under the lock confirms both or
//! sends the registration back to judge again from a read of the store
//! (`register::write`). So a stale index costs a round of judging, never a wrong verdict.
//!
//! The index holds a hash of every subject name that has versions, deleted ones included: all
//! of them read from the store page by page in the background, plus each subject the change
//! feed names, this node's registrations at once. A name whose hash is present is "maybe
//! there" (a collision only costs the read that would have happened anyway); an absent hash is
//! "new" only once the whole store was read. Anything that may have missed a change (the feed
//! reconnected or lagged) starts it over.

use covenant_store::Store;
use std::collections::HashSet;
use std::hash::{BuildHasher, BuildHasherDefault, DefaultHasher};
use std::sync::{Arc, Mutex};

/// Subject names read per page while loading: a range read of the versions' primary key.
const PAGE: i64 = 10_000;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loaded {
    /// Nothing read yet (or started over): every subject may exist.
    No,
    /// Being read; names the feed brings meanwhile are kept.
    Reading,
    /// Every subject of the store is in `names`.
    Yes,
}

struct State {
    loaded: Loaded,
    /// Bumped when the index starts over, so that a load begun before is not kept.
    generation: u64,
    names: HashSet<u64>,
}

/// See the module comment.
pub(crate) struct KnownSubjects {
    state: Mutex<State>,
}

/// A fixed hash of a subject name (the standard SipHash with fixed keys).
fn name_hash(subject: &str) -> u64 {
    BuildHasherDefault::<DefaultHasher>::default().hash_one(subject)
}

impl KnownSubjects {
    pub(crate) fn new() -> KnownSubjects {
        KnownSubjects {
            state: Mutex::new(State {
                loaded: Loaded::No,
                generation: 0,
                names: HashSet::new(),
            }),
        }
    }

    /// Whether `subject` surely has no versions in the store, as of the last change this node
    /// heard of.
    pub(crate) fn surely_new(&self, subject: &str) -> bool {
        self.state
            .lock()
            .is_ok_and(|s| s.loaded == Loaded::Yes && !s.names.contains(&name_hash(subject)))
    }

    /// `subject` has versions now (a registration committed, or the feed said so).
    pub(crate) fn seen(&self, subject: &str) {
        if let Ok(mut s) = self.state.lock()
            && s.loaded != Loaded::No
        {
            s.names.insert(name_hash(subject));
        }
    }

    /// Changes may have been missed: forget everything, to be read again.
    pub(crate) fn start_over(&self) {
        tracing::debug!("subject names to be read again");
        if let Ok(mut s) = self.state.lock() {
            s.loaded = Loaded::No;
            s.generation += 1;
            s.names = HashSet::new();
        }
    }

    /// Starts reading every subject name of `store` in the background, unless that is done or
    /// under way. Call it only while the change feed is heard, so that what is written during
    /// the read reaches [`KnownSubjects::seen`].
    pub(crate) fn load_in_background(self: &Arc<Self>, store: &Arc<dyn Store>) {
        let generation = {
            let Ok(mut s) = self.state.lock() else {
                return;
            };
            if s.loaded != Loaded::No {
                return;
            }
            s.loaded = Loaded::Reading;
            s.generation
        };
        let (index, store) = (Arc::clone(self), Arc::clone(store));
        tokio::spawn(async move {
            let read = read_all(store.as_ref()).await;
            index.finish(generation, read);
        });
    }

    fn finish(&self, generation: u64, read: Result<HashSet<u64>, String>) {
        let Ok(mut s) = self.state.lock() else {
            return;
        };
        if s.generation != generation || s.loaded != Loaded::Reading {
            return;
        }
        match read {
            Ok(names) => {
                tracing::debug!(subjects = names.len(), "read every subject name");
                s.names.extend(names);
                s.loaded = Loaded::Yes;
            }
            Err(e) => {
                tracing::warn!(error = %e, "reading the subject names failed; will read again");
                s.loaded = Loaded::No;
                s.names = HashSet::new();
            }
        }
    }

    #[cfg(test)]
    fn begin(&self) -> u64 {
        let mut s = self.state.lock().unwrap();
        s.loaded = Loaded::Reading;
        s.generation
    }
}

/// Every subject name of `store`, hashed, page by page.
async fn read_all(store: &dyn Store) -> Result<HashSet<u64>, String> {
    let mut names = HashSet::new();
    let mut after = String::new();
    loop {
        let page = store
            .subjects_after(&after, PAGE)
            .await
            .map_err(|e| e.to_string())?;
        let Some((last, _)) = page.last() else {
            return Ok(names);
        };
        after = last.clone();
        let full = page.len() as i64 == PAGE;
        names.extend(page.iter().map(|(name, _)| name_hash(name)));
        if !full {
            return Ok(names);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loaded(names: &[&str]) -> Result<HashSet<u64>, String> {
        Ok(names.iter().map(|n| name_hash(n)).collect())
    }

    #[test]
    fn nothing_is_new_until_every_subject_was_read() {
        let index = KnownSubjects::new();
        assert!(!index.surely_new("a"), "not read yet");
        let generation = index.begin();
        index.seen("during");
        assert!(!index.surely_new("b"), "still reading");
        index.finish(generation, loaded(&["a"]));
        assert!(index.surely_new("b"));
        assert!(!index.surely_new("a"), "read from the store");
        assert!(!index.surely_new("during"), "heard of while reading");
        index.seen("b");
        assert!(!index.surely_new("b"), "registered since");
    }

    #[test]
    fn a_read_begun_before_starting_over_is_not_kept() {
        let index = KnownSubjects::new();
        let generation = index.begin();
        index.start_over();
        index.finish(generation, loaded(&["a"]));
        assert!(!index.surely_new("b"), "the read may have missed changes");
        let generation = index.begin();
        index.finish(generation, Err("connection lost".into()));
        assert!(!index.surely_new("b"), "a failed read knows nothing");
        let generation = index.begin();
        index.finish(generation, loaded(&["a"]));
        assert!(index.surely_new("b"), "read again after a failure");
    }
}
