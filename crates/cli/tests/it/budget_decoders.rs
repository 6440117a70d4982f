//! Payload decoders and counters bounded by construction, against a running `covenant serve`
//! under an address-space limit: a ten-byte Avro sample claiming 20,000,000 `null` items is
//! refused through every path that decodes samples (stored samples, samples submitted with a
//! compatibility check or a registration, `covenant check --sample`) and the server stays
//! small and answering, also with eight of them at once; usage counts reported at the
//! largest value a counter holds saturate, so reading them and exporting keep working.

use crate::support;

use base64::Engine;
use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};
use support::V1;

/// The address space the server runs in: far below what the bomb used to ask for.
const ADDRESS_SPACE: u64 = 4_000_000_000;

const BOMB_SCHEMA: &str = r#"{"type":"record","name":"Bomb","fields":[{"name":"xs","type":{"type":"array","items":"null"}}]}"#;

/// An array block of 20,000,000 items (zig-zag varint), then the terminating block.
const BOMB: [u8; 5] = [0x80, 0xb4, 0x89, 0x13, 0x00];

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

/// A `covenant serve` under an address-space limit, its log in a file.
struct Server {
    serve: support::Confined,
    base: String,
    data: PathBuf,
    http: reqwest::Client,
}

impl Server {
    async fn start(dir: &Path) -> Server {
        let data = dir.join("data");
        let log = dir.join("serve.log");
        let serve =
            support::Confined::spawn(ADDRESS_SPACE, support::free_port(), &data, Some(&log), &[]);
        let server = Server {
            base: serve.base.clone(),
            serve,
            data,
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

    /// Alive, and answering a small read.
    async fn assert_answering(&mut self) {
        assert!(self.serve.is_running(), "the server exited");
        let (status, answer) = self.call("GET", "/subjects", None).await;
        assert_eq!(status, 200, "{answer}");
    }
}

/// The three HTTP paths a sample is decoded on (a stored sample, plain and framed; a
/// compatibility check; a registration), with their answers.
async fn send_bombs(
    http: reqwest::Client,
    base: String,
    subject: &str,
) -> Vec<(String, u16, Value)> {
    let sample = json!({"encoding": "avro", "payload": b64(&BOMB)});
    let mut framed = vec![0u8, 0, 0, 0, 1];
    framed.extend(BOMB);
    let requests = [
        (
            "stored sample",
            format!("/covenant/v1/subjects/{subject}/versions/1/samples"),
            sample.clone(),
        ),
        (
            "stored confluent sample",
            format!("/covenant/v1/subjects/{subject}/versions/1/samples"),
            json!({"encoding": "confluent", "payload": b64(&framed)}),
        ),
        (
            "compatibility check",
            format!("/compatibility/subjects/{subject}/versions/latest"),
            json!({"schema": BOMB_SCHEMA, "samples": [sample.clone()]}),
        ),
        (
            "registration",
            format!("/subjects/{subject}/versions"),
            json!({"schema": BOMB_SCHEMA, "samples": [sample]}),
        ),
    ];
    let mut answers = Vec::new();
    for (what, path, body) in requests {
        let (status, answer) = support::call(&http, &base, "POST", &path, V1, Some(body)).await;
        answers.push((what.to_string(), status, answer));
    }
    answers
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_ten_byte_bomb_is_refused_on_every_path_and_the_server_stays_small() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = Server::start(dir.path()).await;
    let (status, answer) = server
        .call(
            "POST",
            "/subjects/bomb/versions",
            Some(json!({"schema": BOMB_SCHEMA})),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    // The framed sample names the schema's id.
    assert_eq!(answer["id"], 1, "{answer}");

    for (what, status, answer) in send_bombs(server.http.clone(), server.base.clone(), "bomb").await
    {
        assert!((400..500).contains(&status), "{what}: {status} {answer}");
        assert!(
            answer.to_string().contains("take no bytes"),
            "{what}: {answer}"
        );
    }
    server.assert_answering().await;
    println!("peak RSS after the bombs: {} MiB", server.peak_rss_mib());

    // Eight at once, while a probe reads the subject list.
    let started = Instant::now();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let probe = {
        let (http, base, stop) = (server.http.clone(), server.base.clone(), stop.clone());
        tokio::spawn(async move {
            let mut worst = Duration::ZERO;
            let mut probes = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) || probes < 20 {
                let t = Instant::now();
                let (status, _) = support::call(&http, &base, "GET", "/subjects", V1, None).await;
                assert_eq!(status, 200);
                worst = worst.max(t.elapsed());
                probes += 1;
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
            (worst, probes)
        })
    };
    let rounds: Vec<_> = (0..8)
        .map(|_| tokio::spawn(send_bombs(server.http.clone(), server.base.clone(), "bomb")))
        .collect();
    for round in rounds {
        for (what, status, answer) in round.await.expect("a round of bombs") {
            assert!((400..500).contains(&status), "{what}: {status} {answer}");
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (worst, probes) = probe.await.expect("probe");
    println!(
        "8 parallel bomb rounds in {:?}; probe worst latency {worst:?} over {probes} reads; peak RSS {} MiB",
        started.elapsed(),
        server.peak_rss_mib()
    );
    assert!(worst < Duration::from_secs(1), "probe waited {worst:?}");
    server.assert_answering().await;
    assert!(
        server.peak_rss_mib() < 1024,
        "peak RSS {} MiB",
        server.peak_rss_mib()
    );
}

#[test]
fn check_with_a_bomb_sample_is_invalid_input() {
    let dir = tempfile::tempdir().expect("tempdir");
    let schema = support::write(dir.path(), "bomb.avsc", BOMB_SCHEMA);
    let sample = dir.path().join("bomb.bin");
    std::fs::write(&sample, BOMB).expect("sample");
    let out = Command::new("prlimit")
        .arg(format!("--as={ADDRESS_SPACE}"))
        .arg("--")
        .arg(env!("CARGO_BIN_EXE_covenant"))
        .args(["check", "--level", "FORWARD", "--sample"])
        .arg(&sample)
        .arg(&schema)
        .arg(&schema)
        .output()
        .expect("covenant check");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("take no bytes"), "{stderr}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn counters_at_their_largest_saturate_and_reads_and_export_keep_working() {
    let dir = tempfile::tempdir().expect("tempdir");
    let mut server = Server::start(dir.path()).await;
    let (status, answer) = server
        .call(
            "POST",
            "/subjects/counted/versions",
            Some(json!({"schema": r#""string""#})),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let report = json!({
        "subject": "counted",
        "client_id": "c",
        "records_by_version": {"1": i64::MAX},
        "decode_failures": i64::MAX,
        "unknown_enum_values": {"status": {"LATE": u64::MAX}},
    });
    for _ in 0..3 {
        let (status, answer) = server
            .call("POST", "/covenant/v1/usage", Some(report.clone()))
            .await;
        assert!(
            status == 200 || status == 204 || status == 202,
            "{status} {answer}"
        );
    }
    let (status, counts) = server.call("GET", "/covenant/v1/usage/counts", None).await;
    assert_eq!(status, 200, "{counts}");
    let text = counts.to_string();
    assert!(text.contains(&i64::MAX.to_string()), "{text}");
    server.assert_answering().await;
    // Stopped, so the export reads a store nobody writes.
    let data = server.data.clone();
    drop(server);

    let out = Command::new(env!("CARGO_BIN_EXE_covenant"))
        .arg("export")
        .arg("--data-dir")
        .arg(&data)
        .output()
        .expect("covenant export");
    assert_eq!(
        out.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let dump = String::from_utf8_lossy(&out.stdout);
    assert!(
        dump.contains(&i64::MAX.to_string()),
        "the export holds the saturated count"
    );
}
