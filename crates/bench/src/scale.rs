//! Part 3: many subjects on the embedded store, registered through the REST API: time to
//! load, memory afterwards, start-up time from the store and lookup latency percentiles.

use crate::http::event_schema;
use crate::server::{
    Backend, Limits, LoadResult, Server, V1, first_start, load, require_clean, restart,
};
use crate::table::{Row, human, percentiles, us};
use anyhow::{Context, Result, bail};
use serde_json::json;
use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

const PART: &str = "3 scale, embedded SQLite";

#[derive(Debug, Clone, Copy)]
pub struct ScaleSizes {
    pub subjects: u64,
    pub versions: u64,
    pub concurrency: usize,
    /// Loading stops here even if not every subject is in; the row then says how far it got.
    pub max_load: Duration,
    pub lookups: u64,
}

impl ScaleSizes {
    pub const FULL: ScaleSizes = ScaleSizes {
        subjects: 100_000,
        versions: 10,
        concurrency: 8,
        max_load: Duration::from_secs(3600),
        lookups: 20_000,
    };
    pub const SMOKE: ScaleSizes = ScaleSizes {
        subjects: 100,
        versions: 3,
        concurrency: 4,
        max_load: Duration::from_secs(60),
        lookups: 500,
    };
}

/// Version `v` (0-based) of subject `s`: each version adds one optional field, so every
/// registration passes the default BACKWARD check against the one before.
pub(crate) fn scale_schema(s: u64, v: u64) -> String {
    event_schema(&format!("Scale{s}"), v as usize)
}

pub(crate) fn reg_body(s: u64, v: u64) -> String {
    json!({ "schema": scale_schema(s, v) }).to_string()
}

/// A small deterministic mix so lookups touch the whole key space, not a hot corner.
pub(crate) fn mix(i: u64) -> u64 {
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15).rotate_left(29) ^ 0x5851_F42D
}

fn dir_size(path: &Path) -> u64 {
    let mut total = 0;
    if let Ok(entries) = std::fs::read_dir(path) {
        for e in entries.flatten() {
            match e.metadata() {
                Ok(m) if m.is_dir() => total += dir_size(&e.path()),
                Ok(m) => total += m.len(),
                Err(_) => {}
            }
        }
    }
    total
}

fn bytes(n: u64) -> String {
    if n >= 10 << 20 {
        format!("{:.0} MiB", n as f64 / f64::from(1 << 20))
    } else {
        format!("{:.0} KiB", n as f64 / 1024.0)
    }
}

