//! Several `covenant serve` processes on one PostgreSQL database, driven over HTTP as clients
//! drive them: concurrent registrations and reads through every node, a node killed mid-stream,
//! and a database that goes away and comes back. Runs when `COVENANT_TEST_POSTGRES` holds an
//! admin URL (see `scripts/with-postgres.sh`); prints a notice and passes otherwise.

use crate::support;

use serde_json::{Value, json};
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};
use support::{Serve, TestDb, status_of};

async fn fresh_db(test: &str) -> Option<TestDb> {
    let db = TestDb::create("covenant_nodes").await;
    if db.is_none() {
        eprintln!(
            "{test}: {} is not set; skipping the multi-node PostgreSQL test",
            support::POSTGRES_ENV
        );
    }
    db
}

/// One `covenant serve` process and its data directory; killed when dropped.
struct Node {
    serve: Serve,
    base: String,
    _dir: tempfile::TempDir,
}

impl Node {
    fn start(store_url: &str) -> Node {
        let dir = tempfile::tempdir().expect("temp dir");
        let serve = Serve::spawn(dir.path(), |command| {
            command.args(["--store", store_url]).env("RUST_LOG", "warn");
        });
        Node {
            base: serve.base.clone(),
            serve,
            _dir: dir,
        }
    }

    /// Kills the process with SIGKILL: no shutdown, no flushing.
    fn kill(&mut self) {
        let _ = self.serve.kill();
    }

    fn is_running(&mut self) -> bool {
        self.serve.is_running()
    }
}

fn client() -> reqwest::Client {
    covenant_exporter::client::builder()
        .timeout(Duration::from_secs(30))
        .build()
        .expect("http client")
}

/// Two nodes on the database at `url`, both ready.
async fn two_ready_nodes(http: &reqwest::Client, url: &str) -> [Node; 2] {
    let nodes = [Node::start(url), Node::start(url)];
    for node in &nodes {
        wait_ready(http, node, 200, Duration::from_secs(30)).await;
    }
    nodes
}

/// Waits until `/health/ready` answers `want`, returning how long it took.
async fn wait_ready(http: &reqwest::Client, node: &Node, want: u16, within: Duration) -> Duration {
    support::wait_health(http, &node.base, "/health/ready", want, within).await
}

fn avro_record(name: &str) -> String {
    json!({
        "type": "record",
        "name": name,
        "fields": [{"name": "id", "type": "string"}]
    })
    .to_string()
}

/// Registers `schema` under `subject` on `base`; the id when acknowledged.
/// The text of an Avro record `name` with `fields` (name, type).
fn record(name: &str, fields: &[(&str, &str)]) -> String {
    let fields: Vec<Value> = fields
        .iter()
        .map(|(name, ty)| json!({"name": name, "type": ty}))
        .collect();
    json!({"type": "record", "name": name, "fields": fields}).to_string()
}

async fn register(
    http: &reqwest::Client,
    base: &str,
    subject: &str,
    schema: &str,
) -> Result<i64, String> {
    let response = http
        .post(format!("{base}/subjects/{subject}/versions"))
        .header("content-type", "application/vnd.schemaregistry.v1+json")
        .json(&json!({ "schema": schema }))
        .send()
        .await
        .map_err(|e| format!("request failed: {e}"))?;
    let status = response.status();
    let body: Value = response
        .json()
        .await
        .map_err(|e| format!("unreadable response: {e}"))?;
    if !status.is_success() {
        return Err(format!("HTTP {status}: {body}"));
    }
    body["id"]
        .as_i64()
        .ok_or_else(|| format!("no id in {body}"))
}

async fn get_json(http: &reqwest::Client, url: &str) -> Value {
    let response = http.get(url).send().await.expect("GET");
    assert!(
        response.status().is_success(),
        "GET {url}: {}",
        response.status()
    );
    response.json().await.expect("JSON body")
}

async fn set_compatibility_none(http: &reqwest::Client, base: &str) {
    let response = http
        .put(format!("{base}/config"))
        .json(&json!({"compatibility": "NONE"}))
        .send()
        .await
        .expect("PUT /config");
    assert!(response.status().is_success(), "PUT /config failed");
}

