//! `covenant check --against URL --subject S FILE` through a running server: the candidate is
//! judged as registering it would be (the semantic rules under the subject's preset, and the
//! removal gate over declared consumers), nothing is registered, and the findings are the
//! registration's own; SARIF regions point into the candidate file.

use crate::support;

use serde_json::{Value, json};
use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Command, Output};
use support::{TestServer, json_of};

const SUBJECT: &str = "orders-value";

fn order(fields: &[(&str, Value)]) -> String {
    let fields: Vec<Value> = fields
        .iter()
        .map(|(name, extra)| {
            let mut field = json!({"name": name, "type": "string"});
            if let (Value::Object(f), Value::Object(e)) = (&mut field, extra) {
                f.extend(e.clone());
            }
            field
        })
        .collect();
    serde_json::to_string_pretty(&json!({"type": "record", "name": "Order", "fields": fields}))
        .expect("json")
}

fn check_against(server: &TestServer, file: &Path, output: &str) -> Output {
    Command::new(env!("CARGO_BIN_EXE_covenant"))
        .args(["check", "--against", &server.base, "--subject", SUBJECT])
        .args(["--output", output])
        .arg(file)
        .output()
        .expect("run covenant")
}

/// The rule ids a 409 registration message names (`{rule: ID, ...}`).
fn rules_in_message(message: &str) -> BTreeSet<String> {
    message
        .split("{rule: ")
        .skip(1)
        .filter_map(|rest| rest.split(',').next())
        .map(str::to_string)
        .collect()
}

async fn versions(server: &TestServer) -> Value {
    server
        .call("GET", &format!("/subjects/{SUBJECT}/versions"), None)
        .await
        .1
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_candidate_is_judged_as_its_registration_would_be_without_registering() {
    let server = TestServer::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let v1 = order(&[("id", json!({})), ("note", json!({"default": ""}))]);
    let (status, answer) = server.register(SUBJECT, "AVRO", &v1).await;
    assert_eq!(status, 200, "{answer}");

    // Accepted: a field added with a default. Nothing is registered.
    let added = support::write(
        dir.path(),
        "added.avsc",
        &order(&[
            ("id", json!({})),
            ("note", json!({"default": ""})),
            ("region", json!({"default": "eu"})),
        ]),
    );
    let output = check_against(&server, &added, "json");
    assert_eq!(output.status.code(), Some(0), "{}", json_of(&output));
    assert_eq!(json_of(&output)["compatible"], true);
    assert_eq!(versions(&server).await, json!([1]));

    // The same schema as version 1: the registration would write nothing.
    let same = support::write(dir.path(), "same.avsc", &v1);
    let output = check_against(&server, &same, "json");
    assert_eq!(output.status.code(), Some(0));
    assert_eq!(json_of(&output)["existingVersion"], 1);

    // Refused: `note` dropped without a deprecation record. The check names the rules the
    // registration's refusal names.
    let dropped = support::write(dir.path(), "dropped.avsc", &order(&[("id", json!({}))]));
    let output = check_against(&server, &dropped, "json");
    assert_eq!(output.status.code(), Some(1), "{}", json_of(&output));
    let checked: BTreeSet<String> = json_of(&output)["findings"]
        .as_array()
        .expect("findings")
        .iter()
        .filter(|f| f["severity"] == "error")
        .filter_map(|f| f["rule"].as_str().map(str::to_string))
        .collect();
    assert!(
        checked.contains("FIELD_REMOVED_WITHOUT_DEPRECATION"),
        "{checked:?}"
    );
    let text = std::fs::read_to_string(&dropped).expect("read");
    let (status, refused) = server.register(SUBJECT, "AVRO", &text).await;
    assert_eq!(status, 409, "{refused}");
    let message = refused["message"].as_str().expect("message");
    assert_eq!(checked, rules_in_message(message), "{message}");
    assert_eq!(versions(&server).await, json!([1]));

    // SARIF: each result's region is in the candidate file.
    let output = check_against(&server, &dropped, "sarif");
    assert_eq!(output.status.code(), Some(1));
    let sarif = json_of(&output);
    let result = &sarif["runs"][0]["results"][0];
    let location = &result["locations"][0]["physicalLocation"];
    assert_eq!(
        location["artifactLocation"]["uri"],
        dropped.display().to_string(),
        "{result}"
    );
    assert!(location["region"]["startLine"].is_u64(), "{result}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_removal_the_gate_refuses_is_refused_by_the_check_too() {
    let server = TestServer::start().await;
    let dir = tempfile::tempdir().expect("temp dir");
    let v1 = order(&[("id", json!({})), ("note", json!({"default": ""}))]);
    assert_eq!(server.register(SUBJECT, "AVRO", &v1).await.0, 200);
    // Under Confluent's preset the removal itself is no error, so only the gate refuses:
    // a live consumer declares it reads `note`.
    let (status, _) = server
        .call(
            "PUT",
            &format!("/config/{SUBJECT}"),
            Some(json!({"policyPreset": "confluent"})),
        )
        .await;
    assert_eq!(status, 200);
    let consumer = json!({
        "name": "billing", "owner": "billing-team", "purpose": "invoices",
        "cadence": "daily", "criticality": "high", "contact": "billing@example.com",
        "clients": ["billing-svc"], "reads": [{"subject": SUBJECT, "fields": ["note"]}],
    });
    let (status, answer) = server
        .call("POST", "/covenant/v1/consumers", Some(consumer))
        .await;
    assert_eq!(status, 200, "{answer}");

    let dropped = support::write(dir.path(), "dropped.avsc", &order(&[("id", json!({}))]));
    let text = std::fs::read_to_string(&dropped).expect("read");
    let (status, refused) = server.register(SUBJECT, "AVRO", &text).await;
    assert_eq!(status, 409, "{refused}");
    let output = check_against(&server, &dropped, "json");
    assert_eq!(output.status.code(), Some(1), "{}", json_of(&output));
    let document = json_of(&output);
    assert_eq!(document["compatible"], false, "{document:#}");
    let blockers: Vec<&str> = document["blockers"]
        .as_array()
        .expect("blockers")
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(!blockers.is_empty(), "{document:#}");
    let message = refused["message"].as_str().expect("message");
    for line in &blockers {
        assert!(
            message.contains(line),
            "{line:?} not in the refusal: {message}"
        );
    }
    assert!(
        blockers.iter().any(|b| b.contains("billing")),
        "{blockers:?}"
    );
    let output = check_against(&server, &dropped, "text");
    let shown = String::from_utf8_lossy(&output.stdout);
    assert!(shown.starts_with("REFUSED by the removal gate:"), "{shown}");
    assert_eq!(versions(&server).await, json!([1]));
}
