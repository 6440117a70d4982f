//! Schema guids and the `ruleType` filter of `GET /schemas` through a running `covenant
//! serve`, on the embedded store and on PostgreSQL: every schema answer carries the guid
//! Confluent 8 derives from the stored record, `GET /schemas/guids/{guid}` serves it, and a
//! principal that may not read the subject learns nothing through a guid.

use crate::support;

use serde_json::{Value, json};
use support::{Serve, TestDb, V1};

const ORDER: &str = r#"{"type":"record","name":"Order","fields":[{"name":"id","type":"long"}]}"#;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guids_on_the_embedded_store() {
    guids_name_stored_records(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guids_on_postgres() {
    let Some(db) = TestDb::create("covenant_guids").await else {
        eprintln!("skipped: {} is not set", support::POSTGRES_ENV);
        return;
    };
    guids_name_stored_records(Some(&db.url)).await;
    db.drop_db().await;
}

async fn guids_name_stored_records(store: Option<&str>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = Serve::spawn(&dir.path().join("data"), |command| {
        if let Some(url) = store {
            command.args(["--store", url]);
        }
    });
    let http = covenant_exporter::client::client();
    support::wait_ready(&http, &serve.base).await;
    let call = |method: &'static str, path: String, body: Option<Value>| {
        let http = http.clone();
        let base = serve.base.clone();
        async move { support::call(&http, &base, method, &path, V1, body).await }
    };

    let (status, registered) = call(
        "POST",
        "/subjects/orders-value/versions".into(),
        Some(json!({"schema": ORDER})),
    )
    .await;
    assert_eq!(status, 200, "{registered}");
    let id = registered["id"].as_i64().expect("id");
    let (_, by_id) = call("GET", format!("/schemas/ids/{id}"), None).await;
    let guid = by_id["guid"]
        .as_str()
        .expect("guid in /schemas/ids")
        .to_string();
    // The MD5 of the stored text, as a UUID: the same text has the same guid anywhere.
    let stored = by_id["schema"].as_str().expect("schema text");
    assert_eq!(guid, expected_guid(stored));
    for path in [
        "/subjects/orders-value/versions/1".to_string(),
        "/schemas?subjectPrefix=orders".to_string(),
    ] {
        let (status, answer) = call("GET", path.clone(), None).await;
        assert_eq!(status, 200, "{path}: {answer}");
        let view = if answer.is_array() {
            &answer[0]
        } else {
            &answer
        };
        assert_eq!(view["guid"], json!(guid), "{path}: {answer}");
    }
    let (_, found) = call(
        "POST",
        "/subjects/orders-value".into(),
        Some(json!({"schema": ORDER})),
    )
    .await;
    assert_eq!(found["guid"], json!(guid), "lookup: {found}");

    let (status, by_guid) = call("GET", format!("/schemas/guids/{guid}"), None).await;
    assert_eq!(status, 200, "{by_guid}");
    assert_eq!(
        (&by_guid["schema"], &by_guid["guid"]),
        (&json!(stored), &json!(guid))
    );
    assert!(
        by_guid.get("subject").is_none() && by_guid.get("id").is_none(),
        "{by_guid}"
    );
    let bare_hex = guid.replace('-', "").to_uppercase();
    let (status, _) = call("GET", format!("/schemas/guids/{bare_hex}"), None).await;
    assert_eq!(status, 200, "32 hex digits name the same guid");
    let (_, ids) = call("GET", format!("/schemas/guids/{guid}/ids"), None).await;
    assert_eq!(ids, json!([{"context": ".", "id": id}]));

    let unknown = "00000000-0000-0000-0000-000000000000";
    let (status, missing) = call("GET", format!("/schemas/guids/{unknown}"), None).await;
    assert_eq!(
        (status, &missing["error_code"]),
        (404, &json!(40403)),
        "{missing}"
    );
    assert_eq!(
        missing["message"],
        json!(format!("Schema {unknown} not found"))
    );
    let (status, _) = call("GET", "/schemas/guids/not-a-guid".into(), None).await;
    assert_eq!(status, 404);
    let (_, none) = call("GET", format!("/schemas/guids/{unknown}/ids"), None).await;
    assert_eq!(none, json!([]));

    // `ruleType` keeps the versions whose rule set has a rule of that type.
    let ruled = json!({
        "schema": ORDER.replace("Order", "Payment"),
        "ruleSet": {"domainRules": [{
            "name": "checkId", "kind": "CONDITION", "mode": "WRITE", "type": "CEL",
            "expr": "message.id > 0"
        }]}
    });
    let (status, answer) = call(
        "POST",
        "/subjects/payments-value/versions".into(),
        Some(ruled),
    )
    .await;
    assert_eq!(status, 200, "{answer}");
    let (_, cel) = call("GET", "/schemas?ruleType=CEL".into(), None).await;
    let subjects: Vec<&Value> = cel
        .as_array()
        .expect("list")
        .iter()
        .map(|v| &v["subject"])
        .collect();
    assert_eq!(subjects, [&json!("payments-value")]);
    let (_, none) = call("GET", "/schemas?ruleType=JSONATA".into(), None).await;
    assert_eq!(none, json!([]));
}

/// Computed here with the `md-5` crate over the bytes Confluent feeds for a record without
/// references, metadata or rules: the schema text alone.
fn expected_guid(schema: &str) -> String {
    use md5::{Digest, Md5};
    let hex: String = Md5::digest(schema.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    covenant_store::guid::parse_guid(&hex).expect("32 hex digits")
}
