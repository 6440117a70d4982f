//! Repeated refusals, stored once and counted.
//!
//! Anyone can make the registry refuse them, as often as they like, so refusals must not grow
//! the trail with every attempt. The first refusal of a kind (its [`DenialKey`]) within
//! [`DENIAL_WINDOW`] is appended as usual; repeats of it within the window only add to an
//! in-memory count, which a backend writes onto that entry (`count`, `last_at`) at most once
//! per [`FLUSH_INTERVAL`] and before every read of the trail. The tally tracks at most
//! [`MAX_OPEN`] kinds; past that, refusals are counted by reason, operation and route alone,
//! so however many kinds an attacker invents, the trail grows by a bounded number of entries
//! per window.
//!
//! A crash loses at most the counts of the last [`FLUSH_INTERVAL`]; never the first entry of a
//! kind, which is written before the refusal is answered.

use crate::AuditEntry;
use std::collections::HashMap;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

/// How long repeats of a refusal are counted on its first entry; the next one after that
/// starts a new entry.
pub const DENIAL_WINDOW: Duration = Duration::from_secs(60);
/// How often counted repeats are written out.
pub const FLUSH_INTERVAL: Duration = Duration::from_secs(1);
/// Kinds of refusal tracked at once.
pub const MAX_OPEN: usize = 4096;

/// What makes two refusals "the same" for the trail. The caller decides what goes in: an
/// authenticated principal's refusals are told apart by principal, source address, reason,
/// operation, resource and route; an unauthenticated caller's by source address, reason,
/// operation and route only (`principal` and `resource` `None`), never by what it can vary at
/// will such as the raw path or its user agent.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct DenialKey {
    /// The authenticated principal; `None` for unauthenticated callers.
    pub principal: Option<String>,
    /// The source address (without its port, which changes with every connection).
    pub source: Option<String>,
    /// Why the attempt was refused (`AuthenticationRequired`, `Forbidden`, ...).
    pub reason: String,
    /// The operation refused.
    pub operation: String,
    /// What it was refused on (`Subject:x`, `Config:`); `None` for unauthenticated callers.
    pub resource: Option<String>,
    /// Where it was refused: method and route template (`GET /subjects/{subject}/versions`),
    /// or the refusal's message for one decided inside a handler.
    pub route: String,
}

impl DenialKey {
    /// This key with every field cut to [`crate::audit::MAX_DENIED_FIELD_BYTES`], so a key
    /// held in memory is as small as what is stored.
    fn capped(&self) -> DenialKey {
        fn cap(t: &str) -> String {
            crate::audit::cap_text(t, crate::audit::MAX_DENIED_FIELD_BYTES).into_owned()
        }
        DenialKey {
            principal: self.principal.as_deref().map(cap),
            source: self.source.as_deref().map(cap),
            reason: cap(&self.reason),
            operation: cap(&self.operation),
            resource: self.resource.as_deref().map(cap),
            route: cap(&self.route),
        }
    }

    /// The key refusals are counted under once [`MAX_OPEN`] kinds are tracked.
    fn coarse(&self) -> DenialKey {
        DenialKey {
            principal: None,
            source: None,
            resource: None,
            ..self.clone()
        }
    }
}

/// One kind of refusal being counted.
struct Open {
    /// Its entry, once appended (`None` while the append is under way).
    seq: Option<i64>,
    opened: Instant,
    /// Repeats not yet written to the entry.
    pending: i64,
    last_at: i64,
}

/// Counts to add to a stored entry: `count = count + add`, `last_at = max(last_at, last_at)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Bump {
    pub seq: i64,
    pub add: i64,
    pub last_at: i64,
}

/// What a backend does with a refusal.
#[derive(Debug)]
pub enum Admission {
    /// Append this entry (the first of its kind) and report its seq with
    /// [`DenialTally::opened`], or [`DenialTally::abandoned`] if the append failed.
    Append(Box<(AuditEntry, DenialKey)>),
    /// Counted on an existing entry; when `schedule_flush`, the backend should write the
    /// counts out in [`FLUSH_INTERVAL`] (no other flush is scheduled).
    Counted { schedule_flush: bool },
}

