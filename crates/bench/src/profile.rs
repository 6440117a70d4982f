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

fn describe(cost: &Cost, bytes: u64) -> String {
    format!(
        "{:.1} MB/s ({:.2} s), peak RSS {:.0} MiB",
        throughput(cost, bytes),
        cost.elapsed.as_secs_f64(),
        cost.peak_mib
    )
}

fn peer_row(workload: &str, peer: &str, ours: &Cost, theirs: &Cost, bytes: u64) -> Row {
    Row::new(PART, format!("{workload}: vs {peer}"))
        .covenant(describe(ours, bytes))
        .peer(describe(theirs, bytes))
        .ratio(format!(
            "{:.2}×",
            throughput(ours, bytes) / throughput(theirs, bytes)
        ))
        .notes("ratio of throughputs (MB/s)")
}

/// Runs `command` to completion, sampling its peak resident memory (`VmHWM`) while it runs.
fn measure(command: &mut Command) -> Result<Cost> {
    let started = Instant::now();
    let mut child = command
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("starting {command:?}"))?;
    let status_file = format!("/proc/{}/status", child.id());
    let mut peak_kib = 0u64;
    let status = loop {
        if let Ok(text) = std::fs::read_to_string(&status_file)
            && let Some(kib) = text
                .lines()
                .find_map(|l| l.strip_prefix("VmHWM:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        {
            peak_kib = peak_kib.max(kib);
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
        peak_mib: peak_kib as f64 / 1024.0,
    })
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
