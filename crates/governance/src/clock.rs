//! Injectable time, so that tests can let weeks pass between two calls.

use std::sync::atomic::{AtomicI64, Ordering};

/// Milliseconds since the Unix epoch.
pub trait Clock: Send + Sync {
    fn now_ms(&self) -> i64;
}

/// The wall clock.
#[derive(Debug, Default, Clone, Copy)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now_ms(&self) -> i64 {
        chrono::Utc::now().timestamp_millis()
    }
}

/// A clock that moves only when told.
#[derive(Debug, Default)]
pub struct ManualClock(AtomicI64);

impl ManualClock {
    pub fn new(at: i64) -> ManualClock {
        ManualClock(AtomicI64::new(at))
    }

    pub fn set(&self, at: i64) {
        self.0.store(at, Ordering::SeqCst);
    }

    pub fn advance(&self, ms: i64) {
        self.0.fetch_add(ms, Ordering::SeqCst);
    }
}

impl Clock for ManualClock {
    fn now_ms(&self) -> i64 {
        self.0.load(Ordering::SeqCst)
    }
}

/// Time read from a file on every call, so that a drill or a demo can let weeks pass on a
/// running server. The file holds an RFC 3339 time (`2026-01-22T00:00:00Z`) or milliseconds
/// since the epoch. While the file is missing the wall clock is used; an unreadable file is
/// logged and the wall clock used too, so a typo cannot freeze time silently.
#[derive(Debug, Clone)]
pub struct FileClock {
    path: std::path::PathBuf,
}

impl FileClock {
    pub fn new(path: impl Into<std::path::PathBuf>) -> FileClock {
        FileClock { path: path.into() }
    }

    pub fn path(&self) -> &std::path::Path {
        &self.path
    }
}

/// Parses a clock file's text: RFC 3339 or integer milliseconds since the epoch.
pub fn parse_instant(text: &str) -> Option<i64> {
    let text = text.trim();
    if let Ok(ms) = text.parse::<i64>() {
        return Some(ms);
    }
    chrono::DateTime::parse_from_rfc3339(text)
        .ok()
        .map(|t| t.timestamp_millis())
}

impl Clock for FileClock {
    fn now_ms(&self) -> i64 {
        match std::fs::read_to_string(&self.path) {
            Ok(text) => match parse_instant(&text) {
                Some(ms) => ms,
                None => {
                    tracing::warn!(path = %self.path.display(), "clock file holds neither RFC 3339 nor milliseconds; using the wall clock");
                    SystemClock.now_ms()
                }
            },
            Err(_) => SystemClock.now_ms(),
        }
    }
}

/// A timestamp for people: RFC 3339 in UTC to the second.
pub fn format_time(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%dT%H:%M:%SZ").to_string())
        .unwrap_or_else(|| format!("{ms} ms"))
}

/// A timestamp's day, for windows and history lines.
pub fn format_day(ms: i64) -> String {
    chrono::DateTime::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d").to_string())
        .unwrap_or_else(|| format!("{ms} ms"))
}

/// A duration in whole days (or hours below a day), for messages.
pub fn format_span(ms: i64) -> String {
    const HOUR: i64 = 3_600_000;
    const DAY: i64 = 24 * HOUR;
    if ms >= DAY {
        let days = ms / DAY;
        format!("{days} day{}", if days == 1 { "" } else { "s" })
    } else {
        let hours = (ms / HOUR).max(0);
        format!("{hours} hour{}", if hours == 1 { "" } else { "s" })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn manual_clock_moves_when_told() {
        let clock = ManualClock::new(1_000);
        clock.advance(500);
        assert_eq!(clock.now_ms(), 1_500);
        clock.set(10);
        assert_eq!(clock.now_ms(), 10);
    }

    #[test]
    fn file_clock_follows_its_file() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("clock");
        let clock = FileClock::new(&path);
        let before = SystemClock.now_ms();
        assert!(clock.now_ms() >= before, "missing file: wall clock");
        std::fs::write(&path, "2026-01-22T00:00:00Z\n").expect("write");
        assert_eq!(format_day(clock.now_ms()), "2026-01-22");
        std::fs::write(&path, "1767225600000").expect("write");
        assert_eq!(clock.now_ms(), 1_767_225_600_000);
        std::fs::write(&path, "next tuesday").expect("write");
        assert!(clock.now_ms() >= before, "garbage: wall clock");
    }

    #[test]
    fn times_render_in_utc() {
        assert_eq!(format_time(1_767_225_600_000), "2026-01-01T00:00:00Z");
        assert_eq!(format_day(1_767_225_600_000), "2026-01-01");
        assert_eq!(format_span(21 * 86_400_000), "21 days");
        assert_eq!(format_span(3_600_000), "1 hour");
    }
}
