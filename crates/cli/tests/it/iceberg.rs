//! Iceberg table schemas end to end: the seed's examples (`margin_trading_allowed` added,
//! `tick_size` renamed to `price_increment` by id, `max_leverage` promoted to long but not to
//! decimal, a dropped id reused) through `covenant check`, `plan`, `canonical` and
//! `fingerprint` on files, and through a running `covenant serve` with `schemaType: ICEBERG`,
//! where a deprecation record on a column and the removal gate hold back its `DROP COLUMN`
//! until the evidence is there.

use crate::support;

use serde_json::{Value, json};
use support::{Serve, covenant, s, write};

fn table(fields: Value) -> Value {
    json!({"type": "struct", "schema-id": 0, "identifier-field-ids": [1], "fields": fields})
}

fn col(id: i64, name: &str, required: bool, ty: &str) -> Value {
    json!({"id": id, "name": name, "required": required, "type": ty})
}

/// The seed's silver instruments table, trimmed.
fn v1() -> Value {
    table(json!([
        col(1, "instrument_sk", true, "string"),
        col(2, "exchange", true, "string"),
        col(3, "tick_size", false, "decimal(38, 18)"),
        col(4, "max_leverage", false, "int"),
        col(5, "legacy_code", false, "string"),
    ]))
}

/// Renamed by id, promoted, and `margin_trading_allowed` added as optional.
fn v2() -> Value {
    table(json!([
        col(1, "instrument_sk", true, "string"),
        col(2, "exchange", true, "string"),
        col(3, "price_increment", false, "decimal(38, 18)"),
        col(4, "max_leverage", false, "long"),
        col(5, "legacy_code", false, "string"),
        col(6, "margin_trading_allowed", false, "boolean"),
    ]))
}

fn with(schema: &Value, id: i64, ty: &str, name: Option<&str>) -> Value {
    let mut schema = schema.clone();
    for f in schema["fields"].as_array_mut().expect("fields") {
        if f["id"] == json!(id) {
            f["type"] = json!(ty);
            if let Some(name) = name {
                f["name"] = json!(name);
            }
        }
    }
    schema
}

fn without(schema: &Value, name: &str) -> Value {
    let mut schema = schema.clone();
    schema["fields"]
        .as_array_mut()
        .expect("fields")
        .retain(|f| f["name"] != json!(name));
    schema
}