/// The refusals a backend is counting (see the module documentation).
#[derive(Default)]
pub struct DenialTally {
    open: Mutex<HashMap<DenialKey, Open>>,
    /// Counts of kinds whose window ended before they were written out.
    retired: Mutex<Vec<Bump>>,
    flush_scheduled: AtomicBool,
}

impl DenialTally {
    pub fn new() -> DenialTally {
        DenialTally::default()
    }

    /// Decides whether `entry`, refused as `key`, is appended or counted.
    pub fn admit(&self, entry: &AuditEntry, key: &DenialKey) -> Admission {
        self.admit_at(entry, key, Instant::now())
    }

    fn admit_at(&self, entry: &AuditEntry, key: &DenialKey, now: Instant) -> Admission {
        let mut key = key.capped();
        let mut entry = entry.clone();
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if open.len() >= MAX_OPEN && !open.contains_key(&key) {
            self.sweep(&mut open, now);
            if open.len() >= MAX_OPEN {
                key = key.coarse();
                entry.principal = "(various)".into();
                entry.source = None;
                entry.subject = None;
                entry.config_key = None;
            }
        }
        if let Some(o) = open.get_mut(&key) {
            if now.duration_since(o.opened) < DENIAL_WINDOW {
                o.pending += 1;
                o.last_at = o.last_at.max(entry.at);
                drop(open);
                let schedule_flush = !self.flush_scheduled.swap(true, Ordering::AcqRel);
                return Admission::Counted { schedule_flush };
            }
            if let Some(old) = open.remove(&key) {
                self.retire(old);
            }
        }
        open.insert(
            key.clone(),
            Open {
                seq: None,
                opened: now,
                pending: 0,
                last_at: entry.at,
            },
        );
        Admission::Append(Box::new((entry, key)))
    }

    /// The entry of `key` was appended as `seq`. True when repeats were counted meanwhile and
    /// no flush is scheduled: the backend should schedule one, as for
    /// [`Admission::Counted`].
    pub fn opened(&self, key: &DenialKey, seq: i64) -> bool {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        let Some(o) = open.get_mut(key).filter(|o| o.seq.is_none()) else {
            return false;
        };
        o.seq = Some(seq);
        let waiting = o.pending > 0;
        drop(open);
        waiting && !self.flush_scheduled.swap(true, Ordering::AcqRel)
    }

    /// The entry of `key` could not be appended: the next refusal of its kind tries again.
    pub fn abandoned(&self, key: &DenialKey) {
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        if open.get(key).is_some_and(|o| o.seq.is_none()) {
            open.remove(key);
        }
    }

    /// Takes the counts to write out, and clears the scheduled flush.
    pub fn take(&self) -> Vec<Bump> {
        self.flush_scheduled.store(false, Ordering::Release);
        let mut bumps =
            std::mem::take(&mut *self.retired.lock().unwrap_or_else(|e| e.into_inner()));
        let mut open = self.open.lock().unwrap_or_else(|e| e.into_inner());
        for o in open.values_mut() {
            if let (Some(seq), true) = (o.seq, o.pending > 0) {
                bumps.push(Bump {
                    seq,
                    add: o.pending,
                    last_at: o.last_at,
                });
                o.pending = 0;
            }
        }
        self.sweep(&mut open, Instant::now());
        bumps
    }

    /// Whether any count waits to be written out.
    pub fn has_pending(&self) -> bool {
        !self
            .retired
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .is_empty()
            || self
                .open
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .values()
                .any(|o| o.pending > 0 && o.seq.is_some())
    }

    /// Drops the kinds whose window is over, keeping their unwritten counts.
    fn sweep(&self, open: &mut HashMap<DenialKey, Open>, now: Instant) {
        let expired: Vec<DenialKey> = open
            .iter()
            .filter(|(_, o)| o.seq.is_some() && now.duration_since(o.opened) >= DENIAL_WINDOW)
            .map(|(k, _)| k.clone())
            .collect();
        for key in expired {
            if let Some(o) = open.remove(&key) {
                self.retire(o);
            }
        }
    }

