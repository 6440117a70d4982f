//! Consumer governance as compatibility evidence, through a running `covenant serve`: a
//! `live` scope follows the usage consumers report (explicit live marks still count), and a
//! consumer's declared field reads are named in the findings about that field.
//!
//! On SQLite always; on PostgreSQL too when `COVENANT_TEST_POSTGRES` is set.

use crate::support;

use serde_json::{Value, json};
use support::{Serve, now_ms, unique_tag};

const DAY_MS: i64 = 86_400_000;

struct Server {
    _serve: Serve,
    base: String,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Server {
    async fn start(store: Option<&str>) -> Server {
        let dir = tempfile::tempdir().expect("temp dir");
        let serve = Serve::spawn(&dir.path().join("data"), |command| {
            if let Some(url) = store {
                command.args(["--store", url]);
            }
        });
        let server = Server {
            base: serve.base.clone(),
            _serve: serve,
            http: covenant_exporter::client::client(),
            _dir: dir,
        };
        support::wait_ready(&server.http, &server.base).await;
        server
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        support::call(&self.http, &self.base, method, path, support::V1, body).await
    }

    async fn ok(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let (status, answer) = self.call(method, path, body).await;
        assert_eq!(status, 200, "{method} {path}: {answer}");
        answer
    }

    async fn register(&self, subject: &str, schema: &Value) -> (u16, Value) {
        self.call(
            "POST",
            &format!("/subjects/{subject}/versions"),
            Some(json!({"schema": schema.to_string()})),
        )
        .await
    }

    async fn registered_id(&self, subject: &str, schema: &Value) -> i64 {
        let (status, answer) = self.register(subject, schema).await;
        assert_eq!(status, 200, "{answer}");
        answer["id"].as_i64().expect("id")
    }

    async fn verbose(&self, subject: &str, schema: &Value) -> Value {
        self.ok(
            "POST",
            &format!("/compatibility/subjects/{subject}/versions?verbose=true"),
            Some(json!({"schema": schema.to_string()})),
        )
        .await
    }
}

fn record(fields: Value) -> Value {
    json!({"type": "record", "name": "Case", "namespace": "enforcement", "fields": fields})
}

/// The earlier versions the error findings of a verbose answer came from.
fn error_versions(verbose: &Value) -> Vec<i64> {
    let mut versions: Vec<i64> = verbose["findings"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|f| f["severity"] == "error")
        .filter_map(|f| f["version"].as_i64())
        .collect();
    versions.sort_unstable();
    versions.dedup();
    versions
}

/// v1 (`code` an int), v2 (`code` a string), v3 (adds `region`). Candidate `reads_ints`
/// breaks only v2's data; `needs_region` breaks v1's (and v2's). v3 is the latest, always in
/// scope; a report saw v1 today and v2 a month ago, outside the 7-day retention.
async fn live_scope_follows_reported_usage(server: &Server, tag: &str) {
    let s = format!("case-live{tag}");
    server
        .ok(
            "PUT",
            &format!("/config/{s}"),
            Some(json!({"compatibility": "NONE"})),
        )
        .await;
    let v1 = record(json!([{"name": "id", "type": "string"}, {"name": "code", "type": "int"}]));
    let v2 = record(json!([{"name": "id", "type": "string"}, {"name": "code", "type": "string"}]));
    let v3 = record(json!([
        {"name": "id", "type": "string"},
        {"name": "code", "type": "int"},
        {"name": "region", "type": "string"}
    ]));
    let id1 = server.registered_id(&s, &v1).await;
    let id2 = server.registered_id(&s, &v2).await;
    let id3 = server.registered_id(&s, &v3).await;
    assert!(id1 != id2 && id2 != id3 && id1 != id3);
    let reads_ints = record(json!([
        {"name": "id", "type": "string"},
        {"name": "code", "type": "long"},
        {"name": "region", "type": "string", "default": "eu"}
    ]));
    let needs_region = record(json!([
        {"name": "id", "type": "string"},
        {"name": "code", "type": "int"},
        {"name": "region", "type": "string"},
        {"name": "note", "type": ["null", "string"], "default": null}
    ]));

    let live = json!({
        "compatibility": "BACKWARD_TRANSITIVE",
        "compatibilityScope": {"kind": "live", "retentionDays": 7}
    });
    server
        .ok("PUT", &format!("/config/{s}"), Some(live.clone()))
        .await;
    // No usage yet: only the latest is in scope.
    let answer = server.verbose(&s, &needs_region).await;
    assert_eq!(answer["is_compatible"], true, "{answer}");

    let client = format!("replayer{tag}");
    server
        .ok(
            "POST",
            "/covenant/v1/usage",
            Some(json!({
                "subject": s, "client_id": client,
                "reader_schema_id": id3, "writer_schema_ids": [id1]
            })),
        )
        .await;
    let month_ago = now_ms() - 30 * DAY_MS;
    server
        .ok(
            "POST",
            "/covenant/v1/usage",
            Some(json!({
                "subject": s, "client_id": client, "writer_schema_ids": [id2],
                "interval_start": month_ago, "interval_end": month_ago
            })),
        )
        .await;

    let answer = server.verbose(&s, &reads_ints).await;
    assert_eq!(answer["is_compatible"], true, "{answer}");
    assert_eq!(error_versions(&answer), Vec::<i64>::new());

    let answer = server.verbose(&s, &needs_region).await;
    assert_eq!(answer["is_compatible"], false, "{answer}");
    assert_eq!(error_versions(&answer), [1], "{answer}");
    let refused = server.register(&s, &needs_region).await;
    assert_eq!(refused.0, 409, "{}", refused.1);
    let message = refused.1["message"].as_str().unwrap_or_default();
    assert!(message.contains("(version 1)"), "{message}");
    assert!(!message.contains("(version 2)"), "{message}");

    // Every version in scope: the month-old v2 breaks `reads_ints`, so the answers above
    // came from the scope.
    server
        .ok(
            "PUT",
            &format!("/config/{s}"),
            Some(json!({"compatibility": "BACKWARD_TRANSITIVE", "compatibilityScope": {"kind": "all"}})),
        )
        .await;
    let answer = server.verbose(&s, &reads_ints).await;
    assert_eq!(error_versions(&answer), [2], "{answer}");
    server.ok("PUT", &format!("/config/{s}"), Some(live)).await;

    // An explicit live mark still brings a version into scope, whatever usage says.
    let mark = format!("/covenant/v1/subjects/{s}/versions/2/live");
    server.ok("POST", &mark, None).await;
    let answer = server.verbose(&s, &reads_ints).await;
    assert_eq!(error_versions(&answer), [2], "{answer}");
    server.ok("DELETE", &mark, None).await;

    let (status, answer) = server.register(&s, &reads_ints).await;
    assert_eq!(status, 200, "{answer}");
}

/// A consumer declaring that it reads version 1 keeps version 1 in a `live` scope, though it
/// has reported nothing: the declaration is the evidence. Retired, it no longer does.
async fn a_declared_reader_version_stays_in_a_live_scope(server: &Server, tag: &str) {
    let s = format!("case-declared{tag}");
    server
        .ok(
            "PUT",
            &format!("/config/{s}"),
            Some(json!({"compatibility": "NONE"})),
        )
        .await;
    let v1 = record(json!([{"name": "id", "type": "string"}, {"name": "code", "type": "int"}]));
    let v2 = record(json!([
        {"name": "id", "type": "string"},
        {"name": "code", "type": "int"},
        {"name": "region", "type": "string"}
    ]));
    server.registered_id(&s, &v1).await;
    server.registered_id(&s, &v2).await;
    let needs_region = record(json!([
        {"name": "id", "type": "string"},
        {"name": "code", "type": "int"},
        {"name": "region", "type": "string"},
        {"name": "note", "type": ["null", "string"], "default": null}
    ]));
    server
        .ok(
            "PUT",
            &format!("/config/{s}"),
            Some(json!({
                "compatibility": "BACKWARD_TRANSITIVE",
                "compatibilityScope": {"kind": "live", "retentionDays": 7}
            })),
        )
        .await;
    let answer = server.verbose(&s, &needs_region).await;
    assert_eq!(error_versions(&answer), Vec::<i64>::new(), "{answer}");

    let name = format!("archive-reader{tag}");
    server
        .ok(
            "POST",
            "/covenant/v1/consumers",
            Some(json!({
                "name": name, "owner": "archive", "purpose": "reads archived cases",
                "cadence": "monthly", "criticality": "high", "contact": "archive@example.com",
                "clients": [format!("{name}-client")],
                "reads": [{"subject": s, "reader_version": 1, "fields": ["id", "code"]}]
            })),
        )
        .await;
    let answer = server.verbose(&s, &needs_region).await;
    assert_eq!(error_versions(&answer), [1], "{answer}");
    let refused = server.register(&s, &needs_region).await;
    assert_eq!(refused.0, 409, "{}", refused.1);

    server
        .ok(
            "POST",
            &format!("/covenant/v1/consumers/{name}/retire"),
            None,
        )
        .await;
    let answer = server.verbose(&s, &needs_region).await;
    assert_eq!(error_versions(&answer), Vec::<i64>::new(), "{answer}");
}

/// `status` gains SUSPENDED: the consumer declaring that it reads `status` is named, the one
/// reading only `caseId` and the retired one are not.
async fn declared_consumers_are_named_in_enum_findings(server: &Server, tag: &str) {
    let s = format!("case-status{tag}");
    let status = |symbols: &[&str]| {
        record(json!([
            {"name": "caseId", "type": "string"},
            {"name": "status", "type": {"type": "enum", "name": "CaseStatus", "symbols": symbols}}
        ]))
    };
    let v1 = status(&["OPEN", "UNDER_REVIEW", "ESCALATED", "CLOSED"]);
    let v2 = status(&["OPEN", "UNDER_REVIEW", "ESCALATED", "CLOSED", "SUSPENDED"]);
    server.registered_id(&s, &v1).await;

    let before = server.verbose(&s, &v2).await;
    let message = enum_finding(&before);
    assert!(message.contains("no consumers are recorded"), "{message}");

    let consumer = |name: &str, fields: &[&str]| {
        json!({
            "name": name, "owner": "case-ops", "purpose": "case triage",
            "cadence": "daily", "criticality": "high", "contact": "ops@example.com",
            "clients": [format!("{name}-client")],
            "reads": [{"subject": s, "reader_version": 1, "fields": fields}]
        })
    };
    let dashboard = format!("dashboard{tag}");
    let archive = format!("archive{tag}");
    let retired = format!("legacy{tag}");
    for (name, fields) in [
        (&dashboard, &["caseId", "status"][..]),
        (&archive, &["caseId"][..]),
        (&retired, &["/fields/status"][..]),
    ] {
        server
            .ok(
                "POST",
                "/covenant/v1/consumers",
                Some(consumer(name, fields)),
            )
            .await;
    }
    server
        .ok(
            "POST",
            &format!("/covenant/v1/consumers/{retired}/retire"),
            None,
        )
        .await;

    let after = server.verbose(&s, &v2).await;
    assert_eq!(after["is_compatible"], true, "{after}");
    let message = enum_finding(&after);
    assert!(
        message.contains(&format!("consumers known to read it: '{dashboard}'")),
        "{message}"
    );
    assert!(!message.contains(&archive), "{message}");
    assert!(!message.contains(&retired), "{message}");
}

fn enum_finding(verbose: &Value) -> String {
    verbose["findings"]
        .as_array()
        .and_then(|fs| fs.iter().find(|f| f["rule"] == "ENUM_VALUE_ADDED"))
        .and_then(|f| f["message"].as_str())
        .unwrap_or_else(|| panic!("no ENUM_VALUE_ADDED finding in {verbose}"))
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_evidence_on_the_embedded_store() {
    let server = Server::start(None).await;
    let tag = unique_tag();
    live_scope_follows_reported_usage(&server, &tag).await;
    a_declared_reader_version_stays_in_a_live_scope(&server, &tag).await;
    declared_consumers_are_named_in_enum_findings(&server, &tag).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn usage_evidence_on_postgres() {
    let Ok(url) = std::env::var(support::POSTGRES_ENV) else {
        println!("COVENANT_TEST_POSTGRES is unset: skipping the PostgreSQL usage evidence tests");
        return;
    };
    let server = Server::start(Some(&url)).await;
    let tag = unique_tag();
    live_scope_follows_reported_usage(&server, &tag).await;
    a_declared_reader_version_stays_in_a_live_scope(&server, &tag).await;
    declared_consumers_are_named_in_enum_findings(&server, &tag).await;
}
