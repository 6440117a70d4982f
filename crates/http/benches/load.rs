//! Load figures: requests per second for the hot routes against an in-process server on a
//! loopback port with a temp-dir SQLite store, from keep-alive clients.
//! Run with `cargo bench -p covenant-http --bench load`.

use covenant_http::{HttpConfig, router};
use covenant_registry::Registry;
use covenant_store::SqliteStore;
use serde_json::json;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

const CLIENTS: usize = 16;
const SECONDS: f64 = 3.0;
const V1: &str = "application/vnd.schemaregistry.v1+json";

#[derive(Clone, Copy)]
enum Call {
    Get(&'static str),
    Lookup,
    RegisterExisting,
    RegisterNew,
}

async fn run(http: &reqwest::Client, base: &str, call: Call) -> f64 {
    let counter = Arc::new(AtomicUsize::new(0));
    let errors = Arc::new(AtomicUsize::new(0));
    let start = Instant::now();
    let deadline = start + Duration::from_secs_f64(SECONDS);
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let http = http.clone();
        let base = base.to_string();
        let counter = counter.clone();
        let errors = errors.clone();
        tasks.push(tokio::spawn(async move {
            let mut n = 0usize;
            while Instant::now() < deadline {
                let request = match call {
                    Call::Get(path) => http.get(format!("{base}{path}")),
                    Call::Lookup => http
                        .post(format!("{base}/subjects/bench"))
                        .header("content-type", V1)
                        .body(json!({"schema": user_schema("Bench")}).to_string()),
                    Call::RegisterExisting => http
                        .post(format!("{base}/subjects/bench/versions"))
                        .header("content-type", V1)
                        .body(json!({"schema": user_schema("Bench")}).to_string()),
                    Call::RegisterNew => {
                        n += 1;
                        http.post(format!("{base}/subjects/bench-new/versions"))
                            .header("content-type", V1)
                            .body(json!({"schema": user_schema(&format!("N{c}x{n}"))}).to_string())
                    }
                };
                match request.send().await {
                    Ok(r) if r.status().is_success() => {
                        let _ = r.bytes().await;
                        counter.fetch_add(1, Ordering::Relaxed);
                    }
                    _ => {
                        errors.fetch_add(1, Ordering::Relaxed);
                    }
                }
            }
        }));
    }
    for t in tasks {
        let _ = t.await;
    }
    let elapsed = start.elapsed().as_secs_f64();
    let errors = errors.load(Ordering::Relaxed);
    if errors > 0 {
        eprintln!("  ({errors} failed requests)");
    }
    counter.load(Ordering::Relaxed) as f64 / elapsed
}

fn user_schema(name: &str) -> String {
    json!({"type": "record", "name": name, "namespace": "bench",
           "fields": [{"name": "id", "type": "long"}, {"name": "label", "type": "string"}]})
    .to_string()
}

fn main() {
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(r) => r,
        Err(e) => {
            eprintln!("runtime: {e}");
            return;
        }
    };
    runtime.block_on(async {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = SqliteStore::open(dir.path()).expect("store");
        let registry = Arc::new(Registry::new(Arc::new(store)));
        let app = router(registry, HttpConfig::default());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let base = format!("http://{}", listener.local_addr().expect("addr"));
        tokio::spawn(async move {
            let _ = axum::serve(listener, app).await;
        });
        let http = covenant_exporter::client::builder()
            .pool_max_idle_per_host(CLIENTS)
            .build()
            .expect("client");
        let seed = http
            .post(format!("{base}/subjects/bench/versions"))
            .header("content-type", V1)
            .body(json!({"schema": user_schema("Bench")}).to_string())
            .send()
            .await
            .expect("seed");
        assert!(seed.status().is_success(), "seed registration failed");
        let _ = http
            .put(format!("{base}/config/bench-new"))
            .header("content-type", V1)
            .body(r#"{"compatibility":"NONE"}"#)
            .send()
            .await;

        println!("load: {CLIENTS} keep-alive clients, {SECONDS}s per route");
        let trivial = run(&http, &base, Call::Get("/health/live")).await;
        println!("GET /health/live                  {trivial:>10.0} req/s");
        let by_id = run(&http, &base, Call::Get("/schemas/ids/1")).await;
        println!("GET /schemas/ids/1                {by_id:>10.0} req/s");
        let lookup = run(&http, &base, Call::Lookup).await;
        println!("POST /subjects/bench (lookup)     {lookup:>10.0} req/s");
        let existing = run(&http, &base, Call::RegisterExisting).await;
        println!("POST register (idempotent)        {existing:>10.0} req/s");
        let new = run(&http, &base, Call::RegisterNew).await;
        println!("POST register (new version)       {new:>10.0} req/s");
        println!(
            "ratio GET-by-id / trivial         {:>10.2}",
            by_id / trivial
        );
    });
}
