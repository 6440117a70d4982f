//! Protobuf sent as a base64 `FileDescriptorProto` (what Confluent's serializers send): stored
//! and served as .proto text, while the register answer keeps the client's form.

mod common;

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
