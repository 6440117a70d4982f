//! Registration, lookup, compatibility and deletes for Avro through the HTTP surface.

use crate::common;

use common::{app, avro_available};
use serde_json::{Value, json};

fn body(schema: &Value) -> String {
    json!({"schema": schema.to_string()}).to_string()
}

fn user(extra: Option<Value>) -> Value {
    let mut fields = vec![json!({"name": "name", "type": "string"})];
    fields.extend(extra);
    json!({"type": "record", "name": "User", "namespace": "acme", "fields": fields})
}

#[tokio::test]
async fn register_dedupe_lookup_and_incompatibility_findings() {
    if !avro_available() {
        return;
    }
    let app = app();
    let v1 = user(None);
    let r = app
        .send(
            "POST",
            "/subjects/users-value/versions?normalize=False",
            Some(&body(&v1)),
        )
        .await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    let j = r.json();
    assert_eq!(
        (j["id"].as_i64(), j["version"].as_i64()),
        (Some(1), Some(1))
    );
    assert_eq!(j["schemaType"], "AVRO");
    assert!(j.get("references").is_none(), "empty lists are left out");
    // Whitespace differences dedupe; another subject shares the id.
    let spaced = json!({"schema": serde_json::to_string_pretty(&v1).expect("json")}).to_string();
    let again = app
        .send("POST", "/subjects/users-value/versions", Some(&spaced))
        .await
        .json();
    assert_eq!(
        (again["id"].as_i64(), again["version"].as_i64()),
        (Some(1), Some(1))
    );
    let other = app
        .send("POST", "/subjects/other/versions", Some(&body(&v1)))
        .await
        .json();
    assert_eq!(other["id"].as_i64(), Some(1));
    // Lookup.
    let found = app
        .send(
            "POST",
            "/subjects/users-value?deleted=False",
            Some(&body(&v1)),
        )
        .await
        .json();
    assert_eq!(
        (found["subject"].as_str(), found["version"].as_i64()),
        (Some("users-value"), Some(1))
    );
    let r = app
        .send("POST", "/subjects/users-value", Some(&body(&json!("int"))))
        .await;
    assert_eq!(r.code(), 40403);
    // Incompatible: a field without a default.
    let bad = user(Some(json!({"name": "age", "type": "int"})));
    let r = app
        .send("POST", "/subjects/users-value/versions", Some(&body(&bad)))
        .await;
    assert_eq!((r.status.as_u16(), r.code()), (409, 40901), "{}", r.text);
    let message = r.json()["message"].as_str().unwrap_or("").to_string();
    assert!(message.contains("subject \"users-value\""), "{message}");
    assert!(
        message.contains("/fields/age") && message.contains("version 1"),
        "{message}"
    );
    let r = app
        .send(
            "POST",
            "/compatibility/subjects/users-value/versions/latest?verbose=True",
            Some(&body(&bad)),
        )
        .await
        .json();
    assert_eq!(r["is_compatible"], false);
    assert!(
        r["messages"][0].as_str().unwrap_or("").contains("rule: "),
        "{r}"
    );
    let r = app
        .send(
            "POST",
            "/compatibility/subjects/users-value/versions?verbose=true",
            Some(&body(&v1)),
        )
        .await
        .json();
    assert_eq!(r, json!({"is_compatible": true, "messages": []}));
    let r = app
        .send(
            "POST",
            "/compatibility/subjects/users-value/versions/7",
            Some(&body(&v1)),
        )
        .await;
    assert_eq!(r.code(), 40402);
    let r = app
        .send(
            "POST",
            "/compatibility/subjects/users-value/versions/latest?verbose=true",
            Some(&body(&json!({"type": "nope"}))),
        )
        .await
        .json();
    assert_eq!(r["is_compatible"], false);
    // A compatible evolution.
    let good = user(Some(json!({"name": "age", "type": "int", "default": 1})));
    let r = app
        .send("POST", "/subjects/users-value/versions", Some(&body(&good)))
        .await
        .json();
    assert_eq!(
        (r["id"].as_i64(), r["version"].as_i64()),
        (Some(2), Some(2))
    );
    // Reads.
    assert_eq!(
        app.get("/subjects").await.json(),
        json!(["other", "users-value"])
    );
    assert_eq!(
        app.get("/subjects/users-value/versions").await.json(),
        json!([1, 2])
    );
    let latest = app
        .get("/subjects/users-value/versions/latest")
        .await
        .json();
    assert_eq!(latest["version"], 2);
    let raw = app.get("/subjects/users-value/versions/1/schema").await;
    assert_eq!(
        serde_json::from_str::<Value>(&raw.text).ok(),
        Some(v1.clone())
    );
    let by_id = app
        .get("/schemas/ids/1?fetchMaxId=true&subject=users-value")
        .await
        .json();
    assert_eq!(
        (by_id["maxId"].as_i64(), by_id["version"].as_i64()),
        (Some(2), Some(1))
    );
    assert_eq!(
        app.get("/schemas/ids/1/subjects").await.json(),
        json!(["other", "users-value"])
    );
    assert_eq!(
        app.get("/schemas/ids/1/versions").await.json(),
        json!([{"subject": "other", "version": 1}, {"subject": "users-value", "version": 1}])
    );
    assert_eq!(
        app.get("/schemas?latestOnly=true")
            .await
            .json()
            .as_array()
            .map(Vec::len),
        Some(2)
    );
    // Deletes: soft, then permanent; the id stays resolvable while soft-deleted.
    assert_eq!(
        app.send("DELETE", "/subjects/other", None).await.json(),
        json!([1])
    );
    assert_eq!(app.get("/schemas/ids/1").await.status.as_u16(), 200);
    assert_eq!(
        app.send("DELETE", "/subjects/other", None).await.code(),
        40404
    );
    assert_eq!(
        app.send("DELETE", "/subjects/users-value?permanent=true", None)
            .await
            .code(),
        40405
    );
    assert_eq!(
        app.send("DELETE", "/subjects/other?permanent=TRUE", None)
            .await
            .json(),
        json!([1])
    );
    assert_eq!(
        app.get("/subjects?deleted=true").await.json(),
        json!(["users-value"])
    );
}

