//! Governance inputs and answers are bounded by construction, against a running `covenant
//! serve` held to a 4 GB address space: oversized documents are refused naming the limit,
//! thousands of invented client ids leave `/metrics` small, list answers page, anonymous reads
//! with huge user agents grow the store by a bounded amount, and a stream of consumer writes
//! does not starve registrations of the store's writer.
//!
//! On SQLite always; the refusals also on PostgreSQL when `COVENANT_TEST_POSTGRES` is set.

use crate::support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::TestDb;

/// The address space the server runs in: far below what an unbounded input would take.
const ADDRESS_SPACE: u64 = 4_000_000_000;

/// A `covenant serve` under an address-space limit, in a folder of its own.
struct Server {
    serve: support::Confined,
    base: String,
    data: PathBuf,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Server {
    async fn start(store: Option<&str>) -> Server {
        let dir = tempfile::tempdir().expect("temp dir");
        let data = dir.path().join("data");
        let args: Vec<&str> = store.map(|url| vec!["--store", url]).unwrap_or_default();
        let serve =
            support::Confined::spawn(ADDRESS_SPACE, support::free_port(), &data, None, &args);
        let server = Server {
            base: serve.base.clone(),
            serve,
            data,
            http: covenant_exporter::client::client(),
            _dir: dir,
        };
        support::wait_ready(&server.http, &server.base).await;
        server
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        support::call(&self.http, &self.base, method, path, support::V1, body).await
    }

    fn peak_mib(&self) -> u64 {
        self.serve.peak_rss_mib()
    }

    /// Bytes of the embedded store's files (the database and its log).
    fn store_bytes(&self) -> u64 {
        dir_bytes(&self.data)
    }
}

fn dir_bytes(dir: &Path) -> u64 {
    std::fs::read_dir(dir)
        .map(|entries| {
            entries
                .flatten()
                .filter_map(|e| e.metadata().ok())
                .filter(|m| m.is_file())
                .map(|m| m.len())
                .sum()
        })
        .unwrap_or(0)
}

fn consumer(name: &str, clients: Vec<String>, reads: Vec<Value>) -> Value {
    json!({
        "name": name, "owner": "team", "purpose": "reports", "cadence": "daily",
        "criticality": "low", "contact": "#team", "clients": clients, "reads": reads,
    })
}

/// Asserts a refusal with `status` whose message names `limit`.
fn refused(answer: &(u16, Value), status: u16, limit: &str) {
    let (got, body) = answer;
    assert_eq!(*got, status, "{body}");
    let code = body["error_code"].as_u64().expect("error_code");
    assert_eq!(code / 100, u64::from(status), "{body}");
    let message = body["message"].as_str().expect("message");
    assert!(message.contains(limit), "'{message}' names no {limit}");
}

async fn oversized_documents_are_refused(server: &Server) {
    let fields: Vec<String> = (0..1_000_000).map(|i| format!("f{i}")).collect();
    let report = json!({"subject": "orders-value", "client_id": "c", "fields_read": fields});
    let answer = server
        .call("POST", "/covenant/v1/usage", Some(report))
        .await;
    refused(&answer, 422, "usage_report.fields_read");

    let long: Vec<String> = (0..2_000)
        .map(|i| format!("{i}{}", "p".repeat(200)))
        .collect();
    let report = json!({"subject": "orders-value", "client_id": "c", "fields_read": long});
    let answer = server
        .call("POST", "/covenant/v1/usage", Some(report))
        .await;
    refused(&answer, 413, "usage_report.bytes");

    let symbols: serde_json::Map<String, Value> =
        (0..300_000).map(|i| (format!("S{i}"), json!(1))).collect();
    let report = json!({"subject": "orders-value", "client_id": "c",
        "unknown_enum_values": {"status": symbols}});
    let answer = server
        .call("POST", "/covenant/v1/usage", Some(report))
        .await;
    refused(&answer, 422, "usage_report.unknown_enum_values");

    let versions: serde_json::Map<String, Value> =
        (0..500_000).map(|i| (i.to_string(), json!(1))).collect();
    let report =
        json!({"subject": "orders-value", "client_id": "c", "records_by_version": versions});
    let answer = server
        .call("POST", "/covenant/v1/usage", Some(report))
        .await;
    refused(&answer, 422, "usage_report.records_by_version");

    let million = vec![json!({"subject": "orders-value", "fields": fields})];
    let answer = server
        .call(
            "POST",
            "/covenant/v1/consumers",
            Some(consumer("wide", vec![], million)),
        )
        .await;
    refused(&answer, 422, "consumer.fields");

    let subjects: Vec<Value> = (0..100_000)
        .map(|i| json!({"subject": format!("s{i}")}))
        .collect();
    let answer = server
        .call(
            "POST",
            "/covenant/v1/consumers",
            Some(consumer("many", vec![], subjects)),
        )
        .await;
    refused(&answer, 422, "consumer.reads");

    let answer = server
        .call(
            "POST",
            "/covenant/v1/consumers",
            Some(consumer("long", vec!["x".repeat(4096)], vec![])),
        )
        .await;
    refused(&answer, 422, "identifier.length");

    let deprecation = json!({
        "target": {"kind": "field", "subject": "orders-value", "path": "legacy"},
        "contract": "x".repeat(100_000), "old_promise": "old", "new_promise": "new",
        "announced_by": "team",
    });
    let answer = server
        .call("POST", "/covenant/v1/deprecations", Some(deprecation))
        .await;
    refused(&answer, 422, "text.length");

    let deprecation = json!({
        "target": {"kind": "field", "subject": "orders-value", "path": "legacy"},
        "old_promise": "old", "new_promise": "new", "announced_by": "team",
    });
    let (status, created) = server
        .call("POST", "/covenant/v1/deprecations", Some(deprecation))
        .await;
    assert_eq!(status, 200, "{created}");
    let id = created["id"].as_i64().expect("deprecation id");
    let exception =
        json!({"approver": "cfo", "reason": "r".repeat(20_000), "overrides": "window_open"});
    let answer = server
        .call(
            "POST",
            &format!("/covenant/v1/deprecations/{id}/exceptions"),
            Some(exception),
        )
        .await;
    refused(&answer, 422, "text.length");
    let evidence = json!({"claim": "moved", "by": "team", "body": {
        "kind": "canary", "path": "eu", "outcome": "passed", "detail": "d".repeat(60_000)}});
    let answer = server
        .call(
            "POST",
            &format!("/covenant/v1/deprecations/{id}/evidence"),
            Some(evidence),
        )
        .await;
    refused(&answer, 422, "text.length");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn oversized_governance_documents_are_refused_with_the_named_limit() {
    let server = Server::start(None).await;
    oversized_documents_are_refused(&server).await;
    println!("peak RSS after the refusals: {} MiB", server.peak_mib());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn oversized_governance_documents_are_refused_on_postgres() {
    let Some(db) = TestDb::create("covenant_budget_gov").await else {
        eprintln!("skipped: {} is not set", support::POSTGRES_ENV);
        return;
    };
    {
        let server = Server::start(Some(&db.url)).await;
        oversized_documents_are_refused(&server).await;
    }
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn thousands_of_client_ids_leave_metrics_small_and_lists_paged() {
    let server = Server::start(None).await;
    let deprecation = json!({
        "target": {"kind": "field", "subject": "orders-value", "path": "legacy"},
        "old_promise": "old", "new_promise": "new", "announced_by": "team",
        "replacement": "modern",
    });
    let (status, answer) = server
        .call("POST", "/covenant/v1/deprecations", Some(deprecation))
        .await;
    assert_eq!(status, 200, "{answer}");
    // A 4 KB client id is refused; 3,000 distinct ones as long as identifiers may be are
    // accepted, and their label sets past each family's cap are counted under 'other'.
    let report = json!({"subject": "orders-value", "client_id": "c".repeat(4096)});
    let answer = server
        .call("POST", "/covenant/v1/usage", Some(report))
        .await;
    refused(&answer, 422, "identifier.length");
    let started = Instant::now();
    let mut tasks = Vec::new();
    for worker in 0..8 {
        let http = server.http.clone();
        let base = server.base.clone();
        tasks.push(tokio::spawn(async move {
            for n in (worker..3_000).step_by(8) {
                let client = format!("{n:05}-{}", "c".repeat(250));
                let report = json!({
                    "subject": "orders-value", "client_id": client,
                    "fields_read": ["legacy", format!("f{n}")],
                    "records_by_version": {(n + 1).to_string(): 1},
                    "unknown_enum_values": {format!("e{n}"): {format!("S{n}"): 1}},
                    "decode_failures": 1,
                });
                let (status, answer) = support::call(
                    &http,
                    &base,
                    "POST",
                    "/covenant/v1/usage",
                    support::V1,
                    Some(report),
                )
                .await;
                assert_eq!(status, 200, "{answer}");
            }
        }));
    }
    for t in tasks {
        t.await.expect("reporter");
    }
    println!(
        "3,000 usage reports with distinct 256-byte client ids in {:?}",
        started.elapsed()
    );

    let started = Instant::now();
    let metrics = server
        .http
        .get(format!("{}/metrics", server.base))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics text");
    let took = started.elapsed();
    println!(
        "/metrics: {} bytes in {took:?}; peak RSS {} MiB",
        metrics.len(),
        server.peak_mib()
    );
    assert!(
        metrics.len() < 4 * 1024 * 1024,
        "/metrics is {} bytes",
        metrics.len()
    );
    assert!(
        metrics.contains("consumer=\"other\""),
        "series past the cap are counted under 'other'"
    );
    assert!(
        metrics.lines().all(|l| l.len() < 2048),
        "a label value was not cut"
    );

    // Lists page: default 100 with the next offset, at most 1000, more refused.
    let (status, page) = server
        .call(
            "GET",
            "/covenant/v1/usage/readers?subject=orders-value",
            None,
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(page["usage"].as_array().expect("rows").len(), 100);
    assert_eq!(page["next"], json!(100));
    let (_, page) = server
        .call(
            "GET",
            "/covenant/v1/usage?subject=orders-value&limit=1000&offset=2500",
            None,
        )
        .await;
    let rows = page["usage"].as_array().expect("rows").len();
    assert_eq!(rows, 1000);
    let (status, answer) = server
        .call("GET", "/covenant/v1/usage?limit=100000", None)
        .await;
    refused(&(status, answer), 422, "limit");
    let started = Instant::now();
    let response = server
        .http
        .get(format!("{}/covenant/v1/usage", server.base))
        .send()
        .await
        .expect("usage");
    let bytes = response.bytes().await.expect("usage body").len();
    println!(
        "GET /covenant/v1/usage: {bytes} bytes in {:?}",
        started.elapsed()
    );
    assert!(bytes < 2 * 1024 * 1024, "a usage page is {bytes} bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn anonymous_reads_with_huge_user_agents_grow_the_store_boundedly() {
    let server = Server::start(None).await;
    let schema = json!({"type": "record", "name": "R", "fields": [{"name": "a", "type": "int"}]});
    let (status, answer) = server
        .call(
            "POST",
            "/subjects/reads-value/versions",
            Some(json!({"schema": schema.to_string()})),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    // Let the log settle before measuring.
    server
        .call("GET", "/covenant/v1/subjects/reads-value/readers", None)
        .await;
    let before = server.store_bytes();
    let started = Instant::now();
    let mut tasks = Vec::new();
    for worker in 0..8 {
        let http = server.http.clone();
        let url = format!("{}/subjects/reads-value/versions/1", server.base);
        tasks.push(tokio::spawn(async move {
            for n in (worker..20_000).step_by(8) {
                let agent = format!("agent-{n:05}-{}", "u".repeat(8 * 1024));
                let response = http
                    .get(&url)
                    .header("user-agent", agent)
                    .send()
                    .await
                    .expect("read");
                assert_eq!(response.status().as_u16(), 200);
            }
        }));
    }
    for t in tasks {
        t.await.expect("reader");
    }
    let (status, readers) = server
        .call(
            "GET",
            "/covenant/v1/subjects/reads-value/readers?limit=1000",
            None,
        )
        .await;
    assert_eq!(status, 200, "{readers}");
    let after = server.store_bytes();
    let grew = after.saturating_sub(before);
    println!(
        "20,000 anonymous reads with 8 KB user agents in {:?}: store grew {grew} bytes ({before} -> {after}); peak RSS {} MiB",
        started.elapsed(),
        server.peak_mib()
    );
    assert!(grew < 16 * 1024 * 1024, "store grew {grew} bytes");
    let rows = readers["readers"].as_array().expect("readers");
    assert!(
        rows.iter()
            .all(|r| r["reader"].as_str().unwrap_or("").len() <= 256)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn registrations_are_not_starved_by_consumer_writes() {
    let server = Server::start(None).await;
    let (status, answer) = server
        .call(
            "PUT",
            "/config/probe-value",
            Some(json!({"compatibility": "NONE"})),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let http = server.http.clone();
        let base = server.base.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut written = 0u64;
            let mut n = 0u64;
            while !stop.load(std::sync::atomic::Ordering::SeqCst) {
                let clients = (0..50).map(|c| format!("svc-{n}-{c}")).collect();
                let reads = (0..10)
                    .map(|s| {
                        json!({"subject": format!("topic-{s}-value"),
                            "fields": (0..20).map(|f| format!("field_{f}")).collect::<Vec<_>>()})
                    })
                    .collect();
                let (status, answer) = support::call(
                    &http,
                    &base,
                    "POST",
                    "/covenant/v1/consumers",
                    support::V1,
                    Some(consumer(&format!("consumer-{n}"), clients, reads)),
                )
                .await;
                assert_eq!(status, 200, "{answer}");
                written += 1;
                n += 1;
            }
            written
        })
    };
    let started = Instant::now();
    let mut worst = Duration::ZERO;
    let mut registrations = 0;
    let mut n = 0;
    while started.elapsed() < Duration::from_secs(20) {
        let schema = json!({"type": "record", "name": "P",
            "fields": [{"name": format!("f{n}"), "type": "int"}]});
        let sent = Instant::now();
        let (status, answer) = server
            .call(
                "POST",
                "/subjects/probe-value/versions",
                Some(json!({"schema": schema.to_string()})),
            )
            .await;
        let took = sent.elapsed();
        assert_eq!(status, 200, "{answer}");
        worst = worst.max(took);
        registrations += 1;
        n += 1;
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::SeqCst);
    let consumers = writer.await.expect("consumer writer");
    println!(
        "{registrations} probe registrations beside {consumers} consumer writes: worst {worst:?}; peak RSS {} MiB",
        server.peak_mib()
    );
    assert!(
        worst < Duration::from_secs(1),
        "worst registration {worst:?}"
    );
}
