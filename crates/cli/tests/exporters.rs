//! Exporters between two running `covenant serve` processes: registrations, references,
//! contexts, soft and hard deletes and configs on A appear on B with the same ids and version
//! numbers; B down for a while catches up; A killed and restarted resumes without a gap or a
//! duplicate; on two PostgreSQL nodes sharing A's database, killing the node running the
//! exporter hands it to the other.

mod support;

use serde_json::{Value, json};
use std::collections::BTreeMap;
use std::path::Path;
use std::time::{Duration, Instant};
use support::{Serve, TestDb, V1};

fn record(name: &str, fields: &[&str]) -> String {
    let fields: Vec<Value> = fields
        .iter()
        .map(|f| json!({"name": f, "type": "string", "default": ""}))
        .collect();
    json!({"type": "record", "name": name, "fields": fields}).to_string()
}

struct Node {
    serve: Serve,
    http: reqwest::Client,
}

impl Node {
    async fn start(port: u16, data: &Path, store: Option<&str>) -> Node {
        let serve = Serve::spawn_on(port, data, |command| {
            if let Some(url) = store {
                command.args(["--store", url]);
            }
        });
        let http = covenant_exporter::client::client();
        support::wait_ready(&http, &serve.base).await;
        Node { serve, http }
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        support::call(&self.http, &self.serve.base, method, path, V1, body).await
    }

    async fn register(&self, subject: &str, body: Value) -> i64 {
        let (status, answer) = self
            .call("POST", &format!("/subjects/{subject}/versions"), Some(body))
            .await;
        assert_eq!(status, 200, "{subject}: {answer}");
        answer["id"].as_i64().expect("id")
    }

    /// Every (subject, version) with its id and whether it is soft-deleted, and each
    /// subject's own compatibility level.
    async fn state(&self) -> BTreeMap<String, Value> {
        let mut out = BTreeMap::new();
        let (_, subjects) = self.call("GET", "/subjects?deleted=true", None).await;
        for subject in subjects.as_array().cloned().unwrap_or_default() {
            let subject = subject.as_str().unwrap_or_default().to_string();
            let (_, live) = self
                .call("GET", &format!("/subjects/{subject}/versions"), None)
                .await;
            let (_, all) = self
                .call(
                    "GET",
                    &format!("/subjects/{subject}/versions?deleted=true"),
                    None,
                )
                .await;
            for v in all.as_array().cloned().unwrap_or_default() {
                let (_, body) = self
                    .call(
                        "GET",
                        &format!("/subjects/{subject}/versions/{v}?deleted=true"),
                        None,
                    )
                    .await;
                let deleted = !live.as_array().is_some_and(|l| l.contains(&v));
                out.insert(
                    format!("{subject}@{v}"),
                    json!({"id": body["id"], "deleted": deleted, "schema": body["schema"]}),
                );
            }
            let (status, config) = self.call("GET", &format!("/config/{subject}"), None).await;
            if status == 200 {
                out.insert(
                    format!("{subject} config"),
                    config["compatibilityLevel"].clone(),
                );
            }
        }
        out
    }

    async fn status(&self, name: &str) -> Value {
        self.call("GET", &format!("/exporters/{name}/status"), None)
            .await
            .1
    }
}

