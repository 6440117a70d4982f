//! The seeds' rules that structural checks cannot see, each through `covenant check` or
//! `covenant plan` and through registration on a running `covenant serve`: Protobuf numbers
//! and names across the whole history, values that old bytes decode into differently, key
//! subjects, and rollout plans over every version with the seed's steps.

use crate::support;
use support::{covenant, s, write};

use serde_json::{Value, json};
use support::TestServer as Server;

/// `covenant check --output json` with `args`: the exit code and the findings of `rule`.
fn check(args: &[&str], rule: &str) -> (Option<i32>, Vec<Value>) {
    let mut all = vec!["check", "--output", "json"];
    all.extend_from_slice(args);
    let out = covenant(&all);
    let value: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("json output: {}", String::from_utf8_lossy(&out.stderr)));
    let findings = value["findings"]
        .as_array()
        .map(|fs| fs.iter().filter(|f| f["rule"] == rule).cloned().collect())
        .unwrap_or_default();
    (out.status.code(), findings)
}

fn refused_for(answer: &(u16, Value), rule: &str) -> String {
    assert_eq!(answer.0, 409, "{}", answer.1);
    assert_eq!(answer.1["error_code"], 40901);
    let message = answer.1["message"].as_str().unwrap_or_default().to_string();
    assert!(
        message.contains(&format!("rule: {rule}")),
        "{rule} not in {message}"
    );
    message
}

const LIFECYCLE_V1: &str = "syntax = \"proto3\";\npackage enforcement;\nmessage CaseLifecycleEvent {\n  string event_id = 1;\n  string case_id = 2;\n  string legacy_owner = 7;\n}\n";
const LIFECYCLE_V2: &str = "syntax = \"proto3\";\npackage enforcement;\nmessage CaseLifecycleEvent {\n  string event_id = 1;\n  string case_id = 2;\n  reserved 7;\n  reserved \"legacy_owner\";\n}\n";
const LIFECYCLE_V3: &str = "syntax = \"proto3\";\npackage enforcement;\nmessage CaseLifecycleEvent {\n  string event_id = 1;\n  string case_id = 2;\n  string escalation_note = 7;\n}\n";

const TEXT_AMOUNT: &str =
    r#"{"type":"record","name":"Payment","fields":[{"name":"amount","type":"string"}]}"#;
const DECIMAL_AMOUNT: &str = r#"{"type":"record","name":"Payment","fields":[{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":18,"scale":2}}]}"#;

const CASE_KEY: &str =
    r#"{"type":"record","name":"CaseKey","fields":[{"name":"case_id","type":"string"}]}"#;
const CASE_KEY_TENANT: &str = r#"{"type":"record","name":"CaseKey","fields":[{"name":"case_id","type":"string"},{"name":"tenant_id","type":["null","string"],"default":null}]}"#;

/// Rule 9: v2 reserves 7 and `legacy_owner`, v3 drops the reservation and reuses 7. Before,
/// this passed at BACKWARD and BACKWARD_TRANSITIVE with only FIELD_ADDED; now every version of
/// the history is consulted, whatever the level and strictness.
#[test]
fn protobuf_number_reused_after_its_reservation_was_dropped_offline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let v1 = write(dir.path(), "v1.proto", LIFECYCLE_V1);
    let v2 = write(dir.path(), "v2.proto", LIFECYCLE_V2);
    let v3 = write(dir.path(), "v3.proto", LIFECYCLE_V3);
    for level in ["BACKWARD", "BACKWARD_TRANSITIVE", "NONE"] {
        for strictness in ["confluent", "wire"] {
            let (code, found) = check(
                &[
                    "--level",
                    level,
                    "--strictness",
                    strictness,
                    s(&v3),
                    s(&v1),
                    s(&v2),
                ],
                "PROTOBUF_HISTORY_REUSED",
            );
            assert_eq!(code, Some(1), "{level} {strictness}");
            assert_eq!(found.len(), 1, "{found:?}");
            assert_eq!(found[0]["severity"], "error");
            assert!(
                found[0]["message"]
                    .as_str()
                    .is_some_and(|m| m.contains("number 7 belonged to 'legacy_owner' in version 1")),
                "{found:?}"
            );
        }
    }
    // Straight from v1, with the same type and no version between that removed it: the
    // same field under a new name, a rename as in every format, not a reuse of history.
    let (_, found) = check(&[s(&v3), s(&v1)], "PROTOBUF_HISTORY_REUSED");
    assert!(found.is_empty(), "{found:?}");
    let (_, renamed) = check(&[s(&v3), s(&v1)], "LIKELY_RENAME");
    assert_eq!(renamed.len(), 1, "{renamed:?}");
    assert!(
        renamed[0]["message"].as_str().is_some_and(|m| m
            .contains("'legacy_owner' looks renamed to 'escalation_note' under the same number 7")),
        "{renamed:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn protobuf_number_reused_after_its_reservation_was_dropped_on_the_server() {
    let server = Server::start().await;
    // v2 retires legacy_owner (reserved) without a deprecation record, accepted here.
    server
        .config(
            "lifecycle",
            json!({"semanticRules": {"FIELD_REMOVED_WITHOUT_DEPRECATION": "warning"}}),
        )
        .await;
    server
        .registered("lifecycle", "PROTOBUF", LIFECYCLE_V1)
        .await;
    server
        .registered("lifecycle", "PROTOBUF", LIFECYCLE_V2)
        .await;
    let message = refused_for(
        &server.register("lifecycle", "PROTOBUF", LIFECYCLE_V3).await,
        "PROTOBUF_HISTORY_REUSED",
    );
    assert!(message.contains("'legacy_owner' in version 1"), "{message}");
    server
        .config(
            "lifecycle",
            // v3 also drops v2's reservation, a rule of its own.
            json!({"semanticRules": {"PROTOBUF_HISTORY_REUSED": "warning", "PROTOBUF_RESERVED_DROPPED": "warning"}}),
        )
        .await;
    server
        .registered("lifecycle", "PROTOBUF", LIFECYCLE_V3)
        .await;
}

