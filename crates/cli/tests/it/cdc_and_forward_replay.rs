//! Sample replay in the other direction (old readers decoding the new producer's samples,
//! under FORWARD and FULL levels) and CDC primary-key changes, each through `covenant check`
//! and through a running `covenant serve`.

use crate::support;
use support::{covenant, s, write};

use base64::Engine;
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

fn b64(bytes: &[u8]) -> String {
    base64::engine::general_purpose::STANDARD.encode(bytes)
}

const FORWARD: &str = "SAMPLE_FORWARD_REPLAY_FAILED";

const AMOUNT_TEXT: &str = r#"{"type":"record","name":"Payment","fields":[{"name":"id","type":"int"},{"name":"amount","type":"string"}]}"#;
const AMOUNT_NOTE: &str = r#"{"type":"record","name":"Payment","fields":[{"name":"id","type":"int"},{"name":"amount","type":"string"},{"name":"note","type":"string","default":""}]}"#;
const AMOUNT_DECIMAL: &str = r#"{"type":"record","name":"Payment","fields":[{"name":"id","type":"int"},{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":18,"scale":2}}]}"#;

/// Avro binary of {"id": 7, "amount": 12.34} with `AMOUNT_DECIMAL`: zig-zag 7, then the
/// unscaled 1234 as two big-endian bytes.
const DECIMAL_SAMPLE: &[u8] = &[0x0e, 0x04, 0x04, 0xd2];
/// Avro binary of {"id": 7, "amount": "12.34", "note": "x"} with `AMOUNT_NOTE`.
const NOTE_SAMPLE: &[u8] = &[0x0e, 0x0a, b'1', b'2', b'.', b'3', b'4', 0x02, b'x'];

const STATUS_V1: &str = r#"{"type":"object","properties":{"status":{"enum":["OPEN","CLOSED"]}}}"#;
const STATUS_V2: &str =
    r#"{"type":"object","properties":{"status":{"enum":["OPEN","CLOSED","ON_HOLD"]}}}"#;

/// §2.2 and §18 ("old consumer can ignore new optional field"): under FORWARD levels the
/// new producer's samples are decoded with the old schemas, and a value the old reader gets
/// wrong is an error naming the sample and the reader version.
#[test]
fn new_samples_are_read_with_old_schemas_offline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let v1 = write(dir.path(), "v1.avsc", AMOUNT_TEXT);
    let v2 = write(dir.path(), "v2.avsc", AMOUNT_NOTE);
    let v3 = write(dir.path(), "v3.avsc", AMOUNT_DECIMAL);
    let decimal = dir.path().join("decimal.bin");
    std::fs::write(&decimal, DECIMAL_SAMPLE).expect("write sample");
    for level in ["FORWARD", "FULL", "FORWARD_TRANSITIVE", "FULL_TRANSITIVE"] {
        let (code, found) = check(
            &[
                "--level",
                level,
                "--sample",
                s(&decimal),
                s(&v3),
                s(&v1),
                s(&v2),
            ],
            FORWARD,
        );
        assert_eq!(code, Some(1), "{level}");
        let readers: Vec<i64> = found.iter().filter_map(|f| f["version"].as_i64()).collect();
        let expected: &[i64] = if level.ends_with("TRANSITIVE") {
            &[1, 2]
        } else {
            &[2]
        };
        assert_eq!(readers, expected, "{level}: {found:?}");
        assert_eq!(found[0]["path"], "/samples/new/1");
        assert_eq!(found[0]["severity"], "error");
        let message = found[0]["message"].as_str().unwrap_or_default();
        assert!(
            message.contains("at '/amount' the new schema reads \"12.34\" and version"),
            "{message}"
        );
        assert!(
            found[0]["hint"]
                .as_str()
                .is_some_and(|h| h.contains("BACKWARD"))
        );
    }
    // Backward levels replay nothing forward; a sample that fits raises nothing.
    let (_, found) = check(
        &[
            "--level",
            "BACKWARD",
            "--sample",
            s(&decimal),
            s(&v3),
            s(&v2),
        ],
        FORWARD,
    );
    assert!(found.is_empty(), "{found:?}");
    let note = dir.path().join("note.bin");
    std::fs::write(&note, NOTE_SAMPLE).expect("write sample");
    let (code, found) = check(
        &[
            "--level",
            "FULL_TRANSITIVE",
            "--sample",
            s(&note),
            s(&v2),
            s(&v1),
        ],
        FORWARD,
    );
    assert_eq!((code, found.len()), (Some(0), 0), "{found:?}");
    // A sample the new schema itself cannot have written is invalid input.
    let out = covenant(&[
        "check",
        "--level",
        "FORWARD",
        "--sample",
        s(&note),
        s(&v3),
        s(&v2),
    ]);
    assert_eq!(out.status.code(), Some(2));
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("does not decode with the new schema"),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