fn text(out: &std::process::Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn the_seed_examples_offline() {
    let dir = tempfile::tempdir().expect("temp dir");
    let old = write(dir.path(), "v1.json", &v1().to_string());
    let new = write(dir.path(), "v2.json", &v2().to_string());

    // ADR-005's rename (tickSize to priceIncrement) is refused under the default preset...
    let out = covenant(&["check", "--format", "iceberg", s(&new), s(&old)]);
    let report = text(&out);
    assert_eq!(out.status.code(), Some(1), "{report}");
    assert!(
        report.contains("LIKELY_RENAME [v1] at /fields/price_increment"),
        "{report}"
    );
    // ...and Iceberg's own verdict, compatible, is the confluent preset's.
    let out = covenant(&[
        "check",
        "--format",
        "iceberg",
        "--preset",
        "confluent",
        s(&new),
        s(&old),
    ]);
    let report = text(&out);
    assert_eq!(out.status.code(), Some(0), "{report}");
    for needle in [
        "ICEBERG_COLUMN_ADDED [v1] at /fields/margin_trading_allowed",
        "ICEBERG_COLUMN_RENAMED [v1] at /fields/price_increment",
        "ICEBERG_TYPE_PROMOTED [v1] at /fields/max_leverage",
        "LIKELY_RENAME [v1] at /fields/price_increment",
    ] {
        assert!(report.contains(needle), "{needle}:\n{report}");
    }

    // Read as Iceberg by content, without --format.
    let out = covenant(&["check", "--preset", "confluent", s(&new), s(&old)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));

    let out = covenant(&[
        "plan",
        "--format",
        "iceberg",
        "--table",
        "refdata.silver_instruments",
        s(&new),
        s(&old),
    ]);
    let plan = text(&out);
    for statement in [
        "ALTER TABLE refdata.silver_instruments RENAME COLUMN tick_size TO price_increment;",
        "ALTER TABLE refdata.silver_instruments ALTER COLUMN max_leverage TYPE bigint;",
        "ALTER TABLE refdata.silver_instruments ADD COLUMN margin_trading_allowed boolean;",
    ] {
        assert!(plan.contains(statement), "{statement}:\n{plan}");
    }
    let out = covenant(&[
        "plan",
        "--format",
        "iceberg",
        "--output",
        "json",
        s(&new),
        s(&old),
    ]);
    let json: Value = serde_json::from_slice(&out.stdout).expect("plan JSON");
    let ops: Vec<&str> = json["ddl"]["statements"]
        .as_array()
        .expect("statements")
        .iter()
        .filter_map(|s| s["op"].as_str())
        .collect();
    assert_eq!(
        ops,
        ["rename_column", "update_type", "add_column"],
        "{json}"
    );
    // The placeholder's last part is a reserved word, so Spark needs it quoted.
    assert!(
        json["ddl"]["statements"][0]["sql"]
            .as_str()
            .unwrap_or("")
            .starts_with("ALTER TABLE catalog.db.`table` "),
        "{json}"
    );

    let decimal = write(
        dir.path(),
        "decimal.json",
        &with(&v1(), 4, "decimal(10, 2)", None).to_string(),
    );
    let out = covenant(&["check", "--format", "iceberg", s(&decimal), s(&old)]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(
        text(&out).contains("ICEBERG_TYPE_CHANGED [v1] at /fields/max_leverage"),
        "{}",
        text(&out)
    );
    let out = covenant(&["plan", "--format", "iceberg", s(&decimal), s(&old)]);
    assert_eq!(out.status.code(), Some(1));
    let plan = text(&out);
    assert!(
        plan.contains("Iceberg DDL: refused") && !plan.contains("ALTER TABLE"),
        "{plan}"
    );

    let dropped = without(&v1(), "legacy_code");
    let reused = {
        let mut v = dropped.clone();
        v["fields"]
            .as_array_mut()
            .expect("fields")
            .push(col(5, "listing_venue", false, "int"));
        v
    };
    let reused = write(dir.path(), "reused.json", &reused.to_string());
    let out = covenant(&["check", "--format", "iceberg", s(&reused), s(&old)]);
    assert_eq!(out.status.code(), Some(1));
    assert!(
        text(&out).contains("ICEBERG_FIELD_ID_REUSED"),
        "{}",
        text(&out)
    );
}

/// Iceberg promotes `decimal(P,S)` to `decimal(P',S)` for P' > P: the unscaled values and
/// their scale are read as written, so no rule may call it a reinterpretation, and the plan
/// has its `ALTER COLUMN ... TYPE`.
#[test]
fn decimal_precision_widened_at_the_same_scale_is_a_promotion() {
    let dir = tempfile::tempdir().expect("temp dir");
    for (from, to) in [
        ("decimal(9, 2)", "decimal(18, 2)"),
        ("decimal(10, 2)", "decimal(20, 2)"),
    ] {
        let base = table(json!([
            col(1, "instrument_sk", true, "string"),
            col(2, "ratio", false, from),
        ]));
        let old = write(dir.path(), "old.json", &base.to_string());
        let new = write(
            dir.path(),
            "new.json",
            &with(&base, 2, to, None).to_string(),
        );
        let out = covenant(&["check", "--format", "iceberg", s(&new), s(&old)]);
        let report = text(&out);
        assert_eq!(out.status.code(), Some(0), "{from} -> {to}:\n{report}");
        assert!(
            report.contains("ICEBERG_TYPE_PROMOTED [v1] at /fields/ratio"),
            "{report}"
        );
        assert!(!report.contains("VALUE_REINTERPRETED"), "{report}");
        let out = covenant(&["plan", "--format", "iceberg", s(&new), s(&old)]);
        let plan = text(&out);
        assert_eq!(out.status.code(), Some(0), "{from} -> {to}:\n{plan}");
        let spark = to.replace(' ', "");
        assert!(
            plan.contains(&format!(
                "ALTER TABLE catalog.db.`table` ALTER COLUMN ratio TYPE {spark};"
            )),
            "{plan}"
        );
    }
    // A narrower precision, or another scale, is still refused.
    let base = table(json!([
        col(1, "instrument_sk", true, "string"),
        col(2, "ratio", false, "decimal(18, 2)"),
    ]));
    let old = write(dir.path(), "old.json", &base.to_string());
    for to in ["decimal(9, 2)", "decimal(20, 4)"] {
        let new = write(
            dir.path(),
            "new.json",
            &with(&base, 2, to, None).to_string(),
        );
        let out = covenant(&["check", "--format", "iceberg", s(&new), s(&old)]);
        assert_eq!(out.status.code(), Some(1), "{to}: {}", text(&out));
    }
}

/// Spark SQL cannot parse a reserved word or a name with a dash as a bare identifier: the
/// statements quote the column `order` and the table `cat.db.my-table`.
#[test]
fn the_ddl_quotes_reserved_columns_and_table_names() {
    let dir = tempfile::tempdir().expect("temp dir");
    let base = table(json!([
        col(1, "instrument_sk", true, "string"),
        col(2, "exchange", true, "string"),
    ]));
    let mut added = base.clone();
    added["fields"].as_array_mut().expect("fields").extend([
        col(3, "order", false, "string"),
        col(4, "select", false, "int"),
    ]);
    let old = write(dir.path(), "old.json", &base.to_string());
    let new = write(dir.path(), "new.json", &added.to_string());
    let out = covenant(&[
        "plan",
        "--format",
        "iceberg",
        "--table",
        "cat.db.my-table",
        "--output",
        "json",
        s(&new),
        s(&old),
    ]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let json: Value = serde_json::from_slice(&out.stdout).expect("plan JSON");
    let sql: Vec<&str> = json["ddl"]["statements"]
        .as_array()
        .expect("statements")
        .iter()
        .filter_map(|s| s["sql"].as_str())
        .collect();
    assert_eq!(
        sql,
        [
            "ALTER TABLE cat.db.`my-table` ADD COLUMN `order` string;",
            "ALTER TABLE cat.db.`my-table` ADD COLUMN `select` int;",
        ],
        "{json}"
    );
    // The operations keep the names as they are; the table too.
    assert_eq!(json["ddl"]["statements"][0]["path"], json!(["order"]));
    assert_eq!(json["ddl"]["table"], "cat.db.my-table");
}

#[test]
fn table_metadata_as_the_old_version_and_identity_commands() {
    let dir = tempfile::tempdir().expect("temp dir");
    let metadata = json!({
        "format-version": 2, "table-uuid": "9c12d441-03fe-4693-9a96-a0705ddf69c1",
        "location": "s3a://refdata-warehouse/silver/instruments", "last-column-id": 7,
        "current-schema-id": 0, "schemas": [v1()], "default-spec-id": 0,
        "partition-specs": [{"spec-id": 0, "fields": [{"source-id": 2, "field-id": 1000, "name": "exchange", "transform": "identity"}]}],
    });
    let meta = write(dir.path(), "v3.metadata.json", &metadata.to_string());
    let new = write(dir.path(), "v2.json", &v2().to_string());
    // Id 6 is at or below last-column-id 7: it belonged to a column the table dropped.
    let out = covenant(&["check", "--format", "iceberg", s(&new), s(&meta)]);
    assert_eq!(out.status.code(), Some(1), "{}", text(&out));
    assert!(text(&out).contains("last-column-id is 7"), "{}", text(&out));
    let fresh = write(
        dir.path(),
        "fresh.json",
        &v2().to_string().replace("\"id\":6", "\"id\":8"),
    );
    let out = covenant(&["check", "--preset", "confluent", s(&fresh), s(&meta)]);
    assert_eq!(out.status.code(), Some(0), "{}", text(&out));
    let no_exchange = write(
        dir.path(),
        "nox.json",
        &without(&v1(), "exchange").to_string(),
    );
    let out = covenant(&["check", "--format", "iceberg", s(&no_exchange), s(&meta)]);
    assert!(
        text(&out).contains("ICEBERG_PARTITION_SOURCE_CHANGED"),
        "{}",
        text(&out)
    );

    let spaced = write(
        dir.path(),
        "spaced.json",
        &serde_json::to_string_pretty(&v1())
            .expect("json")
            .replace("decimal(38, 18)", "decimal(38,18)"),
    );
    let old = write(dir.path(), "v1.json", &v1().to_string());
    let a = covenant(&["fingerprint", "--format", "iceberg", s(&old)]);
    let b = covenant(&["fingerprint", "--format", "iceberg", s(&spaced)]);
    assert_eq!(a.status.code(), Some(0));
    assert_eq!(a.stdout, b.stdout, "layout does not change identity");
    let canonical = covenant(&["canonical", "--format", "iceberg", s(&spaced)]);
    assert!(String::from_utf8_lossy(&canonical.stdout).contains("\"decimal(38, 18)\""));

    let broken = write(
        dir.path(),
        "broken.json",
        r#"{"type":"struct","fields":[{"id":1,"name":"a","required":true,"type":"int"},{"id":1,"name":"b","required":true,"type":"int"}]}"#,
    );
    let out = covenant(&["check", "--format", "iceberg", s(&broken), s(&old)]);
    assert_eq!(out.status.code(), Some(2));
    let message = text(&out);
    assert!(
        message.contains("Field id 1 is already used") && message.lines().count() == 1,
        "{message}"
    );
}

struct Server {
    _serve: Serve,
    base: String,
    http: reqwest::Client,
    _dir: tempfile::TempDir,
}

impl Server {
    async fn call(&self, method: &str, path: &str, body: Value) -> (u16, Value) {
        support::call(
            &self.http,
            &self.base,
            method,
            path,
            "application/json",
            Some(body),
        )
        .await
    }

    async fn ok(&self, method: &str, path: &str, body: Value) -> Value {
        let (status, answer) = self.call(method, path, body).await;
        assert_eq!(status, 200, "{method} {path}: {answer}");
        answer
    }
}

#[tokio::test]
async fn registered_over_rest_with_a_governed_column_removal() {
    let dir = tempfile::tempdir().expect("temp dir");
    let serve = Serve::spawn(&dir.path().join("data"), |_| {});
    let server = Server {
        base: serve.base.clone(),
        _serve: serve,
        http: covenant_exporter::client::client(),
        _dir: dir,
    };
    support::wait_ready(&server.http, &server.base).await;
    let versions = "/subjects/silver.instruments/versions";
    let register = |schema: Value| json!({"schemaType": "ICEBERG", "schema": schema.to_string()});

    let first = server.ok("POST", versions, register(v1())).await;
    assert_eq!(first["schemaType"], json!("ICEBERG"), "{first}");
    // The rename in v2 is refused under the default preset; the subject accepts renames.
    let (status, refusal) = server.call("POST", versions, register(v2())).await;
    assert_eq!(status, 409, "{refusal}");
    assert!(
        refusal["message"]
            .as_str()
            .is_some_and(|m| m.contains("rule: LIKELY_RENAME, path: '/fields/price_increment'")),
        "{refusal}"
    );
    server
        .ok(
            "PUT",
            "/config/silver.instruments",
            json!({"semanticRules": {"LIKELY_RENAME": "warning"}}),
        )
        .await;
    server.ok("POST", versions, register(v2())).await;

    let (status, refusal) = server
        .call(
            "POST",
            versions,
            register(with(&v2(), 4, "decimal(10, 2)", None)),
        )
        .await;
    assert_eq!(
        (status, refusal["error_code"].clone()),
        (409, json!(40901)),
        "{refusal}"
    );
    assert!(
        refusal["message"]
            .as_str()
            .unwrap_or("")
            .contains("ICEBERG_TYPE_CHANGED"),
        "{refusal}"
    );
    let (status, refusal) = server
        .call(
            "POST",
            versions,
            register(with(&v2(), 5, "int", Some("listing_venue"))),
        )
        .await;
    assert_eq!(status, 409, "{refusal}");
    assert!(
        refusal["message"]
            .as_str()
            .unwrap_or("")
            .contains("ICEBERG_FIELD_ID_REUSED"),
        "{refusal}"
    );
    let (status, refusal) = server
        .call(
            "POST",
            versions,
            json!({"schemaType": "ICEBERG", "schema": "{\"type\":\"struct\"}"}),
        )
        .await;
    assert_eq!(
        (status, refusal["error_code"].clone()),
        (422, json!(42201)),
        "{refusal}"
    );

    let record = server
        .ok(
            "POST",
            "/covenant/v1/deprecations",
            json!({
                "target": {"kind": "field", "subject": "silver.instruments", "path": "legacy_code"},
                "contract": "silver instruments, analyst queries",
                "old_promise": "legacy_code is the venue's old instrument code",
                "new_promise": "no replacement: the code is retired",
                "replacement": "instrument_sk",
                "owners": [{"role": "producer", "name": "refdata"}],
                "announced_by": "refdata",
            }),
        )
        .await;
    let dep = record["id"].as_i64().expect("deprecation id");
    let v3 = without(&v2(), "legacy_code");
    let (status, refusal) = server.call("POST", versions, register(v3.clone())).await;
    assert_eq!(status, 409, "{refusal}");
    assert!(
        refusal["message"]
            .as_str()
            .unwrap_or("")
            .contains("[stage_not_removable]"),
        "{refusal}"
    );

    let stage = format!("/covenant/v1/deprecations/{dep}/stage");
    server
        .ok("POST", &stage, json!({"to": "frozen", "by": "refdata"}))
        .await;
    server
        .ok("POST", &stage, json!({"to": "enforcing", "by": "refdata"}))
        .await;
    let (status, refusal) = server
        .call("POST", &stage, json!({"to": "removable", "by": "refdata"}))
        .await;
    assert_eq!(status, 409, "no evidence yet: {refusal}");
    let evidence = format!("/covenant/v1/deprecations/{dep}/evidence");
    server.ok("POST", &evidence, json!({"claim": "staging ran without the column", "by": "refdata",
        "body": {"kind": "non_production_omission", "environment": "staging", "outcome": "passed", "detail": "a week of staging loads without legacy_code"}})).await;
    server.ok("POST", &evidence, json!({"claim": "canary", "by": "refdata",
        "body": {"kind": "canary", "path": "one exchange", "outcome": "passed", "link": "https://dashboards.example.com/canary/legacy-code"}})).await;
    server
        .ok(
            "POST",
            &format!("/covenant/v1/deprecations/{dep}/exceptions"),
            json!({"approver": "data-governance",
        "overrides": "window_open", "reason": "no consumer declared or seen reading the column"}),
        )
        .await;
    let record = server
        .ok("POST", &stage, json!({"to": "removable", "by": "refdata"}))
        .await;
    assert_eq!(record["stage"], json!("removable"), "{record}");
    let registered = server.ok("POST", versions, register(v3.clone())).await;
    assert_eq!(registered["version"], json!(3), "{registered}");

    // Id 5 was dropped in version 3; under plain BACKWARD only version 3 is compared, and the
    // history rule still finds the id's earlier column.
    let mut v4 = v3;
    v4["fields"]
        .as_array_mut()
        .expect("fields")
        .push(col(5, "listing_venue", false, "int"));
    let (status, refusal) = server.call("POST", versions, register(v4)).await;
    assert_eq!(status, 409, "{refusal}");
    let message = refusal["message"].as_str().unwrap_or("");
    assert!(
        message.contains("ICEBERG_HISTORY_ID_REUSED") && message.contains("'legacy_code'"),
        "{refusal}"
    );
}
