//! The evolution drill end to end, through a running `covenant serve` over HTTP: the billing
//! event's `plan_name` is deprecated in favour of `billing_plan_id`, and the plan must
//! survive the three consumers tidy plans miss:
//!
//! 1. a replay job processes old events with new code (its reports name the old reader
//!    schema, which keeps the field in use);
//! 2. a monthly export wakes after three quiet weeks (its cadence, not the quiet, decides);
//! 3. a new dashboard tries to adopt the deprecated column during the migration (refused).
//!
//! Time: the server is started with the hidden `--clock-file` option and the drill writes
//! the governance clock into that file to let weeks pass (documented in docs/governance.md).
//! Usage reports carry no explicit timestamps: they cover the server's "now".
//!
//! On SQLite always; on PostgreSQL when `COVENANT_TEST_POSTGRES` is set and `serve --store`
//! exists, otherwise a notice is printed.

use crate::support;

use serde_json::{Value, json};
use std::path::PathBuf;
use std::process::Command;
use support::Serve;

const DAY_MS: i64 = 86_400_000;
/// 2026-01-05T09:00:00Z.
const T0: i64 = 1_767_603_600_000;

struct Server {
    _serve: Serve,
    base: String,
    clock: PathBuf,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Server {
    async fn start(store: Option<&str>) -> Server {
        let dir = tempfile::tempdir().expect("temp dir");
        let clock = dir.path().join("clock");
        std::fs::write(&clock, T0.to_string()).expect("clock file");
        let serve = Serve::spawn(&dir.path().join("data"), |command| {
            command.arg("--clock-file").arg(&clock);
            if let Some(url) = store {
                command.args(["--store", url]);
            }
        });
        let server = Server {
            base: serve.base.clone(),
            _serve: serve,
            clock,
            http: covenant_exporter::client::client(),
            _dir: dir,
        };
        support::wait_ready(&server.http, &server.base).await;
        server
    }

    /// Sets the governance clock to day `day` of the drill.
    fn day(&self, day: i64) {
        std::fs::write(&self.clock, (T0 + day * DAY_MS).to_string()).expect("clock file");
        println!("\n== day {day}");
    }

    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
        support::call(
            &self.http,
            &self.base,
            method,
            path,
            "application/json",
            body,
        )
        .await
    }

    async fn ok(&self, method: &str, path: &str, body: Value) -> Value {
        let (status, answer) = self.call(method, path, Some(body)).await;
        assert_eq!(status, 200, "{method} {path}: {answer}");
        answer
    }

    async fn text(&self, path: &str) -> String {
        let r = self
            .http
            .get(format!("{}{path}", self.base))
            .send()
            .await
            .expect("request");
        assert_eq!(r.status().as_u16(), 200);
        r.text().await.expect("text")
    }
}

fn avro(fields: &[(&str, Value)]) -> String {
    let fields: Vec<Value> = fields
        .iter()
        .map(|(name, t)| {
            let mut f = json!({"name": name, "type": t});
            if t.is_array() {
                f["default"] = Value::Null;
            }
            f
        })
        .collect();
    json!({"type": "record", "name": "SubscriptionEvent", "namespace": "billing", "fields": fields})
        .to_string()
}

fn v1() -> String {
    avro(&[
        ("subscription_id", json!("string")),
        ("plan_name", json!("string")),
    ])
}

fn v2() -> String {
    avro(&[
        ("subscription_id", json!("string")),
        ("plan_name", json!("string")),
        ("billing_plan_id", json!(["null", "string"])),
    ])
}

fn v3() -> String {
    avro(&[
        ("subscription_id", json!("string")),
        ("billing_plan_id", json!(["null", "string"])),
    ])
}

fn consumer(name: &str, cadence: &str, client: &str, reads: Value) -> Value {
    json!({
        "name": name, "owner": format!("{name}-team"), "purpose": format!("{name} of subscription events"),
        "cadence": cadence, "criticality": "high", "contact": format!("{name}@example.com"),
        "clients": [client], "reads": [reads],
    })
}

fn kinds(report: &Value, key: &str) -> Vec<String> {
    report[key]
        .as_array()
        .map(|list| {
            list.iter()
                .filter_map(|b| b["kind"].as_str().map(str::to_string))
                .collect()
        })
        .unwrap_or_default()
}

