//! The check budget and admission control against a running `covenant serve` under an
//! address-space limit: costly checks answer within their budget, an abandoned check stops
//! consuming CPU, parallel costly checks are admitted a few at a time (the rest refused with
//! 429 and `Retry-After`) while cheap requests stay fast, and SIGTERM ends the server promptly
//! with checks running.

use crate::support;

use serde_json::{Value, json};
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use support::{V1, free_port};

/// The server's address space: far above what the admitted checks need, far below what
/// unbounded parallel checks reached.
const ADDRESS_SPACE: u64 = 6_000_000_000;
/// Peak resident memory allowed to the server while 24 costly checks are sent at once.
const PEAK_RSS_BOUND_KB: u64 = 2_000_000;
/// How long the server may take to exit after SIGTERM with checks running.
const SHUTDOWN_BOUND: Duration = Duration::from_secs(5);

/// These tests measure CPU and memory of their own server: one at a time.
static ONE_AT_A_TIME: Mutex<()> = Mutex::new(());

/// A `covenant serve` under an address-space limit, in a folder of its own, once it accepts
/// connections.
struct Limited {
    serve: support::Confined,
    base: String,
    _dir: tempfile::TempDir,
}

impl Limited {
    fn spawn(options: &[&str]) -> Limited {
        let dir = tempfile::tempdir().expect("temp dir");
        let port = free_port();
        let serve = support::Confined::spawn(ADDRESS_SPACE, port, dir.path(), None, options);
        let up = (0..400).any(|_| {
            std::thread::sleep(Duration::from_millis(50));
            std::net::TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        assert!(up, "server did not start");
        Limited {
            base: serve.base.clone(),
            serve,
            _dir: dir,
        }
    }

    /// Processor time (user and system) the server has spent, in seconds.
    fn cpu_seconds(&self) -> f64 {
        support::cpu_seconds(self.serve.pid())
    }

    /// Peak resident memory of the server, in kB.
    fn peak_rss_kb(&self) -> u64 {
        support::peak_rss_kib(self.serve.pid())
    }
}

/// A client giving up after `timeout`, driven on a runtime of its own so that each test
/// thread can wait for it.
struct Client {
    http: reqwest::Client,
    runtime: tokio::runtime::Runtime,
}

fn client(timeout: Duration) -> Client {
    Client {
        http: covenant_exporter::client::builder()
            .timeout(timeout)
            .build()
            .expect("client"),
        runtime: tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("runtime"),
    }
}

impl Client {
    fn get(&self, url: &str) -> reqwest::Result<u16> {
        self.runtime
            .block_on(async { Ok(self.http.get(url).send().await?.status().as_u16()) })
    }
}

fn post(client: &Client, url: &str, body: &Value) -> reqwest::Result<(u16, Option<String>, Value)> {
    client.runtime.block_on(async {
        let response = client
            .http
            .post(url)
            .header("content-type", V1)
            .body(body.to_string())
            .send()
            .await?;
        let status = response.status().as_u16();
        let retry_after = response
            .headers()
            .get("retry-after")
            .and_then(|v| v.to_str().ok())
            .map(str::to_string);
        let text = response.text().await?;
        Ok((
            status,
            retry_after,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        ))
    })
}

fn register(server: &Limited, subject: &str, body: &Value) {
    let (status, _, answer) = post(
        &client(Duration::from_secs(120)),
        &format!("{}/subjects/{subject}/versions", server.base),
        body,
    )
    .expect("register");
    assert_eq!(status, 200, "{answer}");
}

/// A verdict, or the check budget's 422; nothing else.
fn assert_within_budget(status: u16, answer: &Value) {
    assert!(
        status == 200 || (status == 422 && answer["error_code"] == 42250),
        "{status} {answer}"
    );
}

fn avro_record(prefix: &str, n: usize) -> Value {
    let fields: Vec<Value> = (0..n)
        .map(|i| json!({"name": format!("{prefix}{i}"), "type": "int", "default": 0}))
        .collect();
    json!({"schema": json!({"type": "record", "name": "R", "fields": fields}).to_string()})
}

/// An object of `patterns` pattern properties, and the same with `properties` properties no
/// pattern matches: every added property is tried against every pattern.
fn pattern_schemas(patterns: usize, properties: usize) -> (Value, Value) {
    let mut old = json!({"type": "object", "additionalProperties": false});
    old["patternProperties"] = (0..patterns)
        .map(|i| (format!("^x{i}_[a-z]+$"), json!({"type": "string"})))
        .collect::<serde_json::Map<_, _>>()
        .into();
    let mut new = old.clone();
    new["properties"] = (0..properties)
        .map(|i| (format!("p{i}"), json!({"type": "string"})))
        .collect::<serde_json::Map<_, _>>()
        .into();
    let body = |s: &Value| json!({"schemaType": "JSON", "schema": s.to_string()});
    (body(&old), body(&new))
}

/// A schema whose `$ref`s expand exponentially: each level refers to the next four times.
fn expanding_schemas(depth: usize) -> (Value, Value) {
    let mut definitions = serde_json::Map::new();
    for i in 0..depth {
        let properties: serde_json::Map<_, _> = (0..4)
            .map(|j| {
                (
                    format!("p{j}"),
                    json!({"$ref": format!("#/definitions/d{}", i + 1)}),
                )
            })
            .collect();
        definitions.insert(
            format!("d{i}"),
            json!({"type": "object", "properties": properties}),
        );
    }
    let leaves: serde_json::Map<_, _> = (0..50)
        .map(|j| (format!("leaf{j}"), json!({"type": "string"})))
        .collect();
    definitions.insert(
        format!("d{depth}"),
        json!({"type": "object", "properties": leaves}),
    );
    let old = json!({
        "type": "object",
        "definitions": definitions,
        "properties": {"root": {"$ref": "#/definitions/d0"}}
    });
    let mut new = old.clone();
    new["properties"]["extra"] = json!({"type": "string"});
    let body = |s: &Value| json!({"schemaType": "JSON", "schema": s.to_string()});
    (body(&old), body(&new))
}

#[test]
fn a_twenty_thousand_field_rename_is_answered_within_the_budget() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let server = Limited::spawn(&[]);
    register(&server, "wide", &avro_record("a", 20_000));
    let started = Instant::now();
    let (status, _, answer) = post(
        &client(Duration::from_secs(60)),
        &format!(
            "{}/compatibility/subjects/wide/versions/latest",
            server.base
        ),
        &avro_record("b", 20_000),
    )
    .expect("answered");
    let took = started.elapsed();
    println!("20,000 renamed fields: {status} after {took:?}");
    assert_within_budget(status, &answer);
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

#[test]
fn pattern_properties_are_answered_within_the_budget() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let server = Limited::spawn(&[]);
    let (old, new) = pattern_schemas(2_000, 20_000);
    register(&server, "patterns", &old);
    let started = Instant::now();
    let (status, _, answer) = post(
        &client(Duration::from_secs(60)),
        &format!(
            "{}/compatibility/subjects/patterns/versions/latest",
            server.base
        ),
        &new,
    )
    .expect("answered");
    let took = started.elapsed();
    println!("2,000 patterns x 20,000 properties: {status} after {took:?}");
    assert_within_budget(status, &answer);
    assert!(took < Duration::from_secs(30), "took {took:?}");
}

#[test]
fn a_check_abandoned_by_its_client_stops_consuming_cpu() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    // A budget of a minute: only the client's leaving can stop this check early.
    let server = Limited::spawn(&["--check-time-ms", "60000", "--check-max-work", "1000000000"]);
    let (old, new) = pattern_schemas(2_000, 20_000);
    register(&server, "abandoned", &old);
    let url = format!(
        "{}/compatibility/subjects/abandoned/versions/latest",
        server.base
    );
    let gave_up = post(&client(Duration::from_secs(4)), &url, &new);
    assert!(
        gave_up.is_err(),
        "the check answered before the client left"
    );
    std::thread::sleep(Duration::from_secs(1));
    let before = server.cpu_seconds();
    std::thread::sleep(Duration::from_secs(3));
    let spent = server.cpu_seconds() - before;
    println!("processor seconds spent in the 3 s after the client left: {spent:.2}");
    // A check still running would spend about 3 s (one core for 3 s).
    assert!(spent < 0.5, "{spent:.2} s after the client left");
}