#[test]
fn new_json_documents_are_validated_by_old_schemas_offline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let v1 = write(dir.path(), "v1.json", STATUS_V1);
    let v2 = write(dir.path(), "v2.json", STATUS_V2);
    let open = write(dir.path(), "open.json", r#"{"status": "OPEN"}"#);
    let hold = write(dir.path(), "hold.json", r#"{"status": "ON_HOLD"}"#);
    let (code, found) = check(
        &[
            "--level",
            "FULL",
            "--sample",
            s(&open),
            "--sample",
            s(&hold),
            s(&v2),
            s(&v1),
        ],
        FORWARD,
    );
    assert_eq!((code, found.len()), (Some(1), 1), "{found:?}");
    assert_eq!(found[0]["path"], "/samples/new/2");
    assert_eq!(found[0]["version"], 1);
    assert!(
        found[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("Sample 2 of the new schema (json) cannot be read by consumers of version 1: At '/status'")),
        "{found:?}"
    );
    let out = covenant(&[
        "check",
        "--sample-encoding",
        "avro",
        "--sample",
        s(&open),
        s(&v2),
        s(&v1),
    ]);
    assert_eq!(out.status.code(), Some(2));
}

/// The same through the compatibility route and registration: samples travel in the body.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn new_samples_are_replayed_forward_on_the_server() {
    let server = Server::start().await;
    server
        .config("payments", json!({"compatibility": "FORWARD"}))
        .await;
    let (status, body) = server.register("payments", "AVRO", AMOUNT_TEXT).await;
    assert_eq!(status, 200, "{body}");
    let with = |schema: &str, payload: &[u8]| json!({"schema": schema, "samples": [{"encoding": "avro", "payload": b64(payload)}]});
    let (status, body) = server
        .call(
            "POST",
            "/compatibility/subjects/payments/versions?verbose=true",
            Some(with(AMOUNT_DECIMAL, DECIMAL_SAMPLE)),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["is_compatible"], false);
    let finding = body["findings"]
        .as_array()
        .and_then(|fs| fs.iter().find(|f| f["rule"] == FORWARD).cloned())
        .unwrap_or_else(|| panic!("no {FORWARD} in {body}"));
    assert_eq!(finding["path"], "/samples/new/1");
    assert_eq!(finding["version"], 1);
    // Registration refuses it, naming the rule.
    let (status, body) = server
        .call(
            "POST",
            "/subjects/payments/versions",
            Some(with(AMOUNT_DECIMAL, DECIMAL_SAMPLE)),
        )
        .await;
    assert_eq!(status, 409, "{body}");
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|m| m.contains(FORWARD)),
        "{body}"
    );
    // A sample the candidate cannot decode, or one that is not base64, is a 42230.
    for sample in [
        json!({"encoding": "avro", "payload": b64(DECIMAL_SAMPLE)}),
        json!({"encoding": "avro", "payload": "%%%"}),
        json!({"encoding": "protobuf", "payload": b64(NOTE_SAMPLE)}),
    ] {
        let (status, body) = server
            .call(
                "POST",
                "/subjects/payments/versions",
                Some(json!({"schema": AMOUNT_NOTE, "samples": [sample]})),
            )
            .await;
        assert_eq!(
            (status, body["error_code"].as_i64()),
            (422, Some(42230)),
            "{body}"
        );
    }
    let (status, body) = server
        .call(
            "POST",
            "/subjects/payments/versions",
            Some(with(AMOUNT_NOTE, NOTE_SAMPLE)),
        )
        .await;
    assert_eq!(status, 200, "{body}");

    // JSON Schema, FULL: the old enum rejects the new value.
    server
        .config("statuses", json!({"compatibility": "FULL"}))
        .await;
    let (status, body) = server.register("statuses", "JSON", STATUS_V1).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = server
        .call(
            "POST",
            "/compatibility/subjects/statuses/versions/latest?verbose=true",
            Some(json!({
                "schemaType": "JSON",
                "schema": STATUS_V2,
                "samples": [{"encoding": "json", "payload": b64(br#"{"status":"ON_HOLD"}"#)}]
            })),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["is_compatible"], false, "{body}");
    let finding = body["findings"]
        .as_array()
        .and_then(|fs| fs.iter().find(|f| f["rule"] == FORWARD).cloned())
        .unwrap_or_else(|| panic!("no {FORWARD} in {body}"));
    assert!(
        finding["message"]
            .as_str()
            .is_some_and(|m| m.contains("(json) cannot be read by consumers of version 1")),
        "{finding}"
    );
}

const DEBEZIUM_KEY_V1: &str = r#"{"type":"record","name":"Key","namespace":"dbserver1.public.case_record","fields":[{"name":"id","type":"long"}],"connect.name":"dbserver1.public.case_record.Key"}"#;
const DEBEZIUM_KEY_V2: &str = r#"{"type":"record","name":"Key","namespace":"dbserver1.public.case_record","fields":[{"name":"id","type":"long"},{"name":"tenant_id","type":"string","default":""}],"connect.name":"dbserver1.public.case_record.Key"}"#;

/// §11 ("change primary key") and §23.1: a CDC key record is the table's primary key, so a
/// change to it is an error with the seed's remedy even when every reader accepts it (the new
/// key column has a default, so the change is FULL compatible), whether the subject is the topic's `-key`
/// subject or named after the record (RecordNameStrategy), and whatever the level.
#[test]
fn cdc_primary_key_change_is_an_error_offline() {
    let dir = tempfile::tempdir().expect("tempdir");
    let v1 = write(dir.path(), "k1.avsc", DEBEZIUM_KEY_V1);
    let v2 = write(dir.path(), "k2.avsc", DEBEZIUM_KEY_V2);
    for subject in [
        "dbserver1.public.case_record-key",
        "dbserver1.public.case_record.Key",
    ] {
        for level in ["BACKWARD", "FULL"] {
            let (code, found) = check(
                &["--level", level, "--subject", subject, s(&v2), s(&v1)],
                "KEY_SUBJECT_CHANGED",
            );
            assert_eq!((code, found.len()), (Some(1), 1), "{subject} {level}");
            assert_eq!(found[0]["path"], "/fields/tenant_id");
            assert!(
                found[0]["hint"].as_str().is_some_and(
                    |h| h.contains("bridge table") && h.contains("identity migration event")
                ),
                "{found:?}"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cdc_primary_key_change_is_refused_on_the_server() {
    let server = Server::start().await;
    let subject = "dbserver1.public.case_record.Key";
    let (status, body) = server.register(subject, "AVRO", DEBEZIUM_KEY_V1).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = server.register(subject, "AVRO", DEBEZIUM_KEY_V2).await;
    assert_eq!(
        (status, body["error_code"].as_i64()),
        (409, Some(40901)),
        "{body}"
    );
    let message = body["message"].as_str().unwrap_or_default();
    assert!(message.contains("rule: KEY_SUBJECT_CHANGED"), "{message}");
    assert!(message.contains("'tenant_id' was added"), "{message}");
}

const ENVELOPE_PRIORITY_3: &str = r#"{"type":"record","name":"Envelope","namespace":"dbserver1.public.case_record","connect.name":"dbserver1.public.case_record.Envelope","fields":[{"name":"before","type":["null",{"type":"record","name":"Value","fields":[{"name":"id","type":"long"},{"name":"priority","type":"int","default":3}]}],"default":null},{"name":"after","type":["null","Value"],"default":null},{"name":"op","type":"string"},{"name":"ts_ms","type":["null","long"],"default":null}]}"#;

/// §11 ("change default"): `ALTER TABLE ... ALTER priority SET DEFAULT 0` reaches a Debezium
/// envelope as a changed default in both row images; under FULL it is a finding on each.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cdc_default_change_is_a_finding_in_both_row_images() {
    let zero = ENVELOPE_PRIORITY_3.replace(r#""default":3"#, r#""default":0"#);
    let dir = tempfile::tempdir().expect("tempdir");
    let v1 = write(dir.path(), "e1.avsc", ENVELOPE_PRIORITY_3);
    let v2 = write(dir.path(), "e2.avsc", &zero);
    let (code, found) = check(
        &["--level", "FULL", s(&v2), s(&v1)],
        "FIELD_DEFAULT_CHANGED",
    );
    assert_eq!(code, Some(0));
    let paths: Vec<&str> = found.iter().filter_map(|f| f["path"].as_str()).collect();
    assert_eq!(
        paths,
        [
            "/fields/before/fields/priority",
            "/fields/after/fields/priority"
        ]
    );
    assert!(
        found[0]["message"]
            .as_str()
            .is_some_and(|m| m.contains("from 3 to 0")),
        "{found:?}"
    );

    let server = Server::start().await;
    let subject = "dbserver1.public.case_record-value";
    server
        .config(subject, json!({"compatibility": "FULL"}))
        .await;
    let (status, body) = server.register(subject, "AVRO", ENVELOPE_PRIORITY_3).await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = server
        .call(
            "POST",
            &format!("/compatibility/subjects/{subject}/versions?verbose=true"),
            Some(json!({"schema": zero})),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let rules: Vec<&str> = body["findings"]
        .as_array()
        .map(|fs| fs.iter().filter_map(|f| f["rule"].as_str()).collect())
        .unwrap_or_default();
    assert_eq!(
        rules
            .iter()
            .filter(|r| **r == "FIELD_DEFAULT_CHANGED")
            .count(),
        2,
        "{body}"
    );
}
