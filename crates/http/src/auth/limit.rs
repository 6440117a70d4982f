//! Failed logins per (source address, user name). A small map rather than a general rate
//! limiter crate built for request throttling: what it needs is particular to logins.
//!
//! - An attempt is *reserved* before its password is hashed, so parallel guesses are counted
//!   while they run: past the limit, the next one is refused without hashing.
//! - The key is the address *and* the name tried, so guessing one user's password from an
//!   address (or from behind a proxy that many users share) locks out only that user from
//!   that address, never other users and never a valid token.
//! - Each lockout doubles the next one (backoff), up to [`MAX_LOCKOUT`].

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// At most `max_failures` failed logins per (address, user) within `window`; past that, the
/// pair is refused for `window`, then for twice as long after each further lockout.
#[derive(Clone, Copy, Debug)]
pub struct FailureLimit {
    pub max_failures: u32,
    pub window: Duration,
}

impl Default for FailureLimit {
    fn default() -> Self {
        FailureLimit {
            max_failures: 10,
            window: Duration::from_secs(60),
        }
    }
}

/// Pairs tracked at most; when full, forgotten ones are dropped first.
const MAX_TRACKED: usize = 100_000;
/// The longest lockout, however many came before.
pub const MAX_LOCKOUT: Duration = Duration::from_secs(15 * 60);

/// Who tries: the source address and the user name given (empty for a bearer token).
pub(crate) type Key = (Option<IpAddr>, String);

#[derive(Debug)]
struct Entry {
    failures: u32,
    /// Attempts reserved and not settled yet.
    pending: u32,
    since: Instant,
    /// Refused until then.
    locked_until: Option<Instant>,
    /// Lockouts so far; each doubles the next.
    lockouts: u32,
}

impl Entry {
    fn new(now: Instant) -> Entry {
        Entry {
            failures: 0,
            pending: 0,
            since: now,
            locked_until: None,
            lockouts: 0,
        }
    }

    /// Nothing left to remember: no lockout in force, window over, nothing pending.
    fn is_forgotten(&self, window: Duration, now: Instant) -> bool {
        self.pending == 0
            && self.locked_until.is_none_or(|t| t <= now)
            && now.duration_since(self.since) >= window.max(MAX_LOCKOUT)
    }
}

#[derive(Debug)]
pub(crate) struct FailureLimiter {
    limit: FailureLimit,
    entries: Mutex<HashMap<Key, Entry>>,
}

/// A reserved attempt; settle it with [`FailureLimiter::succeeded`] or
/// [`FailureLimiter::failed`]. Dropped unsettled (the request went away), it counts as failed.
#[derive(Debug)]
pub(crate) struct Attempt {
    limiter: Arc<FailureLimiter>,
    key: Option<Key>,
}

impl Attempt {
    pub(crate) fn succeeded(mut self) {
        if let Some(key) = self.key.take() {
            self.limiter.settle(&key, true);
        }
    }

    pub(crate) fn failed(mut self) {
        if let Some(key) = self.key.take() {
            self.limiter.settle(&key, false);
        }
    }
}

impl Drop for Attempt {
    fn drop(&mut self) {
        if let Some(key) = self.key.take() {
            self.limiter.settle(&key, false);
        }
    }
}

