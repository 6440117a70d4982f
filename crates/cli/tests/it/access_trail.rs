//! Who did what, and who reads what, through a running `covenant serve`: schema fetches show
//! up under `/readers` per reader and block the removal of a deprecated field while the reader
//! is unattributed; declaring its consumer lets the removal through. The audit trail of the
//! scripted run lists every change with its principal and request id, and nothing for
//! the refused registration.
//!
//! Callers are told apart by their `User-Agent`, which is how anonymous requests are
//! attributed; with authentication on, a caller's reader name is its principal instead (see
//! [`Caller::reader`]). On SQLite always; on PostgreSQL too when `COVENANT_TEST_POSTGRES` is set.

use crate::support;

use serde_json::{Value, json};
use support::{Serve, TestDb, unique_tag};

/// One client of the registry.
struct Caller {
    user_agent: String,
    http: reqwest::Client,
}

impl Caller {
    fn new(user_agent: &str) -> Caller {
        Caller {
            user_agent: user_agent.to_string(),
            http: covenant_exporter::client::builder()
                .user_agent(user_agent)
                .build()
                .expect("client"),
        }
    }

    /// The name its reads are counted under: the principal when authenticated, the user agent
    /// of an anonymous request otherwise.
    fn reader(&self) -> String {
        self.user_agent.clone()
    }

    /// The actor the audit trail records for it.
    fn actor(&self) -> String {
        format!("anonymous ({})", self.user_agent)
    }