/// Waits until B holds exactly A's state (the exporter copies as `contextType` NONE).
async fn converge(a: &Node, b: &Node, within: Duration, what: &str) {
    let started = Instant::now();
    loop {
        let (source, copy) = (a.state().await, b.state().await);
        if source == copy {
            return;
        }
        if started.elapsed() > within {
            let status = a.status("to-b").await;
            panic!(
                "{what}: B did not converge within {within:?}\nA: {source:#?}\nB: {copy:#?}\nstatus: {status}"
            );
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

async fn create_exporter(a: &Node, b_port: u16) {
    let (status, created) = a
        .call(
            "POST",
            "/exporters",
            Some(json!({
                "name": "to-b",
                "contextType": "NONE",
                "subjects": ["*"],
                "config": {"schema.registry.url": format!("http://127.0.0.1:{b_port}")}
            })),
        )
        .await;
    assert_eq!(
        (status, &created),
        (200, &json!({"name": "to-b"})),
        "{created}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exporter_keeps_a_second_registry_in_step() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a_port, b_port) = (support::free_port(), support::free_port());
    let mut a = Node::start(a_port, &dir.path().join("a"), None).await;
    let mut b = Node::start(b_port, &dir.path().join("b"), None).await;

    // State before the exporter exists: copied by its first run.
    a.register("orders", json!({"schema": record("Order", &["id"])}))
        .await;
    a.register(
        "orders",
        json!({"schema": record("Order", &["id", "note"])}),
    )
    .await;
    a.register("money", json!({"schema": record("Money", &["cents"])}))
        .await;
    let invoice = json!({"schema": json!({"type": "record", "name": "Invoice", "fields": [
        {"name": "total", "type": "Money"}]}).to_string(),
        "references": [{"name": "Money", "subject": "money", "version": 1}]});
    a.register("invoice", invoice).await;
    a.register(":.eu:orders", json!({"schema": record("EuOrder", &["id"])}))
        .await;
    let (status, _) = a
        .call(
            "PUT",
            "/config/orders",
            Some(json!({"compatibility": "FULL"})),
        )
        .await;
    assert_eq!(status, 200);
    let (status, _) = a.call("DELETE", "/subjects/orders/versions/1", None).await;
    assert_eq!(status, 200);

    let (status, _) = a.call("GET", "/exporters/to-b", None).await;
    assert_eq!(status, 404);
    create_exporter(&a, b_port).await;
    let (status, dup) = a
        .call(
            "POST",
            "/exporters",
            Some(json!({"name": "to-b", "config": {"schema.registry.url": "http://x"}})),
        )
        .await;
    assert_eq!((status, &dup["error_code"]), (409, &json!(40960)));
    let (_, names) = a.call("GET", "/exporters", None).await;
    assert_eq!(names, json!(["to-b"]));
    let (_, info) = a.call("GET", "/exporters/to-b", None).await;
    assert_eq!(info["contextType"], "NONE");

    converge(&a, &b, Duration::from_secs(30), "first copy").await;
    let (_, by_id) = b.call("GET", "/schemas/ids/1?subject=:.eu:", None).await;
    assert!(
        by_id["schema"].as_str().unwrap_or("").contains("EuOrder"),
        "{by_id}"
    );

    // Changes follow: a new version, a hard delete, a config removed.
    a.register(
        "orders",
        json!({"schema": record("Order", &["id", "note", "tag"])}),
    )
    .await;
    let (status, _) = a
        .call("DELETE", "/subjects/orders/versions/1?permanent=true", None)
        .await;
    assert_eq!(status, 200);
    let (status, _) = a.call("DELETE", "/config/orders", None).await;
    assert_eq!(status, 200);
    converge(&a, &b, Duration::from_secs(30), "changes").await;
    let status = a.status("to-b").await;
    assert_eq!(
        (&status["state"], &status["lag"]),
        (&json!("RUNNING"), &json!(0)),
        "{status}"
    );

    // B down: A keeps registering and shows the error; B back: it catches up.
    b.serve.kill().expect("kill B");
    a.register("late", json!({"schema": record("Late", &["a"])}))
        .await;
    a.register("late", json!({"schema": record("Late", &["a", "b"])}))
        .await;
    let started = Instant::now();
    loop {
        let status = a.status("to-b").await;
        if status["trace"].as_str().is_some_and(|t| !t.is_empty()) {
            assert!(status["lag"].as_i64().unwrap_or(0) > 0, "{status}");
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "no trace while B is down: {status}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    b = Node::start(b_port, &dir.path().join("b"), None).await;
    converge(&a, &b, Duration::from_secs(60), "after B came back").await;

    // A killed without warning, then restarted: nothing missing, nothing twice.
    a.register("crash", json!({"schema": record("Crash", &["a"])}))
        .await;
    a.serve.kill().expect("kill A");
    a = Node::start(a_port, &dir.path().join("a"), None).await;
    a.register("crash", json!({"schema": record("Crash", &["a", "b"])}))
        .await;
    converge(&a, &b, Duration::from_secs(60), "after A restarted").await;

    // Paused: nothing moves; resumed: it catches up. Updates need a paused exporter.
    let (status, refused) = a
        .call(
            "PUT",
            "/exporters/to-b",
            Some(json!({"subjects": ["orders"]})),
        )
        .await;
    assert_eq!((status, &refused["error_code"]), (409, &json!(40963)));
    let (status, _) = a.call("PUT", "/exporters/to-b/pause", None).await;
    assert_eq!(status, 200);
    a.register("paused", json!({"schema": record("Paused", &["a"])}))
        .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    let (status, _) = b.call("GET", "/subjects/paused/versions", None).await;
    assert_eq!(status, 404, "a paused exporter copies nothing");
    assert_eq!(a.status("to-b").await["state"], "PAUSED");
    let (status, _) = a.call("PUT", "/exporters/to-b/resume", None).await;
    assert_eq!(status, 200);
    converge(&a, &b, Duration::from_secs(30), "after resume").await;

    let (status, _) = a.call("DELETE", "/exporters/to-b", None).await;
    assert_eq!(status, 200);
    let (status, gone) = a.call("GET", "/exporters/to-b/status", None).await;
    assert_eq!((status, &gone["error_code"]), (404, &json!(40450)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_another_node_takes_the_exporter_over() {
    let Some(db) = TestDb::create("covenant_exporters").await else {
        eprintln!("skipped: {} is not set", support::POSTGRES_ENV);
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let b_port = support::free_port();
    let b = Node::start(b_port, &dir.path().join("b"), None).await;
    // The first node takes the exporter's lease, the second waits for it.
    let mut first = Node::start(support::free_port(), &dir.path().join("a1"), Some(&db.url)).await;
    first
        .register("orders", json!({"schema": record("Order", &["id"])}))
        .await;
    create_exporter(&first, b_port).await;
    converge(&first, &b, Duration::from_secs(30), "first node").await;
    let second = Node::start(support::free_port(), &dir.path().join("a2"), Some(&db.url)).await;
    first.serve.kill().expect("kill the running node");
    second
        .register("orders", json!({"schema": record("Order", &["id", "x"])}))
        .await;
    second
        .register("after", json!({"schema": record("After", &["a"])}))
        .await;
    converge(&second, &b, Duration::from_secs(30), "after the takeover").await;
    drop(second);
    db.drop_db().await;
}
