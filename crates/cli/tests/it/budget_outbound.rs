//! Bounds on what the server reads from the registries it exports to, and on what clients
//! can hold of it, against running `covenant serve` processes (under an address-space limit):
//! a destination with an endless reply, a web page, or a 12 MB error message leaves the
//! server small and its status short; an exporter to its own registry pauses and two
//! registries exporting to each other settle, so their audit trails stop growing; clients
//! that never read their answers neither keep others out nor hold up shutdown; a request
//! declaring a huge body is refused at once.

use crate::support;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};
use support::V1;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The address space the server runs in: far below what an unbounded read would take.
const ADDRESS_SPACE: u64 = 4_000_000_000;

/// A `covenant serve` under an address-space limit, its log in a file.
struct Server {
    serve: support::Confined,
    port: u16,
    base: String,
    log: PathBuf,
    http: reqwest::Client,
}

impl Server {
    async fn start(dir: &Path, name: &str, args: &[&str]) -> Server {
        Server::start_on(support::free_port(), dir, name, args).await
    }

    async fn start_on(port: u16, dir: &Path, name: &str, args: &[&str]) -> Server {
        let log = dir.join(format!("{name}.log"));
        let serve =
            support::Confined::spawn(ADDRESS_SPACE, port, &dir.join(name), Some(&log), args);
        let server = Server {
            port,
            base: serve.base.clone(),
            serve,
            log,
            http: covenant_exporter::client::client(),
        };
        support::wait_ready(&server.http, &server.base).await;
        server
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        support::call(&self.http, &self.base, method, path, V1, body).await
    }

    fn peak_rss_mib(&self) -> u64 {
        self.serve.peak_rss_mib()
    }

    fn log_bytes(&self) -> u64 {
        std::fs::metadata(&self.log).map_or(0, |m| m.len())
    }

    fn is_running(&mut self) -> bool {
        self.serve.is_running()
    }

    async fn register(&self, subject: &str, schema: &str) {
        let (status, answer) = self
            .call(
                "POST",
                &format!("/subjects/{subject}/versions"),
                Some(json!({"schema": schema})),
            )
            .await;
        assert_eq!(status, 200, "{subject}: {answer}");
    }

    async fn export_to(&self, name: &str, url: &str) {
        let body = json!({
            "name": name,
            "contextType": "NONE",
            "subjects": ["*"],
            "config": {"schema.registry.url": url},
        });
        let (status, answer) = self.call("POST", "/exporters", Some(body)).await;
        assert_eq!(status, 200, "{answer}");
    }

    async fn status(&self, name: &str) -> (Value, usize) {
        let response = self
            .http
            .get(format!("{}/exporters/{name}/status", self.base))
            .send()
            .await
            .expect("status");
        let text = response.text().await.expect("status body");
        (
            serde_json::from_str(&text).unwrap_or(Value::String(text.clone())),
            text.len(),
        )
    }

    /// Waits until `done` holds of the exporter's status.
    async fn wait_status(&self, name: &str, done: impl Fn(&Value) -> bool) -> (Value, usize) {
        let started = Instant::now();
        loop {
            let (status, size) = self.status(name).await;
            if done(&status) {
                return (status, size);
            }
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "{name}: status {status}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Entries in the audit trail.
    async fn audit_entries(&self) -> usize {
        let mut count = 0;
        let mut after = 0;
        loop {
            let (status, page) = self
                .call(
                    "GET",
                    &format!("/covenant/v1/audit?limit=500&after={after}"),
                    None,
                )
                .await;
            assert_eq!(status, 200, "{page}");
            count += page["entries"].as_array().map_or(0, Vec::len);
            match page["next"].as_i64() {
                Some(next) => after = next,
                None => return count,
            }
        }
    }

    /// Audit entries written over `window`, once the exporters had `settle` to settle.
    async fn audit_growth(&self, settle: Duration, window: Duration) -> usize {
        tokio::time::sleep(settle).await;
        let before = self.audit_entries().await;
        tokio::time::sleep(window).await;
        self.audit_entries().await - before
    }

    fn terminate(&self) {
        self.serve.terminate();
    }
}

fn record(name: &str) -> String {
    json!({"type": "record", "name": name, "fields": [{"name": "id", "type": "string"}]})
        .to_string()
}

/// A stand-in destination: reads each request head, then calls `answer` with the socket.
async fn fake_destination<F, Fut>(answer: F) -> u16
where
    F: Fn(tokio::net::TcpStream) -> Fut + Send + Sync + 'static,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    let answer = std::sync::Arc::new(answer);
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let answer = answer.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                answer(socket).await;
            });
        }
    });
    port
}