/// Rule 7 and §23.2: string to decimal registered at FULL_TRANSITIVE with a warning only.
#[test]
fn string_to_decimal_is_an_error_offline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let old = write(dir.path(), "v1.avsc", TEXT_AMOUNT);
    let new = write(dir.path(), "v2.avsc", DECIMAL_AMOUNT);
    let (code, found) = check(
        &["--level", "FULL_TRANSITIVE", s(&new), s(&old)],
        "VALUE_REINTERPRETED",
    );
    assert_eq!(code, Some(1));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["path"], "/fields/amount");
    assert!(
        found[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("read as decimal(18,2)"))
    );
    let millis = write(
        dir.path(),
        "t1.avsc",
        r#"{"type":"record","name":"E","fields":[{"name":"at","type":{"type":"long","logicalType":"timestamp-millis"}}]}"#,
    );
    let micros = write(
        dir.path(),
        "t2.avsc",
        r#"{"type":"record","name":"E","fields":[{"name":"at","type":{"type":"long","logicalType":"timestamp-micros"}}]}"#,
    );
    let (code, found) = check(&[s(&micros), s(&millis)], "VALUE_REINTERPRETED");
    assert_eq!((code, found.len()), (Some(1), 1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn string_to_decimal_is_refused_on_the_server() {
    let server = Server::start().await;
    server
        .config("amount", json!({"compatibility": "FULL_TRANSITIVE"}))
        .await;
    server.registered("amount", "AVRO", TEXT_AMOUNT).await;
    let message = refused_for(
        &server.register("amount", "AVRO", DECIMAL_AMOUNT).await,
        "VALUE_REINTERPRETED",
    );
    assert!(message.contains("/fields/amount"), "{message}");
    server
        .config(
            "amount",
            json!({"compatibility": "FULL_TRANSITIVE", "semanticRules": {"VALUE_REINTERPRETED": "warning", "SENSITIVE_TYPE_CHANGED": "warning"}}),
        )
        .await;
    server.registered("amount", "AVRO", DECIMAL_AMOUNT).await;
}

/// Rule 10 and §23.1: adding `tenant_id` to `case_record-key` registered with no finding.
#[test]
fn key_subject_change_is_an_error_offline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let old = write(dir.path(), "k1.avsc", CASE_KEY);
    let new = write(dir.path(), "k2.avsc", CASE_KEY_TENANT);
    let (code, found) = check(
        &["--subject", "case_record-key", s(&new), s(&old)],
        "KEY_SUBJECT_CHANGED",
    );
    assert_eq!(code, Some(1));
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["path"], "/fields/tenant_id");
    assert!(
        found[0]["hint"]
            .as_str()
            .is_some_and(|h| h.contains("identity migration"))
    );
    let (code, found) = check(
        &["--subject", "case_record-value", s(&new), s(&old)],
        "KEY_SUBJECT_CHANGED",
    );
    assert_eq!((code, found.len()), (Some(0), 0));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn key_subject_change_is_refused_on_the_server() {
    let server = Server::start().await;
    server.registered("case_record-key", "AVRO", CASE_KEY).await;
    refused_for(
        &server
            .register("case_record-key", "AVRO", CASE_KEY_TENANT)
            .await,
        "KEY_SUBJECT_CHANGED",
    );
    // The same change on the value subject is fine.
    server
        .registered("case_record-value", "AVRO", CASE_KEY)
        .await;
    server
        .registered("case_record-value", "AVRO", CASE_KEY_TENANT)
        .await;
    server
        .config(
            "case_record-key",
            json!({"semanticRules": {"KEY_SUBJECT_CHANGED": "warning"}}),
        )
        .await;
    server
        .registered("case_record-key", "AVRO", CASE_KEY_TENANT)
        .await;
}

const KIND_V1: &str = r#"{"type":"record","name":"E","fields":[{"name":"id","type":"int"},{"name":"kind","type":"string"}]}"#;
const KIND_V2: &str = r#"{"type":"record","name":"E","fields":[{"name":"id","type":"int"}]}"#;
const KIND_V3: &str = r#"{"type":"record","name":"E","fields":[{"name":"id","type":"int"},{"name":"kind","type":"int","default":0}]}"#;

fn plan(args: &[&str]) -> (Option<i32>, Value) {
    let mut all = vec!["plan", "--output", "json"];
    all.extend_from_slice(args);
    let out = covenant(&all);
    let value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|_| panic!("json plan: {}", String::from_utf8_lossy(&out.stderr)));
    (out.status.code(), value)
}

fn combination<'a>(plan: &'a Value, producer: &str, consumer: &str) -> &'a Value {
    plan["combinations"]
        .as_array()
        .and_then(|cs| {
            cs.iter()
                .find(|c| c["producer"] == producer && c["consumer"] == consumer)
        })
        .unwrap_or_else(|| panic!("no {producer}/{consumer} in {plan}"))
}

