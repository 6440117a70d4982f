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

/// The estimated bytes the parsed-schema cache holds at most. Entries alone do not bound
/// memory: a hundred distinct 8 MB schemas are a hundred entries but a gigabyte parsed.
pub const DEFAULT_PARSED_CACHE_BYTES: usize = 256 * 1024 * 1024;
/// The estimated bytes the schema-record cache holds at most.
pub const DEFAULT_RECORD_CACHE_BYTES: usize = 128 * 1024 * 1024;

/// A parsed schema's estimated size: [`PARSED_BASE_BYTES`] plus [`PARSED_BYTES_PER_BYTE`]
/// times its text. Measured (benchmark part 6), a 1.2 KB Avro record of 22 fields takes about
/// 20 KiB parsed and a JSON Schema or Protobuf file of the same fields about 45 KiB, so small
/// schemas are mostly fixed cost; large ones grow with their text, a little above it (a
/// hundred 8 MB schemas took about 10.5 MB each). The estimate is close for small schemas and
/// above the measured size for large ones, so the byte bound is kept.
pub const PARSED_BASE_BYTES: usize = 16 * 1024;
/// See [`PARSED_BASE_BYTES`].
pub const PARSED_BYTES_PER_BYTE: usize = 4;

/// The estimated size of a parsed schema whose text is `text_len` bytes.
pub fn parsed_size(text_len: usize) -> usize {
    PARSED_BASE_BYTES.saturating_add(text_len.saturating_mul(PARSED_BYTES_PER_BYTE))
}

/// The estimated size of a stored schema record: its texts (schema, dedupe key, references,
/// metadata and rules as text) and a fixed cost for the rest.
pub fn record_size(record: &covenant_store::SchemaRecord) -> usize {
    let json = |v: &Option<serde_json::Value>| v.as_ref().map_or(0, |v| v.to_string().len());
    512 + record.schema.len()
        + record.content_key.len()
        + record.references.len() * 128
        + json(&record.metadata)
        + json(&record.rule_set)
}

/// A least-recently-used map from schema id to a shared value, never holding more than its
/// capacity in entries nor more than its byte budget in estimated size (each insert says the
/// entry's size). A capacity of 0 caches nothing; an entry larger than the whole budget is not
/// cached.
pub(crate) struct IdCache<V> {
    entries: Mutex<Entries<V>>,
}

struct Entries<V> {
    map: LruCache<i64, (Arc<V>, usize)>,
    bytes: usize,
    max_bytes: usize,
}

impl<V> IdCache<V> {
    pub(crate) fn new(capacity: usize, max_bytes: usize) -> IdCache<V> {
        IdCache {
            entries: Mutex::new(Entries {
                map: LruCache::new(capacity),
                bytes: 0,
                max_bytes,
            }),
        }
    }

    pub(crate) fn get(&self, id: i64) -> Option<Arc<V>> {
        self.entries
            .lock()
            .ok()?
            .map
            .get(&id)
            .map(|(v, _)| Arc::clone(v))
    }

    /// Caches `value`, estimated at `bytes`, evicting the least recently used entries until
    /// both bounds hold.
    pub(crate) fn insert(&self, id: i64, value: Arc<V>, bytes: usize) {
        let Ok(mut e) = self.entries.lock() else {
            return;
        };
        if e.map.capacity() == 0 || bytes > e.max_bytes {
            return;
        }
        if let Some((_, old)) = e.map.remove(&id) {
            e.bytes -= old;
        }
        while e.bytes + bytes > e.max_bytes {
            match e.map.remove_lru() {
                Some((_, (_, old))) => e.bytes -= old,
                None => break,
            }
        }
        if e.map.len() >= e.map.capacity()
            && let Some((_, (_, old))) = e.map.remove_lru()
        {
            e.bytes -= old;
        }
        e.map.insert(id, (value, bytes));
        e.bytes += bytes;
    }

    pub(crate) fn remove(&self, id: i64) {
        if let Ok(mut e) = self.entries.lock()
            && let Some((_, old)) = e.map.remove(&id)
        {
            e.bytes -= old;
        }
    }

    pub(crate) fn clear(&self) {
        if let Ok(mut e) = self.entries.lock() {
            e.map.clear();
            e.bytes = 0;
        }
    }

    /// The estimated bytes held now.
    pub(crate) fn bytes(&self) -> usize {
        self.entries.lock().map(|e| e.bytes).unwrap_or(0)
    }

    pub(crate) fn len(&self) -> usize {
        self.entries.lock().map(|e| e.map.len()).unwrap_or(0)
    }

    pub(crate) fn capacity(&self) -> usize {
        self.entries.lock().map(|e| e.map.capacity()).unwrap_or(0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn never_holds_more_than_its_capacity() {
        let cache = IdCache::new(3, usize::MAX);
        for id in 0..100 {
            cache.insert(id, Arc::new(id), 1);
            assert!(cache.len() <= 3, "{} entries after id {id}", cache.len());
        }
        assert_eq!(cache.len(), 3);
        assert_eq!(cache.get(99).as_deref(), Some(&99));
        assert_eq!(cache.get(0), None);
    }

    #[test]
    fn evicts_the_least_recently_used() {
        let cache = IdCache::new(2, usize::MAX);
        cache.insert(1, Arc::new("one"), 1);
        cache.insert(2, Arc::new("two"), 1);
        assert!(cache.get(1).is_some());
        cache.insert(3, Arc::new("three"), 1);
        assert!(cache.get(1).is_some(), "recently read entry was evicted");
        assert!(cache.get(2).is_none(), "least recently used entry was kept");
        cache.remove(1);
        assert!(cache.get(1).is_none());
        cache.clear();
        assert_eq!(cache.len(), 0);
    }

    #[test]
    fn zero_capacity_caches_nothing() {
        let cache = IdCache::new(0, usize::MAX);
        cache.insert(1, Arc::new(1), 1);
        assert_eq!(cache.len(), 0);
        assert!(cache.get(1).is_none());
    }

    #[test]
    fn never_holds_more_than_its_byte_budget() {
        // A hundred 8 MB schemas, as parsed: the budget keeps a few, not all of them.
        let cache = IdCache::new(10_000, DEFAULT_PARSED_CACHE_BYTES);
        let each = parsed_size(8 * 1024 * 1024);
        for id in 0..100 {
            cache.insert(id, Arc::new(id), each);
            assert!(cache.bytes() <= DEFAULT_PARSED_CACHE_BYTES);
        }
        assert_eq!(cache.len(), DEFAULT_PARSED_CACHE_BYTES / each);
        assert!(cache.get(99).is_some(), "the newest entry is kept");
        assert!(cache.get(0).is_none(), "the oldest went first");
        // Replacing an entry counts its size once; removing it gives its bytes back.
        cache.insert(99, Arc::new(99), each);
        assert_eq!(cache.bytes(), cache.len() * each);
        cache.remove(99);
        assert_eq!(cache.bytes(), cache.len() * each);
        // Larger than the whole budget: not cached, nothing evicted.
        let before = cache.len();
        cache.insert(1_000, Arc::new(1_000), DEFAULT_PARSED_CACHE_BYTES + 1);
        assert!(cache.get(1_000).is_none());
        assert_eq!(cache.len(), before);
        cache.clear();
        assert_eq!(cache.bytes(), 0);
    }
}