/// A destination answering `status` with `content_type` and `body` to every request.
async fn answering(status: &'static str, content_type: &'static str, body: String) -> u16 {
    let body = std::sync::Arc::new(body);
    fake_destination(move |mut socket| {
        let body = body.clone();
        async move {
            let head = format!(
                "HTTP/1.1 {status}\r\ncontent-type: {content_type}\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
                body.len()
            );
            let _ = socket.write_all(head.as_bytes()).await;
            let _ = socket.write_all(body.as_bytes()).await;
            let _ = socket.shutdown().await;
        }
    })
    .await
}

fn traced(status: &Value) -> bool {
    status["trace"].as_str().is_some_and(|t| !t.is_empty())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_endless_reply_is_cut_at_the_limit() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(dir.path(), "a", &[]).await;
    server.register("orders", &record("Order")).await;
    let endless = fake_destination(|mut socket| async move {
        let head =
            "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nconnection: close\r\n\r\n[";
        if socket.write_all(head.as_bytes()).await.is_err() {
            return;
        }
        let chunk = "1,".repeat(32 * 1024);
        while socket.write_all(chunk.as_bytes()).await.is_ok() {}
    })
    .await;
    server
        .export_to("endless", &format!("http://127.0.0.1:{endless}"))
        .await;
    let (status, size) = server.wait_status("endless", traced).await;
    // Retried a few times over five seconds: each reply cut at the limit again.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let peak = server.peak_rss_mib();
    println!("endless destination: peak RSS {peak} MiB, status {size} bytes: {status}");
    let trace = status["trace"].as_str().unwrap_or_default();
    assert!(
        trace.contains("more than 1048576 bytes"),
        "the limit is named: {trace}"
    );
    assert!(size < 1024, "{size}");
    assert!(peak < 400, "peak RSS {peak} MiB");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_web_page_is_an_error_not_a_success() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(dir.path(), "a", &[]).await;
    server.register("orders", &record("Order")).await;
    let page = answering(
        "200 OK",
        "text/html; charset=utf-8",
        "<!doctype html><html><body>Welcome</body></html>".to_string(),
    )
    .await;
    // The same page without a content type that says so.
    let plain = answering(
        "200 OK",
        "application/json",
        "<html>not json</html>".to_string(),
    )
    .await;
    server
        .export_to("page", &format!("http://127.0.0.1:{page}"))
        .await;
    server
        .export_to("plain", &format!("http://127.0.0.1:{plain}"))
        .await;
    let (status, _) = server.wait_status("page", traced).await;
    println!("HTML destination: {status}");
    let trace = status["trace"].as_str().unwrap_or_default();
    assert!(trace.contains("an HTML page"), "{trace}");
    assert!(!trace.contains("Welcome"), "{trace}");
    let (status, _) = server.wait_status("plain", traced).await;
    println!("non-JSON destination: {status}");
    assert!(
        status["trace"]
            .as_str()
            .is_some_and(|t| t.contains("not a schema registry's JSON")),
        "{status}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_huge_error_message_stays_out_of_status_and_log() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(dir.path(), "a", &[]).await;
    server.register("orders", &record("Order")).await;
    let message = "m".repeat(12 * 1024 * 1024);
    let failing = answering(
        "500 Internal Server Error",
        "application/json",
        json!({"error_code": 50001, "message": message}).to_string(),
    )
    .await;
    server
        .export_to("loud", &format!("http://127.0.0.1:{failing}"))
        .await;
    let (status, size) = server.wait_status("loud", traced).await;
    // Retries keep failing; the log grows by one short line each.
    tokio::time::sleep(Duration::from_secs(5)).await;
    let (_, later) = server.status("loud").await;
    let log = server.log_bytes();
    println!("12 MB error message: status {size} then {later} bytes, log {log} bytes: {status}");
    assert!(
        status["trace"]
            .as_str()
            .is_some_and(|t| t.contains("HTTP 500"))
    );
    assert!(size < 1024 && later < 1024, "{size} {later}");
    assert!(log < 64 * 1024, "log {log} bytes");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exporter_to_its_own_registry_pauses_and_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(dir.path(), "a", &[]).await;
    server.register("orders", &record("Order")).await;
    let (status, answer) = server
        .call(
            "PUT",
            "/config/orders",
            Some(json!({"compatibility": "FULL"})),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    // By another name than its listen address: recognized by its identity.
    let url = format!("http://localhost:{}", server.port);
    server.export_to("to-self", &url).await;
    let (status, _) = server
        .wait_status("to-self", |s| s["state"] == "PAUSED")
        .await;
    println!("exporter to itself: {status}");
    assert!(
        status["trace"]
            .as_str()
            .is_some_and(|t| t.contains("this registry itself")),
        "{status}"
    );
    let growth = server
        .audit_growth(Duration::from_secs(1), Duration::from_secs(5))
        .await;
    println!("exporter to itself: {growth} audit entries in 5 s");
    assert_eq!(growth, 0);
    let (_, config) = server.call("GET", "/config/orders", None).await;
    assert_eq!(config["compatibilityLevel"], "FULL", "{config}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_registries_exporting_to_each_other_settle() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = Server::start(dir.path(), "a", &[]).await;
    let b = Server::start(dir.path(), "b", &[]).await;
    // Registered on A only: ids are the registry's, two registries would hand out the same.
    a.register("orders", &record("Order")).await;
    a.register("users", &record("User")).await;
    for (server, subject, level) in [(&a, "orders", "FULL"), (&a, "users", "BACKWARD")] {
        let (status, answer) = server
            .call(
                "PUT",
                &format!("/config/{subject}"),
                Some(json!({"compatibility": level})),
            )
            .await;
        assert_eq!(status, 200, "{answer}");
    }
    a.export_to("to-b", &b.base).await;
    b.export_to("to-a", &a.base).await;
    let settled = |s: &Value| s["state"] == "RUNNING" && s["lag"] == 0 && s["trace"] == "";
    let (to_b, _) = a.wait_status("to-b", settled).await;
    let (to_a, _) = b.wait_status("to-a", settled).await;
    println!("settled: {to_b} {to_a}");
    let (ga, gb) = tokio::join!(
        a.audit_growth(Duration::from_secs(3), Duration::from_secs(5)),
        b.audit_growth(Duration::from_secs(3), Duration::from_secs(5)),
    );
    println!("two-way exporters: audit growth over 5 s: A {ga}, B {gb}");
    assert_eq!((ga, gb), (0, 0));
    for server in [&a, &b] {
        let (_, orders) = server.call("GET", "/config/orders", None).await;
        let (_, users) = server.call("GET", "/config/users", None).await;
        assert_eq!(orders["compatibilityLevel"], "FULL", "{orders}");
        assert_eq!(users["compatibilityLevel"], "BACKWARD", "{users}");
    }
    // A change on B crosses back once and the trails are quiet again.
    let (status, _) = b
        .call(
            "PUT",
            "/config/orders",
            Some(json!({"compatibility": "NONE"})),
        )
        .await;
    assert_eq!(status, 200);
    let (ga, gb) = tokio::join!(
        a.audit_growth(Duration::from_secs(4), Duration::from_secs(5)),
        b.audit_growth(Duration::from_secs(4), Duration::from_secs(5)),
    );
    println!("after a config change: audit growth over 5 s: A {ga}, B {gb}");
    assert_eq!((ga, gb), (0, 0));
    let (_, orders) = a.call("GET", "/config/orders", None).await;
    assert_eq!(orders["compatibilityLevel"], "NONE", "{orders}");
}

/// A schema whose answer is a few kilobytes.
fn wide_schema() -> String {
    let fields: Vec<Value> = (0..80)
        .map(|i| json!({"name": format!("field_number_{i}"), "type": "string", "default": ""}))
        .collect();
    json!({"type": "record", "name": "Wide", "fields": fields}).to_string()
}

/// Clients that send `requests` pipelined GETs with a 2 KB receive buffer and never read.
async fn slow_readers(port: u16, clients: usize, requests: usize) -> Vec<tokio::net::TcpStream> {
    let request = format!(
        "GET /subjects/wide/versions/1 HTTP/1.1\r\nhost: 127.0.0.1:{port}\r\naccept: {V1}\r\n\r\n"
    );
    let burst = request.repeat(requests);
    let mut held = Vec::new();
    for _ in 0..clients {
        let socket = tokio::net::TcpSocket::new_v4().expect("socket");
        socket.set_recv_buffer_size(2048).expect("receive buffer");
        let mut stream = socket
            .connect(([127, 0, 0, 1], port).into())
            .await
            .expect("connect");
        // The server stops reading once its answers back up: send what fits.
        let _ = tokio::time::timeout(
            Duration::from_millis(20),
            stream.write_all(burst.as_bytes()),
        )
        .await;
        held.push(stream);
    }
    held
}

/// Status and seconds of one GET on a fresh connection.
async fn probe(http: &reqwest::Client, base: &str) -> (Option<u16>, f64) {
    let started = Instant::now();
    let status = http
        .get(format!("{base}/subjects"))
        .timeout(Duration::from_secs(10))
        .send()
        .await
        .ok()
        .map(|r| r.status().as_u16());
    (status, started.elapsed().as_secs_f64())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn clients_that_never_read_keep_no_one_out_and_do_not_hold_shutdown() {
    let dir = tempfile::tempdir().expect("tempdir");
    // Writes never time out here: the slow readers are still there at shutdown.
    let mut server = Server::start(
        dir.path(),
        "a",
        &[
            "--write-timeout-secs",
            "600",
            "--shutdown-timeout-secs",
            "3",
        ],
    )
    .await;
    server.register("wide", &wide_schema()).await;
    let held = slow_readers(server.port, 250, 400).await;
    // A fresh client for every probe: each one a new connection.
    // What the server was sent is rendered by now; from here on it should idle.
    tokio::time::sleep(Duration::from_secs(1)).await;
    let cpu_before = support::cpu_seconds(server.serve.pid());
    let mut worst = 0f64;
    let started = Instant::now();
    let mut probes = 0;
    while started.elapsed() < Duration::from_secs(5) {
        let http = covenant_exporter::client::client();
        let (status, seconds) = probe(&http, &server.base).await;
        assert_eq!(status, Some(200), "probe {probes}");
        worst = worst.max(seconds);
        probes += 1;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let cpu = support::cpu_seconds(server.serve.pid()) - cpu_before;
    println!(
        "250 slow readers: {probes} probes, worst latency {:.0} ms, peak RSS {} MiB, \
         {cpu:.2} processor seconds in {:.1} s",
        worst * 1000.0,
        server.peak_rss_mib(),
        started.elapsed().as_secs_f64()
    );
    // Rendering answers for clients that read none would keep a processor busy.
    assert!(
        cpu < 1.0,
        "{cpu:.2} processor seconds while only probes were served"
    );
    // The kernel holds a little of each slow reader's answers (`UNSENT_BACKLOG`) and the
    // server renders no more for them, so the probes meet an idle server.
    assert!(worst < 1.0, "worst probe {worst:.3} s");
    let stopping = Instant::now();
    server.terminate();
    while server.is_running() {
        assert!(
            stopping.elapsed() < Duration::from_secs(6),
            "still running {:?} after SIGTERM",
            stopping.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let took = stopping.elapsed();
    println!("SIGTERM with 250 slow readers: exited after {took:?} (drain 3 s)");
    assert!(took < Duration::from_secs(5), "{took:?}");
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_write_timeout_frees_connections_held_by_clients_that_never_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(
        dir.path(),
        "a",
        &["--write-timeout-secs", "2", "--max-connections", "40"],
    )
    .await;
    server.register("wide", &wide_schema()).await;
    // More than the cap: every slot is taken by a client that never reads.
    let held = slow_readers(server.port, 60, 400).await;
    let started = Instant::now();
    let mut refused = 0;
    loop {
        let http = covenant_exporter::client::client();
        match probe(&http, &server.base).await {
            (Some(200), _) => break,
            _ => refused += 1,
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "no slot freed within {:?}",
            started.elapsed()
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    println!(
        "slots at the cap freed after {:?} ({refused} probes refused before)",
        started.elapsed()
    );
    assert!(refused > 0, "the slow readers held every slot at first");
    drop(held);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_huge_body_is_refused_at_once() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Server::start(dir.path(), "a", &["--max-body-bytes", "1048576"]).await;
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", server.port))
        .await
        .expect("connect");
    let started = Instant::now();
    let request = format!(
        "POST /subjects/huge/versions HTTP/1.1\r\nhost: 127.0.0.1:{}\r\ncontent-type: {V1}\r\ncontent-length: 1000000000\r\n\r\n0123456789",
        server.port
    );
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    let read = tokio::time::timeout(Duration::from_secs(1), async {
        loop {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => answer.extend_from_slice(&buf[..n]),
            }
            if answer.windows(4).any(|w| w == b"\r\n\r\n") && answer.ends_with(b"}") {
                break;
            }
        }
    })
    .await;
    let took = started.elapsed();
    let answer = String::from_utf8_lossy(&answer);
    println!("1 GB Content-Length: answered in {took:?}: {answer}");
    assert!(read.is_ok(), "no answer within 1 s");
    assert!(answer.starts_with("HTTP/1.1 413"), "{answer}");
    assert!(answer.contains("\"error_code\":413"), "{answer}");
    assert!(answer.contains("1048576"), "the limit is named: {answer}");
}
