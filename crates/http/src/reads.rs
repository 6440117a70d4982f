//! Consumers discovered from their reads: every schema fetch is counted in memory per reader
//! (the authenticated principal, else the `User-Agent` of an anonymous request), target and
//! hour, and the counts go to the governance store in batches, so the read path never waits
//! on a write. Fetches by id are resolved to the subject versions carrying the id at flush
//! time, off the read path.

use crate::principal::Principal;
use covenant_governance::{Governance, GovernanceError, SchemaRead, bucket_start};
use covenant_registry::Registry;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex, Weak};
use std::time::Duration;

/// How often counted reads are written when nothing asks for them sooner.
pub const FLUSH_EVERY: Duration = Duration::from_secs(5);
/// Distinct (reader, target, hour) keys held between flushes; past it new keys are dropped and
/// counted in `covenant_schema_reads_dropped_total`, so clients inventing a new `User-Agent`
/// per request cannot grow memory without bound.
pub const MAX_PENDING: usize = 100_000;

/// The longest reader identifier kept: a principal name or user agent beyond it is cut (at a
/// character boundary), so a client cannot store kilobytes per fetch.
pub const MAX_READER_BYTES: usize = 256;
/// Distinct anonymous readers (user agents) counted per hour; reads by further ones in the
/// same hour are counted under [`OTHER_ANONYMOUS`], so that inventing a user agent per
/// request grows the evidence by one row, not one row per request.
pub const MAX_ANONYMOUS_READERS: usize = 1_000;
/// The reader anonymous fetches past [`MAX_ANONYMOUS_READERS`] are counted under.
pub const OTHER_ANONYMOUS: &str = "anonymous (other user agents)";

/// What a fetch named.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum ReadTarget {
    /// `/schemas/ids/{id}[/schema]`: every version carrying the id counts as read.
    Id(i64),
    /// A subject version (`/subjects/{s}/versions/{v}[/schema]`, lookups).
    Version {
        subject: String,
        version: i64,
        schema_id: i64,
    },
}

#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct ReadKey {
    reader: String,
    target: ReadTarget,
    hour: i64,
}

#[derive(Debug, Clone, Copy)]
struct Span {
    reads: u64,
    first_at: i64,
    last_at: i64,
}

/// The reader a fetch is attributed to, cut to [`MAX_READER_BYTES`].
pub fn reader_of(principal: &Principal) -> String {
    let reader = principal
        .name
        .clone()
        .or_else(|| principal.user_agent.clone())
        .unwrap_or_else(|| "anonymous".to_string());
    capped_reader(reader)
}

fn capped_reader(mut reader: String) -> String {
    if reader.len() > MAX_READER_BYTES {
        let mut end = MAX_READER_BYTES;
        while !reader.is_char_boundary(end) {
            end -= 1;
        }
        reader.truncate(end);
    }
    reader
}

/// Reads counted since the last flush.
#[derive(Default)]
pub struct ReadTally {
    pending: Mutex<HashMap<ReadKey, Span>>,
    /// The anonymous readers seen in the current hour (its start, and their names).
    anonymous: Mutex<(i64, HashSet<String>)>,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or_default()
}

impl ReadTally {
    /// Counts one fetch by `principal`: under its name, or for an anonymous request under its
    /// user agent while the hour has seen fewer than [`MAX_ANONYMOUS_READERS`] of them.
    pub fn count_read(&self, principal: &Principal, target: ReadTarget) {
        let reader = reader_of(principal);
        if principal.name.is_some() {
            return self.count(reader, target);
        }
        let hour = bucket_start(now_ms());
        let admitted = match self.anonymous.lock() {
            Ok(mut seen) => {
                if seen.0 != hour {
                    *seen = (hour, HashSet::new());
                }
                if seen.1.contains(&reader) {
                    true
                } else if seen.1.len() < MAX_ANONYMOUS_READERS {
                    seen.1.insert(reader.clone());
                    true
                } else {
                    false
                }
            }
            Err(_) => false,
        };
        if admitted {
            self.count(reader, target);
        } else {
            self.count(OTHER_ANONYMOUS.to_string(), target);
        }
    }

    /// Counts one fetch; a map update under a short lock, nothing else.
    pub fn count(&self, reader: String, target: ReadTarget) {
        let at = now_ms();
        let key = ReadKey {
            reader,
            target,
            hour: bucket_start(at),
        };
        if let Ok(mut pending) = self.pending.lock() {
            if pending.len() >= MAX_PENDING && !pending.contains_key(&key) {
                drop(pending);
                metrics::counter!("covenant_schema_reads_dropped_total").increment(1);
                return;
            }
            pending
                .entry(key)
                .and_modify(|s| {
                    s.reads += 1;
                    s.last_at = s.last_at.max(at);
                })
                .or_insert(Span {
                    reads: 1,
                    first_at: at,
                    last_at: at,
                });
        }
    }

    fn take(&self) -> HashMap<ReadKey, Span> {
        self.pending
            .lock()
            .map(|mut p| std::mem::take(&mut *p))
            .unwrap_or_default()
    }

