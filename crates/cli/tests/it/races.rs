//! Concurrent writers on one subject against a running `covenant serve`, on the embedded
//! store and (when `COVENANT_TEST_POSTGRES` is set) on PostgreSQL: racing registrations that
//! are each compatible with the latest version but not with each other never both land, and
//! registrations racing deletes, config and mode changes end in 2xx or Confluent's 4xx,
//! never a 5xx, without losing anything acknowledged.

use crate::support;

use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use support::{Serve, TestDb, V1};

/// One server under test and what keeps it alive.
struct Backend {
    label: &'static str,
    serve: Serve,
    _dir: tempfile::TempDir,
    db: Option<TestDb>,
}

/// The embedded store, and PostgreSQL when configured.
async fn backends(test: &str) -> Vec<Backend> {
    let mut all = Vec::new();
    let dir = tempfile::tempdir().expect("temp dir");
    let serve = Serve::spawn(dir.path(), |c| {
        c.env("RUST_LOG", "warn");
    });
    all.push(Backend {
        label: "sqlite",
        serve,
        _dir: dir,
        db: None,
    });
    match TestDb::create("covenant_races").await {
        Some(db) => {
            let dir = tempfile::tempdir().expect("temp dir");
            let serve = Serve::spawn(dir.path(), |c| {
                c.args(["--store", &db.url]).env("RUST_LOG", "warn");
            });
            all.push(Backend {
                label: "postgres",
                serve,
                _dir: dir,
                db: Some(db),
            });
        }
        None => eprintln!(
            "{test}: {} is not set; racing on the embedded store only",
            support::POSTGRES_ENV
        ),
    }
    let http = client();
    for b in &all {
        support::wait_ready(&http, &b.serve.base).await;
    }
    all
}

fn client() -> reqwest::Client {
    covenant_exporter::client::builder()
        .timeout(Duration::from_secs(60))
        .build()
        .expect("http client")
}

/// A record `R` whose one extra field `x` has the given Avro type and default.
fn with_x(kind: &str, default: Value) -> String {
    json!({"type": "record", "name": "R", "fields": [
        {"name": "id", "type": "string"},
        {"name": "x", "type": kind, "default": default}
    ]})
    .to_string()
}

/// A record `R` with one optional field named after `n`: all of them are backward
/// compatible with each other.
fn optional_field(n: usize) -> String {
    json!({"type": "record", "name": "R", "fields": [
        {"name": format!("f{n}"), "type": "string", "default": ""}
    ]})
    .to_string()
}

/// Sends a request and returns the status and the JSON answer (`Null` when unreadable).
async fn send(
    http: &reqwest::Client,
    method: reqwest::Method,
    url: String,
    body: Option<Value>,
) -> (u16, Value) {
    let mut request = http.request(method, url);
    if let Some(body) = body {
        request = request.header("content-type", V1).json(&body);
    }
    match request.send().await {
        Ok(r) => {
            let status = r.status().as_u16();
            (status, r.json().await.unwrap_or(Value::Null))
        }
        Err(e) => panic!("request failed (server down?): {e}"),
    }
}

