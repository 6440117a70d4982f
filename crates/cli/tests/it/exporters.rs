//! Exporters between two running `covenant serve` processes: registrations, references,
//! contexts, soft and hard deletes and configs on A appear on B with the same ids and version
//! numbers; B down for a while catches up; A killed and restarted resumes without a gap or a
//! duplicate; on two PostgreSQL nodes sharing A's database, killing the node running the
//! exporter hands it to the other. With an auth file, an exporter copies only what its
//! creator may read, follows its creator's grants as they change, and never shows a
//! credential or a destination's raw reply. The DEK Registry's keys of exported subjects
//! travel with them, and a KEK held at B for another KMS key pauses the exporter.

use crate::support;

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
    /// Basic credentials sent with every call, for a node with an auth file.
    user: Option<(String, String)>,
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
        Node {
            serve,
            http,
            user: None,
        }
    }

    /// A node serving with `auth_file`, called as `user` with `password`.
    async fn start_with_auth(data: &Path, auth_file: &Path, user: &str, password: &str) -> Node {
        let serve = Serve::spawn(data, |command| {
            command.arg("--auth-file").arg(auth_file);
        });
        let http = covenant_exporter::client::client();
        support::wait_ready(&http, &serve.base).await;
        Node {
            serve,
            http,
            user: Some((user.to_string(), password.to_string())),
        }
    }

    /// The same node, called as another user.
    fn as_user(&self, user: &str, password: &str) -> Caller<'_> {
        Caller {
            node: self,
            user: (user.to_string(), password.to_string()),
        }
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        match &self.user {
            None => support::call(&self.http, &self.serve.base, method, path, V1, body).await,
            Some((user, password)) => self.call_as(user, password, method, path, body).await,
        }
    }

    async fn call_as(
        &self,
        user: &str,
        password: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut request = self
            .http
            .request(method, format!("{}{path}", self.serve.base))
            .basic_auth(user, Some(password));
        if let Some(body) = body {
            request = request.header("content-type", V1).body(body.to_string());
        }
        let response = request.send().await.expect("request");
        let status = response.status().as_u16();
        let text = response.text().await.expect("body");
        (
            status,
            serde_json::from_str(&text).unwrap_or(Value::String(text)),
        )
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

/// Calls a node as a user other than its default one.
struct Caller<'a> {
    node: &'a Node,
    user: (String, String),
}

impl Caller<'_> {
    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        self.node
            .call_as(&self.user.0, &self.user.1, method, path, body)
            .await
    }
}

