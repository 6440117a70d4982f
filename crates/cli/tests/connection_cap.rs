//! The connection cap of `covenant serve`: a connection over the cap gets a prompt 503
//! (`50302`) and the slots held by idle connections come back once the header timeout closes
//! them. In its own test binary so that no other server test competes for the CPU while the
//! idle connections are held (a starved test could outlive the header timeout and see its
//! held slots freed before it asks).

mod support;

use serde_json::Value;
use std::time::{Duration, Instant};
use support::Serve;
use tokio::net::TcpStream;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_over_the_cap_are_refused_promptly_and_slots_come_back() {
    let dir = tempfile::tempdir().expect("temp dir");
    let serve = Serve::spawn(dir.path(), |c| {
        c.args(["--max-connections", "16", "--header-timeout-secs", "5"])
            .env("RUST_LOG", "warn");
    });
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(10))
        .pool_max_idle_per_host(0)
        .build()
        .expect("client");
    support::wait_ready(&http, &serve.base).await;
    let mut held = Vec::new();
    for _ in 0..16 {
        held.push(
            TcpStream::connect(("127.0.0.1", serve.port))
                .await
                .expect("connect"),
        );
    }
    // A starved server may not have accepted every held connection yet: ask until it has
    // (each answer before that is a normal one), then the refusal itself must be prompt.
    let mut attempts = 0;
    let (refused, started) = loop {
        tokio::time::sleep(Duration::from_millis(300)).await;
        let started = Instant::now();
        let answer = http
            .get(format!("{}/subjects", serve.base))
            .send()
            .await
            .expect("an answer at the cap");
        attempts += 1;
        if answer.status().as_u16() != 200 || attempts == 20 {
            break (answer, started);
        }
    };
    assert_eq!(refused.status().as_u16(), 503, "after {attempts} attempts");
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
    drop(held);
}
