//! The evolution rules' Protobuf section (§9) as a user meets it: field numbers that move are
//! refused, and the good practice of reserving removed fields and adding new numbers passes
//! FULL under buf's strictest category, both through `covenant check` and through
//! registration on a running `covenant serve`.

use crate::support;
use std::time::Duration;
use support::{covenant, s, write};

use serde_json::{Value, json};
use std::process::Output;
use support::Serve;

const SWAP_V1: &str = "syntax = \"proto3\";\npackage acme;\nmessage CaseEvent {\n  string event_id = 1;\n  string case_id = 2;\n}\n";
/// §9.1: the two numbers swapped.
const SWAP_V2: &str = "syntax = \"proto3\";\npackage acme;\nmessage CaseEvent {\n  string case_id = 1;\n  string event_id = 2;\n}\n";

const RESERVE_V1: &str = "syntax = \"proto3\";\npackage acme;\nmessage CaseEvent {\n  string event_id = 1;\n  string case_id = 2;\n  string legacy_owner = 7;\n}\n";
/// §9.2 and §9.3: `legacy_owner` removed and reserved, `closure_reason_code` added with a new
/// number.
const RESERVE_V2: &str = "syntax = \"proto3\";\npackage acme;\nmessage CaseEvent {\n  string event_id = 1;\n  string case_id = 2;\n  string closure_reason_code = 5;\n  reserved 7;\n  reserved \"legacy_owner\";\n}\n";

fn findings(out: &Output) -> Vec<Value> {
    let json: Value = serde_json::from_slice(&out.stdout)
        .unwrap_or_else(|e| panic!("{e}: {}", String::from_utf8_lossy(&out.stdout)));
    json["findings"].as_array().cloned().unwrap_or_default()
}

#[test]
fn swapped_field_numbers_are_refused_at_every_strictness() {
    let dir = tempfile::tempdir().expect("tempdir");
    let old = write(dir.path(), "v1.proto", SWAP_V1);
    let new = write(dir.path(), "v2.proto", SWAP_V2);
    for strictness in ["confluent", "wire", "wire_json"] {
        let out = covenant(&[
            "check",
            "--level",
            "FULL_TRANSITIVE",
            "--strictness",
            strictness,
            "--output",
            "json",
            s(&new),
            s(&old),
        ]);
        assert_eq!(out.status.code(), Some(1), "{strictness}: {out:?}");
        let moved: Vec<Value> = findings(&out)
            .into_iter()
            .filter(|f| f["rule"] == "FIELD_IDENTITY_MOVED")
            .collect();
        assert_eq!(moved.len(), 2, "{strictness}: {moved:?}");
        assert!(moved.iter().all(|f| f["severity"] == "error"));
        assert!(
            moved[0]["hint"]
                .as_str()
                .is_some_and(|h| h.contains("add a new field with a new number")),
            "{moved:?}"
        );
    }
}

#[test]
fn the_rule_can_be_lowered_per_subject_policy() {
    let dir = tempfile::tempdir().expect("tempdir");
    let old = write(dir.path(), "v1.proto", SWAP_V1);
    let new = write(dir.path(), "v2.proto", SWAP_V2);
    let policy = write(
        dir.path(),
        "policy.json",
        // A swap also reuses names of the subject's history, a rule of its own.
        r#"{"semanticRules": {"FIELD_IDENTITY_MOVED": "warning", "PROTOBUF_HISTORY_REUSED": "warning"}}"#,
    );
    let out = covenant(&["check", "--policy", s(&policy), s(&new), s(&old)]);
    assert_eq!(out.status.code(), Some(0), "{out:?}");
    assert!(String::from_utf8_lossy(&out.stdout).contains("FIELD_IDENTITY_MOVED"));
}

#[test]
fn reserving_and_adding_is_compatible_under_full_wire_json() {
    let dir = tempfile::tempdir().expect("tempdir");
    let old = write(dir.path(), "v1.proto", RESERVE_V1);
    let new = write(dir.path(), "v2.proto", RESERVE_V2);
    // Under the default preset the removal still needs a deprecation record first; the
    // reserved field is not taken for a rename of the added one.
    let out = covenant(&[
        "check",
        "--strictness",
        "wire_json",
        "--output",
        "json",
        s(&new),
        s(&old),
    ]);
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let errors: Vec<Value> = findings(&out)
        .into_iter()
        .filter(|f| f["severity"] == "error")
        .collect();
    assert_eq!(errors.len(), 1, "{errors:?}");
    assert_eq!(errors[0]["rule"], "FIELD_REMOVED_WITHOUT_DEPRECATION");
    assert_eq!(errors[0]["path"], "/acme.CaseEvent/fields/legacy_owner");
    for level in ["BACKWARD", "FORWARD", "FULL", "FULL_TRANSITIVE"] {
        let out = covenant(&[
            "check",
            "--level",
            level,
            "--strictness",
            "wire_json",
            "--preset",
            "confluent",
            s(&new),
            s(&old),
        ]);
        assert_eq!(
            out.status.code(),
            Some(0),
            "{level}: {}",
            String::from_utf8_lossy(&out.stdout)
        );
    }
}

async fn call(
    client: &reqwest::Client,
    base: &str,
    method: &str,
    path: &str,
    body: Value,
) -> (u16, Value) {
    support::call(client, base, method, path, support::V1, Some(body)).await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registration_follows_the_same_rules() {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = Serve::spawn(&dir.path().join("data"), |_| {});
    let client = covenant_exporter::client::client();
    let base = serve.base.clone();
    support::wait_health(&client, &base, "/health/live", 200, Duration::from_secs(10)).await;
    let register = |subject: &'static str, schema: &'static str| {
        let (client, base) = (client.clone(), base.clone());
        async move {
            call(
                &client,
                &base,
                "POST",
                &format!("/subjects/{subject}/versions"),
                json!({"schemaType": "PROTOBUF", "schema": schema}),
            )
            .await
        }
    };

    let (status, body) = register("swap", SWAP_V1).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = register("swap", SWAP_V2).await;
    assert_eq!(status, 409, "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.contains("rule: FIELD_IDENTITY_MOVED"), "{message}");

    let config = json!({"compatibility": "FULL", "protobufStrictness": "wire_json"});
    let (status, body) = call(&client, &base, "PUT", "/config/reserve", config).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = register("reserve", RESERVE_V1).await;
    assert_eq!(status, 200, "{body}");
    // The default preset wants a deprecation record before the removal, as offline.
    let (status, body) = register("reserve", RESERVE_V2).await;
    assert_eq!(status, 409, "{body}");
    let message = body["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("rule: FIELD_REMOVED_WITHOUT_DEPRECATION")
            && !message.contains("LIKELY_RENAME"),
        "{message}"
    );
    let preset = json!({"policyPreset": "confluent"});
    let (status, body) = call(&client, &base, "PUT", "/config/reserve", preset).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = register("reserve", RESERVE_V2).await;
    assert_eq!(status, 200, "{body}");
}