pub async fn run(
    covenant: &Path,
    sizes: ScaleSizes,
    scratch: &Path,
    rows: &mut Vec<Row>,
) -> Result<()> {
    let data = scratch.join("scale-data");
    let backend = Backend::Embedded(data.clone());
    let client = crate::server::client(sizes.concurrency)?;
    let started = Server::start(
        covenant,
        &backend,
        scratch,
        &client,
        Duration::from_secs(60),
    )
    .await;
    let Some((mut server, _)) = first_start(started, rows, PART, "all measurements")? else {
        return Ok(());
    };

    // Load: each worker takes whole subjects and registers their versions in order.
    let next = Arc::new(AtomicU64::new(0));
    let done = Arc::new(AtomicU64::new(0));
    let retries = Arc::new(AtomicU64::new(0));
    let start = Instant::now();
    let deadline = start + sizes.max_load;
    let mut tasks = Vec::new();
    for _ in 0..sizes.concurrency.max(1) {
        let (client, base, next, done, retries) = (
            client.clone(),
            server.base.clone(),
            next.clone(),
            done.clone(),
            retries.clone(),
        );
        tasks.push(tokio::spawn(async move {
            loop {
                if Instant::now() >= deadline {
                    return Ok::<(), anyhow::Error>(());
                }
                let s = next.fetch_add(1, Ordering::Relaxed);
                if s >= sizes.subjects {
                    return Ok(());
                }
                for v in 0..sizes.versions {
                    // A connection the server closed just as it was reused fails the send
                    // before anything was processed; registering is idempotent, so the
                    // request is sent again (at most twice) and counted.
                    let mut attempt = 0;
                    let r = loop {
                        match client
                            .post(format!("{base}/subjects/scale-{s}/versions"))
                            .header("content-type", V1)
                            .body(reg_body(s, v))
                            .send()
                            .await
                        {
                            Ok(r) => break r,
                            Err(e) if attempt < 2 => {
                                attempt += 1;
                                retries.fetch_add(1, Ordering::Relaxed);
                                eprintln!("covenant-bench: scale-{s} v{v}: {e}; sending again");
                                tokio::time::sleep(Duration::from_millis(50)).await;
                            }
                            Err(e) => {
                                return Err(anyhow::Error::new(e)
                                    .context(format!("registering scale-{s} v{v}")));
                            }
                        }
                    };
                    let status = r.status();
                    let text = r.text().await.unwrap_or_default();
                    if !status.is_success() {
                        bail!("registering scale-{s} v{v}: HTTP {status}: {text}");
                    }
                }
                done.fetch_add(1, Ordering::Relaxed);
            }
        }));
    }
    for t in tasks {
        if let Err(e) = t.await.context("load worker")? {
            let state = if server.exited() {
                "the server has exited"
            } else {
                "the server is still running"
            };
            return Err(e.context(format!("{state}; its log: {}", server.log_tail())));
        }
    }
    let load_time = start.elapsed();
    let retries = retries.load(Ordering::Relaxed);
    let loaded = done.load(Ordering::Relaxed);
    let registrations = loaded * sizes.versions;
    let memory_loaded = server.memory_kib();
    server.stop();
    let disk = dir_size(&data);

    // Start-up from the store now holding everything.
    let started = Server::start(
        covenant,
        &backend,
        scratch,
        &client,
        Duration::from_secs(600),
    )
    .await;
    let (server, ready_after) = restart(started, "restarting on the loaded store")?;
    let subjects_start = Instant::now();
    let r = client
        .get(format!("{}/subjects", server.base))
        .send()
        .await
        .context("GET /subjects")?;
    let status = r.status();
    let listed: Vec<String> = r.json().await.context("GET /subjects answer")?;
    let subjects_time = subjects_start.elapsed();
    if !status.is_success() {
        bail!("GET /subjects after restart: HTTP {status}");
    }
    let scale_listed = listed.iter().filter(|s| s.starts_with("scale-")).count() as u64;
    if scale_listed != loaded {
        bail!("after restart {scale_listed} subjects are listed, {loaded} were loaded");
    }
    let memory_restarted = server.memory_kib();
    let console = console_timings(&client, &server.base, loaded).await?;

    let lookups = lookups(&client, &server.base, sizes, loaded).await?;
    let memory_after_lookups = server.memory_kib();
    drop(server);

    let mib = |k: u64| format!("{:.0} MiB", k as f64 / 1024.0);
    let mem = |m: Option<(u64, u64)>| match m {
        Some((rss, peak)) => format!("RSS {} (peak {})", mib(rss), mib(peak)),
        None => "n/a".to_string(),
    };
    let complete = if loaded == sizes.subjects {
        String::new()
    } else {
        format!(
            "; stopped at the {} limit: {loaded} of {} subjects",
            human(sizes.max_load),
            sizes.subjects
        )
    };
    rows.push(
        Row::new(
            PART,
            format!(
                "load {} subjects × {} versions through the REST API, {} connections",
                sizes.subjects, sizes.versions, sizes.concurrency
            ),
        )
        .covenant(human(load_time))
        .notes(format!(
            "{registrations} registrations, {:.0}/s, each BACKWARD-checked and durable; store on disk {}; {retries} sends repeated after a closed connection{complete}",
            registrations as f64 / load_time.as_secs_f64().max(1e-9),
            bytes(disk)
        )),
    );
    rows.push(
        Row::new(PART, "server memory after loading")
            .covenant(mem(memory_loaded))
            .notes("from /proc/<pid>/status"),
    );
    rows.push(
        Row::new(PART, "start-up on the loaded store")
            .covenant(format!("{} to /health/ready", human(ready_after)))
            .notes(format!(
                "then GET /subjects ({} names) in {}; {} idle after start",
                listed.len(),
                human(subjects_time),
                mem(memory_restarted)
            )),
    );
    for (workload, mut lat) in console {
        if let Some((p50, p90, p99)) = percentiles(&mut lat) {
            rows.push(
                Row::new(PART, workload)
                    .covenant(format!("p50 {} / p90 {} / p99 {}", us(p50), us(p90), us(p99)))
                    .notes(format!(
                        "{CONSOLE_REQUESTS} requests one at a time over loopback (so close to server time), {loaded} subjects; target: under 200 ms"
                    )),
            );
        }
    }
    rows.extend(lookup_row(PART, sizes, &lookups, mem(memory_after_lookups)));
    Ok(())
}