/// The record name of an Avro schema text, which the tests use as its identity.
fn record_name(schema: &str) -> String {
    serde_json::from_str::<Value>(schema)
        .ok()
        .and_then(|v| v["name"].as_str().map(str::to_string))
        .unwrap_or_default()
}

#[derive(Debug, Clone)]
struct Ack {
    subject: String,
    name: String,
    id: i64,
}

/// Reads every subject through `base` and checks the invariants against `acks`; returns
/// (subjects, versions) checked.
async fn check_invariants(http: &reqwest::Client, base: &str, acks: &[Ack]) -> (usize, usize) {
    let subjects: Vec<String> =
        serde_json::from_value(get_json(http, &format!("{base}/subjects")).await)
            .expect("subject list");
    let mut id_of_name: HashMap<String, i64> = HashMap::new();
    let mut name_of_id: HashMap<i64, String> = HashMap::new();
    let mut ids_in: BTreeMap<String, BTreeSet<i64>> = BTreeMap::new();
    let mut version_count = 0;
    for subject in &subjects {
        let versions: Vec<i64> = serde_json::from_value(
            get_json(http, &format!("{base}/subjects/{subject}/versions")).await,
        )
        .expect("version list");
        let expected: Vec<i64> = (1..=versions.len() as i64).collect();
        assert_eq!(
            versions, expected,
            "versions of '{subject}' are not contiguous"
        );
        let mut names_here = BTreeSet::new();
        for v in versions {
            let body = get_json(http, &format!("{base}/subjects/{subject}/versions/{v}")).await;
            let id = body["id"].as_i64().expect("id");
            let name = record_name(body["schema"].as_str().unwrap_or_default());
            assert!(
                names_here.insert(name.clone()),
                "'{subject}' holds '{name}' twice"
            );
            assert_eq!(
                *id_of_name.entry(name.clone()).or_insert(id),
                id,
                "schema '{name}' has two ids"
            );
            assert_eq!(
                *name_of_id.entry(id).or_insert(name.clone()),
                name,
                "id {id} carries two schemas"
            );
            ids_in.entry(subject.clone()).or_default().insert(id);
            version_count += 1;
        }
    }
    for ack in acks {
        assert!(
            ids_in
                .get(&ack.subject)
                .is_some_and(|ids| ids.contains(&ack.id)),
            "acknowledged {ack:?} is missing"
        );
        assert_eq!(id_of_name.get(&ack.name), Some(&ack.id), "{ack:?}");
    }
    (subjects.len(), version_count)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_nodes_serve_one_database_coherently() {
    let Some(db) = fresh_db("two_nodes_serve_one_database_coherently").await else {
        return;
    };
    let http = client();
    let nodes = two_ready_nodes(&http, &db.url).await;
    set_compatibility_none(&http, &nodes[0].base).await;
    let bases: Arc<Vec<String>> = Arc::new(nodes.iter().map(|n| n.base.clone()).collect());

    const CLIENTS: u64 = 16;
    const PER_CLIENT: u64 = 20;
    let started = Instant::now();
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let http = http.clone();
        let bases = bases.clone();
        tasks.push(tokio::spawn(async move {
            let mut acks = Vec::new();
            let mut cross_reads = 0u64;
            for i in 0..PER_CLIENT {
                let mix = c * 7 + i * 13;
                let subject = format!("nodes-{}", mix % 4);
                let name = format!("R{}", mix % 24);
                let writer = &bases[((c + i) % 2) as usize];
                let reader = &bases[((c + i + 1) % 2) as usize];
                let id = register(&http, writer, &subject, &avro_record(&name))
                    .await
                    .unwrap_or_else(|e| panic!("register on {writer}: {e}"));
                // Immediately readable by id on the other node.
                let body = get_json(&http, &format!("{reader}/schemas/ids/{id}")).await;
                assert_eq!(
                    record_name(body["schema"].as_str().unwrap_or_default()),
                    name,
                    "id {id} read through {reader}"
                );
                cross_reads += 1;
                acks.push(Ack { subject, name, id });
            }
            (acks, cross_reads)
        }));
    }
    let mut acks = Vec::new();
    let mut cross_reads = 0;
    for t in tasks {
        let (a, r) = t.await.expect("client task");
        acks.extend(a);
        cross_reads += r;
    }
    let elapsed = started.elapsed();
    let mut checked = (0, 0);
    for base in bases.iter() {
        checked = check_invariants(&http, base, &acks).await;
    }
    let distinct: BTreeSet<i64> = acks.iter().map(|a| a.id).collect();
    println!(
        "two nodes: {} acknowledged registrations and {} cross-node reads by {CLIENTS} clients \
         in {:.2}s; invariants checked through both nodes: {} subjects, {} versions, {} distinct ids",
        acks.len(),
        cross_reads,
        elapsed.as_secs_f64(),
        checked.0,
        checked.1,
        distinct.len()
    );
    drop(nodes);
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_killed_node_loses_nothing_acknowledged() {
    let Some(db) = fresh_db("a_killed_node_loses_nothing_acknowledged").await else {
        return;
    };
    let http = client();
    let mut victim = Node::start(&db.url);
    let survivor = Node::start(&db.url);
    wait_ready(&http, &victim, 200, Duration::from_secs(30)).await;
    wait_ready(&http, &survivor, 200, Duration::from_secs(30)).await;
    set_compatibility_none(&http, &survivor.base).await;

    const CLIENTS: u64 = 8;
    const PER_CLIENT: u64 = 30;
    let bases = Arc::new([victim.base.clone(), survivor.base.clone()]);
    let done = Arc::new(AtomicU64::new(0));
    let killed = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let http = http.clone();
        let bases = bases.clone();
        let done = done.clone();
        let killed = killed.clone();
        tasks.push(tokio::spawn(async move {
            let mut acks = Vec::new();
            let mut failovers = 0u64;
            let mut after_kill = 0u64;
            let mut target = (c % 2) as usize;
            for i in 0..PER_CLIENT {
                let subject = format!("failover-{}", c % 3);
                let name = format!("F{c}x{i}");
                let schema = avro_record(&name);
                let mut attempts = 0;
                let id = loop {
                    attempts += 1;
                    match register(&http, &bases[target], &subject, &schema).await {
                        Ok(id) => break id,
                        Err(_) if attempts < 20 => {
                            // Retrying the same registration is safe: it is idempotent.
                            failovers += 1;
                            target = 1;
                            tokio::time::sleep(Duration::from_millis(50)).await;
                        }
                        Err(e) => panic!("registration never succeeded: {e}"),
                    }
                };
                if killed.load(Ordering::SeqCst) {
                    after_kill += 1;
                }
                done.fetch_add(1, Ordering::SeqCst);
                acks.push(Ack { subject, name, id });
            }
            (acks, failovers, after_kill)
        }));
    }
    // Kill the first node once about a third of the work is acknowledged.
    while done.load(Ordering::SeqCst) < CLIENTS * PER_CLIENT / 3 {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let at_kill = done.load(Ordering::SeqCst);
    victim.kill();
    killed.store(true, Ordering::SeqCst);
    assert!(!victim.is_running());

    let mut acks = Vec::new();
    let mut failovers = 0;
    let mut after_kill = 0;
    for t in tasks {
        let (a, f, k) = t.await.expect("client task");
        acks.extend(a);
        failovers += f;
        after_kill += k;
    }
    let (subjects, versions) = check_invariants(&http, &survivor.base, &acks).await;
    assert_eq!(acks.len() as u64, CLIENTS * PER_CLIENT);
    assert_eq!(
        versions,
        acks.len(),
        "every schema is unique, so one version each"
    );
    println!(
        "failover: node killed after {at_kill} acknowledged registrations; {} acknowledged in all \
         ({after_kill} after the kill, {failovers} retried on the survivor); survivor holds all \
         of them: {subjects} subjects, {versions} versions",
        acks.len()
    );
    drop(survivor);
    db.drop_db().await;
}

/// A TCP forwarder to PostgreSQL that the test can cut and restore, standing in for a
/// database that goes away.
struct Switch {
    port: u16,
    up: Arc<AtomicBool>,
    connections: Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>>,
    acceptor: tokio::task::JoinHandle<()>,
}

impl Switch {
    async fn start(target: String) -> Switch {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
            .await
            .expect("bind");
        let port = listener.local_addr().expect("address").port();
        let up = Arc::new(AtomicBool::new(false));
        let connections: Arc<std::sync::Mutex<Vec<tokio::task::JoinHandle<()>>>> = Arc::default();
        let acceptor = {
            let up = up.clone();
            let connections = connections.clone();
            tokio::spawn(async move {
                while let Ok((mut inbound, _)) = listener.accept().await {
                    if !up.load(Ordering::SeqCst) {
                        drop(inbound);
                        continue;
                    }
                    let target = target.clone();
                    let handle = tokio::spawn(async move {
                        if let Ok(mut outbound) = tokio::net::TcpStream::connect(&target).await {
                            let _ =
                                tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                        }
                    });
                    if let Ok(mut list) = connections.lock() {
                        list.push(handle);
                    }
                }
            })
        };
        Switch {
            port,
            up,
            connections,
            acceptor,
        }
    }

    fn set(&self, up: bool) {
        self.up.store(up, Ordering::SeqCst);
        if !up && let Ok(mut list) = self.connections.lock() {
            for handle in list.drain(..) {
                handle.abort();
            }
        }
    }
}

impl Drop for Switch {
    fn drop(&mut self) {
        self.set(false);
        self.acceptor.abort();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_outlives_its_database_and_recovers() {
    let Some(db) = fresh_db("a_node_outlives_its_database_and_recovers").await else {
        return;
    };
    let config: tokio_postgres::Config = db.url.parse().expect("test URL");
    let port = config.get_ports().first().copied().unwrap_or(5432);
    let switch = Switch::start(format!("127.0.0.1:{port}")).await;
    let via_switch = format!(
        "postgres://{}@127.0.0.1:{}/{}",
        config.get_user().unwrap_or("postgres"),
        switch.port,
        db.name
    );
    let http = client();

    // Started while the database is unreachable: up, but not ready.
    let mut node = Node::start(&via_switch);
    let live = format!("{}/health/live", node.base);
    let started = Instant::now();
    while status_of(&http, &live).await != Some(200) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "node never came up"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    wait_ready(&http, &node, 503, Duration::from_secs(30)).await;
    assert!(node.is_running(), "the node exits without its database");

    switch.set(true);
    let recovered = wait_ready(&http, &node, 200, Duration::from_secs(30)).await;
    set_compatibility_none(&http, &node.base).await;
    let id = register(&http, &node.base, "outage", &avro_record("Before"))
        .await
        .expect("register once the database is back");

    switch.set(false);
    let noticed = wait_ready(&http, &node, 503, Duration::from_secs(30)).await;
    let refused = register(&http, &node.base, "outage", &avro_record("During")).await;
    assert!(
        refused.is_err(),
        "a write without a database is not acknowledged"
    );
    assert!(node.is_running());

    switch.set(true);
    let again = wait_ready(&http, &node, 200, Duration::from_secs(30)).await;
    let body = get_json(&http, &format!("{}/schemas/ids/{id}", node.base)).await;
    assert_eq!(
        record_name(body["schema"].as_str().unwrap_or_default()),
        "Before"
    );
    register(&http, &node.base, "outage", &avro_record("After"))
        .await
        .expect("register after the second outage");
    println!(
        "outage: not ready while the database was away; ready {:.1}s after it came up, \
         not ready {:.1}s after it went away, ready again {:.1}s after it returned",
        recovered.as_secs_f64(),
        noticed.as_secs_f64(),
        again.as_secs_f64()
    );
    drop(node);
    drop(switch);
    db.drop_db().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_permanent_delete_on_one_node_reaches_the_other_nodes_cache() {
    let Some(db) = fresh_db("a_permanent_delete_reaches_the_other_nodes_cache").await else {
        return;
    };
    let http = client();
    let nodes = two_ready_nodes(&http, &db.url).await;
    let (a, b) = (&nodes[0].base, &nodes[1].base);
    let id = register(&http, a, "coherent", &avro_record("Cached"))
        .await
        .expect("register");
    // Node B reads the id, so it now serves it from memory.
    for _ in 0..3 {
        get_json(&http, &format!("{b}/schemas/ids/{id}")).await;
    }
    for url in [
        format!("{a}/subjects/coherent"),
        format!("{a}/subjects/coherent?permanent=true"),
    ] {
        let r = http.delete(&url).send().await.expect("DELETE");
        assert!(r.status().is_success(), "DELETE {url}: {}", r.status());
    }
    let writer = status_of(&http, &format!("{a}/schemas/ids/{id}")).await;
    assert_eq!(writer, Some(404), "the writer forgets at once");
    let started = Instant::now();
    loop {
        let status = status_of(&http, &format!("{b}/schemas/ids/{id}")).await;
        if status == Some(404) {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(5),
            "node B still serves the deleted id after 5 s (status {status:?})"
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    println!(
        "cache coherence: the other node stopped serving a permanently deleted id after {} ms",
        started.elapsed().as_millis()
    );
    drop(nodes);
    db.drop_db().await;
}

/// A subject another node just created is judged by its versions on this node at once,
/// whether or not this node's change feed has told it yet: what a node assumes of a subject it
/// knows as new is checked under the subject's lock when it commits (forced in
/// `covenant-registry`'s `postgres_guesses`, where one node hears nothing).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_subject_created_on_one_node_is_judged_on_the_other_at_once() {
    let Some(db) = fresh_db("a_subject_created_on_one_node").await else {
        return;
    };
    let http = client();
    let nodes = two_ready_nodes(&http, &db.url).await;
    let (a, b) = (&nodes[0].base, &nodes[1].base);
    // Node B reads which subjects exist after its first registration, in the background.
    register(&http, b, "warm-up", &record("Created", &[("id", "string")]))
        .await
        .expect("warm-up");
    tokio::time::sleep(Duration::from_millis(300)).await;
    for round in 0..20 {
        let subject = format!("created-{round}");
        let first = record("Created", &[("id", "string")]);
        let id = register(&http, a, &subject, &first)
            .await
            .expect("created on node A");
        // A new required field without a default breaks BACKWARD.
        let breaking = record("Created", &[("id", "string"), ("n", "int")]);
        let refused = register(&http, b, &subject, &breaking).await;
        assert!(
            refused.as_ref().is_err_and(|e| e.starts_with("HTTP 409")),
            "round {round}: node B answered {refused:?} for a change node A's version forbids"
        );
        let again = register(&http, b, &subject, &first).await;
        assert_eq!(
            again,
            Ok(id),
            "round {round}: the same schema again on node B"
        );
        let versions: Value = http
            .get(format!("{b}/subjects/{subject}/versions"))
            .send()
            .await
            .expect("GET versions")
            .json()
            .await
            .expect("versions");
        assert_eq!(versions, json!([1]), "round {round}: nothing was added");
    }
    drop(nodes);
    db.drop_db().await;
}

/// A subject's compatibility set through one node judges the very next registration through
/// the other, with no wait for the change feed: whatever a registration read first, its commit
/// checks the settings in the database, in the write transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_set_on_one_node_judges_the_next_registration_on_the_other() {
    let Some(db) = fresh_db("a_config_set_on_one_node_judges_the_other").await else {
        return;
    };
    let http = client();
    let nodes = two_ready_nodes(&http, &db.url).await;
    let (a, b) = (&nodes[0].base, &nodes[1].base);
    let set_level = |level: &'static str, subject: String| {
        let http = http.clone();
        async move {
            let r = http
                .put(format!("{b}/config/{subject}"))
                .json(&json!({ "compatibility": level }))
                .send()
                .await
                .expect("PUT /config");
            assert!(
                r.status().is_success(),
                "PUT /config/{subject}: {}",
                r.status()
            );
        }
    };
    for round in 0..10 {
        let subject = format!("judged-{round}");
        register(&http, a, &subject, &record("Judged", &[("id", "string")]))
            .await
            .expect("first version");
        // A new required field without a default breaks BACKWARD.
        let added = format!("f{round}");
        let breaking = record("Judged", &[("id", "string"), (&added, "int")]);
        set_level("NONE", subject.clone()).await;
        register(&http, a, &subject, &breaking)
            .await
            .unwrap_or_else(|e| panic!("round {round}: NONE set on node B, node A refused: {e}"));
        set_level("BACKWARD", subject.clone()).await;
        let again = record("Judged", &[("id", "string"), (&added, "int"), ("g", "int")]);
        let refused = register(&http, a, &subject, &again).await;
        assert!(
            refused.as_ref().is_err_and(|e| e.starts_with("HTTP 409")),
            "round {round}: BACKWARD set on node B, node A answered {refused:?}"
        );
    }
    drop(nodes);
    db.drop_db().await;
}
