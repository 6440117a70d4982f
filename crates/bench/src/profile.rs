//! Part 4: profiling data. `covenant profile` on generated instrument-like JSON Lines (nested
//! arrays, a `vendor_data` JSON column, rare fields) beside the seed's Python approach
//! (`json.loads` + `Counter`) and DuckDB (`read_json_auto` + `SUMMARIZE`, one thread), at two
//! sizes so that peak memory can be seen not to grow with the input.

use crate::table::Row;
use anyhow::{Context, Result, bail};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const PART: &str = "4 profile data";

#[derive(Debug, Clone, Copy)]
pub struct ProfileSizes {
    pub megabytes: [u64; 2],
}

impl ProfileSizes {
    pub const SMOKE: ProfileSizes = ProfileSizes { megabytes: [1, 2] };
    pub const FULL: ProfileSizes = ProfileSizes {
        megabytes: [256, 1024],
    };
}

/// What one run of a tool cost.
struct Cost {
    elapsed: Duration,
    /// User and system time of the process (all its threads).
    cpu: Duration,
    peak_mib: f64,
}

/// The Python peers: an interpreter and whether it has DuckDB.
pub struct PythonPeers {
    pub python: Option<PathBuf>,
    pub counter_script: PathBuf,
    pub duckdb_script: PathBuf,
}

pub fn run(
    covenant: &Path,
    peers: &PythonPeers,
    sizes: ProfileSizes,
    scratch: &Path,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let has_duckdb = peers.python.as_deref().is_some_and(|python| {
        Command::new(python)
            .args(["-c", "import duckdb"])
            .status()
            .is_ok_and(|s| s.success())
    });
    for mb in sizes.megabytes {
        let data = scratch.join(format!("instruments-{mb}mb.jsonl"));
        let bytes = generate(&data, mb)?;
        let out = scratch.join("profile.json");
        let ours = measure(Command::new(covenant).args([
            "profile",
            path_str(&data)?,
            "--group-by",
            "exchange",
            "--escape-hatch",
            "vendor_data",
            "-o",
            path_str(&out)?,
        ]))?;
        let workload = format!("{mb} MB instrument JSON Lines, grouped, vendor_data by key");
        rows.push(
            Row::new(PART, format!("{workload}: covenant profile"))
                .covenant(describe(&ours, bytes))
                .notes("every path: presence, types, distinct sketch, ranges, examples, per group"),
        );
        let python_peer = |script: &Path| -> Result<Cost> {
            let python = peers.python.as_deref().expect("checked");
            measure(Command::new(python).arg(script).arg(&data))
        };
        match &peers.python {
            Some(_) => {
                let counter = python_peer(&peers.counter_script)?;
                rows.push(peer_row(
                    &workload,
                    "Python json + Counter",
                    &ours,
                    &counter,
                    bytes,
                ));
            }
            None => rows.push(
                Row::new(PART, format!("{workload}: Python json + Counter"))
                    .peer("n/a")
                    .notes("no Python interpreter given"),
            ),
        }
        if has_duckdb {
            let duckdb = python_peer(&peers.duckdb_script)?;
            rows.push(peer_row(
                &workload,
                "DuckDB SUMMARIZE, 1 thread",
                &ours,
                &duckdb,
                bytes,
            ));
        } else {
            rows.push(
                Row::new(PART, format!("{workload}: DuckDB"))
                    .peer("n/a")
                    .notes("the duckdb package is not installed in the peers' virtualenv"),
            );
        }
    }
    Ok(())
}

fn path_str(path: &Path) -> Result<&str> {
    path.to_str().context("a non-UTF-8 scratch path")
}

fn throughput(cost: &Cost, bytes: u64) -> f64 {
    bytes as f64 / 1_048_576.0 / cost.elapsed.as_secs_f64().max(1e-9)
}

/// MB per second of CPU time: throughput on one core, which other load on a shared machine
/// does not change the way it changes wall-clock time.
fn cpu_throughput(cost: &Cost, bytes: u64) -> f64 {
    bytes as f64 / 1_048_576.0 / cost.cpu.as_secs_f64().max(1e-9)
}

fn describe(cost: &Cost, bytes: u64) -> String {
    format!(
        "{:.1} MB/s ({:.2} s); {:.1} MB per CPU second ({:.2} s CPU); peak RSS {:.0} MiB",
        throughput(cost, bytes),
        cost.elapsed.as_secs_f64(),
        cpu_throughput(cost, bytes),
        cost.cpu.as_secs_f64(),
        cost.peak_mib
    )
}

