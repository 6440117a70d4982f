//! Hostile clients against a running `covenant serve`: slow headers, half-sent bodies, a
//! thousand idle connections, oversized and malformed bodies, invalid UTF-8, odd subject
//! names, huge numbers and schemas built to blow up recursion, time or memory. Throughout,
//! a probe client registers to and reads from another subject; the suite asserts that the
//! server never answers 5xx, never dies, answers the probe promptly and stays under
//! [`RSS_BOUND_MIB`] of resident memory, and prints a summary line of what it sent.

use crate::support;

use serde_json::{Value, json};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{Serve, V1};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

/// The resident memory the server must stay under (documented in the README).
const RSS_BOUND_MIB: u64 = 1024;
/// The slowest a probe answer may be while the server is under attack.
const PROBE_BOUND: Duration = Duration::from_secs(5);
const HEADER_TIMEOUT_SECS: u64 = 2;
const BODY_TIMEOUT_SECS: u64 = 3;
const MAX_BODY_BYTES: usize = 4 * 1024 * 1024;

/// What the hostile clients saw.
#[derive(Default)]
struct Seen {
    sent: AtomicU64,
    server_errors: Mutex<Vec<String>>,
}

impl Seen {
    fn answer(&self, what: &str, status: u16, body: &str) {
        self.sent.fetch_add(1, Ordering::Relaxed);
        if status >= 500 {
            let body: String = body.chars().take(300).collect();
            self.server_errors
                .lock()
                .expect("seen")
                .push(format!("{what}: {status} {body}"));
        }
    }
}

/// Reads the server's resident set size in MiB from `/proc`.
fn rss_mib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib / 1024)
}

/// The probe: registers a fresh version to its own subject and reads it back, over and over.
struct Probe {
    stop: AtomicBool,
    max_latency_ms: AtomicU64,
    peak_rss_mib: AtomicU64,
    rounds: AtomicU64,
    failures: Mutex<Vec<String>>,
}