    fn retire(&self, o: Open) {
        if let (Some(seq), true) = (o.seq, o.pending > 0) {
            self.retired
                .lock()
                .unwrap_or_else(|e| e.into_inner())
                .push(Bump {
                    seq,
                    add: o.pending,
                    last_at: o.last_at,
                });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AuditContext, AuditTarget};

    fn refusal(at: i64) -> AuditEntry {
        let mut e = AuditContext {
            principal: "anonymous".into(),
            source: Some("10.0.0.1".into()),
            request_id: None,
            detail: None,
        }
        .entry("Read", AuditTarget::subject(Some("x")));
        e.outcome = crate::audit::OUTCOME_DENIED.into();
        e.at = at;
        e
    }

    fn key(source: &str) -> DenialKey {
        DenialKey {
            source: Some(source.into()),
            reason: "AuthenticationRequired".into(),
            operation: "Read".into(),
            route: "GET /subjects/{subject}/versions".into(),
            ..DenialKey::default()
        }
    }

    #[test]
    fn repeats_within_the_window_are_counted_on_the_first_entry() {
        let tally = DenialTally::new();
        let start = Instant::now();
        let Admission::Append(first) = tally.admit_at(&refusal(1), &key("a"), start) else {
            panic!("the first is appended");
        };
        // Counted while the append is under way too.
        assert!(matches!(
            tally.admit_at(&refusal(2), &key("a"), start),
            Admission::Counted {
                schedule_flush: true
            }
        ));
        assert!(!tally.opened(&first.1, 7), "a flush is already scheduled");
        assert!(matches!(
            tally.admit_at(&refusal(5), &key("a"), start),
            Admission::Counted {
                schedule_flush: false
            }
        ));
        assert!(tally.has_pending());
        assert_eq!(
            tally.take(),
            vec![Bump {
                seq: 7,
                add: 2,
                last_at: 5
            }]
        );
        assert!(tally.take().is_empty());
        // Another source is another kind.
        assert!(matches!(
            tally.admit_at(&refusal(6), &key("b"), start),
            Admission::Append(..)
        ));
        // After the window, a new entry; the old one's unwritten counts are kept.
        assert!(matches!(
            tally.admit_at(&refusal(8), &key("a"), start),
            Admission::Counted { .. }
        ));
        let later = start + DENIAL_WINDOW;
        assert!(matches!(
            tally.admit_at(&refusal(9), &key("a"), later),
            Admission::Append(..)
        ));
        assert_eq!(
            tally.take(),
            vec![Bump {
                seq: 7,
                add: 1,
                last_at: 8
            }]
        );
    }

    #[test]
    fn past_the_limit_refusals_are_counted_by_reason_and_route() {
        let tally = DenialTally::new();
        let now = Instant::now();
        for n in 0..MAX_OPEN {
            match tally.admit_at(&refusal(1), &key(&format!("s{n}")), now) {
                Admission::Append(first) => {
                    tally.opened(&first.1, n as i64);
                }
                other => panic!("{other:?}"),
            }
        }
        let Admission::Append(appended) = tally.admit_at(&refusal(2), &key("new-1"), now) else {
            panic!("the first past the limit is appended");
        };
        let (entry, coarse) = *appended;
        assert_eq!(entry.principal, "(various)");
        assert_eq!(coarse.source, None);
        let _ = tally.opened(&coarse, 99_999);
        assert!(matches!(
            tally.admit_at(&refusal(3), &key("new-2"), now),
            Admission::Counted { .. }
        ));
        assert!(tally.open.lock().unwrap().len() <= MAX_OPEN + 1);
    }

    #[test]
    fn an_abandoned_append_is_tried_again() {
        let tally = DenialTally::new();
        let Admission::Append(first) = tally.admit(&refusal(1), &key("a")) else {
            panic!("appended");
        };
        tally.abandoned(&first.1);
        assert!(matches!(
            tally.admit(&refusal(2), &key("a")),
            Admission::Append(..)
        ));
    }
}
