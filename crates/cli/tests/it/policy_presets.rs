//! Policy presets, the seeds' discipline by default: under `covenant`, the default,
//! each dangerous change class the seeds name is refused with its rule id, path, reason and
//! hint, and the refusal names the ways forward; under `confluent` the same change gets
//! Confluent's structural verdict and its semantic findings never refuse. Offline through
//! `covenant check --preset` and `covenant plan`, and on a running `covenant serve`.

use crate::support;
use support::{TestServer, covenant, s, write};

use serde_json::{Value, json};
use std::path::Path;

/// `covenant check --output json` of `new` against `old` with `extra` flags: the exit code
/// and every finding.
fn check(extra: &[&str], new: &Path, old: &Path) -> (Option<i32>, Vec<Value>) {
    let mut args = vec!["check", "--output", "json"];
    args.extend_from_slice(extra);
    args.push(s(new));
    args.push(s(old));
    let out = covenant(&args);
    let value: Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|_| {
        panic!(
            "json output: {}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let findings = value["findings"].as_array().cloned().unwrap_or_default();
    (out.status.code(), findings)
}

/// The findings of `rule`.
fn of<'a>(findings: &'a [Value], rule: &str) -> Vec<&'a Value> {
    findings.iter().filter(|f| f["rule"] == rule).collect()
}

/// One dangerous change: under the default preset `check` exits 1 with an error of `rule` at
/// `path` whose message has `reason` and a hint; with `--preset confluent` it exits
/// `confluent_exit` (Confluent's structural verdict) and `rule` is at most a warning.
struct Case<'a> {
    name: &'a str,
    extension: &'a str,
    old: &'a str,
    new: &'a str,
    rule: &'a str,
    path: &'a str,
    reason: &'a str,
    confluent_exit: i32,
}

fn judged_by_both_presets(case: &Case<'_>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let old = write(dir.path(), &format!("v1.{}", case.extension), case.old);
    let new = write(dir.path(), &format!("v2.{}", case.extension), case.new);
    let (code, findings) = check(&[], &new, &old);
    assert_eq!(code, Some(1), "{}: {findings:#?}", case.name);
    let found = of(&findings, case.rule);
    let finding = found
        .iter()
        .find(|f| f["path"] == case.path)
        .unwrap_or_else(|| {
            panic!(
                "{}: no {} at {}: {findings:#?}",
                case.name, case.rule, case.path
            )
        });
    assert_eq!(finding["severity"], "error", "{}", case.name);
    assert!(
        finding["message"]
            .as_str()
            .is_some_and(|m| m.contains(case.reason)),
        "{}: {finding}",
        case.name
    );
    assert!(
        finding["hint"].as_str().is_some_and(|h| h.len() > 20),
        "{}: {finding}",
        case.name
    );
    // The same pair under the covenant preset named explicitly, and under confluent.
    let (named, _) = check(&["--preset", "covenant"], &new, &old);
    assert_eq!(named, Some(1), "{}", case.name);
    let (code, findings) = check(&["--preset", "confluent"], &new, &old);
    assert_eq!(
        code,
        Some(case.confluent_exit),
        "{} under confluent: {findings:#?}",
        case.name
    );
    let semantic_errors: Vec<&Value> = findings
        .iter()
        .filter(|f| f["severity"] == "error" && f["rule"] == case.rule)
        .collect();
    assert!(
        semantic_errors.is_empty(),
        "{}: {semantic_errors:#?}",
        case.name
    );
    assert!(
        !of(&findings, case.rule).is_empty(),
        "{}: still reported under confluent",
        case.name
    );
}