fn steps(plan: &Value) -> Vec<String> {
    plan["steps"]
        .as_array()
        .map(|s| {
            s.iter()
                .filter_map(|x| x.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

/// §5 and §13: `plan v3 v1 v2` used to say "either order" although v3 cannot read v1's
/// records (`kind` was a string there).
#[test]
fn the_plan_covers_every_version_given_offline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let v1 = write(dir.path(), "v1.avsc", KIND_V1);
    let v2 = write(dir.path(), "v2.avsc", KIND_V2);
    let v3 = write(dir.path(), "v3.avsc", KIND_V3);
    let (code, value) = plan(&[s(&v3), s(&v1), s(&v2)]);
    assert_eq!(code, Some(1), "{value}");
    assert_eq!(value["order"], "neither");
    let old_to_new = combination(&value, "old", "new");
    assert_eq!(old_to_new["safe"], false);
    assert!(
        old_to_new["reasons"]
            .as_array()
            .is_some_and(|r| r.iter().any(|r| r["path"]
                .as_str()
                .is_some_and(|p| p.starts_with("/fields/kind")))),
        "{old_to_new}"
    );
    // Against v2 alone the change is fine.
    let (code, value) = plan(&[s(&v3), s(&v2)]);
    assert_eq!((code, &value["order"]), (Some(0), &json!("either_order")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_plan_covers_every_version_in_scope_on_the_server() {
    let server = Server::start().await;
    // The history drops 'kind' without a deprecation record, accepted here: the plan is
    // what is looked at.
    server
        .config(
            "kind",
            json!({"semanticRules": {"FIELD_REMOVED_WITHOUT_DEPRECATION": "warning"}}),
        )
        .await;
    server.registered("kind", "AVRO", KIND_V1).await;
    server.registered("kind", "AVRO", KIND_V2).await;
    let ask = || async {
        let (status, plan) = server
            .call(
                "POST",
                "/covenant/v1/subjects/kind/plan",
                Some(json!({"schema": KIND_V3})),
            )
            .await;
        assert_eq!(status, 200, "{plan}");
        plan
    };
    let value = ask().await;
    assert_eq!(value["order"], "neither", "{value}");
    assert_eq!(combination(&value, "old", "new")["safe"], false);
    // A scope that leaves v1 out (its data is gone) narrows the plan.
    server
        .config(
            "kind",
            json!({"compatibilityScope": {"kind": "versions", "versions": [2]}}),
        )
        .await;
    assert_eq!(ask().await["order"], "either_order");
}

const OWNER: &str = r#"{"type":"record","name":"Case","fields":[{"name":"caseId","type":"string"},{"name":"caseOwner","type":["null","string"],"default":null}]}"#;
const OFFICER: &str = r#"{"type":"record","name":"Case","fields":[{"name":"caseId","type":"string"},{"name":"assignedOfficer","type":["null","string"],"default":null}]}"#;
const DB_TIME: &str = r#"{"type":"record","name":"Case","fields":[{"name":"updatedAt","type":"string","doc":"Database update timestamp."}]}"#;
const EVENT_TIME: &str = r#"{"type":"record","name":"Case","fields":[{"name":"updatedAt","type":"string","doc":"Business event timestamp."}]}"#;

/// §19.2 and §19.4: a rename and a meaning change came out "either order, all four
/// combinations safe"; now neither order is safe and the seed's steps follow.
#[test]
fn renames_and_meaning_changes_plan_the_seed_rollouts_offline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let owner = write(dir.path(), "owner.avsc", OWNER);
    let officer = write(dir.path(), "officer.avsc", OFFICER);
    let (code, value) = plan(&[s(&officer), s(&owner)]);
    assert_eq!(code, Some(1), "{value}");
    assert_eq!(value["order"], "neither");
    assert_eq!(
        combination(&value, "old", "new")["reasons"][0]["rule"],
        "LIKELY_RENAME"
    );
    let rename = steps(&value);
    assert!(
        rename
            .iter()
            .any(|s| s.starts_with("Dual-write old and new fields"))
    );
    assert!(
        rename
            .iter()
            .any(|s| s.starts_with("Remove the old field after"))
    );

    let db = write(dir.path(), "db.avsc", DB_TIME);
    let event = write(dir.path(), "event.avsc", EVENT_TIME);
    let (code, value) = plan(&[s(&event), s(&db)]);
    assert_eq!((code, &value["order"]), (Some(1), &json!("neither")));
    assert!(
        steps(&value)
            .iter()
            .any(|s| s.starts_with("Breaking semantic change rollout"))
    );
    // The subject's policy decides: under Confluent's verdicts, a rename set to info is
    // only reviewed.
    let policy = write(
        dir.path(),
        "policy.json",
        r#"{"policyPreset": "confluent", "semanticRules": {"LIKELY_RENAME": "info"}}"#,
    );
    let (code, value) = plan(&["--policy", s(&policy), s(&officer), s(&owner)]);
    assert_eq!((code, &value["order"]), (Some(0), &json!("either_order")));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn renames_plan_the_seed_rollout_on_the_server() {
    let server = Server::start().await;
    server.registered("owner", "AVRO", OWNER).await;
    let (status, value) = server
        .call(
            "POST",
            "/covenant/v1/subjects/owner/plan",
            Some(json!({"schema": OFFICER})),
        )
        .await;
    assert_eq!(status, 200, "{value}");
    assert_eq!(value["order"], "neither");
    assert!(
        steps(&value)
            .iter()
            .any(|s| s.starts_with("Rename rollout: add the new field"))
    );
}

const STATUS_V1: &str = r#"{"type":"record","name":"CaseEvent","fields":[{"name":"caseId","type":"string"},{"name":"caseStatus","type":{"type":"enum","name":"CaseStatus","symbols":["OPEN","UNDER_REVIEW","ESCALATED","CLOSED"],"default":"OPEN"}}]}"#;
const STATUS_V2: &str = r#"{"type":"record","name":"CaseEvent","fields":[{"name":"caseId","type":"string"},{"name":"caseStatus","type":{"type":"enum","name":"CaseStatus","symbols":["OPEN","UNDER_REVIEW","ESCALATED","CLOSED","SUSPENDED"],"default":"OPEN"}}]}"#;
const ASSIGNED_V1: &str = r#"{"type":"record","name":"CaseAssigned","doc":"One CaseAssigned event per case assignment.","fields":[{"name":"caseId","type":"string"},{"name":"assignee","type":"string"}]}"#;
const ASSIGNED_V2: &str = r#"{"type":"record","name":"CaseAssigned","doc":"One CaseAssigned event per assignee role.","fields":[{"name":"caseId","type":"string"},{"name":"assignee","type":"string"}]}"#;

/// The seed's enum expansion steps (§19.3), in its order, with the field and the value.
fn assert_enum_expansion_plan(value: &Value) {
    assert_eq!(value["order"], "readers_first", "{value}");
    assert_eq!(combination(value, "new", "old")["safe"], false);
    assert_eq!(
        combination(value, "new", "old")["reasons"][0]["rule"],
        "ENUM_VALUE_ADDED"
    );
    assert_eq!(combination(value, "old", "new")["safe"], true);
    let steps = steps(value);
    let starts = [
        "Enum expansion rollout for Field 'caseStatus', new value 'SUSPENDED': add unknown/default handling in every consumer",
        "Deploy the consumers with that handling",
        "Add the value to the contract",
        "Update reporting classifications for Field 'caseStatus': decide how 'SUSPENDED' is classified",
        "Deploy the producers that emit the new value.",
        "Monitor unknown value metrics: contract.enum.unknown{field=\"caseStatus\"}",
    ];
    assert_eq!(steps.len(), starts.len(), "{steps:#?}");
    for (step, start) in steps.iter().zip(starts) {
        assert!(
            step.starts_with(start),
            "{step:?} does not start with {start:?}"
        );
    }
    assert_eq!(
        value["watch"],
        json!(["contract.enum.unknown{field=\"caseStatus\"}"])
    );
}

/// §19.3 and Rule 4: an enum expansion plans handling, consumers, classifications,
/// producers and the unknown-value metric; a grain change plans a new event type.
#[test]
fn enum_expansion_and_grain_change_plan_the_seed_rollouts_offline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let v1 = write(dir.path(), "status1.avsc", STATUS_V1);
    let v2 = write(dir.path(), "status2.avsc", STATUS_V2);
    let (code, value) = plan(&[s(&v2), s(&v1)]);
    assert_eq!(code, Some(0), "{value}");
    assert_enum_expansion_plan(&value);
    let out = covenant(&["plan", s(&v2), s(&v1)]);
    let text = String::from_utf8_lossy(&out.stdout);
    assert!(
        text.contains("\nWatch:\n  - contract.enum.unknown{field=\"caseStatus\"}\n"),
        "{text}"
    );

    let g1 = write(dir.path(), "assigned1.avsc", ASSIGNED_V1);
    let g2 = write(dir.path(), "assigned2.avsc", ASSIGNED_V2);
    let (code, value) = plan(&[s(&g2), s(&g1)]);
    assert_eq!(
        (code, &value["order"]),
        (Some(1), &json!("neither")),
        "{value}"
    );
    let steps = steps(&value);
    assert!(
        steps[1].starts_with(
            "Event grain change: 'CaseAssigned' must keep its grain. Create a new event type for the new grain"
        ),
        "{steps:#?}"
    );
    assert!(
        steps
            .iter()
            .any(|s| s.starts_with("Dual-publish 'CaseAssigned' and the new event type"))
    );
    assert!(
        !steps
            .iter()
            .any(|s| s.starts_with("Breaking semantic change rollout"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enum_expansion_plans_the_seed_rollout_on_the_server() {
    let server = Server::start().await;
    server.registered("case-status", "AVRO", STATUS_V1).await;
    let (status, value) = server
        .call(
            "POST",
            "/covenant/v1/subjects/case-status/plan",
            Some(json!({"schema": STATUS_V2})),
        )
        .await;
    assert_eq!(status, 200, "{value}");
    assert_enum_expansion_plan(&value);
}

const INSTRUMENT_V1: &str = r#"{"type":"record","name":"Instrument","fields":[{"name":"symbol","type":"string"},{"name":"tickSize","type":"string"}]}"#;
const INSTRUMENT_V2: &str =
    r#"{"type":"record","name":"Instrument","fields":[{"name":"symbol","type":"string"}]}"#;

/// Rule 6: removing `tickSize`, never deprecated, registered under BACKWARD with no finding.
/// "No known consumers" is not evidence: refused under the default preset, a warning under
/// Confluent's verdicts.
#[test]
fn removal_without_deprecation_is_reported_offline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let old = write(dir.path(), "i1.avsc", INSTRUMENT_V1);
    let new = write(dir.path(), "i2.avsc", INSTRUMENT_V2);
    let (code, found) = check(&[s(&new), s(&old)], "FIELD_REMOVED_WITHOUT_DEPRECATION");
    assert_eq!(code, Some(1), "no consumers known offline: still an error");
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["severity"], "error");
    assert_eq!(found[0]["path"], "/fields/tickSize");
    let (code, found) = check(
        &["--preset", "confluent", s(&new), s(&old)],
        "FIELD_REMOVED_WITHOUT_DEPRECATION",
    );
    assert_eq!(code, Some(0));
    assert_eq!(found[0]["severity"], "warning");
    let policy = write(
        dir.path(),
        "policy.json",
        r#"{"policyPreset": "confluent", "semanticRules": {"FIELD_REMOVED_WITHOUT_DEPRECATION": "error"}}"#,
    );
    let (code, _) = check(
        &["--policy", s(&policy), s(&new), s(&old)],
        "FIELD_REMOVED_WITHOUT_DEPRECATION",
    );
    assert_eq!(code, Some(1));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removal_without_deprecation_names_consumers_on_the_server() {
    let server = Server::start().await;
    let verbose = |subject: &'static str| {
        let server = &server;
        async move {
            let (status, body) = server
                .call(
                    "POST",
                    &format!("/compatibility/subjects/{subject}/versions?verbose=true"),
                    Some(json!({"schema": INSTRUMENT_V2})),
                )
                .await;
            assert_eq!(status, 200, "{body}");
            body
        }
    };
    let finding = |body: &Value| {
        body["findings"]
            .as_array()
            .and_then(|fs| {
                fs.iter()
                    .find(|f| f["rule"] == "FIELD_REMOVED_WITHOUT_DEPRECATION")
                    .cloned()
            })
            .unwrap_or_else(|| panic!("no removal finding in {body}"))
    };

    // Nobody is known to read it: still refused under the default preset; a warning under
    // the confluent preset, and the version registers.
    server.registered("quiet", "AVRO", INSTRUMENT_V1).await;
    let body = verbose("quiet").await;
    assert_eq!(body["is_compatible"], false, "{body}");
    assert_eq!(finding(&body)["severity"], "error");
    server
        .config("quiet", json!({"policyPreset": "confluent"}))
        .await;
    let body = verbose("quiet").await;
    assert_eq!(finding(&body)["severity"], "warning");
    server.registered("quiet", "AVRO", INSTRUMENT_V2).await;

    // A consumer declares it: an error naming the consumer.
    server.registered("instrument", "AVRO", INSTRUMENT_V1).await;
    let (status, body) = server
        .call(
            "POST",
            "/covenant/v1/consumers",
            Some(json!({
                "name": "risk-engine", "owner": "risk", "purpose": "margin by tick size",
                "cadence": "daily", "criticality": "high", "contact": "risk@example.com",
                "clients": ["svc_risk"],
                "reads": [{"subject": "instrument", "fields": ["tickSize"]}]
            })),
        )
        .await;
    assert!(status < 300, "{body}");
    let body = verbose("instrument").await;
    assert_eq!(body["is_compatible"], false);
    let f = finding(&body);
    assert_eq!(f["severity"], "error");
    assert!(
        f["message"]
            .as_str()
            .is_some_and(|m| m.contains("'risk-engine'")),
        "{f}"
    );
    refused_for(
        &server.register("instrument", "AVRO", INSTRUMENT_V2).await,
        "FIELD_REMOVED_WITHOUT_DEPRECATION",
    );
}

/// §13 and Rule 7: the stored sample `"12.34"` replayed "fine" through `decimal(18,2)`. Now
/// the replay compares values with logical types applied. The rule on the schema change is
/// turned off here so that only the replay speaks.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_compares_values_with_logical_types_on_the_server() {
    use base64::Engine;
    let server = Server::start().await;
    server
        .config(
            "payment",
            json!({"compatibility": "FULL_TRANSITIVE", "semanticRules": {"VALUE_REINTERPRETED": "off"}}),
        )
        .await;
    server.registered("payment", "AVRO", TEXT_AMOUNT).await;
    // Avro binary of {"amount": "12.34"}: zig-zag length 5, then the text.
    let mut payload = vec![0x0a];
    payload.extend_from_slice(b"12.34");
    let (status, body) = server
        .call(
            "POST",
            "/covenant/v1/subjects/payment/versions/1/samples",
            Some(json!({
                "payload": base64::engine::general_purpose::STANDARD.encode(&payload),
                "encoding": "avro"
            })),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let message = refused_for(
        &server.register("payment", "AVRO", DECIMAL_AMOUNT).await,
        "SAMPLE_REPLAY_FAILED",
    );
    assert!(
        message.contains("\"12.34\"") && message.contains("\"2112952860.68\""),
        "{message}"
    );
}

const TICKET_V1: &str = r#"{"type":"record","name":"Ticket","fields":[{"name":"id","type":"string"},{"name":"owner","type":["null","string"],"default":null},{"name":"legacy","type":["null","string"],"default":null}]}"#;
const TICKET_V2: &str = r#"{"type":"record","name":"Ticket","fields":[{"name":"id","type":"string"},{"name":"owner","type":["null","string"],"default":null}]}"#;

/// Rule 6 and the removal gate: a deprecation could go frozen -> enforcing -> removable at
/// the same instant, with its window open and nothing on the record, and the removal then
/// registered. Each stage now has entry conditions, and each refusal says what is missing.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn removable_needs_the_window_and_evidence_or_a_named_exception() {
    let server = Server::start().await;
    server.registered("ticket", "AVRO", TICKET_V1).await;
    let (status, record) = server
        .call(
            "POST",
            "/covenant/v1/deprecations",
            Some(json!({
                "target": {"kind": "field", "subject": "ticket", "path": "legacy"},
                "old_promise": "legacy holds the pre-2020 owner code",
                "new_promise": "owner holds the owner id",
                "replacement": "owner",
                "announced_by": "tickets-team",
            })),
        )
        .await;
    assert_eq!(status, 200, "{record}");
    let id = record["id"].as_i64().expect("deprecation id");
    let stage = format!("/covenant/v1/deprecations/{id}/stage");
    let to = |s: &'static str| json!({"to": s, "by": "tickets-team"});
    for s in ["frozen", "enforcing"] {
        let (status, body) = server.call("POST", &stage, Some(to(s))).await;
        assert_eq!(status, 200, "{s}: {body}");
    }
    let (status, refusal) = server.call("POST", &stage, Some(to("removable"))).await;
    assert_eq!(status, 409, "{refusal}");
    let message = refusal["message"].as_str().unwrap_or_default();
    assert!(message.contains("[window_open]"), "{message}");
    assert!(message.contains("[no_evidence]"), "{message}");
    assert!(message.contains("[no_canary]"), "{message}");
    refused_for_removal(&server.register("ticket", "AVRO", TICKET_V2).await);

    // Evidence on the record and an attributed exception for the window: now it may go.
    let (status, body) = server
        .call(
            "POST",
            &format!("/covenant/v1/deprecations/{id}/evidence"),
            Some(json!({
                "claim": "replay of 2019 archive decodes without legacy", "by": "platform",
                "body": {"kind": "replay_result", "sample": "tickets-2019.avro", "passed": true},
            })),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = server
        .call(
            "POST",
            &format!("/covenant/v1/deprecations/{id}/exceptions"),
            Some(
                json!({"approver": "risk-approver", "overrides": "window_open",
                "reason": "no consumer ever declared legacy; early removal accepted"}),
            ),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // Leaving enforcement needs a passed canary, or an exception naming why none is run.
    let (status, refusal) = server.call("POST", &stage, Some(to("removable"))).await;
    assert_eq!(status, 409, "{refusal}");
    let message = refusal["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("[no_canary]") && !message.contains("[window_open]"),
        "{message}"
    );
    let (status, body) = server
        .call(
            "POST",
            &format!("/covenant/v1/deprecations/{id}/exceptions"),
            Some(
                json!({"approver": "risk-approver", "overrides": "no_canary",
                "reason": "ticket has no producer path to canary; the replay covers the archive"}),
            ),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = server.call("POST", &stage, Some(to("removable"))).await;
    assert_eq!(status, 200, "{body}");
    server.registered("ticket", "AVRO", TICKET_V2).await;
}

fn refused_for_removal(answer: &(u16, Value)) {
    assert_eq!(answer.0, 409, "{}", answer.1);
    let message = answer.1["message"].as_str().unwrap_or_default();
    assert!(message.contains("[stage_not_removable]"), "{message}");
}

/// The freeze: a consumer declaring a whole version (`ticket@1`, no field list) used to slip
/// past it. A read without fields declares every field, so it is refused while one is frozen;
/// the same consumer listing its fields without the frozen one is accepted.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_whole_version_declaration_cannot_bypass_a_freeze() {
    let server = Server::start().await;
    server.registered("ticket", "AVRO", TICKET_V1).await;
    let (status, record) = server
        .call(
            "POST",
            "/covenant/v1/deprecations",
            Some(json!({
                "target": {"kind": "field", "subject": "ticket", "path": "legacy"},
                "old_promise": "legacy holds the pre-2020 owner code",
                "new_promise": "owner holds the owner id",
                "replacement": "owner",
                "announced_by": "tickets-team",
            })),
        )
        .await;
    assert_eq!(status, 200, "{record}");
    let id = record["id"].as_i64().expect("id");
    let (status, body) = server
        .call(
            "POST",
            &format!("/covenant/v1/deprecations/{id}/stage"),
            Some(json!({"to": "frozen", "by": "tickets-team"})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let consumer = |reads: Value| {
        json!({
            "name": "ticket-archive", "owner": "archive", "purpose": "archives tickets",
            "cadence": "weekly", "criticality": "low", "contact": "archive@example.com",
            "clients": ["svc_archive"], "reads": reads
        })
    };
    let (status, body) = server
        .call(
            "POST",
            "/covenant/v1/consumers",
            Some(consumer(
                json!([{"subject": "ticket", "reader_version": 1}]),
            )),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert_eq!(body["error_code"], 40901);
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("cannot declare every field of subject 'ticket'")
            && message.contains("'legacy'")
            && message.contains("read 'owner' instead"),
        "{message}"
    );
    let (status, body) = server
        .call(
            "POST",
            "/covenant/v1/consumers",
            Some(consumer(
                json!([{"subject": "ticket", "reader_version": 1, "fields": ["id", "owner"]}]),
            )),
        )
        .await;
    assert_eq!(status, 200, "{body}");
}

const EVENT_V1: &str = r#"{"type":"record","name":"CaseEvent","fields":[{"name":"eventId","type":"string"},{"name":"priority","type":"int","default":3},{"name":"updatedAt","type":"string","doc":"Database update timestamp."}]}"#;
const EVENT_NO_ID: &str = r#"{"type":"record","name":"CaseEvent","fields":[{"name":"priority","type":"int","default":3},{"name":"updatedAt","type":"string","doc":"Database update timestamp."}]}"#;
const EVENT_PRIORITY_0: &str = r#"{"type":"record","name":"CaseEvent","fields":[{"name":"eventId","type":"string"},{"name":"priority","type":"int","default":0},{"name":"updatedAt","type":"string","doc":"Database update timestamp."}]}"#;
const EVENT_AMOUNT: &str = r#"{"type":"record","name":"CaseEvent","fields":[{"name":"eventId","type":"string"},{"name":"priority","type":"int","default":3},{"name":"updatedAt","type":"string","doc":"Database update timestamp."},{"name":"amount","type":"double","default":0.0}]}"#;
const EVENT_MEANING: &str = r#"{"type":"record","name":"CaseEvent","fields":[{"name":"eventId","type":"string"},{"name":"priority","type":"int","default":3},{"name":"updatedAt","type":"string","doc":"Business event timestamp."}]}"#;

/// Rule 10 and §23.1 (identity without metadata), §11 (a CDC default 3 -> 0 under FULL) and
/// §23.2 (a new `amount: double`): each passed without any finding.
#[test]
fn identity_defaults_and_money_offline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let v1 = write(dir.path(), "e1.avsc", EVENT_V1);
    let no_id = write(dir.path(), "e2.avsc", EVENT_NO_ID);
    // Undeclared, the identity is known by its name: an error under the default preset, a
    // warning under Confluent's verdicts.
    let (code, found) = check(&[s(&no_id), s(&v1)], "LIKELY_IDENTITY_CHANGED");
    assert_eq!((code, found.len()), (Some(1), 1), "{found:?}");
    assert_eq!(found[0]["severity"], "error");
    assert_eq!(found[0]["path"], "/fields/eventId");
    let (code, found) = check(
        &["--preset", "confluent", s(&no_id), s(&v1)],
        "LIKELY_IDENTITY_CHANGED",
    );
    assert_eq!((code, found.len()), (Some(0), 1), "{found:?}");
    assert_eq!(found[0]["severity"], "warning");
    // Metadata is the authority: declared, the same removal is an error.
    let metadata = write(
        dir.path(),
        "metadata.json",
        r#"{"properties": {"covenant.identity.fields": "eventId"}}"#,
    );
    let (code, found) = check(
        &["--metadata", s(&metadata), s(&no_id), s(&v1)],
        "KEY_FIELD_CHANGED",
    );
    assert_eq!((code, found.len()), (Some(1), 1));

    let zero = write(dir.path(), "e3.avsc", EVENT_PRIORITY_0);
    let (code, found) = check(
        &["--level", "FULL", s(&zero), s(&v1)],
        "FIELD_DEFAULT_CHANGED",
    );
    assert_eq!((code, found.len()), (Some(0), 1));
    assert!(
        found[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("from 3 to 0"))
    );

    let amount = write(dir.path(), "e4.avsc", EVENT_AMOUNT);
    let (_, found) = check(&[s(&amount), s(&v1)], "MONEY_AS_FLOAT");
    assert_eq!(found.len(), 1);
    assert_eq!(found[0]["path"], "/fields/amount");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn identity_defaults_money_and_consumers_on_the_server() {
    let server = Server::start().await;
    server.registered("case-event", "AVRO", EVENT_V1).await;
    let (status, body) = server
        .call(
            "POST",
            "/covenant/v1/consumers",
            Some(json!({
                "name": "sla-monitor", "owner": "ops", "purpose": "case SLAs",
                "cadence": "daily", "criticality": "high", "contact": "ops@example.com",
                "clients": ["svc_sla"],
                "reads": [{"subject": "case-event", "fields": ["updatedAt", "priority"]}]
            })),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let verbose = |schema: &'static str| {
        let server = &server;
        async move {
            let (status, body) = server
                .call(
                    "POST",
                    "/compatibility/subjects/case-event/versions?verbose=true",
                    Some(json!({"schema": schema})),
                )
                .await;
            assert_eq!(status, 200, "{body}");
            body
        }
    };
    let rule = |body: &Value, rule: &str| -> Value {
        body["findings"]
            .as_array()
            .and_then(|fs| fs.iter().find(|f| f["rule"] == rule).cloned())
            .unwrap_or_else(|| panic!("no {rule} in {body}"))
    };
    assert_eq!(
        rule(&verbose(EVENT_NO_ID).await, "LIKELY_IDENTITY_CHANGED")["path"],
        "/fields/eventId"
    );
    assert_eq!(
        rule(&verbose(EVENT_AMOUNT).await, "MONEY_AS_FLOAT")["path"],
        "/fields/amount"
    );
    // Every semantic finding names the consumers that read its field, not only enum ones.
    for (schema, id) in [
        (EVENT_PRIORITY_0, "FIELD_DEFAULT_CHANGED"),
        (EVENT_MEANING, "MEANING_CHANGED"),
    ] {
        let f = rule(&verbose(schema).await, id);
        assert!(
            f["message"]
                .as_str()
                .is_some_and(|m| m.ends_with("Consumers reading it: 'sla-monitor'.")),
            "{f}"
        );
    }
    server
        .config(
            "case-event",
            json!({"semanticRules": {"FIELD_DEFAULT_CHANGED": "error"}}),
        )
        .await;
    refused_for(
        &server
            .register("case-event", "AVRO", EVENT_PRIORITY_0)
            .await,
        "FIELD_DEFAULT_CHANGED",
    );
}

/// §13: at the default BACKWARD level only the latest version's samples were replayed, so a
/// v1 record that v3 cannot read went unnoticed. Every version's samples are now replayed
/// unless a scope narrows them.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_versions_samples_are_replayed_by_default() {
    use base64::Engine;
    let server = Server::start().await;
    // The history drops 'kind' without a deprecation record, accepted here: only the replay
    // is to speak.
    server
        .config(
            "kinds",
            json!({"semanticRules": {"FIELD_REMOVED_WITHOUT_DEPRECATION": "warning"}}),
        )
        .await;
    server.registered("kinds", "AVRO", KIND_V1).await;
    server.registered("kinds", "AVRO", KIND_V2).await;
    // Avro binary of {"id": 7, "kind": "refund"}: zig-zag 7, then length 6 and the text.
    let mut payload = vec![0x0e, 0x0c];
    payload.extend_from_slice(b"refund");
    let (status, body) = server
        .call(
            "POST",
            "/covenant/v1/subjects/kinds/versions/1/samples",
            Some(json!({
                "payload": base64::engine::general_purpose::STANDARD.encode(&payload),
                "encoding": "avro"
            })),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let message = refused_for(
        &server.register("kinds", "AVRO", KIND_V3).await,
        "SAMPLE_REPLAY_FAILED",
    );
    assert!(message.contains("of version 1"), "{message}");
    server
        .config("kinds", json!({"compatibilityScope": {"kind": "latest"}}))
        .await;
    server.registered("kinds", "AVRO", KIND_V3).await;
}

const CUSTOMER_V1: &str = r#"{"type":"record","name":"Customer","fields":[{"name":"plan_id","type":"string"},{"name":"payload","type":["null","string","long"],"default":null}]}"#;
const CUSTOMER_V2: &str = r#"{"type":"record","name":"Customer","fields":[{"name":"plan_id","type":"string"},{"name":"payload","type":["null","string","long","double","boolean","bytes"],"default":null},{"name":"plan_id_v2","type":["null","string"],"default":null},{"name":"customerEmail","type":["null","string"],"default":null}]}"#;
const CONTACT_V1: &str =
    r#"{"type":"object","additionalProperties":false,"properties":{"contact":{"type":"string"}}}"#;
const CONTACT_V2: &str = r#"{"type":"object","additionalProperties":false,"properties":{"contact":{"type":"string","format":"email"}}}"#;

/// The lints the seeds ask for: untagged personal data (§23.4), version-suffixed names,
/// a union grown past a few branches (§8.4) and `format` added to a JSON string (§10.4).
#[test]
fn seed_lints_offline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let v1 = write(dir.path(), "c1.avsc", CUSTOMER_V1);
    let v2 = write(dir.path(), "c2.avsc", CUSTOMER_V2);
    for (rule, path) in [
        ("PII_UNTAGGED", "/fields/customerEmail"),
        ("VERSION_SUFFIXED_NAME", "/fields/plan_id_v2"),
        ("WIDE_UNION", "/fields/payload"),
    ] {
        let (code, found) = check(&[s(&v2), s(&v1)], rule);
        assert_eq!(code, Some(0), "{rule}: warnings only");
        assert_eq!(found.len(), 1, "{rule}: {found:?}");
        assert_eq!(found[0]["path"], path);
    }
    let j1 = write(dir.path(), "j1.json", CONTACT_V1);
    let j2 = write(dir.path(), "j2.json", CONTACT_V2);
    let (code, found) = check(&["--format", "json", s(&j2), s(&j1)], "JSON_FORMAT_ADDED");
    assert_eq!((code, found.len()), (Some(1), 1));
    assert_eq!(found[0]["path"], "#/properties/contact");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn seed_lints_on_the_server() {
    let server = Server::start().await;
    server.registered("contact", "JSON", CONTACT_V1).await;
    refused_for(
        &server.register("contact", "JSON", CONTACT_V2).await,
        "JSON_FORMAT_ADDED",
    );
    server.registered("customer", "AVRO", CUSTOMER_V1).await;
    server
        .config(
            "customer",
            json!({"semanticRules": {"PII_UNTAGGED": "error", "VERSION_SUFFIXED_NAME": "error", "WIDE_UNION": "error"}}),
        )
        .await;
    let message = refused_for(
        &server.register("customer", "AVRO", CUSTOMER_V2).await,
        "PII_UNTAGGED",
    );
    assert!(
        message.contains("rule: VERSION_SUFFIXED_NAME") && message.contains("rule: WIDE_UNION"),
        "{message}"
    );
}

/// The deprecation record is one live document: PATCH used to answer 405. Updates change the
/// content and are kept with who made them; an update that changes nothing is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deprecation_records_are_updated_with_history() {
    let server = Server::start().await;
    server.registered("ticket", "AVRO", TICKET_V1).await;
    let (status, record) = server
        .call(
            "POST",
            "/covenant/v1/deprecations",
            Some(json!({
                "target": {"kind": "field", "subject": "ticket", "path": "legacy"},
                "old_promise": "legacy holds the pre-2020 owner code",
                "new_promise": "owner holds the owner id",
                "announced_by": "tickets-team",
            })),
        )
        .await;
    assert_eq!(status, 200, "{record}");
    let path = format!("/covenant/v1/deprecations/{}", record["id"]);
    let (status, updated) = server
        .call(
            "PATCH",
            &path,
            Some(json!({
                "by": "tickets-team", "note": "owner field agreed",
                "replacement": "owner", "window_end": "2027-06-30T00:00:00Z",
                "notes": {"discovery": "two readers found in query history"},
                "owners": [{"role": "producer", "name": "tickets-team"}]
            })),
        )
        .await;
    assert_eq!(status, 200, "{updated}");
    assert_eq!(updated["replacement"], "owner");
    assert_eq!(
        updated["notes"]["discovery"],
        "two readers found in query history"
    );
    let update = &updated["updates"][0];
    assert_eq!(update["by"], "tickets-team");
    let changes: Vec<&str> = update["changes"]
        .as_array()
        .map(|c| c.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    assert!(
        changes.contains(&"replacement: 'none' -> 'owner'"),
        "{changes:?}"
    );
    assert!(
        changes
            .iter()
            .any(|c| c.starts_with("window end: ") && c.ends_with("-> 2027-06-30")),
        "{changes:?}"
    );
    let (status, text) = server.call("GET", &format!("{path}/record"), None).await;
    assert_eq!(status, 200);
    let text = text.as_str().unwrap_or_default();
    assert!(
        text.contains("updates:\n") && text.contains("by tickets-team: owner field agreed"),
        "{text}"
    );

    let (status, body) = server
        .call(
            "PATCH",
            &path,
            Some(json!({"by": "tickets-team", "replacement": "owner"})),
        )
        .await;
    assert_eq!(
        (status, body["error_code"].as_i64()),
        (422, Some(42240)),
        "{body}"
    );
    let (status, body) = server
        .call("PATCH", &path, Some(json!({"by": "x", "colour": "red"})))
        .await;
    assert_eq!(status, 422, "{body}");
}

/// `enforcing` behaved exactly like `frozen`. It now has the seed's meaning: it cannot start
/// while a consumer declares the field, and every read of the field carries a warning naming
/// the reader.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn enforcing_warns_every_reader_by_name() {
    let server = Server::start().await;
    server.registered("ticket", "AVRO", TICKET_V1).await;
    let consumer = |fields: Value| {
        json!({
            "name": "ticket-report", "owner": "reporting", "purpose": "weekly ticket report",
            "cadence": "weekly", "criticality": "medium", "contact": "reporting@example.com",
            "clients": ["svc_report"], "reads": [{"subject": "ticket", "fields": fields}]
        })
    };
    let (status, body) = server
        .call(
            "POST",
            "/covenant/v1/consumers",
            Some(consumer(json!(["id", "legacy"]))),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (_, record) = server
        .call(
            "POST",
            "/covenant/v1/deprecations",
            Some(json!({
                "target": {"kind": "field", "subject": "ticket", "path": "legacy"},
                "old_promise": "legacy holds the pre-2020 owner code",
                "new_promise": "owner holds the owner id",
                "replacement": "owner",
                "announced_by": "tickets-team",
            })),
        )
        .await;
    let stage = format!("/covenant/v1/deprecations/{}/stage", record["id"]);
    let to = |s: &'static str| json!({"to": s, "by": "tickets-team"});
    let (status, body) = server.call("POST", &stage, Some(to("frozen"))).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = server.call("POST", &stage, Some(to("enforcing"))).await;
    assert_eq!(status, 409, "a declared reader blocks enforcement: {body}");
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|m| m.contains("[consumer_declared]") && m.contains("ticket-report")),
        "{body}"
    );
    let (status, body) = server
        .call(
            "PUT",
            "/covenant/v1/consumers/ticket-report",
            Some(consumer(json!(["id", "owner"]))),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let report =
        || json!({"subject": "ticket", "client_id": "svc_report", "fields_read": ["legacy"]});
    let (_, receipt) = server
        .call("POST", "/covenant/v1/usage", Some(report()))
        .await;
    let kinds = |r: &Value| -> Vec<String> {
        r["findings"]
            .as_array()
            .map(|fs| {
                fs.iter()
                    .filter_map(|f| f["kind"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default()
    };
    assert!(
        !kinds(&receipt).contains(&"enforcement_warning".to_string()),
        "{receipt}"
    );
    let (status, body) = server.call("POST", &stage, Some(to("enforcing"))).await;
    assert_eq!(status, 200, "{body}");
    let (status, receipt) = server
        .call("POST", "/covenant/v1/usage", Some(report()))
        .await;
    assert_eq!(status, 200, "{receipt}");
    let warning = receipt["findings"]
        .as_array()
        .and_then(|fs| fs.iter().find(|f| f["kind"] == "enforcement_warning"))
        .unwrap_or_else(|| panic!("no enforcement warning: {receipt}"));
    assert_eq!(warning["consumer"], "ticket-report");
    assert!(
        warning["message"].as_str().is_some_and(|m| m
            .contains("Consumer 'ticket-report' (client 'svc_report')")
            && m.contains("move to 'owner'")),
        "{warning}"
    );
}