/// Runs `covenant auth ...` on an auth file, the password (if any) on standard input.
fn auth(args: &[&str], password: Option<&str>) {
    use std::io::Write;
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_covenant"))
        .arg("auth")
        .args(args)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn covenant auth");
    let mut input = child.stdin.take().expect("stdin");
    if let Some(password) = password {
        writeln!(input, "{password}").expect("password");
    }
    drop(input);
    let out = child.wait_with_output().expect("covenant auth");
    assert!(
        out.status.success(),
        "covenant auth {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

fn add_user(file: &Path, user: &str, password: &str) {
    auth(
        &["add-user", support::s(file), user, "--password-stdin"],
        Some(password),
    );
}

fn grant(file: &Path, user: &str, operation: &str, resource: &str) {
    auth(
        &["grant", support::s(file), user, operation, resource],
        None,
    );
}

fn revoke(file: &Path, user: &str, operation: &str, resource: &str) {
    auth(
        &["revoke", support::s(file), user, operation, resource],
        None,
    );
}

/// The subjects a node holds, soft-deleted ones included.
async fn subjects(node: &Node) -> Vec<String> {
    let (status, listed) = node.call("GET", "/subjects?deleted=true", None).await;
    assert_eq!(status, 200, "{listed}");
    serde_json::from_value(listed).expect("subject names")
}

async fn versions(node: &Node, subject: &str) -> Value {
    node.call(
        "GET",
        &format!("/subjects/{subject}/versions?deleted=true"),
        None,
    )
    .await
    .1
}

/// Waits until `done` holds of the exporter's status (read as `a`'s default user).
async fn wait_status(a: &Node, name: &str, what: &str, done: impl Fn(&Value) -> bool) -> Value {
    let started = Instant::now();
    loop {
        let status = a.status(name).await;
        if done(&status) {
            return status;
        }
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "{what}: status {status}"
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Caught up: running, with everything committed so far copied.
fn caught_up(status: &Value) -> bool {
    status["state"] == "RUNNING" && status["lag"] == 0 && status["offset"].as_i64() > Some(0)
}

const SINK_PASSWORD: &str = "sink-pw-7431";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exporter_copies_only_what_its_creator_may_read() {
    let dir = tempfile::tempdir().expect("tempdir");
    // A: root may do everything; alice administers the registry and reads team-a only.
    let a_auth = dir.path().join("a-auth.json");
    add_user(&a_auth, "root", "root-pass");
    grant(&a_auth, "root", "Admin", "Config:");
    grant(&a_auth, "root", "Admin", "Subject:.*");
    add_user(&a_auth, "alice", "alice-pass");
    grant(&a_auth, "alice", "Admin", "Config:");
    grant(&a_auth, "alice", "Read", "SubjectPrefix:team-a");
    grant(&a_auth, "root", "Admin", "Kek:.*");
    grant(&a_auth, "alice", "Read", "Kek:team_a_kek");
    // B, the destination: its own auth file, whose password the exporter holds.
    let b_auth = dir.path().join("b-auth.json");
    add_user(&b_auth, "sink", SINK_PASSWORD);
    grant(&b_auth, "sink", "Admin", "Config:");
    grant(&b_auth, "sink", "Admin", "Subject:.*");
    grant(&b_auth, "sink", "Admin", "Kek:.*");
    let b = Node::start_with_auth(&dir.path().join("b"), &b_auth, "sink", SINK_PASSWORD).await;
    let a = Node::start_with_auth(&dir.path().join("a"), &a_auth, "root", "root-pass").await;
    let alice = a.as_user("alice", "alice-pass");

    for (subject, name) in [
        ("team-a-orders", "Order"),
        ("team-a-payments", "Payment"),
        ("team-b-secrets", "Secret"),
        ("team-b-old", "Old"),
    ] {
        a.register(subject, json!({"schema": record(name, &["id"])}))
            .await;
    }
    let (status, _) = a.call("DELETE", "/subjects/team-b-old", None).await;
    assert_eq!(status, 200, "team-b-old soft-deleted");
    // Keys of a readable subject: one under a KEK alice may read, one under a KEK she may not.
    create_kek(&a, "team_a_kek", "arn:aws:kms:eu-west-1:1:key/a").await;
    create_kek(&a, "hidden_kek", "arn:aws:kms:eu-west-1:1:key/hidden").await;
    create_dek(&a, "team_a_kek", "team-a-orders", 1, "dGVhbS1h").await;
    create_dek(&a, "hidden_kek", "team-a-orders", 1, "aGlkZGVu").await;
    let (status, _) = alice
        .call("GET", "/subjects/team-b-secrets/versions", None)
        .await;
    assert_eq!(status, 403, "alice may not read team-b");

    let (status, created) = alice
        .call(
            "POST",
            "/exporters",
            Some(json!({
                "name": "to-b",
                "contextType": "NONE",
                "subjects": ["team-*"],
                "config": {
                    "schema.registry.url": b.serve.base,
                    "basic.auth.user.info": format!("sink:{SINK_PASSWORD}"),
                }
            })),
        )
        .await;
    assert_eq!((status, &created), (200, &json!({"name": "to-b"})));

    // The first copy: team-a only; team-b (the soft-deleted subject too) stays behind.
    let status = wait_status(&a, "to-b", "first copy", caught_up).await;
    assert_eq!(
        subjects(&b).await,
        ["team-a-orders", "team-a-payments"],
        "status: {status}"
    );
    // Of the keys, only those under the KEK alice may read.
    let ours = deks_of(&a, "team_a_kek", "team-a-orders").await;
    assert_eq!(ours.as_ref().map(Vec::len), Some(1), "{ours:?}");
    assert_eq!(deks_of(&b, "team_a_kek", "team-a-orders").await, ours);
    assert_eq!(kek_on(&b, "hidden_kek").await.0, 404);
    let trace = status["trace"].as_str().unwrap_or_default();
    assert!(trace.contains("2 subjects skipped"), "{status}");
    assert!(
        !trace.contains("team-b"),
        "skipped subjects are not named: {trace}"
    );

    // The password never leaves A; sent back as shown, the stored one is kept.
    for path in ["/exporters/to-b/config", "/exporters/to-b"] {
        let (status, shown) = a.call("GET", path, None).await;
        assert_eq!(status, 200, "{shown}");
        assert!(
            !shown.to_string().contains(SINK_PASSWORD),
            "{path}: {shown}"
        );
    }
    let (_, config) = a.call("GET", "/exporters/to-b/config", None).await;
    assert_eq!(config["basic.auth.user.info"], "[hidden]", "{config}");
    assert_eq!(config["schema.registry.url"], json!(b.serve.base));
    let (status, _) = a.call("PUT", "/exporters/to-b/pause", None).await;
    assert_eq!(status, 200);
    let (status, refused) = a
        .call(
            "PUT",
            "/exporters/to-b/config",
            Some(json!({"bearer.auth.token": "[hidden]"})),
        )
        .await;
    assert_eq!(
        (status, &refused["error_code"]),
        (409, &json!(40951)),
        "a placeholder with nothing stored behind it: {refused}"
    );
    let (status, answer) = a
        .call("PUT", "/exporters/to-b/config", Some(config.clone()))
        .await;
    assert_eq!(status, 200, "{answer}");
    let (status, _) = a.call("PUT", "/exporters/to-b/resume", None).await;
    assert_eq!(status, 200);
    a.register(
        "team-a-orders",
        json!({"schema": record("Order", &["id", "note"])}),
    )
    .await;
    wait_status(&a, "to-b", "after the config round trip", caught_up).await;
    assert_eq!(
        versions(&b, "team-a-orders").await,
        json!([1, 2]),
        "the kept password still reaches B"
    );

    // Alice's grants narrowed to team-a-orders: team-a-payments is no longer copied.
    revoke(&a_auth, "alice", "Read", "SubjectPrefix:team-a");
    grant(&a_auth, "alice", "Read", "SubjectPrefix:team-a-orders");
    // The auth file is re-read within a second of a change.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    a.register(
        "team-a-payments",
        json!({"schema": record("Payment", &["id", "cents"])}),
    )
    .await;
    a.register(
        "team-a-orders",
        json!({"schema": record("Order", &["id", "note", "tag"])}),
    )
    .await;
    let status = wait_status(&a, "to-b", "after narrowing", |s| {
        caught_up(s)
            && s["trace"]
                .as_str()
                .is_some_and(|t| t.contains("3 subjects"))
    })
    .await;
    assert_eq!(versions(&b, "team-a-orders").await, json!([1, 2, 3]));
    assert_eq!(
        versions(&b, "team-a-payments").await,
        json!([1]),
        "no longer readable by the creator: {status}"
    );
    assert_eq!(versions(&a, "team-a-payments").await, json!([1, 2]));

    // Alice may no longer administer the registry: the exporter pauses itself.
    revoke(&a_auth, "alice", "Admin", "Config:");
    let status = wait_status(&a, "to-b", "after losing Admin", |s| s["state"] == "PAUSED").await;
    assert!(
        status["trace"]
            .as_str()
            .is_some_and(|t| t.contains("creator no longer may administer")),
        "{status}"
    );
    a.register(
        "team-a-orders",
        json!({"schema": record("Order", &["id", "note", "tag", "x"])}),
    )
    .await;
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert_eq!(versions(&b, "team-a-orders").await, json!([1, 2, 3]));
    // Resumed by root, it still runs as alice, and pauses again.
    let (status, _) = a.call("PUT", "/exporters/to-b/resume", None).await;
    assert_eq!(status, 200);
    wait_status(&a, "to-b", "resumed without the right", |s| {
        s["state"] == "PAUSED"
    })
    .await;
    assert_eq!(versions(&b, "team-a-orders").await, json!([1, 2, 3]));
    let (status, refused) = alice
        .call(
            "POST",
            "/exporters",
            Some(json!({"name": "again", "config": {"schema.registry.url": b.serve.base}})),
        )
        .await;
    assert_eq!(status, 403, "{refused}");
}

async fn create_named(a: &Node, name: &str, config: Value) {
    let body = json!({"name": name, "contextType": "NONE", "config": config});
    let (status, answer) = a.call("POST", "/exporters", Some(body)).await;
    assert_eq!(status, 200, "{answer}");
}

/// A stand-in destination answering every request with HTTP 500 and `body`.
async fn failing_destination(body: String) -> u16 {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("bind");
    let port = listener.local_addr().expect("address").port();
    tokio::spawn(async move {
        while let Ok((mut socket, _)) = listener.accept().await {
            let body = body.clone();
            tokio::spawn(async move {
                let mut head = Vec::new();
                let mut buf = [0u8; 4096];
                while !head.windows(4).any(|w| w == b"\r\n\r\n") {
                    match socket.read(&mut buf).await {
                        Ok(0) | Err(_) => return,
                        Ok(n) => head.extend_from_slice(&buf[..n]),
                    }
                }
                let response = format!(
                    "HTTP/1.1 500 Internal Server Error\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = socket.write_all(response.as_bytes()).await;
                let _ = socket.shutdown().await;
            });
        }
    });
    port
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn exporter_status_shows_no_credential_no_raw_reply_and_no_file_detail() {
    let dir = tempfile::tempdir().expect("tempdir");
    let a = Node::start(support::free_port(), &dir.path().join("a"), None).await;
    a.register("orders", json!({"schema": record("Order", &["id"])}))
        .await;
    let message = format!(
        "\u{1b}[31mboom\r\nInjected-Header: x {} REPLY-TAIL-MARKER",
        "y".repeat(300)
    );
    let failing =
        failing_destination(json!({"error_code": 50001, "message": message}).to_string()).await;
    let closed = support::free_port();
    let garbage = support::write(dir.path(), "not-a-ca.pem", "not a certificate\n");
    create_named(
        &a,
        "failing",
        json!({
            "schema.registry.url": format!("http://dest-user:url-pw-98765@127.0.0.1:{failing}"),
            "basic.auth.user.info": "u:basic-pw-4321",
        }),
    )
    .await;
    create_named(
        &a,
        "unreachable",
        json!({"schema.registry.url": format!("http://who:unreach-pw-555@127.0.0.1:{closed}")}),
    )
    .await;
    create_named(
        &a,
        "ca-missing",
        json!({
            "schema.registry.url": format!("https://127.0.0.1:{failing}"),
            "schema.registry.ssl.ca.location": dir.path().join("no-such-ca.pem"),
        }),
    )
    .await;
    create_named(
        &a,
        "ca-garbage",
        json!({
            "schema.registry.url": format!("https://127.0.0.1:{failing}"),
            "schema.registry.ssl.ca.location": garbage,
        }),
    )
    .await;
    let traced = |s: &Value| s["trace"].as_str().is_some_and(|t| !t.is_empty());

    let status = wait_status(&a, "failing", "the failing destination", traced).await;
    let trace = status["trace"].as_str().unwrap_or_default().to_string();
    assert!(trace.contains("HTTP 500"), "{trace}");
    assert!(trace.contains(&format!("127.0.0.1:{failing}")), "{trace}");
    assert!(trace.contains("boom"), "a summary of the reply: {trace}");
    for leak in [
        "url-pw-98765",
        "dest-user",
        "basic-pw-4321",
        "REPLY-TAIL-MARKER",
        "/subjects/orders",
    ] {
        assert!(!trace.contains(leak), "{leak} in {trace}");
    }
    assert!(!trace.chars().any(char::is_control), "{trace:?}");
    assert!(trace.chars().count() < 400, "{trace}");

    let status = wait_status(&a, "unreachable", "the closed port", traced).await;
    let trace = status["trace"].as_str().unwrap_or_default();
    assert!(
        trace.contains(&format!("cannot reach http://127.0.0.1:{closed}")),
        "{trace}"
    );
    assert!(
        !trace.contains("unreach-pw-555") && !trace.contains("who"),
        "{trace}"
    );

    let missing = wait_status(&a, "ca-missing", "the missing CA file", traced).await;
    let unusable = wait_status(&a, "ca-garbage", "the CA file that is no CA", traced).await;
    assert_eq!(
        missing["trace"], "the TLS settings could not be loaded",
        "{missing}"
    );
    assert_eq!(
        missing["trace"], unusable["trace"],
        "the file's existence is not told"
    );

    let (_, config) = a.call("GET", "/exporters/failing/config", None).await;
    assert_eq!(config["basic.auth.user.info"], "[hidden]", "{config}");
    assert_eq!(
        config["schema.registry.url"],
        json!(format!("http://[hidden]@127.0.0.1:{failing}"))
    );
    assert!(!config.to_string().contains("pw"), "{config}");
}

/// A's audit entries for `operation`, newest last.
async fn audit_of(a: &Node, operation: &str) -> Vec<Value> {
    let (status, page) = a.call("GET", "/covenant/v1/audit?limit=500", None).await;
    assert_eq!(status, 200, "{page}");
    page["entries"]
        .as_array()
        .cloned()
        .unwrap_or_default()
        .into_iter()
        .filter(|e| e["operation"] == operation)
        .collect()
}

/// A's `covenant_exporter_conflicts_total` for `name` (0 when not yet counted).
async fn conflicts_counted(a: &Node, name: &str) -> u64 {
    let text = a
        .http
        .get(format!("{}/metrics", a.serve.base))
        .send()
        .await
        .expect("metrics")
        .text()
        .await
        .expect("metrics text");
    let series = format!("covenant_exporter_conflicts_total{{exporter=\"{name}\"}} ");
    text.lines()
        .find_map(|l| l.strip_prefix(&series))
        .map_or(0, |n| n.trim().parse().expect("count"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_destination_that_diverged_pauses_the_exporter_and_keeps_its_own_versions() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a_port, b_port) = (support::free_port(), support::free_port());
    let a = Node::start(a_port, &dir.path().join("a"), None).await;
    let b = Node::start(b_port, &dir.path().join("b"), None).await;
    a.register("orders", json!({"schema": record("Order", &["id"])}))
        .await;
    create_exporter(&a, b_port).await;
    wait_status(&a, "to-b", "first copy", caught_up).await;

    // B's copy is in IMPORT mode: a plain registration there is refused, so B cannot draw an
    // id of its own for the subject. Confluent: `checkRegisterMode` in
    // core/src/main/java/io/confluent/kafka/schemaregistry/storage/KafkaSchemaRegistry.java
    // (confluentinc/schema-registry at 0051297) throws "Subject ... is not in read-write
    // mode" (42205) for a request without an id unless the mode is READWRITE, after the fast
    // path in `registerOrForward` has answered a schema the subject already holds.
    let (status, refused) = b
        .call(
            "POST",
            "/subjects/orders/versions",
            Some(json!({"schema": record("Order", &["id", "mine"])})),
        )
        .await;
    assert_eq!(
        (status, &refused["error_code"]),
        (422, &json!(42205)),
        "{refused}"
    );
    // Someone imports a version 2 of their own into B anyway.
    let theirs = record("Order", &["id", "theirs"]);
    let (status, imported) = b
        .call(
            "POST",
            "/subjects/orders/versions",
            Some(json!({"schema": theirs, "id": 50, "version": 2})),
        )
        .await;
    assert_eq!(status, 200, "{imported}");

    // A's own version 2 (id 2) meets B's: the exporter stops and says why.
    let ours = a
        .register(
            "orders",
            json!({"schema": record("Order", &["id", "ours"])}),
        )
        .await;
    assert_eq!(ours, 2);
    let paused = wait_status(&a, "to-b", "the conflict", |s| s["state"] == "PAUSED").await;
    let trace = paused["trace"].as_str().expect("trace");
    assert!(
        trace.starts_with("conflict: version 2 has schema id 50 at the destination and 2 here"),
        "{trace}"
    );
    assert!(trace.contains("nothing was overwritten"), "{trace}");
    assert!(!trace.contains("orders"), "traces name no subject: {trace}");
    let pauses = audit_of(&a, "exporter.pause").await;
    let detail = pauses.last().expect("an exporter.pause entry")["detail"].to_string();
    assert!(detail.contains("conflict in subject orders"), "{detail}");
    assert_eq!(conflicts_counted(&a, "to-b").await, 1);
    // B keeps what it holds.
    let (_, kept) = b.call("GET", "/subjects/orders/versions/2", None).await;
    assert_eq!((&kept["id"], &kept["schema"]), (&json!(50), &json!(theirs)));

    // Mended: B's version goes, the exporter is reset and resumed, and B converges on A.
    for query in ["", "?permanent=true"] {
        let (status, answer) = b
            .call(
                "DELETE",
                &format!("/subjects/orders/versions/2{query}"),
                None,
            )
            .await;
        assert_eq!(status, 200, "{answer}");
    }
    for step in ["reset", "resume"] {
        let (status, answer) = a
            .call("PUT", &format!("/exporters/to-b/{step}"), None)
            .await;
        assert_eq!(status, 200, "{step}: {answer}");
    }
    wait_status(&a, "to-b", "recovery", caught_up).await;
    converge(
        &a,
        &b,
        Duration::from_secs(20),
        "after the conflict was mended",
    )
    .await;

    // An id B gave to other content: the registration is refused there, and that is a
    // conflict too, not a failure retried forever.
    let (status, _) = b
        .call(
            "PUT",
            "/mode/elsewhere?force=true",
            Some(json!({"mode": "IMPORT"})),
        )
        .await;
    assert_eq!(status, 200);
    let (status, taken) = b
        .call(
            "POST",
            "/subjects/elsewhere/versions",
            Some(json!({"schema": record("Elsewhere", &["x"]), "id": 3, "version": 1})),
        )
        .await;
    assert_eq!(status, 200, "{taken}");
    a.register(
        "orders",
        json!({"schema": record("Order", &["id", "ours", "more"])}),
    )
    .await;
    let paused = wait_status(&a, "to-b", "the id conflict", |s| s["state"] == "PAUSED").await;
    let trace = paused["trace"].as_str().expect("trace");
    assert!(
        trace.starts_with("conflict: the destination refused version 3 with schema id 3"),
        "{trace}"
    );
    assert_eq!(conflicts_counted(&a, "to-b").await, 2);
    let (status, _) = b.call("GET", "/subjects/orders/versions/3", None).await;
    assert_eq!(status, 404, "nothing was written over B's id 3");
}

/// `node`'s own config at `path` (`/config`, `/config/:.eu:`), its level or null.
async fn level_at(node: &Node, path: &str) -> Value {
    let (_, config) = node
        .call("GET", &format!("{path}?defaultToGlobal=false"), None)
        .await;
    config["compatibilityLevel"].clone()
}

/// Waits until `node`'s level at `path` is `level`.
async fn wait_level(node: &Node, path: &str, level: &str) {
    let started = Instant::now();
    while level_at(node, path).await != json!(level) {
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "{path}: {} instead of {level}",
            level_at(node, path).await
        );
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn global_and_context_configs_follow_the_contexts_an_exporter_owns() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a_port, b_port) = (support::free_port(), support::free_port());
    let a = Node::start(a_port, &dir.path().join("a"), None).await;
    let b = Node::start(b_port, &dir.path().join("b"), None).await;
    a.register("orders", json!({"schema": record("Order", &["id"])}))
        .await;
    a.register(":.eu:orders", json!({"schema": record("EuOrder", &["id"])}))
        .await;
    let set = |path: &'static str, level: &'static str| {
        let a = &a;
        async move {
            let (status, answer) = a
                .call("PUT", path, Some(json!({"compatibility": level})))
                .await;
            assert_eq!(status, 200, "{path}: {answer}");
        }
    };
    // Set before the exporter exists: its first copy takes it.
    set("/config", "FORWARD").await;
    // One exporter owns everything and keeps contexts as they are; one owns only some
    // subjects; one folds everything into the context `dr`.
    create_exporter(&a, b_port).await;
    let b_url = format!("http://127.0.0.1:{b_port}");
    for (name, context, subjects) in [("some", "some", "orders*"), ("folded", "dr", "*")] {
        let body = json!({"name": name, "contextType": "CUSTOM", "context": context,
                          "subjects": [subjects], "config": {"schema.registry.url": b_url}});
        let (status, answer) = a.call("POST", "/exporters", Some(body)).await;
        assert_eq!(status, 200, "{answer}");
    }
    wait_level(&b, "/config", "FORWARD").await;
    wait_level(&b, "/config/:.dr:", "FORWARD").await;

    // Changed later: followed from the trail, the global and the context's own.
    set("/config", "FULL").await;
    set("/config/:.eu:", "NONE").await;
    wait_level(&b, "/config", "FULL").await;
    wait_level(&b, "/config/:.dr:", "FULL").await;
    wait_level(&b, "/config/:.eu:", "NONE").await;
    for name in ["to-b", "some", "folded"] {
        wait_status(&a, name, "caught up", caught_up).await;
    }
    // The exporter that owns only some subjects wrote no context config.
    assert_eq!(level_at(&b, "/config/:.some:").await, Value::Null);

    // Settled: nothing more is written once they agree.
    let (_, before) = b.call("GET", "/covenant/v1/audit?limit=500", None).await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (_, after) = b.call("GET", "/covenant/v1/audit?limit=500", None).await;
    assert_eq!(
        before["entries"].as_array().map(Vec::len),
        after["entries"].as_array().map(Vec::len),
        "B's trail grew with nothing to copy"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn on_postgres_an_exporter_to_another_node_of_its_own_database_writes_nothing() {
    let Some(db) = TestDb::create("covenant_exporter_loop").await else {
        eprintln!("skipped: {} is not set", support::POSTGRES_ENV);
        return;
    };
    let dir = tempfile::tempdir().expect("tempdir");
    let first = Node::start(support::free_port(), &dir.path().join("n1"), Some(&db.url)).await;
    let second_port = support::free_port();
    let second = Node::start(second_port, &dir.path().join("n2"), Some(&db.url)).await;
    first
        .register("orders", json!({"schema": record("Order", &["id"])}))
        .await;
    let (status, _) = first
        .call("PUT", "/config", Some(json!({"compatibility": "FULL"})))
        .await;
    assert_eq!(status, 200);
    create_kek(&first, "orders_kek", "arn:aws:kms:eu-west-1:1:key/orders").await;
    create_dek(&first, "orders_kek", "orders", 1, "b3JkZXJzLTE=").await;
    // The destination is the same registry behind another node (another process, so another
    // instance identity): everything it would copy, keys included, is already there.
    create_exporter(&first, second_port).await;
    wait_status(&first, "to-b", "settled", caught_up).await;
    let (_, before) = first
        .call("GET", "/covenant/v1/audit?limit=500", None)
        .await;
    tokio::time::sleep(Duration::from_secs(3)).await;
    let (_, after) = first
        .call("GET", "/covenant/v1/audit?limit=500", None)
        .await;
    let count = |page: &Value| page["entries"].as_array().map_or(0, Vec::len);
    assert_eq!(count(&before), count(&after), "{after}");
    let (_, mode) = second
        .call("GET", "/mode/orders?defaultToGlobal=true", None)
        .await;
    assert_eq!(
        mode["mode"], "READWRITE",
        "the subject was not put in IMPORT mode"
    );
    let status = first.status("to-b").await;
    assert!(caught_up(&status), "{status}");
    drop((first, second));
    db.drop_db().await;
}

const KEKS: &str = "/dek-registry/v1/keks";

/// Creates a KEK on `node` for the KMS key `key_id`.
async fn create_kek(node: &Node, name: &str, key_id: &str) {
    let body = json!({"name": name, "kmsType": "aws-kms", "kmsKeyId": key_id,
        "kmsProps": {"region": "eu-west-1"}, "doc": "orders key"});
    let (status, answer) = node.call("POST", KEKS, Some(body)).await;
    assert_eq!(status, 200, "{answer}");
}

/// Creates version `version` of `subject`'s DEK under `kek` with `material`.
async fn create_dek(node: &Node, kek: &str, subject: &str, version: i64, material: &str) {
    let body = json!({"version": version, "algorithm": "AES256_GCM",
        "encryptedKeyMaterial": material});
    let path = format!("{KEKS}/{kek}/deks/{subject}");
    let (status, answer) = node.call("POST", &path, Some(body)).await;
    assert_eq!(status, 200, "{answer}");
}

/// `subject`'s DEK versions under `kek` on `node` (soft-deleted ones too), each with its
/// encrypted material and whether it is deleted; `None` when the node has none.
async fn deks_of(node: &Node, kek: &str, subject: &str) -> Option<Vec<Value>> {
    let path = format!("{KEKS}/{kek}/deks/{subject}/versions?deleted=true");
    let (status, versions) = node.call("GET", &path, None).await;
    assert!(status == 200 || status == 404, "{status}: {versions}");
    if status == 404 || versions.as_array().is_some_and(Vec::is_empty) {
        return None;
    }
    let mut out = Vec::new();
    for v in versions.as_array().cloned().unwrap_or_default() {
        let path = format!("{KEKS}/{kek}/deks/{subject}/versions/{v}?deleted=true");
        let (status, dek) = node.call("GET", &path, None).await;
        assert_eq!(status, 200, "{dek}");
        out.push(json!({"version": v, "algorithm": dek["algorithm"],
            "encryptedKeyMaterial": dek["encryptedKeyMaterial"], "deleted": dek["deleted"]}));
    }
    Some(out)
}

/// A KEK as `node` answers it, without its time.
async fn kek_on(node: &Node, name: &str) -> (u16, Value) {
    let (status, mut kek) = node
        .call("GET", &format!("{KEKS}/{name}?deleted=true"), None)
        .await;
    if let Some(kek) = kek.as_object_mut() {
        kek.remove("ts");
    }
    (status, kek)
}

/// Every entry of `node`'s audit trail.
async fn trail(node: &Node) -> Vec<Value> {
    let (status, page) = node.call("GET", "/covenant/v1/audit?limit=500", None).await;
    assert_eq!(status, 200, "{page}");
    page["entries"].as_array().cloned().unwrap_or_default()
}

/// Waits until `check` holds on B.
async fn wait_on<F, Fut>(what: &str, check: F)
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = bool>,
{
    let started = Instant::now();
    while !check().await {
        assert!(started.elapsed() < Duration::from_secs(30), "{what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exporter_copies_the_keys_of_its_subjects_and_nothing_else() {
    let dir = tempfile::tempdir().expect("tempdir");
    let (a_port, b_port) = (support::free_port(), support::free_port());
    let a = Node::start(a_port, &dir.path().join("a"), None).await;
    let b = Node::start(b_port, &dir.path().join("b"), None).await;
    a.register("orders-value", json!({"schema": record("Order", &["id"])}))
        .await;
    a.register("secret-value", json!({"schema": record("Secret", &["id"])}))
        .await;
    create_kek(&a, "orders_kek", "arn:aws:kms:eu-west-1:1:key/orders").await;
    create_kek(&a, "secret_kek", "arn:aws:kms:eu-west-1:1:key/secret").await;
    create_dek(&a, "orders_kek", "orders-value", 1, "b3JkZXJzLTE=").await;
    create_dek(&a, "orders_kek", "orders-value", 2, "b3JkZXJzLTI=").await;
    create_dek(&a, "orders_kek", "secret-value", 1, "c2VjcmV0LWE=").await;
    create_dek(&a, "secret_kek", "secret-value", 1, "c2VjcmV0LWI=").await;
    let path = format!("{KEKS}/orders_kek/deks/orders-value/versions/1");
    let (status, _) = a.call("DELETE", &path, None).await;
    assert_eq!(status, 204);

    let body = json!({"name": "to-b", "contextType": "NONE", "subjects": ["orders-value"],
        "config": {"schema.registry.url": format!("http://127.0.0.1:{b_port}")}});
    let (status, created) = a.call("POST", "/exporters", Some(body)).await;
    assert_eq!(status, 200, "{created}");
    wait_status(&a, "to-b", "first copy", caught_up).await;

    // The exported subject's DEKs, both versions, one soft-deleted, with A's material.
    let ours = deks_of(&a, "orders_kek", "orders-value").await;
    assert_eq!(ours.as_ref().map(Vec::len), Some(2), "{ours:?}");
    assert_eq!(deks_of(&b, "orders_kek", "orders-value").await, ours);
    assert_eq!(
        kek_on(&b, "orders_kek").await,
        kek_on(&a, "orders_kek").await
    );
    // Nothing of the subject that is not exported: neither its DEK nor its own KEK.
    assert_eq!(deks_of(&b, "orders_kek", "secret-value").await, None);
    assert_eq!(kek_on(&b, "secret_kek").await.0, 404);

    // Copying everything again writes nothing on B.
    let before = trail(&b).await;
    assert!(
        before.iter().any(|e| e["operation"] == "dek.create"),
        "{before:?}"
    );
    for step in ["pause", "reset", "resume"] {
        let (status, answer) = a
            .call("PUT", &format!("/exporters/to-b/{step}"), None)
            .await;
        assert_eq!(status, 200, "{step}: {answer}");
    }
    wait_status(&a, "to-b", "the copy again", caught_up).await;
    assert_eq!(trail(&b).await, before, "a second copy wrote on B");
    assert!(
        !format!("{before:?}").contains("b3JkZXJz"),
        "no key material in B's trail"
    );

    // Changes follow: a DEK soft-deleted, a new version, the KEK's doc.
    let path = format!("{KEKS}/orders_kek/deks/orders-value/versions/2");
    let (status, _) = a.call("DELETE", &path, None).await;
    assert_eq!(status, 204);
    create_dek(&a, "orders_kek", "orders-value", 3, "b3JkZXJzLTM=").await;
    let (status, _) = a
        .call(
            "PUT",
            &format!("{KEKS}/orders_kek"),
            Some(json!({"doc": "orders key, rotated"})),
        )
        .await;
    assert_eq!(status, 200);
    wait_on("the changes reach B", || async {
        deks_of(&b, "orders_kek", "orders-value").await
            == deks_of(&a, "orders_kek", "orders-value").await
            && kek_on(&b, "orders_kek").await == kek_on(&a, "orders_kek").await
    })
    .await;

    // A KEK of the same name for another KMS key on B: the exporter pauses, B keeps its own.
    create_kek(&b, "shared_name", "arn:aws:kms:eu-west-1:2:key/theirs").await;
    create_kek(&a, "shared_name", "arn:aws:kms:eu-west-1:1:key/ours").await;
    create_dek(&a, "shared_name", "orders-value", 1, "b3Vycw==").await;
    let paused = wait_status(&a, "to-b", "the KEK conflict", |s| s["state"] == "PAUSED").await;
    let trace = paused["trace"].as_str().expect("trace");
    assert!(
        trace.starts_with(
            "conflict: a KEK of the subject's DEKs is held at the destination for another KMS key"
        ),
        "{trace}"
    );
    assert!(trace.contains("nothing was overwritten"), "{trace}");
    for name in ["orders-value", "shared_name", "b3Vycw"] {
        assert!(!trace.contains(name), "{name} in the trace: {trace}");
    }
    let pauses = audit_of(&a, "exporter.pause").await;
    let detail = pauses.last().expect("an exporter.pause entry")["detail"].to_string();
    assert!(
        detail.contains("conflict in subject orders-value") && detail.contains("shared_name"),
        "{detail}"
    );
    assert!(!detail.contains("b3Vycw"), "{detail}");
    assert_eq!(conflicts_counted(&a, "to-b").await, 1);
    let (_, theirs) = kek_on(&b, "shared_name").await;
    assert_eq!(theirs["kmsKeyId"], "arn:aws:kms:eu-west-1:2:key/theirs");
    assert_eq!(deks_of(&b, "shared_name", "orders-value").await, None);
}
