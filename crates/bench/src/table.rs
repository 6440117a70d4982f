//! The one markdown table every part reports into, and the statistics behind its cells.

use std::time::Duration;

/// One line of the results table. `ratio` is always "how many times better Covenant is" on
/// that line (peer time / Covenant time, or Covenant rate / reference rate), so a reader never
/// has to work out which way a ratio points.
#[derive(Debug, Clone)]
pub struct Row {
    pub part: String,
    pub workload: String,
    pub covenant: String,
    pub peer: String,
    pub ratio: String,
    pub notes: String,
}

impl Row {
    pub fn new(part: &str, workload: impl Into<String>) -> Row {
        Row {
            part: part.to_string(),
            workload: workload.into(),
            covenant: String::new(),
            peer: String::new(),
            ratio: String::new(),
            notes: String::new(),
        }
    }
    pub fn covenant(mut self, text: impl Into<String>) -> Row {
        self.covenant = text.into();
        self
    }
    pub fn peer(mut self, text: impl Into<String>) -> Row {
        self.peer = text.into();
        self
    }
    pub fn ratio(mut self, text: impl Into<String>) -> Row {
        self.ratio = text.into();
        self
    }
    pub fn notes(mut self, text: impl Into<String>) -> Row {
        self.notes = text.into();
        self
    }
}

fn cell(text: &str) -> String {
    text.replace('|', "\\|").replace('\n', " ")
}

pub const HEADER: &str =
    "| part | workload | Covenant | peer / reference | ratio | notes |\n|---|---|---|---|---|---|";

pub fn render(rows: &[Row]) -> String {
    let mut out = String::from(HEADER);
    out.push('\n');
    for r in rows {
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} | {} |\n",
            cell(&r.part),
            cell(&r.workload),
            cell(&r.covenant),
            cell(&r.peer),
            cell(&r.ratio),
            cell(&r.notes)
        ));
    }
    out
}

/// Median and spread of repeated wall-clock measurements of the same work.
#[derive(Debug, Clone, Copy)]
pub struct Sample {
    pub median: Duration,
    pub min: Duration,
    pub max: Duration,
    pub runs: usize,
}

impl Sample {
    pub fn of(mut runs: Vec<Duration>) -> Option<Sample> {
        if runs.is_empty() {
            return None;
        }
        runs.sort();
        Some(Sample {
            median: runs[runs.len() / 2],
            min: runs[0],
            max: runs[runs.len() - 1],
            runs: runs.len(),
        })
    }

    /// `12.3 ms (11.9–13.0, n=5)`: the median first, since ratios are taken of medians.
    pub fn describe(&self) -> String {
        if self.runs == 1 {
            return format!("{} (n=1)", human(self.median));
        }
        format!(
            "{} ({}–{}, n={})",
            human(self.median),
            human(self.min),
            human(self.max),
            self.runs
        )
    }
}

pub fn human(d: Duration) -> String {
    let s = d.as_secs_f64();
    if s >= 10.0 {
        format!("{s:.1} s")
    } else if s >= 1.0 {
        format!("{s:.2} s")
    } else if s >= 1e-3 {
        format!("{:.2} ms", s * 1e3)
    } else {
        format!("{:.1} µs", s * 1e6)
    }
}

/// `peer / ours` as `12.3×`; `n/a` when either side is zero.
pub fn speedup(ours: Duration, theirs: Duration) -> String {
    if ours.is_zero() || theirs.is_zero() {
        return "n/a".to_string();
    }
    times(theirs.as_secs_f64() / ours.as_secs_f64())
}

pub fn times(x: f64) -> String {
    if x >= 100.0 {
        format!("{x:.0}×")
    } else if x >= 10.0 {
        format!("{x:.1}×")
    } else {
        format!("{x:.2}×")
    }
}

/// Latency percentiles (p50, p90, p99) of a set of request durations, in microseconds.
pub fn percentiles(latencies_us: &mut [u64]) -> Option<(u64, u64, u64)> {
    if latencies_us.is_empty() {
        return None;
    }
    latencies_us.sort_unstable();
    let at = |q: f64| {
        let rank = ((latencies_us.len() as f64) * q).ceil() as usize;
        latencies_us[rank.clamp(1, latencies_us.len()) - 1]
    };
    Some((at(0.50), at(0.90), at(0.99)))
}

pub fn us(x: u64) -> String {
    if x >= 10_000 {
        format!("{:.1} ms", x as f64 / 1000.0)
    } else if x >= 1000 {
        format!("{:.2} ms", x as f64 / 1000.0)
    } else {
        format!("{x} µs")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sample_takes_the_middle_run() {
        let s = Sample::of(vec![
            Duration::from_millis(30),
            Duration::from_millis(10),
            Duration::from_millis(20),
        ])
        .expect("runs");
        assert_eq!(s.median, Duration::from_millis(20));
        assert_eq!(s.min, Duration::from_millis(10));
        assert_eq!(s.max, Duration::from_millis(30));
        assert!(Sample::of(Vec::new()).is_none());
    }

    #[test]
    fn percentiles_use_nearest_rank() {
        let mut xs: Vec<u64> = (1..=100).collect();
        assert_eq!(percentiles(&mut xs), Some((50, 90, 99)));
        let mut one = vec![7];
        assert_eq!(percentiles(&mut one), Some((7, 7, 7)));
        assert_eq!(percentiles(&mut []), None);
    }

    #[test]
    fn speedup_is_peer_over_ours() {
        assert_eq!(
            speedup(Duration::from_millis(10), Duration::from_millis(25)),
            "2.50×"
        );
        assert_eq!(speedup(Duration::ZERO, Duration::from_millis(1)), "n/a");
    }

    #[test]
    fn cells_escape_pipes() {
        let t = render(&[Row::new("a", "x|y")]);
        assert!(t.contains("x\\|y"), "{t}");
    }
}