fn avro_record(name: &str, fields: &str) -> String {
    format!(r#"{{"type":"record","name":"{name}","fields":[{fields}]}}"#)
}

/// Rule 6 and the ADR's BACKWARD table: removal without a deprecation record ("no known
/// consumers" is not evidence).
#[test]
fn field_removal_without_a_deprecation_record() {
    judged_by_both_presets(&Case {
        name: "tickSize removed",
        extension: "avsc",
        old: &avro_record(
            "BinanceInstrument",
            r#"{"name":"symbol","type":"string"},{"name":"tickSize","type":"string"}"#,
        ),
        new: &avro_record("BinanceInstrument", r#"{"name":"symbol","type":"string"}"#),
        rule: "FIELD_REMOVED_WITHOUT_DEPRECATION",
        path: "/fields/tickSize",
        reason: "was removed without a deprecation record",
        confluent_exit: 0,
    });
}

/// Rule 2 and §11: a rename in every format, an optional field and a CDC column included.
#[test]
fn renames_in_every_format() {
    let cases = [
        Case {
            name: "avro optional field",
            extension: "avsc",
            old: &avro_record(
                "Case",
                r#"{"name":"caseId","type":"string"},{"name":"caseOwner","type":["null","string"],"default":null}"#,
            ),
            new: &avro_record(
                "Case",
                r#"{"name":"caseId","type":"string"},{"name":"assignedOfficer","type":["null","string"],"default":null}"#,
            ),
            rule: "LIKELY_RENAME",
            path: "/fields/assignedOfficer",
            reason: "'caseOwner' looks renamed to 'assignedOfficer'",
            confluent_exit: 0,
        },
        Case {
            name: "cdc column",
            extension: "avsc",
            old: &avro_record(
                "case_record",
                r#"{"name":"case_id","type":"string"},{"name":"owner_id","type":["null","string"],"default":null}"#,
            ),
            new: &avro_record(
                "case_record",
                r#"{"name":"case_id","type":"string"},{"name":"assigned_officer_id","type":["null","string"],"default":null}"#,
            ),
            rule: "LIKELY_RENAME",
            path: "/fields/assigned_officer_id",
            reason: "'owner_id' looks renamed to 'assigned_officer_id'",
            confluent_exit: 0,
        },
        Case {
            name: "json schema",
            extension: "json",
            old: r#"{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"caseId":{"type":"string"},"caseOwner":{"type":"string"}},"additionalProperties":false}"#,
            new: r#"{"$schema":"http://json-schema.org/draft-07/schema#","type":"object","properties":{"caseId":{"type":"string"},"assignedOfficer":{"type":"string"}},"additionalProperties":false}"#,
            rule: "LIKELY_RENAME",
            path: "#/properties/assignedOfficer",
            reason: "'caseOwner' looks renamed to 'assignedOfficer'",
            // Confluent refuses a property removed from a closed content model.
            confluent_exit: 1,
        },
        Case {
            name: "protobuf",
            extension: "proto",
            old: "syntax = \"proto3\";\npackage acme;\nmessage Case {\n  string case_id = 1;\n  string case_owner = 2;\n}\n",
            new: "syntax = \"proto3\";\npackage acme;\nmessage Case {\n  string case_id = 1;\n  string assigned_officer = 2;\n}\n",
            rule: "LIKELY_RENAME",
            path: "/acme.Case/fields/assigned_officer",
            reason: "'case_owner' looks renamed to 'assigned_officer' under the same number 2",
            confluent_exit: 0,
        },
    ];
    for case in &cases {
        judged_by_both_presets(case);
    }
}

const ICEBERG_SCHEMA_V1: &str = r#"{"type":"struct","schema-id":0,"fields":[{"id":1,"name":"symbol","required":true,"type":"string"},{"id":2,"name":"owner_id","required":false,"type":"string"}]}"#;
const ICEBERG_SCHEMA_V2: &str = r#"{"type":"struct","schema-id":1,"fields":[{"id":1,"name":"symbol","required":true,"type":"string"},{"id":2,"name":"assigned_officer_id","required":false,"type":"string"}]}"#;

/// An Iceberg rename keeps the column's id: Iceberg reads old files under the new name, but
/// queries naming the column break. `check` and `plan` agree on the pair.
#[test]
fn an_iceberg_rename_and_check_and_plan_agree() {
    judged_by_both_presets(&Case {
        name: "iceberg column",
        extension: "json",
        old: ICEBERG_SCHEMA_V1,
        new: ICEBERG_SCHEMA_V2,
        rule: "LIKELY_RENAME",
        path: "/fields/assigned_officer_id",
        reason: "under the same field id 2",
        confluent_exit: 0,
    });
    let dir = tempfile::tempdir().expect("tempdir");
    for (name, old, new) in [
        (
            "avro",
            avro_record(
                "case_record",
                r#"{"name":"case_id","type":"string"},{"name":"owner_id","type":["null","string"],"default":null}"#,
            ),
            avro_record(
                "case_record",
                r#"{"name":"case_id","type":"string"},{"name":"assigned_officer_id","type":["null","string"],"default":null}"#,
            ),
        ),
        (
            "iceberg",
            ICEBERG_SCHEMA_V1.to_string(),
            ICEBERG_SCHEMA_V2.to_string(),
        ),
    ] {
        let v1 = write(dir.path(), &format!("{name}-v1.json"), &old);
        let v2 = write(dir.path(), &format!("{name}-v2.json"), &new);
        let check = covenant(&["check", s(&v2), s(&v1)]);
        let plan = covenant(&["plan", s(&v2), s(&v1)]);
        assert_eq!(check.status.code(), Some(1), "{name}");
        assert_eq!(
            plan.status.code(),
            check.status.code(),
            "{name}: {}",
            String::from_utf8_lossy(&plan.stdout)
        );
    }
}

/// Rules 3 and 4: a meaning or unit change under the same name and an event-grain
/// change, with hints toward a new field or a new event type; a doc added is info.
#[test]
fn meaning_unit_and_grain_changes() {
    judged_by_both_presets(&Case {
        name: "updatedAt clock",
        extension: "avsc",
        old: &avro_record(
            "Case",
            r#"{"name":"updatedAt","type":"string","doc":"Time the database row was last updated."}"#,
        ),
        new: &avro_record(
            "Case",
            r#"{"name":"updatedAt","type":"string","doc":"Time the business event happened."}"#,
        ),
        rule: "MEANING_CHANGED",
        path: "/fields/updatedAt",
        reason: "its doc changed from 'Time the database row was last updated.'",
        confluent_exit: 0,
    });
    judged_by_both_presets(&Case {
        name: "timeout unit",
        extension: "avsc",
        old: &avro_record(
            "Job",
            r#"{"name":"timeoutMs","type":"long","doc":"How long to wait before giving up."}"#,
        ),
        new: &avro_record(
            "Job",
            r#"{"name":"timeoutMs","type":"long","doc":"How long to wait, in seconds."}"#,
        ),
        rule: "MEANING_CHANGED",
        path: "/fields/timeoutMs",
        reason: "its unit changed from milliseconds to seconds",
        confluent_exit: 0,
    });
    let grain_v1 = r#"{"type":"record","name":"CaseAssigned","doc":"One event per case assignment.","fields":[{"name":"caseId","type":"string"}]}"#;
    let grain_v2 = r#"{"type":"record","name":"CaseAssigned","doc":"One event per assignee role.","fields":[{"name":"caseId","type":"string"}]}"#;
    judged_by_both_presets(&Case {
        name: "event grain",
        extension: "avsc",
        old: grain_v1,
        new: grain_v2,
        rule: "MEANING_CHANGED",
        path: "",
        reason: "grain",
        confluent_exit: 0,
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let v1 = write(dir.path(), "v1.avsc", grain_v1);
    let v2 = write(dir.path(), "v2.avsc", grain_v2);
    let (_, findings) = check(&[], &v2, &v1);
    let grain = of(&findings, "MEANING_CHANGED");
    assert!(
        grain[0]["hint"]
            .as_str()
            .is_some_and(|h| h.contains("new event type")),
        "{grain:?}"
    );
    // A doc where there was none is info, and the change registers.
    let bare = write(
        dir.path(),
        "bare.avsc",
        &avro_record(
            "Case",
            r#"{"name":"closureReason","type":["null","string"],"default":null}"#,
        ),
    );
    let documented = write(
        dir.path(),
        "documented.avsc",
        &avro_record(
            "Case",
            r#"{"name":"closureReason","type":["null","string"],"default":null,"doc":"Null while the case is open."}"#,
        ),
    );
    let (code, findings) = check(&[], &documented, &bare);
    assert_eq!(code, Some(0), "{findings:#?}");
    let added = of(&findings, "MEANING_CHANGED");
    assert_eq!(added.len(), 1, "{findings:#?}");
    assert_eq!(added[0]["severity"], "info");
}

/// Rule 7, §23.2 and §23.3: money and timestamp type changes, even Avro's legal promotions.
#[test]
fn money_and_timestamp_promotions() {
    let cases = [
        (
            "amount int to long",
            r#"{"name":"amount","type":"int"}"#,
            r#"{"name":"amount","type":"long"}"#,
            "/fields/amount",
        ),
        (
            "amount long to double",
            r#"{"name":"amount","type":"long"}"#,
            r#"{"name":"amount","type":"double"}"#,
            "/fields/amount",
        ),
        (
            "timestamp-millis to double",
            r#"{"name":"occurredAt","type":{"type":"long","logicalType":"timestamp-millis"}}"#,
            r#"{"name":"occurredAt","type":"double"}"#,
            "/fields/occurredAt",
        ),
    ];
    for (name, old, new, path) in cases {
        judged_by_both_presets(&Case {
            name,
            extension: "avsc",
            old: &avro_record("Payment", old),
            new: &avro_record("Payment", new),
            rule: "SENSITIVE_TYPE_CHANGED",
            path,
            reason: "changed type from",
            confluent_exit: 0,
        });
    }
}

/// Rule 7 (numeric precision): precision loss, which had no finding at all.
#[test]
fn precision_loss_in_avro_and_protobuf() {
    judged_by_both_presets(&Case {
        name: "viewCount int to float",
        extension: "avsc",
        old: &avro_record("Video", r#"{"name":"viewCount","type":"int"}"#),
        new: &avro_record("Video", r#"{"name":"viewCount","type":"float"}"#),
        rule: "PRECISION_LOSS",
        path: "/fields/viewCount",
        reason: "2^24",
        confluent_exit: 0,
    });
    judged_by_both_presets(&Case {
        name: "sequenceNumber long to double",
        extension: "avsc",
        old: &avro_record("Trade", r#"{"name":"sequenceNumber","type":"long"}"#),
        new: &avro_record("Trade", r#"{"name":"sequenceNumber","type":"double"}"#),
        rule: "PRECISION_LOSS",
        path: "/fields/sequenceNumber",
        reason: "2^53",
        confluent_exit: 0,
    });
    for (to, reason) in [("int32", "truncated"), ("uint64", "negative values")] {
        judged_by_both_presets(&Case {
            name: &format!("protobuf int64 to {to}"),
            extension: "proto",
            old: "syntax = \"proto3\";\npackage acme;\nmessage Trade {\n  int64 quantity = 1;\n}\n",
            new: &format!(
                "syntax = \"proto3\";\npackage acme;\nmessage Trade {{\n  {to} quantity = 1;\n}}\n"
            ),
            rule: "PRECISION_LOSS",
            path: "/acme.Trade/fields/quantity",
            reason,
            confluent_exit: 0,
        });
    }
}

/// Rule 10 and §23.1: identity, idempotency, partition and ordering keys by name, with no key
/// declared in metadata; a foreign key is not the record's identity.
#[test]
fn key_fields_by_name_and_foreign_keys() {
    for (field, reason) in [
        ("eventId", "the record's identity"),
        ("idempotencyKey", "the record's idempotency key"),
        ("partitionKey", "the record's partition key"),
    ] {
        judged_by_both_presets(&Case {
            name: field,
            extension: "avsc",
            old: &avro_record(
                "CaseEvent",
                &format!(
                    r#"{{"name":"{field}","type":"string"}},{{"name":"note","type":"string"}}"#
                ),
            ),
            new: &avro_record(
                "CaseEvent",
                &format!(
                    r#"{{"name":"{field}","type":["null","string"],"default":null}},{{"name":"note","type":"string"}}"#
                ),
            ),
            rule: "LIKELY_IDENTITY_CHANGED",
            path: &format!("/fields/{field}"),
            reason,
            confluent_exit: 0,
        });
    }
    // caseOwnerId and owner_id name other records: becoming nullable is no identity change.
    let dir = tempfile::tempdir().expect("tempdir");
    let v1 = write(
        dir.path(),
        "v1.avsc",
        &avro_record(
            "Case",
            r#"{"name":"caseId","type":"string"},{"name":"caseOwnerId","type":"string"},{"name":"owner_id","type":"string"}"#,
        ),
    );
    let v2 = write(
        dir.path(),
        "v2.avsc",
        &avro_record(
            "Case",
            r#"{"name":"caseId","type":"string"},{"name":"caseOwnerId","type":["null","string"],"default":null},{"name":"owner_id","type":["null","string"],"default":null}"#,
        ),
    );
    let (_, findings) = check(&[], &v2, &v1);
    assert!(
        of(&findings, "LIKELY_IDENTITY_CHANGED").is_empty(),
        "{findings:#?}"
    );
}

/// Rule 9 and §9.2: dropping a `reserved` statement at the default Protobuf strictness.
#[test]
fn a_dropped_protobuf_reservation() {
    judged_by_both_presets(&Case {
        name: "reserved dropped",
        extension: "proto",
        old: "syntax = \"proto3\";\npackage acme;\nmessage CaseEvent {\n  string event_id = 1;\n  reserved 3, 4;\n  reserved \"legacy_status\";\n}\n",
        new: "syntax = \"proto3\";\npackage acme;\nmessage CaseEvent {\n  string event_id = 1;\n}\n",
        rule: "PROTOBUF_RESERVED_DROPPED",
        path: "/acme.CaseEvent",
        reason: "dropped its reservation of 3, 4, \"legacy_status\"",
        confluent_exit: 0,
    });
}

fn iceberg_table(spec: &str) -> String {
    format!(
        r#"{{"format-version":2,"table-uuid":"9c12d441-03fe-4693-9a96-a0705ddf69c1","location":"s3://b/t","last-sequence-number":0,"last-updated-ms":0,"last-column-id":3,"current-schema-id":0,"schemas":[{{"type":"struct","schema-id":0,"fields":[{{"id":1,"name":"symbol","required":true,"type":"string"}},{{"id":2,"name":"exchange","required":true,"type":"string"}},{{"id":3,"name":"valid_from","required":true,"type":"timestamp"}}]}}],"default-spec-id":0,"partition-specs":[{{"spec-id":0,"fields":{spec}}}],"last-partition-id":1001,"sort-orders":[{{"order-id":0,"fields":[]}}],"default-sort-order-id":0}}"#
    )
}

/// §12: a partition-spec change is an operational change, and `plan` prints its DDL.
#[test]
fn an_iceberg_partition_change_is_reported_and_planned() {
    let old = iceberg_table(
        r#"[{"source-id":2,"field-id":1000,"name":"exchange","transform":"identity"}]"#,
    );
    let new = iceberg_table(
        r#"[{"source-id":3,"field-id":1001,"name":"valid_from_day","transform":"day"}]"#,
    );
    judged_by_both_presets(&Case {
        name: "partition spec",
        extension: "json",
        old: &old,
        new: &new,
        rule: "ICEBERG_PARTITION_CHANGED",
        path: "/partition-spec",
        reason: "from 'identity(exchange)' to 'day(valid_from)'",
        confluent_exit: 0,
    });
    let dir = tempfile::tempdir().expect("tempdir");
    let v1 = write(dir.path(), "v1.metadata.json", &old);
    let v2 = write(dir.path(), "v2.metadata.json", &new);
    let plan = covenant(&[
        "plan",
        "--format",
        "iceberg",
        "--table",
        "refdata.silver_instruments",
        s(&v2),
        s(&v1),
    ]);
    let text = String::from_utf8_lossy(&plan.stdout);
    assert!(
        text.contains("ALTER TABLE refdata.silver_instruments REPLACE PARTITION FIELD exchange WITH day(valid_from) AS valid_from_day;"),
        "{text}"
    );
    assert!(!text.contains("no schema change"), "{text}");
}

/// Through a running server: the default preset refuses a CDC rename with the finding and
/// the ways forward; a subject (or its context) under `confluent` registers it; the preset in
/// force shows in `GET /config/{subject}`; an unknown preset is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn presets_on_a_running_server() {
    let server = TestServer::start().await;
    let v1 = avro_record(
        "case_record",
        r#"{"name":"case_id","type":"string"},{"name":"owner_id","type":["null","string"],"default":null}"#,
    );
    let v2 = avro_record(
        "case_record",
        r#"{"name":"case_id","type":"string"},{"name":"assigned_officer_id","type":["null","string"],"default":null}"#,
    );
    for subject in ["cases", "lenient-cases", ":.cdc:cases"] {
        let (status, body) = server.register(subject, "AVRO", &v1).await;
        assert_eq!(status, 200, "{subject}: {body}");
    }
    let (_, global) = server.call("GET", "/config", None).await;
    assert_eq!(global["policyPreset"], "covenant", "{global}");

    let (status, refused) = server.register("cases", "AVRO", &v2).await;
    assert_eq!(
        (status, refused["error_code"].clone()),
        (409, json!(40901)),
        "{refused}"
    );
    let message = refused["message"].as_str().unwrap_or_default();
    for part in [
        "rule: LIKELY_RENAME",
        "path: '/fields/assigned_officer_id'",
        "reason: Field 'owner_id' looks renamed to 'assigned_officer_id'",
        "hint: Add 'assigned_officer_id' beside 'owner_id'",
        "Approve",
    ] {
        assert!(message.contains(part), "{part} not in {message}");
    }
    // owner_id is a foreign key, not the record's identity.
    assert!(!message.contains("LIKELY_IDENTITY_CHANGED"), "{message}");

    // A subject under the confluent preset: Confluent's verdict, compatible.
    server
        .config("lenient-cases", json!({"policyPreset": "confluent"}))
        .await;
    let (_, config) = server.call("GET", "/config/lenient-cases", None).await;
    assert_eq!(config["policyPreset"], "confluent", "{config}");
    let (status, body) = server.register("lenient-cases", "AVRO", &v2).await;
    assert_eq!(status, 200, "{body}");
    // The dry run says so too, the rename still reported.
    let (_, verdict) = server
        .call(
            "POST",
            "/compatibility/subjects/lenient-cases/versions/latest?verbose=true",
            Some(json!({"schema": v1})),
        )
        .await;
    assert_eq!(verdict["is_compatible"], true, "{verdict}");
    assert!(
        verdict["findings"].as_array().is_some_and(|fs| fs
            .iter()
            .any(|f| f["rule"] == "LIKELY_RENAME" && f["severity"] == "warning")),
        "{verdict}"
    );

    // A context's preset covers its subjects; the subject's own config shows the one in force.
    server
        .config(":.cdc:", json!({"policyPreset": "confluent"}))
        .await;
    server
        .config(":.cdc:cases", json!({"compatibility": "BACKWARD"}))
        .await;
    let (_, config) = server.call("GET", "/config/:.cdc:cases", None).await;
    assert_eq!(config["policyPreset"], "confluent", "{config}");
    let (status, body) = server.register(":.cdc:cases", "AVRO", &v2).await;
    assert_eq!(status, 200, "{body}");
    let (_, config) = server
        .call("GET", "/config/cases?defaultToGlobal=true", None)
        .await;
    assert_eq!(config["policyPreset"], "covenant", "{config}");

    // A named rule overrides the preset either way.
    server
        .config(
            "cases",
            json!({"semanticRules": {"LIKELY_RENAME": "warning", "FIELD_REMOVED_WITHOUT_DEPRECATION": "warning"}}),
        )
        .await;
    let (status, body) = server.register("cases", "AVRO", &v2).await;
    assert_eq!(status, 200, "{body}");

    let (status, body) = server
        .call(
            "PUT",
            "/config/cases",
            Some(json!({"policyPreset": "strict"})),
        )
        .await;
    assert_eq!(status, 422, "{body}");
    assert!(
        body["message"]
            .as_str()
            .is_some_and(|m| m.contains("covenant and confluent")),
        "{body}"
    );
}