/// Runs the drill; names carry `tag` so that runs sharing a database do not collide.
async fn drill(server: &Server, tag: &str) {
    let subject = format!("billing.subscription{tag}-value");
    let name = |n: &str| format!("{n}{tag}");
    let versions = format!("/subjects/{subject}/versions");

    server.day(0);
    let id1 = server.ok("POST", &versions, json!({"schema": v1()})).await["id"]
        .as_i64()
        .expect("id");
    let id2 = server.ok("POST", &versions, json!({"schema": v2()})).await["id"]
        .as_i64()
        .expect("id");
    println!("registered v1 (id {id1}, plan_name) and v2 (id {id2}, adds billing_plan_id)");

    for c in [
        consumer(
            &name("entitlements"),
            "daily",
            &name("svc_entitlements"),
            json!({"subject": subject, "fields": ["billing_plan_id"]}),
        ),
        consumer(
            &name("revenue-recognition"),
            "daily",
            &name("svc_revrec"),
            json!({"subject": subject, "reader_version": 2, "fields": ["plan_name", "billing_plan_id"]}),
        ),
        consumer(
            &name("compliance-export"),
            "monthly",
            &name("svc_compliance"),
            json!({"subject": subject, "fields": ["plan_name"]}),
        ),
        consumer(
            &name("replay-job"),
            "weekly",
            &name("replayer"),
            json!({"subject": subject, "reader_version": 1}),
        ),
    ] {
        server.ok("POST", "/covenant/v1/consumers", c).await;
    }
    println!(
        "declared entitlements, revenue-recognition, compliance-export (monthly) and replay-job"
    );

    for (client, fields) in [
        (name("svc_entitlements"), json!(["billing_plan_id"])),
        (name("svc_revrec"), json!(["plan_name", "billing_plan_id"])),
        (name("svc_compliance"), json!(["plan_name"])),
    ] {
        let receipt = server
            .ok(
                "POST",
                "/covenant/v1/usage",
                json!({
                    "subject": subject, "client_id": client, "fields_read": fields,
                    "records_by_version": {"2": 1000},
                }),
            )
            .await;
        assert_eq!(receipt["flagged"], json!(false), "{receipt}");
    }
    println!(
        "usage reported by entitlements, revenue-recognition and compliance-export (reads plan_name)"
    );

    let record = server
        .ok("POST", "/covenant/v1/deprecations", json!({
            "target": {"kind": "field", "subject": subject, "path": "plan_name"},
            "contract": "subscription event plan identity; monthly compliance export",
            "old_promise": "plan_name is a mutable display label, historically misused as identity",
            "new_promise": "billing_plan_id is stable identity at the event's effective time",
            "replacement": "billing_plan_id",
            "owners": [{"role": "producer", "name": "billing-team"}, {"role": "risk approver", "name": "cfo-office"}],
            "announced_by": "billing-team",
        }))
        .await;
    let dep = record["id"].as_i64().expect("deprecation id");
    let stage = format!("/covenant/v1/deprecations/{dep}/stage");
    server
        .ok(
            "POST",
            &stage,
            json!({"to": "frozen", "by": "billing-team", "note": "no new use"}),
        )
        .await;
    println!("deprecation #{dep} of plan_name -> billing_plan_id announced and frozen");

    // Case 3: a new dashboard tries to adopt the deprecated column during the migration.
    let (status, refusal) = server
        .call(
            "POST",
            "/covenant/v1/consumers",
            Some(consumer(
                &name("exec-dashboard"),
                "daily",
                &name("svc_dash"),
                json!({"subject": subject, "fields": ["plan_name", "billing_plan_id"]}),
            )),
        )
        .await;
    assert_eq!(
        (status, refusal["error_code"].clone()),
        (409, json!(40901)),
        "{refusal}"
    );
    let message = refusal["message"].as_str().unwrap_or("");
    assert!(
        message.contains("'plan_name'") && message.contains("read 'billing_plan_id' instead"),
        "{message}"
    );
    println!("case 3: new dashboard declaring plan_name refused with 40901: {message}");
    let (status, refusal) = server
        .call(
            "GET",
            &format!("/covenant/v1/consumers/{}", name("exec-dashboard")),
            None,
        )
        .await;
    assert_eq!(
        (status, refusal["error_code"].clone()),
        (404, json!(40440)),
        "{refusal}"
    );
    // The same dashboard reading the column without declaring itself is flagged and counted.
    let receipt = server
        .ok(
            "POST",
            "/covenant/v1/usage",
            json!({
                "subject": subject, "client_id": name("svc_dash"), "fields_read": ["plan_name"],
            }),
        )
        .await;
    assert_eq!(receipt["flagged"], json!(true), "{receipt}");
    let found = kinds(&receipt, "findings");
    assert!(
        found.contains(&"new_use_after_freeze".to_string()),
        "{receipt}"
    );
    assert!(
        found.contains(&"unattributed_usage".to_string()),
        "{receipt}"
    );
    println!("case 3: undeclared dashboard reading plan_name flagged: {found:?}");
    // A consumer may not adopt a new reader version that keeps the frozen field.
    let mut moved = consumer(
        &name("revenue-recognition"),
        "daily",
        &name("svc_revrec"),
        json!({"subject": subject, "reader_version": 3, "fields": ["plan_name", "billing_plan_id"]}),
    );
    let path = format!("/covenant/v1/consumers/{}", name("revenue-recognition"));
    let (status, refusal) = server.call("PUT", &path, Some(moved.clone())).await;
    assert_eq!(status, 409, "{refusal}");
    println!(
        "revenue-recognition adopting reader v3 while keeping plan_name refused: {}",
        refusal["message"]
    );
    moved["reads"][0]["fields"] = json!(["billing_plan_id"]);
    server.ok("PUT", &path, moved).await;
    println!("revenue-recognition moved to billing_plan_id (declaration updated)");

    // Case 1: a replay job processes old events with new code, decoding with reader v1.
    server.day(2);
    let receipt = server
        .ok(
            "POST",
            "/covenant/v1/usage",
            json!({
                "subject": subject, "client_id": name("replayer"), "reader_schema_id": id1,
                "records_by_version": {"1": 50000}, "decode_failures": 3,
                "unknown_enum_values": {"status": {"PAUSED": 2}},
            }),
        )
        .await;
    assert_eq!(
        receipt["deprecated_fields_read"],
        json!(["plan_name"]),
        "{receipt}"
    );
    println!(
        "case 1: replay job reported with reader schema id {id1}; counted as reading {}",
        receipt["deprecated_fields_read"]
    );
    let (status, refusal) = server
        .call("POST", &versions, Some(json!({"schema": v3()})))
        .await;
    assert_eq!(
        (status, refusal["error_code"].clone()),
        (409, json!(40901)),
        "{refusal}"
    );
    let message = refusal["message"].as_str().unwrap_or("").to_string();
    assert!(
        message.contains(&format!("Consumer '{}'", name("replay-job"))),
        "{message}"
    );
    assert!(
        message.contains(&format!("with reader schema id {id1}")),
        "{message}"
    );
    assert!(
        message.contains(&format!("Consumer '{}'", name("compliance-export"))),
        "{message}"
    );
    println!("case 1: registering v3 without plan_name refused with 40901; blockers:\n{message}");

    // Case 2: the monthly export wakes after three quiet weeks.
    server.day(20);
    let path = format!("/covenant/v1/consumers/{}", name("compliance-export"));
    server
        .ok(
            "PUT",
            &path,
            consumer(
                &name("compliance-export"),
                "monthly",
                &name("svc_compliance"),
                json!({"subject": subject, "fields": ["billing_plan_id"]}),
            ),
        )
        .await;
    println!("compliance-export's owner declares the move to billing_plan_id");
    // The replay job declared the whole of version 1 (`S@1`), which carries plan_name: a
    // declared reader, so enforcement waits until it moves to a reader without the field.
    let path = format!("/covenant/v1/consumers/{}", name("replay-job"));
    let (status, refusal) = server
        .call(
            "POST",
            &stage,
            Some(json!({"to": "enforcing", "by": "billing-team"})),
        )
        .await;
    assert_eq!(status, 409, "{refusal}");
    assert!(
        refusal["message"].as_str().unwrap_or("").contains(&format!(
            "[consumer_declared] Consumer '{}'",
            name("replay-job")
        )),
        "{refusal}"
    );
    server
        .ok(
            "PUT",
            &path,
            consumer(
                &name("replay-job"),
                "weekly",
                &name("replayer"),
                json!({"subject": subject, "reader_version": 2, "fields": ["subscription_id", "billing_plan_id"]}),
            ),
        )
        .await;
    println!(
        "replay-job (declared S@1) blocked enforcing until it moved to reader v2 without plan_name"
    );
    server.day(21);
    server
        .ok(
            "POST",
            &stage,
            json!({"to": "enforcing", "by": "billing-team", "note": "warnings on"}),
        )
        .await;
    let preview = server
        .ok(
            "POST",
            &format!("/covenant/v1/subjects/{subject}/removal-gate"),
            json!({"schema": v3()}),
        )
        .await;
    assert_eq!(preview["fields"], json!(["plan_name"]), "{preview}");
    assert_eq!(preview["allowed"], json!(false), "{preview}");
    let blockers = preview["blockers"].as_array().cloned().unwrap_or_default();
    let export_blocker = blockers
        .iter()
        .find(|b| b["party"] == json!(name("compliance-export")))
        .unwrap_or_else(|| panic!("the export's silence must not count yet: {preview}"));
    assert_eq!(export_blocker["kind"], json!("recent_usage"), "{preview}");
    let text = export_blocker["message"].as_str().unwrap_or("");
    assert!(
        text.contains("21 days ago") && text.contains("not before 2026-02-05"),
        "{text}"
    );
    assert!(
        !blockers
            .iter()
            .any(|b| b["party"] == json!(name("replay-job"))),
        "the weekly replay job has been silent for its cadence: {preview}"
    );
    println!("case 2: after three quiet weeks the export still blocks: {text}");
    let (status, refusal) = server
        .call(
            "POST",
            &stage,
            Some(json!({"to": "removable", "by": "billing-team"})),
        )
        .await;
    assert_eq!(
        (status, refusal["error_code"].clone()),
        (409, json!(40901)),
        "{refusal}"
    );
    println!(
        "case 2: moving to 'removable' refused: {}",
        refusal["message"]
    );
    let (status, _) = server
        .call("POST", &versions, Some(json!({"schema": v3()})))
        .await;
    assert_eq!(status, 409);

    // The export completes a real cycle on the replacement; evidence closes the record.
    server.day(32);
    let receipt = server
        .ok("POST", "/covenant/v1/usage", json!({
            "subject": subject, "client_id": name("svc_compliance"), "fields_read": ["billing_plan_id"],
        }))
        .await;
    assert_eq!(receipt["deprecated_fields_read"], json!([]), "{receipt}");
    let evidence = format!("/covenant/v1/deprecations/{dep}/evidence");
    server
        .ok(
            "POST",
            &evidence,
            json!({
                "claim": "compliance export observed on replacement", "by": "billing-team",
                "body": {"kind": "usage_query", "query": {"subject": subject, "field": "plan_name",
                    "attribution": {"kind": "consumer", "consumer": name("compliance-export")},
                    "from": T0 + 2 * DAY_MS, "to": T0 + 32 * DAY_MS}},
            }),
        )
        .await;
    server
        .ok("POST", &evidence, json!({
            "claim": "compliance export moved", "by": "billing-team",
            "body": {"kind": "sign_off", "consumer": name("compliance-export"), "who": "head of compliance",
                "statement": "January export ran on billing_plan_id"},
        }))
        .await;
    server
        .ok("POST", &evidence, json!({
            "claim": "replay fixture covers both shapes", "by": "platform",
            "body": {"kind": "replay_result", "sample": "subscription-2021.avro", "passed": true,
                "detail": "bounded historical mapping for events without billing_plan_id"},
        }))
        .await;
    // Enforcement's reversible steps, as the seed's record has them: non-production omission
    // complete, internal canary complete.
    server
        .ok("POST", &evidence, json!({
            "claim": "non-production omission complete", "by": "billing-team",
            "body": {"kind": "non_production_omission", "environment": "staging", "outcome": "passed",
                "detail": "staging producers omitted plan_name for a week; no consumer errors"},
        }))
        .await;
    server
        .ok(
            "POST",
            &evidence,
            json!({
                "claim": "internal canary complete", "by": "billing-team",
                "body": {"kind": "canary", "path": "tenant internal-billing", "outcome": "passed",
                    "link": "https://dashboards.example.com/canary/plan-name"},
            }),
        )
        .await;
    // The gate is clear, but the window (to day 90) is still open: a named risk approver must
    // accept the early removal.
    let (status, refusal) = server
        .call(
            "POST",
            &stage,
            Some(json!({"to": "removable", "by": "billing-team"})),
        )
        .await;
    assert_eq!(status, 409, "{refusal}");
    assert!(
        refusal["message"]
            .as_str()
            .is_some_and(|m| m.contains("[window_open]")
                && !m.contains("[no_evidence]")
                && !m.contains("[no_canary]")),
        "{refusal}"
    );
    server
        .ok(
            "POST",
            &format!("/covenant/v1/deprecations/{dep}/exceptions"),
            json!({"approver": "risk-approver", "overrides": "window_open",
                "reason": "every declared consumer signed off; the rest of the window protects nobody known"}),
        )
        .await;
    let record = server
        .ok(
            "POST",
            &stage,
            json!({"to": "removable", "by": "billing-team", "note": "gate clear"}),
        )
        .await;
    assert_eq!(record["stage"], json!("removable"), "{record}");
    assert_eq!(record["removal_gate"]["blockers"], json!([]), "{record}");
    println!(
        "day 32: export ran a cycle on billing_plan_id; sign-off and usage query recorded; stage 'removable'"
    );

    let registered = server.ok("POST", &versions, json!({"schema": v3()})).await;
    println!(
        "v3 without plan_name registered: id {}, version {}",
        registered["id"], registered["version"]
    );
    let record = server
        .text(&format!("/covenant/v1/deprecations/{dep}/record"))
        .await;
    assert!(record.contains("stage: removed"), "{record}");
    assert!(
        record.contains("removable -> removed by registry"),
        "{record}"
    );
    assert!(
        record.contains("usage query: reads of 'plan_name'"),
        "{record}"
    );
    assert!(
        record.contains("sign-off by head of compliance"),
        "{record}"
    );
    println!("the record now reads:\n{record}");

    let metrics = server.text("/metrics").await;
    for needle in [
        format!("pipeline_records_by_schema_version{{subject=\"{subject}\",version=\"1\"}} 50000"),
        format!(
            "contract_deprecated_field_used{{subject=\"{subject}\",field=\"plan_name\",consumer=\"{}\"}} 1",
            name("replay-job")
        ),
        format!(
            "contract_deprecated_field_new_use{{subject=\"{subject}\",field=\"plan_name\",consumer=\"unattributed:{}\"}} 1",
            name("svc_dash")
        ),
        format!("contract_enum_unknown{{subject=\"{subject}\",field=\"status\"}} 2"),
        format!(
            "consumer_deserialization_failure{{subject=\"{subject}\",consumer=\"{}\"}} 3",
            name("replay-job")
        ),
    ] {
        assert!(metrics.contains(&needle), "missing {needle} in /metrics");
    }
    println!(
        "/metrics carries records by version, deprecated field use, new use after freeze, unknown enum values and decode failures"
    );
}

#[tokio::test]
async fn evolution_drill_on_sqlite() {
    let server = Server::start(None).await;
    drill(&server, "").await;
}

fn serve_has_store_flag() -> bool {
    Command::new(env!("CARGO_BIN_EXE_covenant"))
        .args(["serve", "--help"])
        .output()
        .map(|o| String::from_utf8_lossy(&o.stdout).contains("--store"))
        .unwrap_or(false)
}

#[tokio::test]
async fn evolution_drill_on_postgres() {
    let Ok(url) = std::env::var(support::POSTGRES_ENV) else {
        println!("COVENANT_TEST_POSTGRES is unset: skipping the PostgreSQL drill");
        return;
    };
    if !serve_has_store_flag() {
        println!("covenant serve has no --store option yet: skipping the PostgreSQL drill");
        return;
    }
    let server = Server::start(Some(&url)).await;
    drill(&server, &support::unique_tag()).await;
}
