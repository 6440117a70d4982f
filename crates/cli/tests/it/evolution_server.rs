//! Evolution policy through a running `covenant serve`: the seeds' examples in 409s and
//! verbose compatibility answers, per-subject and global semantic rule levels, compatibility
//! scopes, sample replay, live marks and rollout plans.

use crate::support;

use serde_json::{Value, json};
use support::TestServer as Server;

impl Server {
    async fn verbose(&self, subject: &str, schema_type: &str, schema: &str) -> Value {
        let (status, body) = self
            .call(
                "POST",
                &format!("/compatibility/subjects/{subject}/versions?verbose=true"),
                Some(json!({"schemaType": schema_type, "schema": schema})),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body
    }
}

fn finding<'a>(verbose: &'a Value, rule: &str) -> &'a Value {
    verbose["findings"]
        .as_array()
        .and_then(|fs| fs.iter().find(|f| f["rule"] == rule))
        .unwrap_or_else(|| panic!("no {rule} finding in {verbose}"))
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

const CASE_V1: &str = r#"{"type":"record","name":"CaseClosed","namespace":"enforcement","fields":[{"name":"caseId","type":"string"}]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_seed_examples_through_a_running_server() {
    let server = Server::start().await;

    // Rule 1: closureReason added without a default.
    server.registered("closure", "AVRO", CASE_V1).await;
    let bad = r#"{"type":"record","name":"CaseClosed","namespace":"enforcement","fields":[{"name":"caseId","type":"string"},{"name":"closureReason","type":"string"}]}"#;
    let message = refused_for(
        &server.register("closure", "AVRO", bad).await,
        "READER_FIELD_MISSING_DEFAULT_VALUE",
    );
    assert!(message.contains("subject \"closure\""), "{message}");
    assert!(message.contains("/fields/closureReason"), "{message}");
    assert!(message.contains("(version 1)"), "{message}");

    // Rule 2: caseOwner renamed to assignedOfficer: refused under the default preset, a
    // warning under the confluent preset, an error again once the subject names the rule.
    let owner = r#"{"type":"record","name":"Case","fields":[{"name":"caseId","type":"string"},{"name":"caseOwner","type":["null","string"],"default":null}]}"#;
    let officer = r#"{"type":"record","name":"Case","fields":[{"name":"caseId","type":"string"},{"name":"assignedOfficer","type":["null","string"],"default":null}]}"#;
    server.registered("rename", "AVRO", owner).await;
    let verbose = server.verbose("rename", "AVRO", officer).await;
    assert_eq!(verbose["is_compatible"], false);
    assert_eq!(finding(&verbose, "LIKELY_RENAME")["severity"], "error");
    server
        .config("rename", json!({"policyPreset": "confluent"}))
        .await;
    let verbose = server.verbose("rename", "AVRO", officer).await;
    assert_eq!(verbose["is_compatible"], true);
    let f = finding(&verbose, "LIKELY_RENAME");
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["path"], "/fields/assignedOfficer");
    assert_eq!(f["version"], 1);
    assert!(f["hint"].as_str().is_some_and(|h| !h.is_empty()));
    server
        .config(
            "rename",
            json!({"compatibility": "BACKWARD", "semanticRules": {"LIKELY_RENAME": "error"}}),
        )
        .await;
    let (_, config) = server.call("GET", "/config/rename", None).await;
    assert_eq!(
        config["semanticRules"]["LIKELY_RENAME"], "error",
        "{config}"
    );
    let message = refused_for(
        &server.register("rename", "AVRO", officer).await,
        "LIKELY_RENAME",
    );
    assert!(message.contains("'caseOwner' looks renamed to 'assignedOfficer'"));
    assert!(message.contains("/fields/assignedOfficer"), "{message}");

    // Rule 3: updatedAt changes meaning under the same name.
    let db = r#"{"type":"record","name":"Case","fields":[{"name":"updatedAt","type":"string","doc":"Database update timestamp."}]}"#;
    let business = r#"{"type":"record","name":"Case","fields":[{"name":"updatedAt","type":"string","doc":"Business event timestamp."}]}"#;
    server.registered("meaning", "AVRO", db).await;
    server
        .config("meaning", json!({"policyPreset": "confluent"}))
        .await;
    let verbose = server.verbose("meaning", "AVRO", business).await;
    assert_eq!(verbose["is_compatible"], true);
    assert_eq!(
        finding(&verbose, "MEANING_CHANGED")["path"],
        "/fields/updatedAt"
    );
    server
        .config(
            "meaning",
            json!({"semanticRules": {"MEANING_CHANGED": "error"}}),
        )
        .await;
    refused_for(
        &server.register("meaning", "AVRO", business).await,
        "MEANING_CHANGED",
    );

    // Rule 5: SUSPENDED added; the global config makes it an error for every subject.
    let open = r#"{"type":"record","name":"Case","fields":[{"name":"caseStatus","type":{"type":"enum","name":"CaseStatus","symbols":["OPEN","UNDER_REVIEW","ESCALATED","CLOSED"]}}]}"#;
    let suspended = r#"{"type":"record","name":"Case","fields":[{"name":"caseStatus","type":{"type":"enum","name":"CaseStatus","symbols":["OPEN","UNDER_REVIEW","ESCALATED","CLOSED","SUSPENDED"]}}]}"#;
    server.registered("status", "AVRO", open).await;
    let verbose = server.verbose("status", "AVRO", suspended).await;
    assert!(
        finding(&verbose, "ENUM_VALUE_ADDED")["message"]
            .as_str()
            .is_some_and(|m| m.contains("'SUSPENDED'"))
    );
    let (status, _) = server
        .call(
            "PUT",
            "/config",
            Some(json!({"semanticRules": {"ENUM_VALUE_ADDED": "error"}})),
        )
        .await;
    assert_eq!(status, 200);
    refused_for(
        &server.register("status", "AVRO", suspended).await,
        "ENUM_VALUE_ADDED",
    );
    server
        .config(
            "status",
            json!({"semanticRules": {"ENUM_VALUE_ADDED": "info"}}),
        )
        .await;
    let (status, body) = server.register("status", "AVRO", suspended).await;
    assert_eq!(
        status, 200,
        "the subject's level wins over the global one: {body}"
    );
    server
        .call("PUT", "/config", Some(json!({"semanticRules": null})))
        .await;

    // Rule 7: amount from string to decimal.
    let text = r#"{"type":"record","name":"Payment","fields":[{"name":"amount","type":"string"}]}"#;
    let decimal = r#"{"type":"record","name":"Payment","fields":[{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":18,"scale":2}}]}"#;
    server.registered("amount", "AVRO", text).await;
    let verbose = server.verbose("amount", "AVRO", decimal).await;
    assert_eq!(verbose["is_compatible"], false);
    assert_eq!(
        finding(&verbose, "SENSITIVE_TYPE_CHANGED")["path"],
        "/fields/amount"
    );
    assert_eq!(
        finding(&verbose, "VALUE_REINTERPRETED")["severity"],
        "error"
    );

    // Rule 9: Protobuf field 7 (legacy_owner) reused.
    let v1 = "syntax = \"proto3\";\npackage enforcement;\nmessage CaseLifecycleEvent {\n  string event_id = 1;\n  string case_id = 2;\n  string legacy_owner = 7;\n}\n";
    let reused = "syntax = \"proto3\";\npackage enforcement;\nmessage CaseLifecycleEvent {\n  string event_id = 1;\n  string case_id = 2;\n  int64 escalation_level = 7;\n}\n";
    server.registered("lifecycle", "PROTOBUF", v1).await;
    let verbose = server.verbose("lifecycle", "PROTOBUF", reused).await;
    let f = finding(&verbose, "PROTOBUF_REMOVED_NOT_RESERVED");
    assert!(
        f["message"].as_str().is_some_and(
            |m| m.contains("legacy_owner") && m.contains("reused by 'escalation_level'")
        ),
        "{f}"
    );
    server
        .config(
            "lifecycle",
            json!({"semanticRules": {"PROTOBUF_REMOVED_NOT_RESERVED": "error"}}),
        )
        .await;
    refused_for(
        &server.register("lifecycle", "PROTOBUF", reused).await,
        "PROTOBUF_REMOVED_NOT_RESERVED",
    );

    // Section 10.4: maxLength 100 to 20.
    let wide = r#"{"type":"object","additionalProperties":false,"properties":{"closureReasonCode":{"type":"string","maxLength":100}}}"#;
    let narrow = r#"{"type":"object","additionalProperties":false,"properties":{"closureReasonCode":{"type":"string","maxLength":20}}}"#;
    server.registered("reason-code", "JSON", wide).await;
    let message = refused_for(
        &server.register("reason-code", "JSON", narrow).await,
        "MAX_LENGTH_DECREASED",
    );
    assert!(
        message.contains("#/properties/closureReasonCode"),
        "{message}"
    );

    // ADR-005: tick_size from string to decimal.
    let string_tick = r#"{"type":"object","additionalProperties":false,"properties":{"tick_size":{"type":"string"},"lot_size":{"type":"string"}}}"#;
    let number_tick = r#"{"type":"object","additionalProperties":false,"properties":{"tick_size":{"type":"number"},"lot_size":{"type":"string"}}}"#;
    server.registered("instrument", "JSON", string_tick).await;
    let verbose = server.verbose("instrument", "JSON", number_tick).await;
    assert_eq!(verbose["is_compatible"], false);
    assert_eq!(
        finding(&verbose, "SENSITIVE_TYPE_CHANGED")["path"],
        "#/properties/tick_size"
    );
    assert!(
        verbose["messages"]
            .as_array()
            .is_some_and(|m| !m.is_empty())
    );

    // Semantic findings are counted by rule id like structural ones.
    let (_, metrics) = server.call("GET", "/metrics", None).await;
    let metrics = metrics.as_str().unwrap_or_default().to_string();
    for rule in ["LIKELY_RENAME", "ENUM_VALUE_ADDED", "MAX_LENGTH_DECREASED"] {
        assert!(
            metrics.contains(&format!("rule=\"{rule}\"")),
            "{rule} not counted"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn settings_and_scopes_are_validated() {
    let server = Server::start().await;
    for bad in [
        json!({"compatibilityScope": {"kind": "forever"}}),
        json!({"compatibilityScope": {"kind": "window", "days": 0}}),
        json!({"compatibilityScope": {"kind": "versions", "versions": []}}),
        json!({"semanticRules": {"LIKELY_RENAMED": "error"}}),
        json!({"semanticRules": {"LIKELY_RENAME": "fatal"}}),
        json!({"policyPreset": "strict"}),
        json!({"policyPreset": 1}),
    ] {
        let (status, body) = server.call("PUT", "/config/s", Some(bad.clone())).await;
        assert_eq!(status, 422, "{bad}: {body}");
        assert_eq!(body["error_code"], 42203, "{bad}: {body}");
    }
    server
        .config(
            "s",
            json!({"compatibility": "FULL_TRANSITIVE", "compatibilityScope": {"kind": "window", "days": 90}}),
        )
        .await;
    let (_, config) = server.call("GET", "/config/s", None).await;
    assert_eq!(
        config,
        json!({"compatibilityLevel": "FULL_TRANSITIVE", "compatibilityScope": {"kind": "window", "days": 90}, "policyPreset": "covenant"})
    );
}

fn avro_long(v: i64, out: &mut Vec<u8>) {
    let mut z = ((v << 1) ^ (v >> 63)) as u64;
    while z >= 0x80 {
        out.push((z as u8 & 0x7f) | 0x80);
        z >>= 7;
    }
    out.push(z as u8);
}

fn b64(bytes: &[u8]) -> String {
    use base64::Engine;
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

const E1: &str = r#"{"type":"record","name":"Event","fields":[{"name":"id","type":"int"},{"name":"kind","type":"string"}]}"#;
const E2: &str = r#"{"type":"record","name":"Event","fields":[{"name":"id","type":"int"}]}"#;
const E3: &str = r#"{"type":"record","name":"Event","fields":[{"name":"id","type":"int"},{"name":"note","type":["null","string"],"default":null}]}"#;
/// Compatible with v3 (BACKWARD), but reads v1's string 'kind' as an int.
const E4: &str = r#"{"type":"record","name":"Event","fields":[{"name":"id","type":"int"},{"name":"note","type":["null","string"],"default":null},{"name":"kind","type":"int","default":0}]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn replay_refuses_a_version_that_cannot_read_old_samples() {
    let server = Server::start().await;
    let s = "events";
    // The history drops 'kind' and adds 'note': under Confluent's verdicts, so that what is
    // refused below is refused by the replay of the stored samples alone.
    server.config(s, json!({"policyPreset": "confluent"})).await;
    let id1 = server.registered(s, "AVRO", E1).await;
    server.registered(s, "AVRO", E2).await;
    server.registered(s, "AVRO", E3).await;

    let mut v1 = Vec::new();
    avro_long(7, &mut v1);
    avro_long(6, &mut v1);
    v1.extend_from_slice(b"refund");
    let mut framed = vec![0u8];
    framed.extend_from_slice(&(id1 as i32).to_be_bytes());
    framed.extend_from_slice(&v1);
    let mut v2 = Vec::new();
    avro_long(8, &mut v2);
    let mut v3 = Vec::new();
    avro_long(9, &mut v3);
    v3.push(2); // union branch 1: string
    avro_long(2, &mut v3);
    v3.extend_from_slice(b"hi");

    let add = |version: i64, encoding: &str, bytes: Vec<u8>| {
        let server = &server;
        let encoding = encoding.to_string();
        async move {
            server
                .call(
                    "POST",
                    &format!("/covenant/v1/subjects/{s}/versions/{version}/samples"),
                    Some(json!({"payload": b64(&bytes), "encoding": encoding})),
                )
                .await
        }
    };
    let (status, first) = add(1, "avro", v1.clone()).await;
    assert_eq!(status, 200, "{first}");
    let sample1 = first["id"].as_i64().expect("sample id");
    assert_eq!(first["version"], 1);
    let (status, framed_answer) = add(1, "confluent", framed.clone()).await;
    assert_eq!(status, 200, "{framed_answer}");
    let sample1_framed = framed_answer["id"].as_i64().expect("sample id");
    assert_eq!(add(2, "avro", v2.clone()).await.0, 200);
    assert_eq!(add(3, "avro", v3.clone()).await.0, 200);

    // Samples must decode with their own version, and fit its format.
    let (status, body) = add(3, "avro", vec![0x0e, 0x09]).await;
    assert_eq!(
        (status, body["error_code"].as_i64()),
        (422, Some(42230)),
        "{body}"
    );
    let (status, body) = add(1, "json", b"{}".to_vec()).await;
    assert_eq!(
        (status, body["error_code"].as_i64()),
        (422, Some(42230)),
        "{body}"
    );
    let mut wrong_id = framed.clone();
    wrong_id[4] = wrong_id[4].wrapping_add(40);
    let (status, body) = add(1, "confluent", wrong_id).await;
    assert_eq!(
        (status, body["error_code"].as_i64()),
        (422, Some(42230)),
        "{body}"
    );
    let (_, listed) = server
        .call("GET", &format!("/covenant/v1/subjects/{s}/samples"), None)
        .await;
    assert_eq!(listed.as_array().map(Vec::len), Some(4), "{listed}");

    // Non-transitive BACKWARD passes structurally; the scope says every version's data must
    // stay readable, so v1's samples are replayed and refuse v4.
    server
        .config(
            s,
            json!({"compatibility": "BACKWARD", "compatibilityScope": {"kind": "all"}}),
        )
        .await;
    let answer = server.register(s, "AVRO", E4).await;
    let message = refused_for(&answer, "SAMPLE_REPLAY_FAILED");
    assert!(
        message.contains(&format!("Sample {sample1} of version 1")),
        "{message}"
    );
    assert!(
        message.contains(&format!("Sample {sample1_framed} of version 1")),
        "{message}"
    );
    assert!(
        !message.contains("of version 2") && !message.contains("of version 3"),
        "only v1's samples break: {message}"
    );
    assert!(
        !message.contains("READER_FIELD") && !message.contains("TYPE_MISMATCH"),
        "structure alone accepts v4: {message}"
    );
    let verbose = server.verbose(s, "AVRO", E4).await;
    let f = finding(&verbose, "SAMPLE_REPLAY_FAILED");
    assert_eq!(f["version"], 1);
    assert_eq!(f["path"], format!("/samples/{sample1}"));

    // A live scope covers v1 only while it is marked live.
    server
        .config(
            s,
            json!({"compatibilityScope": {"kind": "live", "retentionDays": 7}}),
        )
        .await;
    assert_eq!(server.verbose(s, "AVRO", E4).await["is_compatible"], true);
    let (status, marked) = server
        .call(
            "POST",
            &format!("/covenant/v1/subjects/{s}/versions/1/live"),
            None,
        )
        .await;
    assert_eq!(status, 200, "{marked}");
    assert_eq!(server.verbose(s, "AVRO", E4).await["is_compatible"], false);
    let (status, _) = server
        .call(
            "DELETE",
            &format!("/covenant/v1/subjects/{s}/versions/1/live"),
            None,
        )
        .await;
    assert_eq!(status, 200);

    // Scoped to versions 2 and 3, v1's data is out of scope and v4 registers.
    server
        .config(
            s,
            json!({"compatibilityScope": {"kind": "versions", "versions": [2, 3]}}),
        )
        .await;
    let (status, body) = server.register(s, "AVRO", E4).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["version"], 4);

    let (_, listed) = server
        .call(
            "GET",
            &format!("/covenant/v1/subjects/{s}/versions/1/samples?includePayload=true"),
            None,
        )
        .await;
    assert_eq!(listed[0]["payload"], b64(&v1));
    let (status, removed) = server
        .call(
            "DELETE",
            &format!("/covenant/v1/subjects/{s}/versions/1/samples"),
            None,
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(removed, json!([sample1, sample1_framed]));
    let (status, body) = server
        .call(
            "DELETE",
            &format!("/covenant/v1/subjects/{s}/versions/1/samples/{sample1}"),
            None,
        )
        .await;
    assert_eq!((status, body["error_code"].as_i64()), (404, Some(40430)));
}

/// "NONE skips checks": at NONE a sample that no longer decodes is a warning in the dry run,
/// and the dry run agrees with the registration that follows it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn at_none_the_dry_run_and_registration_agree_on_replay() {
    let server = Server::start().await;
    let s = "events-none";
    // As above: only the samples' replay is to judge the history, not the semantic rules.
    server.config(s, json!({"policyPreset": "confluent"})).await;
    server.registered(s, "AVRO", E1).await;
    let mut v1 = Vec::new();
    avro_long(7, &mut v1);
    avro_long(6, &mut v1);
    v1.extend_from_slice(b"refund");
    let (status, added) = server
        .call(
            "POST",
            &format!("/covenant/v1/subjects/{s}/versions/1/samples"),
            Some(json!({"payload": b64(&v1), "encoding": "avro"})),
        )
        .await;
    assert_eq!(status, 200, "{added}");
    server.registered(s, "AVRO", E3).await;

    // Under a checking level the stored sample refuses v4 in both paths.
    server
        .config(
            s,
            json!({"compatibility": "BACKWARD", "compatibilityScope": {"kind": "all"}}),
        )
        .await;
    let verbose = server.verbose(s, "AVRO", E4).await;
    assert_eq!(verbose["is_compatible"], false, "{verbose}");
    assert_eq!(
        finding(&verbose, "SAMPLE_REPLAY_FAILED")["severity"],
        "error"
    );

    server.config(s, json!({"compatibility": "NONE"})).await;
    let verbose = server.verbose(s, "AVRO", E4).await;
    assert_eq!(verbose["is_compatible"], true, "{verbose}");
    let f = finding(&verbose, "SAMPLE_REPLAY_FAILED");
    assert_eq!(f["severity"], "warning", "{verbose}");
    assert_eq!(f["version"], 1);
    let (status, plain) = server
        .call(
            "POST",
            &format!("/compatibility/subjects/{s}/versions"),
            Some(json!({"schemaType": "AVRO", "schema": E4})),
        )
        .await;
    assert_eq!(
        (status, &plain["is_compatible"]),
        (200, &json!(true)),
        "{plain}"
    );
    let (status, body) = server.register(s, "AVRO", E4).await;
    assert_eq!((status, &body["version"]), (200, &json!(3)), "{body}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn plans_and_protobuf_descriptors() {
    let server = Server::start().await;
    server.registered("closure", "AVRO", CASE_V1).await;
    let bad = r#"{"type":"record","name":"CaseClosed","namespace":"enforcement","fields":[{"name":"caseId","type":"string"},{"name":"closureReason","type":"string"}]}"#;
    let (status, plan) = server
        .call(
            "POST",
            "/covenant/v1/subjects/closure/plan",
            Some(json!({"schema": bad})),
        )
        .await;
    assert_eq!(status, 200, "{plan}");
    assert_eq!(plan["order"], "writers_first");
    assert_eq!(plan["combinations"].as_array().map(Vec::len), Some(4));
    let unsafe_combination = plan["combinations"]
        .as_array()
        .and_then(|c| c.iter().find(|c| c["safe"] == false))
        .expect("one unsafe combination");
    assert_eq!(unsafe_combination["producer"], "old");
    assert_eq!(unsafe_combination["consumer"], "new");
    assert_eq!(
        unsafe_combination["reasons"][0]["rule"],
        "READER_FIELD_MISSING_DEFAULT_VALUE"
    );
    let (status, body) = server
        .call(
            "POST",
            "/covenant/v1/subjects/none/plan",
            Some(json!({"schema": bad})),
        )
        .await;
    assert_eq!((status, body["error_code"].as_i64()), (404, Some(40401)));

    // A descriptor registered as base64 is stored and returned as .proto text.
    let text = "syntax = \"proto3\";\npackage acme;\n\nmessage Order {\n  string id = 1;\n}\n";
    let id = server.registered("orders", "PROTOBUF", text).await;
    let (_, serialized) = server
        .call("GET", &format!("/schemas/ids/{id}?format=serialized"), None)
        .await;
    let descriptor = serialized["schema"].as_str().expect("base64").to_string();
    assert!(!descriptor.contains("message"));
    let (status, body) = server.register("orders-b64", "PROTOBUF", &descriptor).await;
    assert_eq!(status, 200, "{body}");
    let (_, stored) = server
        .call("GET", "/subjects/orders-b64/versions/1", None)
        .await;
    let stored_text = stored["schema"].as_str().unwrap_or_default();
    assert!(
        stored_text.contains("message Order") && stored_text.contains("string id = 1;"),
        "{stored_text}"
    );
    let (_, again) = server
        .call(
            "GET",
            "/subjects/orders-b64/versions/1?format=serialized",
            None,
        )
        .await;
    // The descriptor carries source positions of the printed text; registering it again
    // lands on the same version.
    let again = again["schema"].as_str().expect("base64").to_string();
    assert!(!again.contains("message"));
    let (status, body) = server.register("orders-b64", "PROTOBUF", &again).await;
    assert_eq!((status, body["version"].as_i64()), (200, Some(1)), "{body}");
}

/// A field tagged as personal data must be covered by an ENCRYPT rule of the rule set the
/// version is registered with: its own, the latest's or the subject's default/override.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn personal_data_without_an_encrypt_rule_is_a_finding() {
    let server = Server::start().await;
    let v1 = r#"{"type":"record","name":"Customer","fields":[{"name":"id","type":"string"}]}"#;
    let v2 = r#"{"type":"record","name":"Customer","fields":[{"name":"id","type":"string"},{"name":"email","type":["null","string"],"default":null,"confluent:tags":["PII"]}]}"#;
    server.registered("customers", "AVRO", v1).await;

    let verbose = server.verbose("customers", "AVRO", v2).await;
    assert_eq!(verbose["is_compatible"], true, "a warning: {verbose}");
    let f = finding(&verbose, "PII_NOT_ENCRYPTED");
    assert_eq!(f["severity"], "warning");
    assert_eq!(f["path"], "/fields/email");

    let encrypt_pii = json!({"domainRules": [{"name": "encrypt-pii", "kind": "TRANSFORM",
        "mode": "WRITEREAD", "type": "ENCRYPT", "tags": ["PII"],
        "params": {"encrypt.kek.name": "pii-kek", "encrypt.kms.type": "local-kms",
                   "encrypt.kms.key.id": "k"}}]});
    server
        .config("customers", json!({"defaultRuleSet": encrypt_pii}))
        .await;
    let verbose = server.verbose("customers", "AVRO", v2).await;
    let rules: Vec<&Value> = verbose["findings"]
        .as_array()
        .map(|fs| fs.iter().map(|f| &f["rule"]).collect())
        .unwrap_or_default();
    assert!(
        !rules.contains(&&json!("PII_NOT_ENCRYPTED")),
        "the default rule set encrypts PII: {verbose}"
    );

    // Raised to an error on a subject without such a rule, the registration is refused.
    server.registered("clear", "AVRO", v1).await;
    server
        .config(
            "clear",
            json!({"semanticRules": {"PII_NOT_ENCRYPTED": "error"}}),
        )
        .await;
    refused_for(
        &server.register("clear", "AVRO", v2).await,
        "PII_NOT_ENCRYPTED",
    );
}