/// Lookups by content (`POST /subjects/{s}` with the schema of a random version of a random
/// one of the `loaded` subjects), each of which must find its version.
pub(crate) async fn lookups(
    client: &reqwest::Client,
    base: &str,
    sizes: ScaleSizes,
    loaded: u64,
) -> Result<LoadResult> {
    let base = base.to_string();
    let lookups = load(
        client,
        Limits {
            concurrency: sizes.concurrency,
            max_requests: sizes.lookups,
            max_duration: Duration::from_secs(120),
        },
        Arc::new(move |c, i| {
            let m = mix(i);
            let s = m % loaded.max(1);
            let v = (m / loaded.max(1)) % sizes.versions.max(1);
            c.post(format!("{base}/subjects/scale-{s}"))
                .header("content-type", V1)
                .body(reg_body(s, v))
        }),
    )
    .await;
    require_clean("scale lookups", &lookups)?;
    Ok(lookups)
}

/// The row of [`lookups`]' latencies, `memory` the server's after them.
pub(crate) fn lookup_row(
    part: &str,
    sizes: ScaleSizes,
    lookups: &LoadResult,
    memory: String,
) -> Option<Row> {
    let mut lat = lookups.latencies_us.clone();
    let (p50, p90, p99) = percentiles(&mut lat)?;
    Some(
        Row::new(
            part,
            format!(
                "lookup POST /subjects/{{s}}, random subject and version, {} connections",
                sizes.concurrency
            ),
        )
        .covenant(format!(
            "p50 {} / p90 {} / p99 {}",
            us(p50),
            us(p90),
            us(p99)
        ))
        .notes(format!(
            "{} lookups, {:.0}/s, every one found; {memory} after",
            lookups.requests,
            lookups.rate()
        )),
    )
}

/// Requests per console page timed.
const CONSOLE_REQUESTS: usize = 20;

/// The web console's subject list on the loaded store: the first page, a page deep in the
/// list, and a name search, each timed [`CONSOLE_REQUESTS`] times in microseconds. A page
/// that does not answer 200 with the subjects table fails the part.
async fn console_timings(
    client: &reqwest::Client,
    base: &str,
    loaded: u64,
) -> Result<Vec<(String, Vec<u64>)>> {
    let deep = loaded.saturating_sub(60);
    let pages = [
        (
            "console GET /ui/subjects, first page of 50".to_string(),
            "/ui/subjects".to_string(),
        ),
        (
            format!("console GET /ui/subjects?from={deep}, a page deep in the list"),
            format!("/ui/subjects?from={deep}"),
        ),
        (
            "console GET /ui/subjects?q=scale-1, name search".to_string(),
            "/ui/subjects?q=scale-1".to_string(),
        ),
    ];
    let mut out = Vec::new();
    for (workload, path) in pages {
        let mut lat = Vec::with_capacity(CONSOLE_REQUESTS);
        for _ in 0..CONSOLE_REQUESTS {
            let start = Instant::now();
            let r = client
                .get(format!("{base}{path}"))
                .send()
                .await
                .with_context(|| format!("GET {path}"))?;
            let status = r.status();
            let text = r.text().await.unwrap_or_default();
            lat.push(start.elapsed().as_micros() as u64);
            if status.as_u16() == 404 {
                // A server built without the console.
                return Ok(Vec::new());
            }
            if !status.is_success() || !text.contains("id=\"subjects\"") {
                bail!("GET {path}: HTTP {status}");
            }
        }
        out.push((workload, lat));
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_version_adds_one_field() {
        let v0: serde_json::Value = serde_json::from_str(&scale_schema(7, 0)).expect("json");
        let v3: serde_json::Value = serde_json::from_str(&scale_schema(7, 3)).expect("json");
        let n = |v: &serde_json::Value| v["fields"].as_array().map(Vec::len);
        assert_eq!(n(&v3), n(&v0).map(|x| x + 3));
        assert_eq!(v0["name"], "Scale7");
    }

    #[test]
    fn mix_spreads_consecutive_indexes() {
        let picks: std::collections::HashSet<u64> = (0..100).map(|i| mix(i) % 100).collect();
        assert!(picks.len() > 50, "{}", picks.len());
    }
}