#[test]
fn parallel_costly_checks_are_admitted_within_bounds() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let server = Limited::spawn(&[]);
    let (old, new) = expanding_schemas(6);
    register(&server, "expanding", &old);
    let stop = Arc::new(AtomicBool::new(false));
    let worst_probe_ms = Arc::new(AtomicU64::new(0));
    let probe = {
        let (stop, worst) = (stop.clone(), worst_probe_ms.clone());
        let url = format!("{}/subjects", server.base);
        std::thread::spawn(move || {
            let http = client(Duration::from_secs(10));
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                let status = http.get(&url);
                assert_eq!(status.ok(), Some(200), "the probe was answered");
                let ms = started.elapsed().as_millis() as u64;
                worst.fetch_max(ms, Ordering::Relaxed);
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    let url = format!(
        "{}/compatibility/subjects/expanding/versions/latest",
        server.base
    );
    let checks: Vec<_> = (0..24)
        .map(|_| {
            let (url, new) = (url.clone(), new.clone());
            std::thread::spawn(move || post(&client(Duration::from_secs(120)), &url, &new))
        })
        .collect();
    let answers: Vec<_> = checks
        .into_iter()
        .map(|c| c.join().expect("join").expect("answered"))
        .collect();
    stop.store(true, Ordering::Relaxed);
    probe.join().expect("probe");
    let peak = server.peak_rss_kb();
    let worst = worst_probe_ms.load(Ordering::Relaxed);
    let refused = answers.iter().filter(|(s, ..)| *s == 429).count();
    println!(
        "24 parallel costly checks: peak RSS {peak} kB, worst probe latency {worst} ms, {refused} refused"
    );
    for (status, retry_after, answer) in &answers {
        match status {
            429 => {
                assert_eq!(answer["error_code"], 42950, "{answer}");
                assert!(retry_after.is_some(), "429 without Retry-After");
            }
            _ => assert_within_budget(*status, answer),
        }
    }
    assert!(refused > 0, "every check was admitted at once");
    assert!(peak < PEAK_RSS_BOUND_KB, "peak RSS {peak} kB");
    assert!(worst < 1_000, "a probe waited {worst} ms");
    let (status, _, _) = post(&client(Duration::from_secs(10)), &url, &old).expect("alive");
    assert!(status == 200 || status == 422, "{status}");
}

#[test]
fn sigterm_with_checks_running_exits_within_the_stated_time() {
    let _one = ONE_AT_A_TIME.lock().unwrap_or_else(|p| p.into_inner());
    let mut server =
        Limited::spawn(&["--check-time-ms", "60000", "--check-max-work", "1000000000"]);
    // Quick to parse, long to judge: the checks are being judged when the signal comes.
    let (old, new) = expanding_schemas(6);
    register(&server, "stopping", &old);
    let url = format!(
        "{}/compatibility/subjects/stopping/versions/latest",
        server.base
    );
    let _checks: Vec<_> = (0..2)
        .map(|_| {
            let (url, new) = (url.clone(), new.clone());
            std::thread::spawn(move || post(&client(Duration::from_secs(120)), &url, &new))
        })
        .collect();
    // Both checks are being judged, with a minute of budget left.
    std::thread::sleep(Duration::from_secs(3));
    server.serve.terminate();
    let signalled = Instant::now();
    let exited = loop {
        if !server.serve.is_running() {
            break signalled.elapsed();
        }
        assert!(
            signalled.elapsed() < Duration::from_secs(30),
            "still running 30 s after SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    println!("exited {exited:?} after SIGTERM with two checks running");
    assert!(exited < SHUTDOWN_BOUND, "exited only after {exited:?}");
}
