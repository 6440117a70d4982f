//! The seeds' examples through `covenant check` (text, JSON and SARIF), the offline
//! compatibility scope, and `covenant samples` against a running server.

use crate::support;
use support::Serve;
use support::{covenant, s, write};

use serde_json::Value;

struct Case {
    name: &'static str,
    format: &'static str,
    old: &'static str,
    new: &'static str,
    rule: &'static str,
    path: &'static str,
}

const CASES: &[Case] = &[
    Case {
        name: "closureReason added without default",
        format: "avro",
        old: r#"{"type":"record","name":"CaseClosed","fields":[{"name":"caseId","type":"string"}]}"#,
        new: r#"{"type":"record","name":"CaseClosed","fields":[{"name":"caseId","type":"string"},{"name":"closureReason","type":"string"}]}"#,
        rule: "READER_FIELD_MISSING_DEFAULT_VALUE",
        path: "/fields/closureReason",
    },
    Case {
        name: "caseOwner renamed to assignedOfficer",
        format: "avro",
        old: r#"{"type":"record","name":"Case","fields":[{"name":"caseOwner","type":["null","string"],"default":null}]}"#,
        new: r#"{"type":"record","name":"Case","fields":[{"name":"assignedOfficer","type":["null","string"],"default":null}]}"#,
        rule: "LIKELY_RENAME",
        path: "/fields/assignedOfficer",
    },
    Case {
        name: "updatedAt meaning change",
        format: "avro",
        old: r#"{"type":"record","name":"Case","fields":[{"name":"updatedAt","type":"string","doc":"Database update timestamp."}]}"#,
        new: r#"{"type":"record","name":"Case","fields":[{"name":"updatedAt","type":"string","doc":"Business event timestamp."}]}"#,
        rule: "MEANING_CHANGED",
        path: "/fields/updatedAt",
    },
    Case {
        name: "SUSPENDED enum value",
        format: "json",
        old: r#"{"type":"object","additionalProperties":false,"properties":{"caseStatus":{"enum":["OPEN","UNDER_REVIEW","ESCALATED","CLOSED"]}}}"#,
        new: r#"{"type":"object","additionalProperties":false,"properties":{"caseStatus":{"enum":["OPEN","UNDER_REVIEW","ESCALATED","CLOSED","SUSPENDED"]}}}"#,
        rule: "ENUM_VALUE_ADDED",
        path: "#/properties/caseStatus",
    },
    Case {
        name: "amount string to decimal",
        format: "avro",
        old: r#"{"type":"record","name":"Payment","fields":[{"name":"amount","type":"string"}]}"#,
        new: r#"{"type":"record","name":"Payment","fields":[{"name":"amount","type":{"type":"bytes","logicalType":"decimal","precision":18,"scale":2}}]}"#,
        rule: "SENSITIVE_TYPE_CHANGED",
        path: "/fields/amount",
    },
    Case {
        name: "Protobuf field 7 reused after legacy_owner",
        format: "protobuf",
        old: "syntax = \"proto3\";\npackage enforcement;\nmessage CaseLifecycleEvent {\n  string event_id = 1;\n  string legacy_owner = 7;\n}\n",
        new: "syntax = \"proto3\";\npackage enforcement;\nmessage CaseLifecycleEvent {\n  string event_id = 1;\n  int64 escalation_level = 7;\n}\n",
        rule: "PROTOBUF_REMOVED_NOT_RESERVED",
        path: "/enforcement.CaseLifecycleEvent",
    },
    Case {
        name: "maxLength 100 to 20",
        format: "json",
        old: r#"{"type":"object","properties":{"closureReasonCode":{"type":"string","maxLength":100}}}"#,
        new: r#"{"type":"object","properties":{"closureReasonCode":{"type":"string","maxLength":20}}}"#,
        rule: "MAX_LENGTH_DECREASED",
        path: "#/properties/closureReasonCode/maxLength",
    },
    Case {
        name: "tick_size string to decimal",
        format: "json",
        old: r#"{"type":"object","additionalProperties":false,"properties":{"tick_size":{"type":"string"}}}"#,
        new: r#"{"type":"object","additionalProperties":false,"properties":{"tick_size":{"type":"number"}}}"#,
        rule: "SENSITIVE_TYPE_CHANGED",
        path: "#/properties/tick_size",
    },
];