#[tokio::test]
async fn read_only_returns_existing_versions_but_refuses_new_ones() {
    if !avro_available() {
        return;
    }
    let app = app();
    app.send(
        "POST",
        "/subjects/s/versions",
        Some(&body(&json!("string"))),
    )
    .await;
    app.send("PUT", "/mode/s", Some("{\"mode\":\"READONLY\"}"))
        .await;
    let r = app
        .send(
            "POST",
            "/subjects/s/versions",
            Some(&body(&json!("string"))),
        )
        .await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    let r = app
        .send("POST", "/subjects/s/versions", Some(&body(&json!("int"))))
        .await;
    assert_eq!((r.status.as_u16(), r.code()), (422, 42205));
}

#[tokio::test]
async fn import_mode_takes_explicit_ids_and_versions() {
    if !avro_available() {
        return;
    }
    let app = app();
    let with_id = json!({"schema": "\"string\"", "id": 100, "version": 5}).to_string();
    let r = app
        .send("POST", "/subjects/imp/versions", Some(&with_id))
        .await;
    assert_eq!(r.code(), 42205, "an id needs IMPORT mode");
    app.send("PUT", "/mode", Some("{\"mode\":\"IMPORT\"}"))
        .await;
    let r = app
        .send("POST", "/subjects/imp/versions", Some(&with_id))
        .await
        .json();
    assert_eq!(
        (r["id"].as_i64(), r["version"].as_i64()),
        (Some(100), Some(5))
    );
    let clash = json!({"schema": "\"int\"", "id": 100, "version": 6}).to_string();
    assert_eq!(
        app.send("POST", "/subjects/imp/versions", Some(&clash))
            .await
            .code(),
        42205
    );
    app.send("PUT", "/mode", Some("{\"mode\":\"READWRITE\"}"))
        .await;
    let r = app
        .send(
            "POST",
            "/subjects/imp2/versions",
            Some(&body(&json!("long"))),
        )
        .await
        .json();
    assert_eq!(
        r["id"].as_i64(),
        Some(101),
        "allocation continues after imported ids"
    );
}
