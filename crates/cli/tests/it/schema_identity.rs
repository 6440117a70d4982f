//! Schema identity without `normalize` through a running `covenant serve`: an Avro schema
//! sent with its attributes in another order or other whitespace is the version already
//! registered, on register, lookup and `/schemas/ids/{id}/versions`, as in Confluent.

use crate::support;

use serde_json::{Value, json};
use support::{Serve, TestDb, V1};

const ORDERS: &str = r#"{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"id","type":"long"},{"name":"note","type":["null","string"],"default":null}]}"#;
const ORDERS_REORDERED: &str = r#"{
  "fields": [
    {"type": {"type": "long"}, "name": "id", "order": "ascending"},
    {"default": null, "type": ["null", {"type": "string"}], "name": "note"}
  ],
  "namespace": "shop", "name": "Order", "type": "record"
}"#;
const ORDERS_SWAPPED: &str = r#"{"type":"record","name":"Order","namespace":"shop","fields":[{"name":"note","type":["null","string"],"default":null},{"name":"id","type":"long"}]}"#;

async fn call(serve: &Serve, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let client = covenant_exporter::client::client();
    support::call(&client, &serve.base, method, path, V1, body).await
}

fn avro(text: &str) -> Option<Value> {
    Some(json!({"schema": text}))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reordered_avro_is_the_registered_version_on_sqlite() {
    reordered_avro_is_the_registered_version(None).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reordered_avro_is_the_registered_version_on_postgres() {
    let Some(db) = TestDb::create("covenant_identity").await else {
        eprintln!("skipped: {} is not set", support::POSTGRES_ENV);
        return;
    };
    reordered_avro_is_the_registered_version(Some(&db.url)).await;
    db.drop_db().await;
}

async fn reordered_avro_is_the_registered_version(store: Option<&str>) {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = Serve::spawn(&dir.path().join("data"), |command| {
        if let Some(url) = store {
            command.args(["--store", url]);
        }
    });
    support::wait_ready(&covenant_exporter::client::client(), &serve.base).await;

    let (status, first) = call(&serve, "POST", "/subjects/orders/versions", avro(ORDERS)).await;
    assert_eq!(status, 200, "{first}");
    let id = first["id"].as_i64().expect("id");

    let (status, again) = call(
        &serve,
        "POST",
        "/subjects/orders/versions",
        avro(ORDERS_REORDERED),
    )
    .await;
    assert_eq!((status, &again["id"]), (200, &json!(id)), "{again}");
    let (_, versions) = call(&serve, "GET", "/subjects/orders/versions", None).await;
    assert_eq!(versions, json!([1]));

    let (status, found) = call(&serve, "POST", "/subjects/orders", avro(ORDERS_REORDERED)).await;
    assert_eq!(status, 200, "{found}");
    assert_eq!((&found["id"], &found["version"]), (&json!(id), &json!(1)));

    // Another subject gets the same id, and the id lists both.
    let (status, other) = call(
        &serve,
        "POST",
        "/subjects/orders-copy/versions",
        avro(ORDERS_REORDERED),
    )
    .await;
    assert_eq!((status, &other["id"]), (200, &json!(id)), "{other}");
    let (_, listed) = call(&serve, "GET", &format!("/schemas/ids/{id}/versions"), None).await;
    assert_eq!(
        listed,
        json!([{"subject": "orders", "version": 1}, {"subject": "orders-copy", "version": 1}])
    );

    // Field order is part of the schema: a new version and a new id.
    let (status, swapped) = call(
        &serve,
        "POST",
        "/subjects/orders/versions",
        avro(ORDERS_SWAPPED),
    )
    .await;
    assert_eq!(status, 200, "{swapped}");
    assert_ne!(swapped["id"], json!(id));
    let (_, versions) = call(&serve, "GET", "/subjects/orders/versions", None).await;
    assert_eq!(versions, json!([1, 2]));

    // `{"type":{"type":"int"}}` parses to `"int"`: Confluent finds the registered version.
    let (status, int) = call(&serve, "POST", "/subjects/ints/versions", avro(r#""int""#)).await;
    assert_eq!(status, 200, "{int}");
    let (status, found) = call(
        &serve,
        "POST",
        "/subjects/ints",
        avro(r#"{"type":{"type":"int"}}"#),
    )
    .await;
    assert_eq!(status, 200, "{found}");
    assert_eq!((&found["id"], &found["version"]), (&int["id"], &json!(1)));
}