fn peer_row(workload: &str, peer: &str, ours: &Cost, theirs: &Cost, bytes: u64) -> Row {
    Row::new(PART, format!("{workload}: vs {peer}"))
        .covenant(describe(ours, bytes))
        .peer(describe(theirs, bytes))
        .ratio(format!(
            "{:.2}× ({:.2}× per CPU second)",
            throughput(ours, bytes) / throughput(theirs, bytes),
            cpu_throughput(ours, bytes) / cpu_throughput(theirs, bytes)
        ))
        .notes("ratio of throughputs (MB/s of wall-clock time, and of CPU time)")
}

/// Runs `command` to completion, sampling its peak resident memory (`VmHWM`) and its CPU
/// time while it runs (the last sample is at most 10 ms before its exit).
fn measure(command: &mut Command) -> Result<Cost> {
    let started = Instant::now();
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {command:?}"))?;
    let status_file = format!("/proc/{}/status", child.id());
    let stat_file = format!("/proc/{}/stat", child.id());
    let mut peak_kib = 0u64;
    let mut cpu_ticks = 0u64;
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_file)
            && let Some(kib) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            peak_kib = peak_kib.max(kib);
        }
        if let Some(ticks) = std::fs::read_to_string(&stat_file)
            .ok()
            .and_then(|text| cpu_ticks_of(&text))
        {
            cpu_ticks = cpu_ticks.max(ticks);
        }
        if let Some(status) = child.try_wait()? {
            break status;
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    let elapsed = started.elapsed();
    if !status.success() {
        let mut stderr = String::new();
        if let Some(mut pipe) = child.stderr.take() {
            std::io::Read::read_to_string(&mut pipe, &mut stderr).ok();
        }
        bail!("{command:?} failed ({status}): {}", stderr.trim());
    }
    Ok(Cost {
        elapsed,
        cpu: Duration::from_millis(cpu_ticks * 1000 / USER_HZ),
        peak_mib: peak_kib as f64 / 1024.0,
    })
}

/// The clock ticks per second of `/proc/<pid>/stat` (`USER_HZ`, fixed by Linux's ABI).
const USER_HZ: u64 = 100;

/// User plus system time, in ticks, from the text of `/proc/<pid>/stat` (fields 14 and 15;
/// the command name before them is in parentheses and may hold spaces).
fn cpu_ticks_of(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let fields: Vec<&str> = after_name.split_whitespace().collect();
    let user: u64 = fields.get(11)?.parse().ok()?;
    let system: u64 = fields.get(12)?.parse().ok()?;
    Some(user + system)
}

/// Writes instrument records until the file holds `megabytes`; returns its size in bytes.
/// Deterministic: the same size gives the same file.
fn generate(path: &Path, megabytes: u64) -> Result<u64> {
    const EXCHANGES: [&str; 4] = ["binance", "kraken", "coinbase", "okx"];
    const ASSETS: [&str; 4] = ["BTC", "ETH", "SOL", "ADA"];
    let target = megabytes * 1_048_576;
    let mut out = BufWriter::new(
        std::fs::File::create(path).with_context(|| format!("creating {}", path.display()))?,
    );
    let mut written = 0u64;
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    let mut i = 0u64;
    while written < target {
        let exchange = EXCHANGES[(i % 4) as usize];
        let roll = next() % 100;
        let mut vendor = serde_json::Map::new();
        if matches!(exchange, "binance" | "kraken") && roll < 80 {
            vendor.insert("marginTradingAllowed".into(), (roll % 2 == 0).into());
        }
        vendor.insert("listingRank".into(), (next() % 5000).into());
        if roll < 5 {
            vendor.insert("promoTier".into(), "gold".into());
        }
        let limits: Vec<serde_json::Value> = (0..(next() % 4))
            .map(|tier| serde_json::json!({"tier": tier, "notionalValue": (next() % 1_000_000) as f64 / 100.0}))
            .collect();
        let record = serde_json::json!({
            "symbol": format!("{}-{i}", exchange.to_uppercase()),
            "exchange": exchange,
            "baseAsset": ASSETS[(next() % 4) as usize],
            "tickSize": (next() % 100) as f64 / 1000.0,
            "maxLeverage": next() % 125,
            "legacyFeeTier": if roll < 3 { serde_json::json!("VIP1") } else { serde_json::Value::Null },
            "riskLimits": limits,
            "vendor_data": serde_json::Value::Object(vendor).to_string(),
        });
        let line = format!("{record}\n");
        out.write_all(line.as_bytes())?;
        written += line.len() as u64;
        i += 1;
    }
    out.flush()?;
    Ok(written)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cpu_time_is_read_past_an_odd_command_name() {
        let stat = "4242 (a) (b c) R 1 2 3 0 -1 4194304 125 0 0 0 250 31 0 0 20 0 1 0";
        assert_eq!(cpu_ticks_of(stat), Some(281));
        assert_eq!(cpu_ticks_of("4242 (cut"), None);
        let own = std::fs::read_to_string("/proc/self/stat").expect("stat");
        assert!(cpu_ticks_of(&own).is_some(), "{own}");
    }
}