#[test]
fn every_seed_case_names_its_rule_in_text_json_and_sarif() {
    let dir = tempfile::tempdir().expect("tempdir");
    for (i, case) in CASES.iter().enumerate() {
        let ext = if case.format == "protobuf" {
            "proto"
        } else {
            "txt"
        };
        let old = write(dir.path(), &format!("{i}-old.{ext}"), case.old);
        let new = write(dir.path(), &format!("{i}-new.{ext}"), case.new);
        let base = ["check", "--format", case.format, s(&new), s(&old)];

        let text = covenant(&base);
        let stdout = String::from_utf8_lossy(&text.stdout);
        assert!(
            stdout.contains(case.rule) && stdout.contains(case.path),
            "{}: text output lacks {} at {}:\n{stdout}",
            case.name,
            case.rule,
            case.path
        );

        let mut args = base.to_vec();
        args.extend(["--output", "json"]);
        let json = covenant(&args);
        let value: Value = serde_json::from_slice(&json.stdout).expect("json output");
        let found = value["findings"]
            .as_array()
            .and_then(|fs| fs.iter().find(|f| f["rule"] == case.rule))
            .unwrap_or_else(|| panic!("{}: no {} in {value}", case.name, case.rule));
        assert_eq!(found["path"], case.path, "{}", case.name);
        assert_eq!(
            json.status.code(),
            Some(if value["compatible"] == true { 0 } else { 1 }),
            "{}",
            case.name
        );

        let mut args = base.to_vec();
        args.extend(["--output", "sarif"]);
        let sarif = covenant(&args);
        let value: Value = serde_json::from_slice(&sarif.stdout).expect("sarif output");
        let results = value["runs"][0]["results"]
            .as_array()
            .cloned()
            .unwrap_or_default();
        assert!(
            results.iter().any(|r| r["ruleId"] == case.rule),
            "{}: SARIF lacks {}",
            case.name,
            case.rule
        );
    }
}

#[test]
fn scope_versions_limit_a_transitive_check() {
    let dir = tempfile::tempdir().expect("tempdir");
    let v1 = write(
        dir.path(),
        "v1.avsc",
        r#"{"type":"record","name":"E","fields":[{"name":"id","type":"int"},{"name":"kind","type":"string"}]}"#,
    );
    let v2 = write(
        dir.path(),
        "v2.avsc",
        r#"{"type":"record","name":"E","fields":[{"name":"id","type":"int"}]}"#,
    );
    let v3 = write(
        dir.path(),
        "v3.avsc",
        r#"{"type":"record","name":"E","fields":[{"name":"id","type":"int"},{"name":"kind","type":"int","default":0}]}"#,
    );
    let all = covenant(&[
        "check",
        "--level",
        "BACKWARD_TRANSITIVE",
        "--output",
        "json",
        s(&v3),
        s(&v1),
        s(&v2),
    ]);
    assert_eq!(all.status.code(), Some(1));
    let value: Value = serde_json::from_slice(&all.stdout).expect("json");
    assert!(
        value["findings"]
            .as_array()
            .is_some_and(|fs| fs.iter().any(|f| f["version"] == 1))
    );
    let scoped = covenant(&[
        "check",
        "--level",
        "BACKWARD_TRANSITIVE",
        "--scope-versions",
        "2",
        s(&v3),
        s(&v1),
        s(&v2),
    ]);
    assert_eq!(
        scoped.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&scoped.stdout)
    );
    let missing = covenant(&["check", "--scope-versions", "7", s(&v3), s(&v1), s(&v2)]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&missing.stderr).contains("no version 7"));
}

#[test]
fn samples_commands_talk_to_a_running_registry() {
    let dir = tempfile::tempdir().expect("tempdir");
    let server = Serve::spawn(&dir.path().join("data"), |_| {});
    let url = server.base.clone();
    server.wait_listening();

    let runtime = tokio::runtime::Runtime::new().expect("runtime");
    let status = runtime.block_on(async {
        covenant_exporter::client::client()
            .post(format!("{url}/subjects/names/versions"))
            .header("content-type", "application/json")
            .body(r#"{"schema": "\"string\""}"#)
            .send()
            .await
            .map(|r| r.status().as_u16())
    });
    assert_eq!(status.ok(), Some(200));

    // Avro "bob": length 3 (zigzag 6), then the bytes.
    let payload = write(dir.path(), "bob.bin", "\u{6}bob");
    let add = covenant(&[
        "samples",
        "add",
        "--url",
        &url,
        "names",
        "1",
        s(&payload),
        "--encoding",
        "avro",
    ]);
    let out = String::from_utf8_lossy(&add.stdout).to_string();
    assert_eq!(
        add.status.code(),
        Some(0),
        "{out}{}",
        String::from_utf8_lossy(&add.stderr)
    );
    assert!(out.starts_with("stored sample"), "{out}");

    let bad = write(dir.path(), "bad.bin", "\u{7f}");
    let refused = covenant(&[
        "samples",
        "add",
        "--url",
        &url,
        "names",
        "1",
        s(&bad),
        "--encoding",
        "avro",
    ]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("42230"));

    let list = covenant(&["samples", "list", "--url", &url, "names"]);
    let listed = String::from_utf8_lossy(&list.stdout).to_string();
    assert!(
        listed.contains("avro") && listed.contains("4 bytes"),
        "{listed}"
    );

    let rm = covenant(&["samples", "rm", "--url", &url, "names", "1", "--all"]);
    assert_eq!(rm.status.code(), Some(0));
    let list = covenant(&["samples", "list", "--url", &url, "names", "1"]);
    assert!(String::from_utf8_lossy(&list.stdout).contains("no samples"));

    drop(server);
}
