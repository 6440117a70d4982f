//! The connection cap of `covenant serve`: a connection over the cap gets a prompt 503
//! (`50302`) and the slots held by idle connections come back once the header timeout closes
//! them. In its own test binary so that no other server test competes for the CPU while the
//! idle connections are held (a starved test could outlive the header timeout and see its
//! held slots freed before it asks).

use crate::support;

use serde_json::Value;
use std::time::{Duration, Instant};
use support::Serve;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_cap_are_refused_promptly_and_slots_come_back() {
    let dir = tempfile::tempdir().expect("temp dir");
    let serve = Serve::spawn(dir.path(), |c| {
        c.args(["--max-connections", "16", "--header-timeout-secs", "5"])
            .env("RUST_LOG", "warn");
    });
    let http = covenant_exporter::client::builder()
        .timeout(Duration::from_secs(10))
        .pool_max_idle_per_host(0)
        .build()
        .expect("client");
    support::wait_ready(&http, &serve.base).await;
    // Each held connection completes one request and then idles, so the server has
    // certainly accepted it and holds its slot, however slowly it was scheduled.
    let mut held = Vec::new();
    for _ in 0..16 {
        held.push(idle_after_one_request(serve.port).await);
    }
    let started = Instant::now();
    let refused = http
        .get(format!("{}/subjects", serve.base))
        .send()
        .await
        .expect("an answer at the cap");
    assert_eq!(refused.status().as_u16(), 503);
    let body: Value = refused.json().await.expect("JSON error");
    assert_eq!(body["error_code"], 50302, "{body}");
    assert!(
        started.elapsed() < Duration::from_secs(2),
        "the refusal was not prompt"
    );
    // The idle connections time out and free their slots.
    tokio::time::sleep(Duration::from_secs(6)).await;
    let served = http
        .get(format!("{}/subjects", serve.base))
        .send()
        .await
        .expect("served again");
    assert_eq!(served.status().as_u16(), 200);
    let mut rest = [0u8; 64];
    let read = held[0]
        .read(&mut rest)
        .await
        .expect("read after the timeout");
    assert_eq!(read, 0, "the idle connection is closed by the server");
}

/// A keep-alive connection that has been answered once and now sends nothing.
async fn idle_after_one_request(port: u16) -> TcpStream {
    let mut stream = TcpStream::connect(("127.0.0.1", port))
        .await
        .expect("connect");
    stream
        .write_all(b"GET /health/live HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        .await
        .expect("send a request");
    let mut answer = Vec::new();
    let mut buffer = [0u8; 1024];
    while !answer.windows(4).any(|w| w == b"\r\n\r\n") {
        let read = stream.read(&mut buffer).await.expect("read the answer");
        assert!(read > 0, "closed before answering");
        answer.extend_from_slice(&buffer[..read]);
    }
    assert!(
        answer.starts_with(b"HTTP/1.1 200"),
        "{}",
        String::from_utf8_lossy(&answer)
    );
    stream
}