async fn register(http: &reqwest::Client, base: &str, subject: &str, schema: &str) -> (u16, Value) {
    send(
        http,
        reqwest::Method::POST,
        format!("{base}/subjects/{subject}/versions"),
        Some(json!({ "schema": schema })),
    )
    .await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn of_two_mutually_incompatible_registrations_exactly_one_lands() {
    let http = client();
    for backend in backends("of_two_mutually_incompatible_registrations_exactly_one_lands").await {
        let base = &backend.serve.base;
        let rounds = 16;
        for round in 0..rounds {
            let subject = format!("pair-{round}");
            let v1 = json!({"type": "record", "name": "R", "fields": [
                {"name": "id", "type": "string"}
            ]})
            .to_string();
            assert_eq!(register(&http, base, &subject, &v1).await.0, 200);
            // Each adds `x` with a default (backward compatible with v1); an int `x` and a
            // string `x` cannot read each other.
            let (int_x, string_x) = (with_x("int", json!(0)), with_x("string", json!("")));
            let (a, b) = tokio::join!(
                register(&http, base, &subject, &int_x),
                register(&http, base, &subject, &string_x)
            );
            let mut statuses = [a.0, b.0];
            statuses.sort_unstable();
            assert_eq!(
                statuses,
                [200, 409],
                "{}: round {round}: {a:?} / {b:?}",
                backend.label
            );
            let (_, versions) = send(
                &http,
                reqwest::Method::GET,
                format!("{base}/subjects/{subject}/versions"),
                None,
            )
            .await;
            assert_eq!(versions, json!([1, 2]), "{}: round {round}", backend.label);
        }
        println!(
            "races[{}]: {rounds} rounds of two incompatible registrations: exactly one landed each time",
            backend.label
        );
        if let Some(db) = backend.db {
            db.drop_db().await;
        }
    }
}

/// What the churn saw: every status by operation, and what was acknowledged.
#[derive(Default)]
struct Tally {
    statuses: BTreeMap<String, usize>,
    /// Acknowledged registrations: (version, id).
    registered: Vec<(i64, i64)>,
    /// Versions an acknowledged permanent delete removed.
    purged: BTreeSet<i64>,
    operations: usize,
    server_errors: Vec<String>,
}

impl Tally {
    fn note(&mut self, op: &str, status: u16, body: &Value) {
        self.operations += 1;
        let code = body["error_code"].as_i64().unwrap_or(i64::from(status));
        *self.statuses.entry(format!("{op} {code}")).or_default() += 1;
        if status >= 500 {
            self.server_errors.push(format!("{op} {status} {body}"));
        }
    }
}

async fn registrar(http: reqwest::Client, base: String, worker: usize, tally: Arc<Mutex<Tally>>) {
    for i in 0..30 {
        let (status, body) =
            register(&http, &base, "churn", &optional_field(worker * 1000 + i)).await;
        let mut t = tally.lock().expect("tally");
        t.note("register", status, &body);
        if status == 200
            && let (Some(version), Some(id)) = (body["version"].as_i64(), body["id"].as_i64())
        {
            t.registered.push((version, id));
        }
    }
}

async fn deleter(http: reqwest::Client, base: String, worker: usize, tally: Arc<Mutex<Tally>>) {
    let subject = format!("{base}/subjects/churn");
    for i in 0..30 {
        let whole = (i + worker) % 10 == 9;
        let target = if whole {
            subject.clone()
        } else {
            format!("{subject}/versions/latest")
        };
        let (status, body) = send(&http, reqwest::Method::DELETE, target.clone(), None).await;
        tally
            .lock()
            .expect("tally")
            .note("soft-delete", status, &body);
        let (status, body) = if whole {
            send(
                &http,
                reqwest::Method::DELETE,
                format!("{subject}?permanent=true"),
                None,
            )
            .await
        } else {
            let Some(v) = body.as_i64() else { continue };
            let url = format!("{subject}/versions/{v}?permanent=true");
            send(&http, reqwest::Method::DELETE, url, None).await
        };
        let mut t = tally.lock().expect("tally");
        t.note("hard-delete", status, &body);
        if status == 200 {
            match &body {
                Value::Array(vs) => t.purged.extend(vs.iter().filter_map(Value::as_i64)),
                v => t.purged.extend(v.as_i64()),
            }
        }
    }
}

async fn reconfigurer(http: reqwest::Client, base: String, tally: Arc<Mutex<Tally>>) {
    for i in 0..30 {
        let level = ["BACKWARD", "NONE", "FULL_TRANSITIVE"][i % 3];
        let (status, body) = send(
            &http,
            reqwest::Method::PUT,
            format!("{base}/config/churn"),
            Some(json!({"compatibility": level})),
        )
        .await;
        tally.lock().expect("tally").note("config", status, &body);
        let mode = if i == 15 { "READONLY" } else { "READWRITE" };
        let (status, body) = send(
            &http,
            reqwest::Method::PUT,
            format!("{base}/mode/churn"),
            Some(json!({"mode": mode})),
        )
        .await;
        tally.lock().expect("tally").note("mode", status, &body);
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let (status, body) = send(
        &http,
        reqwest::Method::PUT,
        format!("{base}/mode/churn"),
        Some(json!({"mode": "READWRITE"})),
    )
    .await;
    tally.lock().expect("tally").note("mode", status, &body);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deletes_config_and_mode_racing_registrations_never_answer_5xx() {
    let http = client();
    for backend in backends("deletes_config_and_mode_racing_registrations_never_answer_5xx").await {
        let base = backend.serve.base.clone();
        let tally = Arc::new(Mutex::new(Tally::default()));
        let mut tasks = Vec::new();
        for w in 0..16 {
            tasks.push(tokio::spawn(registrar(
                http.clone(),
                base.clone(),
                w,
                tally.clone(),
            )));
        }
        for w in 0..4 {
            tasks.push(tokio::spawn(deleter(
                http.clone(),
                base.clone(),
                w,
                tally.clone(),
            )));
        }
        tasks.push(tokio::spawn(reconfigurer(
            http.clone(),
            base.clone(),
            tally.clone(),
        )));
        for t in tasks {
            t.await.expect("worker");
        }
        let t = std::mem::take(&mut *tally.lock().expect("tally"));
        println!(
            "races[{}]: {} operations on one subject, 5xx: {}; {:?}",
            backend.label,
            t.operations,
            t.server_errors.len(),
            t.statuses
        );
        assert!(
            t.server_errors.is_empty(),
            "{}: {:?}",
            backend.label,
            t.server_errors
        );
        // Nothing acknowledged is lost: every acknowledged version not purged by an
        // acknowledged permanent delete still reads back (soft-deleted or not) with its id.
        for (version, id) in &t.registered {
            if t.purged.contains(version) {
                continue;
            }
            let (status, body) = send(
                &http,
                reqwest::Method::GET,
                format!("{base}/subjects/churn/versions/{version}?deleted=true"),
                None,
            )
            .await;
            if status == 200 && body["id"].as_i64() == Some(*id) {
                continue;
            }
            // A purge of the whole subject answers only the versions it removed; a version
            // soft-deleted and then purged by another deleter's version delete is in `purged`.
            panic!(
                "{}: acknowledged v{version} (id {id}) reads {status} {body}",
                backend.label
            );
        }
        let (_, versions) = send(
            &http,
            reqwest::Method::GET,
            format!("{base}/subjects/churn/versions?deleted=true"),
            None,
        )
        .await;
        let numbers: Vec<i64> = serde_json::from_value(versions).unwrap_or_default();
        assert!(
            numbers.windows(2).all(|w| w[0] < w[1]),
            "{}: version numbers repeat or go backwards: {numbers:?}",
            backend.label
        );
        if let Some(db) = backend.db {
            db.drop_db().await;
        }
    }
}
