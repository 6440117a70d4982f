//! Bounded in-memory caches keyed by schema id.
//!
//! Ids are never rebound to other content, so a cached entry is stale only after a permanent
//! delete (this node's, or another node's reported through the store's change feed); both
//! drop entries through [`IdCache::remove`] or [`IdCache::clear`]. Everything else is a
//! matter of size: a registry holding millions of schemas keeps only the most recently used
//! ones in memory and reads the rest from the store on demand.

use hashlink::LruCache;
use std::sync::{Arc, Mutex};

/// Entries each id cache holds unless configured otherwise (`covenant serve --cache-entries`).
/// Large enough for the working set of a busy cluster of producers and consumers. A parsed
/// schema takes 15 to 75 times its text in a server's memory (benchmark part 6: a 1.2 KB Avro
/// record of 22 fields about 20 KiB, a JSON Schema or Protobuf file of the same fields about
/// 45 KiB), so a full parsed-schema cache of such schemas holds 200 to 450 MiB; a smaller bound
/// trades that for parsing again on a miss.
pub const DEFAULT_CACHE_ENTRIES: usize = 10_000;

/// A least-recently-used map from schema id to a shared value, never holding more than its
/// capacity. A capacity of 0 caches nothing.
pub(crate) struct IdCache<V> {
    entries: Mutex<LruCache<i64, Arc<V>>>,
}

impl<V> IdCache<V> {
    pub(crate) fn new(capacity: usize) -> IdCache<V> {
        IdCache {
            entries: Mutex::new(LruCache::new(capacity)),
        }
    }

    pub(crate) fn get(&self, id: i64) -> Option<Arc<V>> {
        self.entries.lock().ok()?.get(&id).cloned()
    }

    pub(crate) fn insert(&self, id: i64, value: Arc<V>) {
        if let Ok(mut m) = self.entries.lock()
            && m.capacity() > 0
        {
            m.insert(id, value);
        }
    }

    pub(crate) fn remove(&self, id: i64) {
        if let Ok(mut m) = self.entries.lock() {
            m.remove(&id);
        }
    }

    pub(crate) fn clear(&self) {
        if let Ok(mut m) = self.entries.lock() {
            m.clear();
        }
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.lock().map(|m| m.len()).unwrap_or(0)
    }

    pub(crate) fn capacity(&self) -> usize {
        self.entries.lock().map(|m| m.capacity()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_holds_more_than_its_capacity() {
        let cache = IdCache::new(3);
        for id in 0..100 {
            cache.insert(id, Arc::new(id));
            assert!(cache.len() <= 3, "{} entries after id {id}", cache.len());
        }
        assert_eq!(cache.len(), 3);
        assert_eq!(cache.get(99).as_deref(), Some(&99));
        assert_eq!(cache.get(0), None);
    }

    #[test]
    fn evicts_the_least_recently_used() {
        let cache = IdCache::new(2);
        cache.insert(1, Arc::new("one"));
        cache.insert(2, Arc::new("two"));
        assert!(cache.get(1).is_some());
        cache.insert(3, Arc::new("three"));
        assert!(cache.get(1).is_some(), "recently read entry was evicted");
        assert!(cache.get(2).is_none(), "least recently used entry was kept");
        cache.remove(1);
        assert!(cache.get(1).is_none());
        cache.clear();
        assert_eq!(cache.len(), 0);
    }

    #[test]
    fn zero_capacity_caches_nothing() {
        let cache = IdCache::new(0);
        cache.insert(1, Arc::new(1));
        assert_eq!(cache.len(), 0);
        assert!(cache.get(1).is_none());
    }
}