    /// Status, JSON answer and the `X-Request-Id` header.
    async fn send(
        &self,
        base: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (u16, Value, String) {
        let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
        let mut request = self.http.request(method, format!("{base}{path}"));
        if let Some(body) = body {
            request = request
                .header("content-type", support::V1)
                .body(body.to_string());
        }
        let response = request.send().await.expect("request");
        let status = response.status().as_u16();
        let id = response
            .headers()
            .get("x-request-id")
            .and_then(|v| v.to_str().ok())
            .unwrap_or_default()
            .to_string();
        let text = response.text().await.expect("body");
        let value = serde_json::from_str(&text).unwrap_or(Value::String(text));
        (status, value, id)
    }

    async fn ok(
        &self,
        base: &str,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> (Value, String) {
        let (status, value, id) = self.send(base, method, path, body).await;
        assert_eq!(status, 200, "{method} {path}: {value}");
        assert!(
            !id.is_empty(),
            "{method} {path} answered without X-Request-Id"
        );
        (value, id)
    }
}

fn schema(fields: Value) -> Value {
    json!({"schema": json!({"type": "record", "name": "Order", "fields": fields}).to_string()})
}

/// Entries of the trail by `actor`, following the pages.
async fn trail(admin: &Caller, base: &str, actor: &str) -> Vec<Value> {
    let mut out = Vec::new();
    let mut after = 0;
    loop {
        let path = format!(
            "/covenant/v1/audit?principal={}&after={after}&limit=3",
            actor
                .replace(' ', "%20")
                .replace('(', "%28")
                .replace(')', "%29")
        );
        let (page, _) = admin.ok(base, "GET", &path, None).await;
        out.extend(page["entries"].as_array().cloned().unwrap_or_default());
        match page["next"].as_i64() {
            Some(next) => after = next,
            None => return out,
        }
    }
}

async fn scripted_run(base: &str) {
    let tag = unique_tag();
    let subject = format!("orders{tag}-value");
    let admin = Caller::new(&format!("admin-cli{tag}"));
    let reader = Caller::new(&format!("billing-job{tag}/1.0"));
    let s = |rest: &str| format!("/subjects/{subject}{rest}");

    let v1 = schema(json!([
        {"name": "id", "type": "long"},
        {"name": "legacy_code", "type": "string", "default": ""}
    ]));
    let (first, first_request) = admin.ok(base, "POST", &s("/versions"), Some(v1)).await;
    let id = first["id"].as_i64().expect("id");

    // The field is deprecated and walked to removable while nobody reads it.
    let (record, _) = admin
        .ok(
            base,
            "POST",
            "/covenant/v1/deprecations",
            Some(json!({
                "target": {"kind": "field", "subject": subject, "path": "legacy_code"},
                "old_promise": "legacy_code identifies an order in the old system",
                "new_promise": "id is the only identity",
                "replacement": "id",
                "announced_by": "orders-team",
            })),
        )
        .await;
    let dep = record["id"].as_i64().expect("deprecation id");
    let stage = format!("/covenant/v1/deprecations/{dep}/stage");
    for to in ["frozen", "enforcing"] {
        admin
            .ok(
                base,
                "POST",
                &stage,
                Some(json!({"to": to, "by": "orders-team"})),
            )
            .await;
    }
    // Removable needs evidence and, before the window ends, a named exception.
    admin
        .ok(
            base,
            "POST",
            &format!("/covenant/v1/deprecations/{dep}/evidence"),
            Some(json!({"claim": "no reader left", "by": "orders-team",
                "body": {"kind": "canary", "path": "internal orders tenant", "outcome": "passed"}})),
        )
        .await;
    admin
        .ok(
            base,
            "POST",
            &format!("/covenant/v1/deprecations/{dep}/exceptions"),
            Some(
                json!({"approver": "risk-approver", "overrides": "window_open",
                "reason": "the field was never read outside the old system"}),
            ),
        )
        .await;
    admin
        .ok(
            base,
            "POST",
            &stage,
            Some(json!({"to": "removable", "by": "orders-team"})),
        )
        .await;

    // An undeclared job fetches the schema by id and by version.
    reader
        .ok(base, "GET", &format!("/schemas/ids/{id}"), None)
        .await;
    reader.ok(base, "GET", &s("/versions/1"), None).await;
    reader
        .ok(base, "GET", &s("/versions/latest/schema"), None)
        .await;
    let (readers, _) = admin
        .ok(
            base,
            "GET",
            &format!("/covenant/v1/subjects/{subject}/readers"),
            None,
        )
        .await;
    let rows = readers["readers"].as_array().cloned().unwrap_or_default();
    let mine: Vec<&Value> = rows
        .iter()
        .filter(|r| r["reader"] == json!(reader.reader()))
        .collect();
    assert_eq!(mine.len(), 1, "{readers}");
    assert_eq!(mine[0]["version"], json!(1));
    assert_eq!(mine[0]["schema_id"], json!(id));
    assert_eq!(mine[0]["reads"], json!(3), "{readers}");
    assert_eq!(mine[0]["consumer"], Value::Null);
    assert!(
        mine[0]["last_at"].as_i64().unwrap_or(0)
            >= mine[0]["first_at"].as_i64().unwrap_or(i64::MAX)
    );

    // Dropping the field is blocked by the unattributed reader, and the refusal says who.
    let v2 = schema(json!([{"name": "id", "type": "long"}]));
    let (status, refusal, _) = admin
        .send(base, "POST", &s("/versions"), Some(v2.clone()))
        .await;
    assert_eq!(
        (status, refusal["error_code"].clone()),
        (409, json!(40901)),
        "{refusal}"
    );
    let message = refusal["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("unattributed_usage") && message.contains(&reader.reader()),
        "{message}"
    );

    // Declaring the job's consumer attributes its reads; the removal goes through. (A consumer
    // that also declares reading this subject is held to the gate's usual evidence rules: its
    // usage reports must cover a full cadence first.)
    admin
        .ok(
            base,
            "POST",
            "/covenant/v1/consumers",
            Some(json!({
                "name": format!("billing{tag}"), "owner": "billing-team", "purpose": "invoices",
                "cadence": "daily", "criticality": "high", "contact": "billing@example.com",
                "clients": [reader.reader()], "reads": [],
            })),
        )
        .await;
    let (readers, _) = admin
        .ok(
            base,
            "GET",
            &format!("/covenant/v1/subjects/{subject}/readers"),
            None,
        )
        .await;
    assert!(
        readers["readers"]
            .as_array()
            .into_iter()
            .flatten()
            .any(|r| r["reader"] == json!(reader.reader())
                && r["consumer"] == json!(format!("billing{tag}"))),
        "{readers}"
    );
    let (second, second_request) = admin.ok(base, "POST", &s("/versions"), Some(v2)).await;
    assert_eq!(second["version"], json!(2));
    admin
        .ok(
            base,
            "PUT",
            &format!("/config/{subject}"),
            Some(json!({"compatibility": "FULL"})),
        )
        .await;
    admin.ok(base, "DELETE", &s("/versions/1"), None).await;

    // The trail: every change of the run with its principal; reads and refusals are not
    // changes.
    let entries = trail(&admin, base, &admin.actor()).await;
    let ops: Vec<String> = entries
        .iter()
        .map(|e| {
            format!(
                "{} {}",
                e["operation"].as_str().unwrap_or("?"),
                e["outcome"].as_str().unwrap_or("?")
            )
        })
        .collect();
    assert_eq!(
        ops,
        [
            "register ok",
            "deprecation.create ok",
            "deprecation.stage ok",
            "deprecation.stage ok",
            "deprecation.evidence ok",
            "deprecation.exception ok",
            "deprecation.stage ok",
            "consumer.create ok",
            "register ok",
            "config.set ok",
            "delete.soft ok"
        ],
        "{entries:?}"
    );
    assert_eq!(entries[0]["request_id"], json!(first_request));
    assert_eq!(entries[0]["subject"], json!(subject));
    assert_eq!(
        (
            entries[0]["version"].clone(),
            entries[0]["schema_id"].clone()
        ),
        (json!(1), json!(id))
    );
    assert_eq!(entries[8]["request_id"], json!(second_request));
    assert!(
        entries.iter().all(|e| e["source"]
            .as_str()
            .is_some_and(|s| s.starts_with("127.0.0.1:"))),
        "{entries:?}"
    );
    assert!(
        trail(&admin, base, &reader.actor()).await.is_empty(),
        "reads are not changes"
    );

    // The CLI reads the same trail, following the pages.
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_covenant"))
        .args(["audit", "--url", base, "--subject", &subject, "--json"])
        .output()
        .expect("covenant audit");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let listed: Vec<Value> = serde_json::from_slice(&out.stdout).expect("JSON array");
    let registers = listed
        .iter()
        .filter(|e| e["operation"] == json!("register"))
        .count();
    assert_eq!(registers, 2, "{listed:?}");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_covenant"))
        .args(["audit", "--url", base, "--operation", "delete.soft"])
        .output()
        .expect("covenant audit");
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("delete.soft") && text.contains(&format!("{subject} v1")),
        "{text}"
    );
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_covenant"))
        .args(["audit", "--url", base, "--since", "not-a-time"])
        .output()
        .expect("covenant audit");
    assert_eq!(out.status.code(), Some(1), "a refused query exits 1");
    let (bad, _, _) = admin
        .send(base, "GET", "/covenant/v1/audit?since=yesterday", None)
        .await;
    assert_eq!(bad, 422);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_block_removal_until_attributed_and_the_trail_lists_the_session_on_sqlite() {
    let dir = tempfile::tempdir().expect("temp dir");
    let serve = Serve::spawn(&dir.path().join("data"), |_| {});
    support::wait_ready(&covenant_exporter::client::client(), &serve.base).await;
    scripted_run(&serve.base).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_block_removal_until_attributed_and_the_trail_lists_the_session_on_postgres() {
    let Some(db) = TestDb::create("covenant_access").await else {
        eprintln!(
            "skipped: set {} to run against PostgreSQL",
            support::POSTGRES_ENV
        );
        return;
    };
    let dir = tempfile::tempdir().expect("temp dir");
    let serve = Serve::spawn(&dir.path().join("data"), |c| {
        c.args(["--store", &db.url]);
    });
    support::wait_ready(&covenant_exporter::client::client(), &serve.base).await;
    scripted_run(&serve.base).await;
    drop(serve);
    db.drop_db().await;
}

/// An imported trail keeps its times, and `serve --audit-retention-days` prunes what is older
/// at start (and every hour after).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn imported_entries_past_the_retention_are_pruned() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let day = 86_400_000;
    let now = support::now_ms();
    let entry = |who: &str, at: i64| {
        json!({"at": at, "principal": who, "operation": "config.set", "config_key": "config",
               "outcome": "ok", "request_id": format!("r-{who}")})
    };
    let dump = json!({
        "format": "covenant-export", "formatVersion": 1, "schemas": [], "subjects": [],
        "audit": [entry("three-days-ago", now - 3 * day), entry("an-hour-ago", now - day / 24)],
    });
    let file = dir.path().join("dump.json");
    std::fs::write(&file, dump.to_string()).expect("write dump");
    let out = std::process::Command::new(env!("CARGO_BIN_EXE_covenant"))
        .arg("import")
        .arg("--data-dir")
        .arg(&data)
        .arg(&file)
        .output()
        .expect("covenant import");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("2 audit entries"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let serve = Serve::spawn(&data, |c| {
        c.args(["--audit-retention-days", "2"]);
    });
    let http = covenant_exporter::client::client();
    support::wait_ready(&http, &serve.base).await;
    let mut principals = Vec::new();
    for _ in 0..100 {
        let (_, page) = support::call(
            &http,
            &serve.base,
            "GET",
            "/covenant/v1/audit",
            support::V1,
            None,
        )
        .await;
        principals = page["entries"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|e| e["principal"].as_str().map(str::to_string))
            .collect();
        if principals.len() == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(principals, ["an-hour-ago"]);
}
