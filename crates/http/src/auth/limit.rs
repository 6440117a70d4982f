//! Failed logins per source address. A fixed window per address is all this needs (count
//! failures, refuse while over the limit), so it is a small map rather than a general rate
//! limiter crate built for request throttling.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Mutex;
use std::time::{Duration, Instant};

/// At most `max_failures` failed logins per address within `window`; past that, every
/// request with credentials from the address is refused until the window ends.
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

/// Addresses tracked at most; when full, expired windows are dropped first.
const MAX_TRACKED: usize = 100_000;

pub(crate) struct FailureLimiter {
    limit: FailureLimit,
    failures: Mutex<HashMap<Option<IpAddr>, (u32, Instant)>>,
}

impl FailureLimiter {
    pub(crate) fn new(limit: FailureLimit) -> FailureLimiter {
        FailureLimiter {
            limit,
            failures: Mutex::new(HashMap::new()),
        }
    }

    pub(crate) fn window(&self) -> Duration {
        self.limit.window
    }

    pub(crate) fn is_blocked(&self, address: Option<IpAddr>) -> bool {
        let failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        failures.get(&address).is_some_and(|(count, since)| {
            since.elapsed() < self.limit.window && *count >= self.limit.max_failures
        })
    }

    pub(crate) fn record_failure(&self, address: Option<IpAddr>) {
        let mut failures = self.failures.lock().unwrap_or_else(|e| e.into_inner());
        if failures.len() >= MAX_TRACKED {
            let window = self.limit.window;
            failures.retain(|_, (_, since)| since.elapsed() < window);
            if failures.len() >= MAX_TRACKED {
                failures.clear();
            }
        }
        let entry = failures.entry(address).or_insert((0, Instant::now()));
        if entry.1.elapsed() >= self.limit.window {
            *entry = (0, Instant::now());
        }
        entry.0 += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_after_the_limit_per_address_and_forgets_after_the_window() {
        let limiter = FailureLimiter::new(FailureLimit {
            max_failures: 3,
            window: Duration::from_millis(200),
        });
        let a = Some("10.0.0.1".parse().unwrap());
        let b = Some("10.0.0.2".parse().unwrap());
        for _ in 0..3 {
            assert!(!limiter.is_blocked(a));
            limiter.record_failure(a);
        }
        assert!(limiter.is_blocked(a));
        assert!(!limiter.is_blocked(b));
        std::thread::sleep(Duration::from_millis(250));
        assert!(!limiter.is_blocked(a));
    }
}