impl FailureLimiter {
    pub(crate) fn new(limit: FailureLimit) -> FailureLimiter {
        FailureLimiter {
            limit,
            entries: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn window(&self) -> Duration {
        self.limit.window
    }

    /// Reserves an attempt for `key`, or says how long it is locked out.
    pub(crate) fn reserve(self: &Arc<Self>, key: Key) -> Result<Attempt, Duration> {
        let now = Instant::now();
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        if entries.len() >= MAX_TRACKED && !entries.contains_key(&key) {
            let window = self.limit.window;
            entries.retain(|_, e| !e.is_forgotten(window, now));
            if entries.len() >= MAX_TRACKED {
                // Full of live lockouts: refuse new names rather than forget a lockout.
                return Err(self.limit.window);
            }
        }
        let entry = entries
            .entry(key.clone())
            .or_insert_with(|| Entry::new(now));
        if let Some(until) = entry.locked_until {
            if until > now {
                return Err(until - now);
            }
            entry.locked_until = None;
            entry.failures = 0;
            entry.since = now;
        }
        if now.duration_since(entry.since) >= self.limit.window {
            entry.failures = 0;
            entry.since = now;
        }
        if entry.failures + entry.pending >= self.limit.max_failures {
            return Err(self.lockout(entry, now));
        }
        entry.pending += 1;
        Ok(Attempt {
            limiter: self.clone(),
            key: Some(key),
        })
    }

    /// Locks the entry out, doubling the lockout each time; returns its length.
    fn lockout(&self, entry: &mut Entry, now: Instant) -> Duration {
        let factor = 1u32 << entry.lockouts.min(16);
        let length = self
            .limit
            .window
            .checked_mul(factor)
            .unwrap_or(MAX_LOCKOUT)
            .min(MAX_LOCKOUT);
        entry.lockouts = entry.lockouts.saturating_add(1);
        entry.locked_until = Some(now + length);
        length
    }

    fn settle(&self, key: &Key, ok: bool) {
        let now = Instant::now();
        let mut entries = self.entries.lock().unwrap_or_else(|e| e.into_inner());
        let Some(entry) = entries.get_mut(key) else {
            return;
        };
        entry.pending = entry.pending.saturating_sub(1);
        if ok {
            entry.failures = 0;
            entry.lockouts = 0;
            return;
        }
        entry.failures = entry.failures.saturating_add(1);
        if entry.failures >= self.limit.max_failures && entry.locked_until.is_none() {
            self.lockout(entry, now);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn limiter(max: u32, window_ms: u64) -> Arc<FailureLimiter> {
        Arc::new(FailureLimiter::new(FailureLimit {
            max_failures: max,
            window: Duration::from_millis(window_ms),
        }))
    }

    fn key(address: &str, user: &str) -> Key {
        (Some(address.parse().unwrap()), user.to_string())
    }

    #[test]
    fn locks_a_pair_after_the_limit_and_not_its_neighbours() {
        let limiter = limiter(3, 200);
        for _ in 0..3 {
            limiter.reserve(key("10.0.0.1", "alice")).unwrap().failed();
        }
        assert!(limiter.reserve(key("10.0.0.1", "alice")).is_err());
        // Another user from the same address, and the same user from elsewhere, go on.
        limiter.reserve(key("10.0.0.1", "bob")).unwrap().succeeded();
        limiter
            .reserve(key("10.0.0.2", "alice"))
            .unwrap()
            .succeeded();
        std::thread::sleep(Duration::from_millis(250));
        limiter
            .reserve(key("10.0.0.1", "alice"))
            .unwrap()
            .succeeded();
    }

    #[test]
    fn parallel_attempts_are_counted_before_they_finish() {
        let limiter = limiter(10, 60_000);
        let held: Vec<_> = (0..10)
            .map(|_| limiter.reserve(key("10.0.0.1", "alice")).unwrap())
            .collect();
        assert!(limiter.reserve(key("10.0.0.1", "alice")).is_err());
        drop(held);
        assert!(limiter.reserve(key("10.0.0.1", "alice")).is_err());
    }

    #[test]
    fn each_lockout_is_longer_than_the_last() {
        let limiter = limiter(1, 50);
        limiter.reserve(key("10.0.0.1", "a")).unwrap().failed();
        let first = limiter.reserve(key("10.0.0.1", "a")).unwrap_err();
        std::thread::sleep(first + Duration::from_millis(10));
        limiter.reserve(key("10.0.0.1", "a")).unwrap().failed();
        let second = limiter.reserve(key("10.0.0.1", "a")).unwrap_err();
        assert!(second > first, "{second:?} after {first:?}");
        assert!(second <= MAX_LOCKOUT);
    }

    #[test]
    fn a_success_clears_the_count() {
        let limiter = limiter(2, 60_000);
        limiter.reserve(key("10.0.0.1", "a")).unwrap().failed();
        limiter.reserve(key("10.0.0.1", "a")).unwrap().succeeded();
        limiter.reserve(key("10.0.0.1", "a")).unwrap().failed();
        limiter.reserve(key("10.0.0.1", "a")).unwrap().succeeded();
    }
}