    /// Writes every counted read to governance; returns how many rows went. Reads by id are
    /// spread over the versions carrying the id; an id no version carries any more is dropped.
    pub async fn flush(
        &self,
        registry: &Registry,
        governance: &Governance,
    ) -> Result<usize, GovernanceError> {
        let pending = self.take();
        if pending.is_empty() {
            return Ok(0);
        }
        let mut versions_of: HashMap<i64, Vec<(String, i64)>> = HashMap::new();
        let mut rows = Vec::with_capacity(pending.len());
        for (key, span) in pending {
            let row = |subject: String, version: i64, schema_id: i64| SchemaRead {
                subject,
                version,
                schema_id,
                reader: key.reader.clone(),
                reads: span.reads,
                first_at: span.first_at,
                last_at: span.last_at,
            };
            match key.target {
                ReadTarget::Version {
                    subject,
                    version,
                    schema_id,
                } => rows.push(row(subject, version, schema_id)),
                ReadTarget::Id(id) => {
                    if let std::collections::hash_map::Entry::Vacant(slot) = versions_of.entry(id) {
                        slot.insert(
                            registry
                                .versions_with_id(id, true)
                                .await
                                .unwrap_or_default(),
                        );
                    }
                    for (subject, version) in versions_of.get(&id).into_iter().flatten() {
                        rows.push(row(subject.clone(), *version, id));
                    }
                }
            }
        }
        governance.record_reads(&rows).await?;
        Ok(rows.len())
    }

    /// Flushes every [`FLUSH_EVERY`] until the tally is dropped.
    pub fn spawn_flusher(
        tally: &Arc<ReadTally>,
        registry: Arc<Registry>,
        governance: Arc<Governance>,
    ) {
        if tokio::runtime::Handle::try_current().is_err() {
            return;
        }
        let tally: Weak<ReadTally> = Arc::downgrade(tally);
        tokio::spawn(async move {
            let mut tick = tokio::time::interval(FLUSH_EVERY);
            loop {
                tick.tick().await;
                let Some(tally) = tally.upgrade() else {
                    return;
                };
                if let Err(e) = tally.flush(&registry, &governance).await {
                    tracing::warn!(error = %e, "could not record schema reads");
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_aggregate_per_reader_target_and_hour() {
        let tally = ReadTally::default();
        let v = |n| ReadTarget::Version {
            subject: "s".into(),
            version: n,
            schema_id: 10 + n,
        };
        for _ in 0..3 {
            tally.count("alice".into(), v(1));
        }
        tally.count("bob".into(), v(1));
        tally.count("alice".into(), v(2));
        tally.count("alice".into(), ReadTarget::Id(11));
        let taken = tally.take();
        assert_eq!(taken.len(), 4);
        let alice_v1 = taken
            .iter()
            .find(|(k, _)| k.reader == "alice" && k.target == v(1))
            .map(|(_, s)| s.reads);
        assert_eq!(alice_v1, Some(3));
        assert!(tally.take().is_empty(), "a flush empties the tally");
    }

    #[test]
    fn pending_keys_are_bounded_but_known_keys_keep_counting() {
        let tally = ReadTally::default();
        for n in 0..MAX_PENDING {
            tally.count(format!("r{n}"), ReadTarget::Id(1));
        }
        tally.count("one-too-many".into(), ReadTarget::Id(1));
        tally.count("r0".into(), ReadTarget::Id(1));
        let taken = tally.take();
        assert_eq!(taken.len(), MAX_PENDING);
        assert!(!taken.keys().any(|k| k.reader == "one-too-many"));
        let r0 = taken
            .iter()
            .find(|(k, _)| k.reader == "r0")
            .map(|(_, s)| s.reads);
        assert_eq!(r0, Some(2));
    }

    #[test]
    fn anonymous_readers_are_bounded_in_length_and_number() {
        let tally = ReadTally::default();
        let principal = |agent: String| Principal {
            name: None,
            roles: vec![],
            method: crate::principal::AuthMethod::Anonymous,
            source: None,
            user_agent: Some(agent),
            expires: None,
        };
        for n in 0..MAX_ANONYMOUS_READERS + 500 {
            let agent = format!("{n:05}{}", "x".repeat(8 * 1024));
            tally.count_read(&principal(agent), ReadTarget::Id(1));
        }
        let named = Principal {
            name: Some("svc".into()),
            ..principal("ignored".into())
        };
        tally.count_read(&named, ReadTarget::Id(1));
        let taken = tally.take();
        // Unless the hour turned during the loop, every reader past the cap is 'other'.
        assert!(taken.len() <= MAX_ANONYMOUS_READERS + 2, "{}", taken.len());
        assert!(taken.keys().all(|k| k.reader.len() <= MAX_READER_BYTES));
        let other = taken
            .iter()
            .find(|(k, _)| k.reader == OTHER_ANONYMOUS)
            .map(|(_, s)| s.reads)
            .unwrap_or_default();
        assert!(other >= 1, "reads past the cap are counted under 'other'");
        assert!(taken.keys().any(|k| k.reader == "svc"));
        assert_eq!(capped_reader("é".repeat(200)).len(), 256);
    }

    #[test]
    fn anonymous_readers_are_their_user_agent() {
        let mut p = Principal {
            name: None,
            roles: vec![],
            method: crate::principal::AuthMethod::Anonymous,
            source: None,
            user_agent: Some("billing/2.1".into()),
            expires: None,
        };
        assert_eq!(reader_of(&p), "billing/2.1");
        p.name = Some("svc-billing".into());
        assert_eq!(reader_of(&p), "svc-billing");
        p.name = None;
        p.user_agent = None;
        assert_eq!(reader_of(&p), "anonymous");
    }
}
