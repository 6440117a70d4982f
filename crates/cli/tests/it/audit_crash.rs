//! Crash safety of the audit trail for governance writes: clients stream consumer
//! declarations and deprecation stage changes, the server is killed with SIGKILL in the middle
//! of the stream, and after a restart on the same store every acknowledged write has its entry
//! (found by the request id the client saw) and the trail holds exactly one entry per change
//! that is in the store: as many `consumer.create` entries as consumers, and as many
//! `deprecation.stage` entries for a record as its history has stage changes. An entry written
//! apart from its change would show up here as a missing or an extra one.

use crate::support;

use serde_json::{Value, json};
use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};
use support::{Serve, TestDb, V1, wait_ready};

const CONSUMER_CLIENTS: usize = 2;
const STAGE_CLIENTS: usize = 2;
/// Acknowledged writes to wait for before the kill.
const ACKS_BEFORE_KILL: usize = 60;

/// Acknowledged writes: `(operation, request id)`, and the consumers declared.
#[derive(Default)]
struct Acks {
    writes: Vec<(&'static str, String)>,
    consumers: Vec<String>,
}

type Shared = Arc<Mutex<Acks>>;

fn start(data: &Path, store: Option<&str>) -> Serve {
    Serve::spawn(data, |c| {
        if let Some(url) = store {
            c.args(["--store", url]);
        }
    })
}

/// POSTs `body`; the answer and its request id when it succeeded, `None` otherwise (refused,
/// or the server died).
async fn post(http: &reqwest::Client, url: &str, body: &Value) -> Option<(Value, String)> {
    let response = http
        .post(url)
        .header("content-type", V1)
        .body(body.to_string())
        .send()
        .await
        .ok()?;
    if !response.status().is_success() {
        return None;
    }
    let request_id = response
        .headers()
        .get("x-request-id")?
        .to_str()
        .ok()?
        .to_string();
    Some((response.json().await.ok()?, request_id))
}

/// Declares consumers `c<client>-<n>` until the server stops answering.
async fn declare_consumers(http: reqwest::Client, base: String, client: usize, acks: Shared) {
    for n in 0.. {
        let name = format!("c{client}-{n}");
        let body = json!({
            "name": name, "owner": "team", "purpose": "crash test", "cadence": "daily",
            "criticality": "low", "contact": "team@example.com", "clients": [], "reads": [],
        });
        let Some((_, id)) = post(&http, &format!("{base}/covenant/v1/consumers"), &body).await
        else {
            break;
        };
        let mut a = acks.lock().expect("acks");
        a.writes.push(("consumer.create", id));
        a.consumers.push(name);
    }
}

/// Moves deprecation `dep` between `announced` and `frozen` until the server stops answering.
async fn toggle_stage(http: reqwest::Client, base: String, dep: i64, acks: Shared) {
    let url = format!("{base}/covenant/v1/deprecations/{dep}/stage");
    for to in ["frozen", "announced"].into_iter().cycle() {
        let Some((_, id)) = post(&http, &url, &json!({"to": to, "by": "crash-test"})).await else {
            break;
        };
        acks.lock()
            .expect("acks")
            .writes
            .push(("deprecation.stage", id));
    }
}

async fn get(http: &reqwest::Client, url: &str) -> Value {
    let response = http.get(url).send().await.expect("read back");
    assert!(response.status().is_success(), "GET {url}");
    response.json().await.expect("json")
}

/// The whole trail, page by page.
async fn trail(http: &reqwest::Client, base: &str) -> Vec<Value> {
    let mut entries = Vec::new();
    let mut after = 0;
    loop {
        let page = get(
            http,
            &format!("{base}/covenant/v1/audit?limit=1000&after={after}"),
        )
        .await;
        entries.extend(page["entries"].as_array().cloned().unwrap_or_default());
        match page["next"].as_i64() {
            Some(next) => after = next,
            None => return entries,
        }
    }
}

/// Opens one deprecation per stage client, on fields of a registered subject.
async fn open_deprecations(http: &reqwest::Client, base: &str) -> Vec<i64> {
    let mut ids = Vec::new();
    for n in 0..STAGE_CLIENTS {
        let body = json!({
            "target": {"kind": "field", "subject": "crash-value", "path": format!("f{n}")},
            "old_promise": "the field exists", "new_promise": "it goes away",
            "replacement": "g",
        });
        let (record, _) = post(http, &format!("{base}/covenant/v1/deprecations"), &body)
            .await
            .expect("a deprecation opens");
        ids.push(record["id"].as_i64().expect("deprecation id"));
    }
    ids
}

/// Streams writes from every client and kills the server once enough were acknowledged.
async fn stream_and_kill(server: &mut Serve, http: &reqwest::Client, deps: &[i64]) -> Acks {
    let acks: Shared = Arc::default();
    let mut tasks = Vec::new();
    for c in 0..CONSUMER_CLIENTS {
        let (http, base, acks) = (http.clone(), server.base.clone(), acks.clone());
        tasks.push(tokio::spawn(declare_consumers(http, base, c, acks)));
    }
    for &dep in deps {
        let (http, base, acks) = (http.clone(), server.base.clone(), acks.clone());
        tasks.push(tokio::spawn(toggle_stage(http, base, dep, acks)));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while acks.lock().expect("acks").writes.len() < ACKS_BEFORE_KILL && Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.kill().expect("SIGKILL");
    for t in tasks {
        t.await.expect("client task");
    }
    std::mem::take(&mut *acks.lock().expect("acks"))
}

/// What the restarted server's trail and store say, compared with what was acknowledged.
async fn check_after_restart(base: &str, http: &reqwest::Client, deps: &[i64], acks: &Acks) {
    let entries = trail(http, base).await;
    let mut by_request: HashMap<String, Vec<String>> = HashMap::new();
    let mut per_target: BTreeMap<(String, String), usize> = BTreeMap::new();
    for e in &entries {
        let op = e["operation"].as_str().unwrap_or_default().to_string();
        let detail = e["detail"].as_str().unwrap_or_default().to_string();
        *per_target.entry((op.clone(), detail)).or_default() += 1;
        if let Some(id) = e["request_id"].as_str() {
            by_request.entry(id.to_string()).or_default().push(op);
        }
    }
    let unrecorded: Vec<_> = acks
        .writes
        .iter()
        .filter(|(op, id)| by_request.get(id).map(Vec::as_slice) != Some(&[op.to_string()]))
        .collect();
    let consumers = get(
        http,
        &format!("{base}/covenant/v1/consumers?includeRetired=true"),
    )
    .await;
    let stored: Vec<&str> = consumers
        .as_array()
        .expect("consumer list")
        .iter()
        .filter_map(|c| c["name"].as_str())
        .collect();
    let lost: Vec<_> = acks
        .consumers
        .iter()
        .filter(|n| !stored.contains(&n.as_str()))
        .collect();
    let created = per_target
        .get(&("consumer.create".to_string(), String::new()))
        .copied()
        .unwrap_or(0);
    let mut stage_mismatches = Vec::new();
    for dep in deps {
        let record = get(http, &format!("{base}/covenant/v1/deprecations/{dep}")).await;
        let changes = record["history"].as_array().map_or(0, Vec::len) - 1;
        let key = (
            "deprecation.stage".to_string(),
            format!("deprecation {dep}"),
        );
        let recorded = per_target.get(&key).copied().unwrap_or(0);
        if changes != recorded {
            stage_mismatches.push((dep, changes, recorded));
        }
    }
    println!(
        "audit crash test: {} writes acknowledged before SIGKILL; after restart {} trail entries, \
         {} consumers stored for {} consumer.create entries, {} acknowledged writes without \
         their entry, {} lost consumers, stage history vs entries (id, changes, entries) \
         mismatched: {:?}",
        acks.writes.len(),
        entries.len(),
        stored.len(),
        created,
        unrecorded.len(),
        lost.len(),
        stage_mismatches
    );
    assert!(
        unrecorded.is_empty(),
        "acknowledged writes lack their single entry: {unrecorded:?}"
    );
    assert!(
        lost.is_empty(),
        "acknowledged consumers were lost: {lost:?}"
    );
    assert_eq!(
        created,
        stored.len(),
        "one consumer.create entry per stored consumer"
    );
    assert!(
        stage_mismatches.is_empty(),
        "stage changes and their entries differ"
    );
}

async fn crash_run(store: Option<&str>) {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let http = covenant_exporter::client::client();
    let mut server = start(&data, store);
    wait_ready(&http, &server.base).await;
    let deps = open_deprecations(&http, &server.base).await;
    let acks = stream_and_kill(&mut server, &http, &deps).await;
    assert!(
        acks.writes.len() >= ACKS_BEFORE_KILL / 2,
        "too few writes were acknowledged before the kill: {}",
        acks.writes.len()
    );
    let server = start(&data, store);
    wait_ready(&http, &server.base).await;
    check_after_restart(&server.base, &http, &deps, &acks).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn governance_writes_and_their_entries_survive_sigkill_together_on_sqlite() {
    crash_run(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn governance_writes_and_their_entries_survive_sigkill_together_on_postgres() {
    let Some(db) = TestDb::create("covenant_audit_crash").await else {
        eprintln!(
            "skipped: set {} to run against PostgreSQL",
            support::POSTGRES_ENV
        );
        return;
    };
    crash_run(Some(&db.url)).await;
    db.drop_db().await;
}
