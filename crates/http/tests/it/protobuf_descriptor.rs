//! Protobuf sent as a base64 `FileDescriptorProto` (what Confluent's serializers send): stored
//! and served as .proto text, while the register answer keeps the client's form.

use crate::common;

use common::app;
use serde_json::json;

const ORDER: &str = "syntax = \"proto3\";\npackage acme;\n\nmessage Order {\n  string id = 1;\n  message Line {\n    int32 qty = 1;\n  }\n  repeated Line lines = 2;\n}\n";

#[tokio::test]
async fn base64_descriptors_are_stored_as_text_and_echoed_on_register() {
    let app = app();
    let r = app
        .send(
            "POST",
            "/subjects/text-value/versions",
            Some(&json!({"schemaType": "PROTOBUF", "schema": ORDER}).to_string()),
        )
        .await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    let id = r.json()["id"].as_i64().unwrap_or(-1);
    let serialized = app
        .send("GET", &format!("/schemas/ids/{id}?format=serialized"), None)
        .await
        .json()["schema"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(!serialized.is_empty() && !serialized.contains("message"));

    let body = json!({"schemaType": "PROTOBUF", "schema": serialized}).to_string();
    let r = app
        .send(
            "POST",
            "/subjects/b64-value/versions?normalize=False",
            Some(&body),
        )
        .await;
    assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    let answer = r.json();
    assert_eq!(
        answer["schema"], serialized,
        "the answer keeps the form sent"
    );
    let b64_id = answer["id"].as_i64().unwrap_or(-1);

    let stored = app
        .send("GET", &format!("/schemas/ids/{b64_id}"), None)
        .await
        .json();
    let text = stored["schema"].as_str().unwrap_or_default();
    assert!(
        text.contains("message Order") && text.contains("message Line"),
        "{text}"
    );
    let version = app
        .send("GET", "/subjects/b64-value/versions/1", None)
        .await
        .json();
    assert_eq!(version["schema"], stored["schema"]);

    // Lookups and re-registrations with the base64 form find the same version.
    let found = app
        .send("POST", "/subjects/b64-value", Some(&body))
        .await
        .json();
    assert_eq!(
        (found["id"].as_i64(), found["version"].as_i64()),
        (Some(b64_id), Some(1))
    );
    let again = app
        .send("POST", "/subjects/b64-value/versions", Some(&body))
        .await
        .json();
    assert_eq!(again["id"].as_i64(), Some(b64_id));
    // An explicit format wins over the echo.
    let r = app
        .send(
            "POST",
            "/subjects/b64-value/versions?format=default",
            Some(&body),
        )
        .await
        .json();
    assert!(
        r["schema"]
            .as_str()
            .unwrap_or_default()
            .contains("message Order")
    );
}

/// Lookups and repeated registrations are answered from the answer cache, which keeps the body
/// of the first hit. What the cache key leaves out (`format`) must still be honoured, the kept
/// body must be the one a fresh answer would give, and a delete must not leave it behind.
#[tokio::test]
async fn kept_answer_bodies_follow_the_format_asked_and_deletes() {
    let app = app();
    let text_body = json!({"schemaType": "PROTOBUF", "schema": ORDER}).to_string();
    let send = |uri: &'static str, body: String| {
        let app = &app;
        async move { app.send("POST", uri, Some(&body)).await }
    };
    let schema_of = |r: &common::Answer| r.json()["schema"].as_str().unwrap_or("").to_string();

    let created = send("/subjects/orders-value/versions", text_body.clone()).await;
    assert_eq!(created.status.as_u16(), 200, "{}", created.text);
    let mut again = Vec::new();
    for _ in 0..3 {
        again.push(send("/subjects/orders-value/versions", text_body.clone()).await);
    }
    assert_eq!(
        again[0].json(),
        created.json(),
        "a cached registration answers alike"
    );
    assert!(again.windows(2).all(|w| w[0].text == w[1].text));
    let serialized = send(
        "/subjects/orders-value/versions?format=serialized",
        text_body.clone(),
    )
    .await;
    let descriptor = schema_of(&serialized);
    assert!(
        !descriptor.is_empty() && !descriptor.contains("message"),
        "format=serialized after kept hits: {}",
        serialized.text
    );

    let lookups = [
        send("/subjects/orders-value", text_body.clone()).await,
        send("/subjects/orders-value", text_body.clone()).await,
        send("/subjects/orders-value", text_body.clone()).await,
    ];
    assert!(lookups.iter().all(|l| l.status.as_u16() == 200));
    assert!(lookups.windows(2).all(|w| w[0].text == w[1].text));
    assert_eq!(lookups[0].json()["version"], 1);
    assert!(schema_of(&lookups[2]).contains("message Order"));
    let as_descriptor = send(
        "/subjects/orders-value?format=serialized",
        text_body.clone(),
    )
    .await;
    assert_eq!(schema_of(&as_descriptor), descriptor);
    let default_again = send("/subjects/orders-value", text_body.clone()).await;
    assert_eq!(default_again.text, lookups[0].text);
    // A lookup with the descriptor (the same schema once normalized) is another key,
    // answered in the form it was sent.
    let b64_body = json!({"schemaType": "PROTOBUF", "schema": descriptor}).to_string();
    for _ in 0..3 {
        let r = send("/subjects/orders-value?normalize=true", b64_body.clone()).await;
        assert_eq!(schema_of(&r), descriptor, "{}", r.text);
        assert_eq!(r.json()["version"], 1, "{}", r.text);
    }

    let deleted = app
        .send("DELETE", "/subjects/orders-value/versions/1", None)
        .await;
    assert_eq!(deleted.status.as_u16(), 200, "{}", deleted.text);
    let gone = send("/subjects/orders-value", text_body.clone()).await;
    assert_eq!(gone.status.as_u16(), 404, "{}", gone.text);
    let with_deleted = send("/subjects/orders-value?deleted=true", text_body.clone()).await;
    assert_eq!(
        with_deleted.json()["deleted"],
        true,
        "{}",
        with_deleted.text
    );
    let registered_again = send("/subjects/orders-value/versions", text_body.clone()).await;
    assert_eq!(
        registered_again.json()["version"],
        2,
        "{}",
        registered_again.text
    );
    let found = send("/subjects/orders-value", text_body).await;
    assert_eq!(found.json()["version"], 2, "{}", found.text);
}