async fn probe(base: String, pid: u32, probe: Arc<Probe>) {
    let http = covenant_exporter::client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("client");
    let config = http
        .put(format!("{base}/config/probe"))
        .json(&json!({"compatibility": "NONE"}))
        .send()
        .await;
    assert!(config.is_ok_and(|r| r.status().is_success()));
    let mut n = 0u64;
    while !probe.stop.load(Ordering::Relaxed) {
        n += 1;
        let schema = json!({"type": "record", "name": format!("P{n}"), "fields": [
            {"name": "a", "type": "int"}]});
        let started = Instant::now();
        let registered = http
            .post(format!("{base}/subjects/probe/versions"))
            .header("content-type", V1)
            .json(&json!({"schema": schema.to_string()}))
            .send()
            .await;
        let read = http
            .get(format!("{base}/subjects/probe/versions/latest"))
            .send()
            .await;
        let took = started.elapsed();
        probe.max_latency_ms.fetch_max(
            u64::try_from(took.as_millis()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        match (registered, read) {
            (Ok(a), Ok(b)) if a.status() == 200 && b.status() == 200 => {}
            (a, b) => probe.failures.lock().expect("probe").push(format!(
                "round {n}: register {:?}, read {:?}",
                a.map(|r| r.status()),
                b.map(|r| r.status())
            )),
        }
        if let Some(rss) = rss_mib(pid) {
            probe.peak_rss_mib.fetch_max(rss, Ordering::Relaxed);
        }
        probe.rounds.fetch_add(1, Ordering::Relaxed);
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Sends raw bytes and returns what the server answered before closing or `within` elapsed,
/// and whether it closed the connection.
async fn raw(port: u16, bytes: &[u8], within: Duration) -> (String, bool) {
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    stream.write_all(bytes).await.expect("write");
    let mut answer = Vec::new();
    let mut buf = [0u8; 4096];
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.saturating_duration_since(Instant::now());
        match tokio::time::timeout(left, stream.read(&mut buf)).await {
            Ok(Ok(0)) | Ok(Err(_)) => return (String::from_utf8_lossy(&answer).into(), true),
            Ok(Ok(n)) => answer.extend_from_slice(&buf[..n]),
            Err(_) => return (String::from_utf8_lossy(&answer).into(), false),
        }
    }
}

/// The status code of a raw HTTP answer (0 when there was none).
fn status_of(answer: &str) -> u16 {
    answer
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(0)
}

/// Holds connections that send a request head one byte at a time; all must be closed by the
/// server within the header timeout (plus slack).
async fn slow_headers(port: u16, count: usize, seen: &Seen) -> usize {
    let head = b"GET /subjects HTTP/1.1\r\nHost: x\r\nX-Slow: 1\r\n\r\n";
    let mut tasks = Vec::new();
    for _ in 0..count {
        tasks.push(tokio::spawn(async move {
            let Ok(mut s) = TcpStream::connect(("127.0.0.1", port)).await else {
                return false;
            };
            for byte in head {
                if s.write_all(&[*byte]).await.is_err() {
                    return true;
                }
                tokio::time::sleep(Duration::from_millis(500)).await;
            }
            false
        }));
    }
    let mut closed = 0;
    for t in tasks {
        closed += usize::from(t.await.unwrap_or(false));
        seen.sent.fetch_add(1, Ordering::Relaxed);
    }
    closed
}

/// Connections that promise 100 bytes of body and send 10; each must get an answer or be
/// closed within the body timeout (plus slack).
async fn half_bodies(port: u16, count: usize, seen: &Arc<Seen>) -> usize {
    let request = b"POST /subjects/half/versions HTTP/1.1\r\nHost: x\r\n\
        Content-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"schema\":";
    let within = Duration::from_secs(BODY_TIMEOUT_SECS + 5);
    let mut tasks = Vec::new();
    for _ in 0..count {
        let seen = seen.clone();
        tasks.push(tokio::spawn(async move {
            let (answer, closed) = raw(port, request, within).await;
            seen.answer("half body", status_of(&answer), &answer);
            closed
        }));
    }
    let mut closed = 0;
    for t in tasks {
        closed += usize::from(t.await.unwrap_or(false));
    }
    closed
}

/// Opens `count` connections that never send anything; returns how many the server closed
/// within the header timeout (plus slack).
async fn idle_connections(port: u16, count: usize, seen: &Seen) -> usize {
    let mut streams = Vec::new();
    for _ in 0..count {
        if let Ok(s) = TcpStream::connect(("127.0.0.1", port)).await {
            streams.push(s);
        }
    }
    seen.sent.fetch_add(count as u64, Ordering::Relaxed);
    let within = Duration::from_secs(HEADER_TIMEOUT_SECS + 5);
    let mut tasks = Vec::new();
    for mut s in streams {
        tasks.push(tokio::spawn(async move {
            let mut buf = [0u8; 64];
            matches!(
                tokio::time::timeout(within, s.read(&mut buf)).await,
                Ok(Ok(0) | Err(_))
            )
        }));
    }
    let mut closed = 0;
    for t in tasks {
        closed += usize::from(t.await.unwrap_or(false));
    }
    closed
}

/// Raw requests whose bytes no HTTP client library would send.
async fn raw_oddities(port: u16, seen: &Seen) {
    let body = b"{\"schema\": \"\xff\xfe\"}";
    let mut invalid_body = format!(
        "POST /subjects/utf/versions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n\
         Content-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    invalid_body.extend_from_slice(body);
    let cases: Vec<(&str, Vec<u8>)> = vec![
        (
            "invalid UTF-8 path",
            b"GET /subjects/\xff\xfe/versions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                .to_vec(),
        ),
        (
            "percent-encoded invalid UTF-8 path",
            b"GET /subjects/%ff%fe/versions HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
                .to_vec(),
        ),
        ("invalid UTF-8 body", invalid_body),
        (
            "garbage request line",
            b"\x00\x01\x02 / HTTP/9.9\r\n\r\n".to_vec(),
        ),
        (
            "header without colon",
            b"GET / HTTP/1.1\r\nHost x\r\nConnection: close\r\n\r\n".to_vec(),
        ),
        (
            "huge Content-Length",
            b"POST /subjects/x/versions HTTP/1.1\r\nHost: x\r\nContent-Length: 99999999999999999999\r\n\r\n"
                .to_vec(),
        ),
    ];
    for (what, bytes) in cases {
        let (answer, _) = raw(port, &bytes, Duration::from_secs(10)).await;
        seen.answer(what, status_of(&answer), &answer);
    }
}

/// Requests a normal client could send: odd names, huge numbers, malformed JSON, big bodies.
async fn odd_requests(http: &reqwest::Client, base: &str, seen: &Seen) {
    let long = "s".repeat(20_000);
    let paths = [
        format!("/subjects/{long}/versions"),
        "/subjects/%00/versions".into(),
        "/subjects/a%0Ab/versions".into(),
        "/subjects/..%2F..%2Fetc/versions".into(),
        "/subjects/%E2%98%83%F0%9F%92%A9/versions".into(),
        "/subjects/%20/versions".into(),
        "/schemas/ids/99999999999999999999".into(),
        "/schemas/ids/-1".into(),
        "/schemas/ids/1e400".into(),
        "/subjects/x/versions/99999999999999999999".into(),
        "/subjects/x/versions/-99999999999999999999".into(),
        "/subjects/x/versions/2147483648".into(),
        "/subjects?offset=-5&limit=99999999999999999999".into(),
        "/schemas?offset=99999999999999999999".into(),
        format!("/schemas/guids/{long}"),
        "/schemas/guids/%00".into(),
        "/schemas/guids/00000000-0000-0000-0000-00000000000g/ids".into(),
        "/covenant/v1/subjects/x/profiles/99999999999999999999".into(),
        "/covenant/v1/subjects/x/profiles/trend?path=%00".into(),
        "/covenant/v1/subjects/x/profiles/findings?removeShare=1e400".into(),
        "/contexts/%00".into(),
        "/contexts/a:b/subjects".into(),
        format!("/contexts/{long}"),
        format!("/contexts/.{long}/subjects/x/versions"),
        "/contexts/.x/schemas/ids/99999999999999999999".into(),
        "/contexts/.x/config/%00".into(),
        "/schemas/ids/1?subject=:.%00:".into(),
        "/subjects?subjectPrefix=:*:%00".into(),
        "/exporters/%00".into(),
        format!("/exporters/{long}/status"),
        "/exporters/..%2F..%2Fetc/config".into(),
        "/dek-registry/v1/keks/%00".into(),
        format!("/dek-registry/v1/keks/{long}/deks/x/versions/1"),
        "/dek-registry/v1/keks/k/deks/%00/versions/99999999999999999999".into(),
        "/dek-registry/v1/keks/k/deks/x/versions/-99999999999999999999?algorithm=%00".into(),
        "/dek-registry/v1/keks/..%2F..%2Fetc/deks?deleted=%00".into(),
        format!("/dek-registry/v1/keks/k/deks/{long}"),
    ];
    for path in &paths {
        for method in [
            reqwest::Method::GET,
            reqwest::Method::POST,
            reqwest::Method::DELETE,
        ] {
            let mut request = http.request(method.clone(), format!("{base}{path}"));
            if method == reqwest::Method::POST {
                request = request
                    .header("content-type", V1)
                    .body(r#"{"schema":"\"string\""}"#);
            }
            send(request, &format!("{method} {path:.60}"), seen).await;
        }
    }
    let bodies: Vec<(&str, String)> = vec![
        ("truncated JSON", r#"{"schema": "{\"type\": "#.into()),
        ("array instead of object", "[1,2,3]".into()),
        ("schema of wrong type", r#"{"schema": 42}"#.into()),
        (
            "huge version",
            r#"{"schema":"\"int\"","version":99999999999999999999}"#.into(),
        ),
        ("huge id", r#"{"schema":"\"int\"","id":1e400}"#.into()),
        ("negative id", r#"{"schema":"\"int\"","id":-7}"#.into()),
        (
            "deeply nested JSON",
            format!("{}{}", "[".repeat(100_000), "]".repeat(100_000)),
        ),
        (
            "deeply nested schema text",
            json!({"schema": format!("{}{}", "[".repeat(50_000), "]".repeat(50_000))}).to_string(),
        ),
        (
            "oversized body",
            format!(r#"{{"schema":"{}"}}"#, "x".repeat(MAX_BODY_BYTES + 1)),
        ),
        ("empty body", String::new()),
    ];
    for (what, body) in bodies {
        for path in [
            "/subjects/odd/versions",
            "/compatibility/subjects/odd/versions/latest",
        ] {
            let request = http
                .post(format!("{base}{path}"))
                .header("content-type", V1)
                .body(body.clone());
            send(request, what, seen).await;
        }
    }
}

async fn send(request: reqwest::RequestBuilder, what: &str, seen: &Seen) -> u16 {
    match request.send().await {
        Ok(r) => {
            let status = r.status().as_u16();
            let text = r.text().await.unwrap_or_default();
            seen.answer(what, status, &text);
            status
        }
        Err(e) => {
            seen.answer(what, 599, &format!("no answer: {e}"));
            599
        }
    }
}

/// Schema texts built to blow up recursion, time or memory, as (name, type, v1, v2): v2 is
/// registered after v1, so that it is checked against it.
fn hostile_schemas() -> Vec<(&'static str, &'static str, String, String)> {
    let mut all = Vec::new();
    let recursive = json!({"type": "object", "properties": {
        "children": {"type": "array", "items": {"$ref": "#"}}}});
    let mut recursive2 = recursive.clone();
    recursive2["properties"]["name"] = json!({"type": "string"});
    all.push((
        "recursive JSON Schema",
        "JSON",
        recursive.to_string(),
        recursive2.to_string(),
    ));

    let mut definitions = serde_json::Map::new();
    definitions.insert("d0".into(), json!({"type": "string"}));
    for i in 1..600 {
        definitions.insert(
            format!("d{i}"),
            json!({"type": "array", "items": {"$ref": format!("#/definitions/d{}", i - 1)}}),
        );
    }
    let chain = json!({"definitions": definitions, "$ref": "#/definitions/d599"});
    let mut chain2 = chain.clone();
    chain2["description"] = json!("v2");
    all.push((
        "600-deep $ref chain",
        "JSON",
        chain.to_string(),
        chain2.to_string(),
    ));

    let nested = format!("{}{}", "o { ".repeat(1000), "} ".repeat(1000));
    let proto = |extra: &str| {
        format!(
            "syntax = \"proto3\";\nimport \"google/protobuf/descriptor.proto\";\n\
             message O {{ O o = 1; }}\n\
             extend google.protobuf.MessageOptions {{ O opt = 50001; }}\n\
             message M {{ option (opt) = {{ {nested} }}; string a = 1; {extra} }}\n"
        )
    };
    all.push((
        "Protobuf option nested 1,000 deep",
        "PROTOBUF",
        proto(""),
        proto("string b = 2;"),
    ));

    // 20,000 errors in one file: the pool once searched every location for each of them.
    let unknown = |n: usize| {
        let fields: String = (0..n)
            .map(|i| format!("Nope{i} f{i} = {};\n", i + 1))
            .collect();
        format!("syntax = \"proto3\";\nmessage M {{\n{fields}}}\n")
    };
    all.push((
        "Protobuf with 20,000 undefined types",
        "PROTOBUF",
        unknown(20_000),
        unknown(20_001),
    ));

    let union = |n: usize| {
        let mut records = vec![json!({"type": "record", "name": "U0", "fields": [
            {"name": "a", "type": "int"}]})];
        for i in 1..n {
            records.push(
                json!({"type": "record", "name": format!("U{i}"), "fields": [
                {"name": "p", "type": format!("U{}", i - 1)}]}),
            );
        }
        Value::Array(records).to_string()
    };
    all.push((
        "Avro union of 300 chained records",
        "AVRO",
        union(300),
        union(301),
    ));

    let any_of = |n: usize| {
        let branches: Vec<Value> = (0..n)
            .map(|i| json!({"type": "object", "properties": {format!("f{i}"): {"type": "string"}}}))
            .collect();
        json!({"anyOf": branches}).to_string()
    };
    all.push((
        "anyOf of 2,000 branches + 1",
        "JSON",
        any_of(2000),
        any_of(2001),
    ));

    let named = |n: usize| {
        let fields: Vec<Value> = (0..n)
            .map(|i| {
                json!({"name": format!("f{i}"), "type": {"type": "record", "name": format!("N{i}"),
                "fields": [{"name": "a", "type": "int"}]}})
            })
            .collect();
        json!({"type": "record", "name": "Many", "fields": fields}).to_string()
    };
    all.push(("10,000 named records", "AVRO", named(10_000), named(10_001)));

    let symbols = |n: usize| {
        let symbols: Vec<String> = (0..n).map(|i| format!("S{i}")).collect();
        json!({"type": "record", "name": "E", "fields": [
            {"name": "e", "type": {"type": "enum", "name": "Sym", "symbols": symbols}}]})
        .to_string()
    };
    all.push((
        "100k-symbol enum",
        "AVRO",
        symbols(100_000),
        symbols(100_001),
    ));

    let big = |extra: usize| {
        let doc = "d".repeat(40);
        let fields: Vec<Value> = (0..25_000 + extra)
            .map(|i| json!({"name": format!("field_{i:06}"), "type": "string", "default": "", "doc": doc}))
            .collect();
        json!({"type": "record", "name": "Big", "fields": fields}).to_string()
    };
    all.push(("2 MB schema", "AVRO", big(0), big(1)));
    all
}

/// Registers, checks and looks up each hostile schema; returns the slowest answer.
async fn hostile_schema_requests(http: &reqwest::Client, base: &str, seen: &Seen) -> Duration {
    let mut slowest = Duration::ZERO;
    for (i, (name, kind, v1, v2)) in hostile_schemas().into_iter().enumerate() {
        let subject = format!("hostile-{i}");
        let body = |text: &str| json!({"schema": text, "schemaType": kind}).to_string();
        let steps = [
            (
                "register v1",
                format!("/subjects/{subject}/versions"),
                body(&v1),
            ),
            (
                "check v2",
                format!("/compatibility/subjects/{subject}/versions/latest"),
                body(&v2),
            ),
            (
                "dry-run v2",
                format!("/covenant/v1/subjects/{subject}/check"),
                body(&v2),
            ),
            (
                "register v2",
                format!("/subjects/{subject}/versions"),
                body(&v2),
            ),
            ("look up v1", format!("/subjects/{subject}"), body(&v1)),
        ];
        for (step, path, body) in steps {
            let started = Instant::now();
            let request = http
                .post(format!("{base}{path}"))
                .header("content-type", V1)
                .body(body);
            let status = send(request, &format!("{name}: {step}"), seen).await;
            let took = started.elapsed();
            slowest = slowest.max(took);
            println!(
                "hostile schema: {name}: {step}: {status} in {} ms",
                took.as_millis()
            );
        }
    }
    slowest
}

/// Exporter specifications built to cost or to hang: patterns that would backtrack, a
/// thousand patterns, destinations that refuse connections or never answer, nested JSON; the
/// running ones fail and retry in the background while the probe measures everyone else.
async fn hostile_exporter_requests(http: &reqwest::Client, base: &str, seen: &Seen) {
    // A destination that accepts connections and never answers.
    let silent = std::net::TcpListener::bind("127.0.0.1:0").expect("bind a silent port");
    let silent_url = format!("http://{}", silent.local_addr().expect("address"));
    let closed_url = format!("http://127.0.0.1:{}", support::free_port());
    let pathological = format!("{}b", "*a".repeat(500));
    let many: Vec<String> = (0..1000).map(|i| format!("s{i}*")).collect();
    let too_many: Vec<String> = (0..1001).map(|i| format!("s{i}")).collect();
    let specs = [
        (
            "backtracking pattern",
            json!({"name": "e-glob", "subjects": [pathological],
            "config": {"schema.registry.url": closed_url}}),
            200,
        ),
        (
            "a thousand patterns",
            json!({"name": "e-many", "subjects": many,
            "config": {"schema.registry.url": closed_url}}),
            200,
        ),
        (
            "silent destination",
            json!({"name": "e-silent", "contextType": "CUSTOM",
            "context": "x", "config": {"schema.registry.url": silent_url}}),
            200,
        ),
        (
            "too many patterns",
            json!({"name": "e-too-many", "subjects": too_many,
            "config": {"schema.registry.url": closed_url}}),
            409,
        ),
        ("no destination", json!({"name": "e-none"}), 409),
        (
            "odd name",
            json!({"name": "../e", "config": {"schema.registry.url": closed_url}}),
            409,
        ),
        (
            "nested config",
            json!({"name": "e-nested",
            "config": {"schema.registry.url": {"a": {"b": [1, 2, 3]}}}}),
            409,
        ),
    ];
    for (what, body, expected) in specs {
        let request = http
            .post(format!("{base}/exporters"))
            .header("content-type", V1)
            .body(body.to_string());
        let status = send(request, what, seen).await;
        assert_eq!(status, expected, "{what}");
    }
    let nested = format!("{}{}", "{\"a\":".repeat(50_000), "1}".repeat(50_000));
    let request = http
        .post(format!("{base}/exporters"))
        .header("content-type", V1)
        .body(nested);
    send(request, "deeply nested exporter", seen).await;
    for name in ["e-glob", "e-many", "e-silent"] {
        let status = send(
            http.get(format!("{base}/exporters/{name}/status")),
            "exporter status",
            seen,
        )
        .await;
        assert_eq!(status, 200, "{name}");
    }
    // Left running: the probe keeps measuring while they fail and retry.
    std::mem::forget(silent);
}

/// Profile documents built to cost: thousands of paths and escape-hatch keys, then the routes
/// and the metrics that read them back; and documents that are not profiles at all.
async fn hostile_profile_requests(http: &reqwest::Client, base: &str, seen: &Seen) {
    let subject = format!("{base}/covenant/v1/subjects/odd-profiles");
    let register = http
        .post(format!("{base}/subjects/odd-profiles/versions"))
        .header("content-type", V1)
        .body(json!({"schema": r#"{"type":"record","name":"P","fields":[{"name":"f0","type":"string"}]}"#}).to_string());
    send(register, "profile subject", seen).await;
    // An empty sketch: 1,024 zero registers in base64.
    let registers = "A".repeat(1366) + "==";
    let paths: serde_json::Map<String, Value> = (0..2_500)
        .map(|i| {
            let path = if i % 2 == 0 {
                format!("/f{i}")
            } else {
                format!("/vendor_data/k{i}")
            };
            let stats = json!({"present": 3, "nonNull": 2, "types": {"string": 2, "integer": 1},
                "distinct": registers, "escapeHatchKey": i % 2 == 1});
            (path, stats)
        })
        .collect();
    let wide = json!({"format": "covenant-profile", "version": 1, "records": 3,
        "escapeHatches": ["vendor_data"], "paths": paths});
    let bodies = [
        ("wide profile", wide.to_string()),
        ("newer profile", r#"{"format":"covenant-profile","version":99,"records":0,"paths":{}}"#.into()),
        ("not a profile", r#"{"format":"other"}"#.into()),
        ("profile with a bad sketch", r#"{"format":"covenant-profile","version":1,"records":1,"paths":{"/a":{"present":1,"nonNull":1,"types":{},"distinct":"AAAA"}}}"#.into()),
        ("deeply nested profile", format!("{}{}", "[".repeat(100_000), "]".repeat(100_000))),
    ];
    for (what, body) in bodies {
        let request = http
            .post(format!("{subject}/profiles"))
            .header("content-type", "application/json")
            .body(body);
        let status = send(request, what, seen).await;
        // Only the wide one is a profile; the rest are refused as input, never a 5xx.
        let expected = if what == "wide profile" { 200 } else { 422 };
        assert!(
            status == expected || (expected == 422 && status == 400),
            "{what}: {status}"
        );
    }
    for path in [
        "/profiles",
        "/profiles/trend?path=/vendor_data/k1",
        "/profiles/findings",
        "/profiles/findings?promoteShare=0&promoteGroups=0&removeShare=1",
    ] {
        let status = send(http.get(format!("{subject}{path}")), path, seen).await;
        assert_eq!(status, 200, "{path}");
    }
    send(
        http.get(format!("{base}/metrics")),
        "metrics with a wide profile",
        seen,
    )
    .await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hostile_clients_never_take_the_server_down() {
    let dir = tempfile::tempdir().expect("temp dir");
    let mut serve = Serve::spawn(dir.path(), |c| {
        c.args(["--header-timeout-secs", &HEADER_TIMEOUT_SECS.to_string()])
            .args(["--body-timeout-secs", &BODY_TIMEOUT_SECS.to_string()])
            .args(["--max-body-bytes", &MAX_BODY_BYTES.to_string()])
            .args(["--max-connections", "4096"])
            .env("RUST_LOG", "warn");
    });
    let http = covenant_exporter::client::builder()
        .timeout(Duration::from_secs(300))
        .build()
        .expect("client");
    support::wait_ready(&http, &serve.base).await;
    let (base, port, pid) = (serve.base.clone(), serve.port, serve.pid());
    let state = Arc::new(Probe {
        stop: AtomicBool::new(false),
        max_latency_ms: AtomicU64::new(0),
        peak_rss_mib: AtomicU64::new(0),
        rounds: AtomicU64::new(0),
        failures: Mutex::new(Vec::new()),
    });
    let prober = tokio::spawn(probe(base.clone(), pid, state.clone()));
    let seen = Arc::new(Seen::default());

    let (slow_closed, half_closed, idle_closed) = tokio::join!(
        slow_headers(port, 50, &seen),
        half_bodies(port, 50, &seen),
        idle_connections(port, 1200, &seen)
    );
    raw_oddities(port, &seen).await;
    odd_requests(&http, &base, &seen).await;
    hostile_profile_requests(&http, &base, &seen).await;
    hostile_exporter_requests(&http, &base, &seen).await;
    let slowest_schema = hostile_schema_requests(&http, &base, &seen).await;

    state.stop.store(true, Ordering::Relaxed);
    prober.await.expect("probe");
    let errors = seen.server_errors.lock().expect("seen").clone();
    let failures = state.failures.lock().expect("probe").clone();
    let max_probe = state.max_latency_ms.load(Ordering::Relaxed);
    let peak = state.peak_rss_mib.load(Ordering::Relaxed);
    println!(
        "hostile: {} hostile requests sent, 5xx seen: {}, max probe latency: {max_probe} ms \
         over {} probe rounds, peak RSS: {peak} MiB, slowest hostile schema answer: {} ms; \
         closed by the server: {slow_closed}/50 slow heads, {half_closed}/50 half bodies, \
         {idle_closed}/1200 idle connections",
        seen.sent.load(Ordering::Relaxed),
        errors.len(),
        state.rounds.load(Ordering::Relaxed),
        slowest_schema.as_millis()
    );
    assert!(serve.is_running(), "the server died");
    assert!(errors.is_empty(), "5xx answers: {errors:#?}");
    assert!(failures.is_empty(), "probe failures: {failures:#?}");
    assert!(
        max_probe < PROBE_BOUND.as_millis() as u64,
        "probe took {max_probe} ms"
    );
    assert!(peak < RSS_BOUND_MIB, "peak RSS {peak} MiB");
    assert_eq!(slow_closed, 50, "slow heads left open");
    assert_eq!(half_closed, 50, "half bodies left open");
    assert_eq!(idle_closed, 1200, "idle connections left open");
    // Every walk those requests caused ran under a budget: none was charged outside one.
    let metrics = http
        .get(format!("{base}/metrics"))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics text");
    let unbudgeted = metrics
        .lines()
        .find_map(|l| l.strip_prefix("covenant_unbudgeted_walks_total "))
        .expect("covenant_unbudgeted_walks_total is exported");
    assert_eq!(unbudgeted.trim(), "0", "walks outside any budget");
}
