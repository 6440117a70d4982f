//! The HTTP surface through `Router::oneshot` on a temp-dir store: routes, error shapes and
//! Confluent's request quirks.

use crate::common;

use common::{app, app_with};
use covenant_http::HttpConfig;
use serde_json::json;

#[tokio::test]
async fn empty_registry_answers_like_confluent() {
    let app = app();
    let r = app.get("/subjects").await;
    assert_eq!((r.status.as_u16(), r.text.as_str()), (200, "[]"));
    assert_eq!(r.content_type, "application/vnd.schemaregistry.v1+json");
    assert_eq!(app.get("/").await.text, "{}");
    assert_eq!(app.send("POST", "/", Some("{\"a\":1}")).await.text, "{}");
    assert_eq!(app.get("/contexts").await.json(), json!(["."]));
    let types = app.get("/schemas/types").await.json();
    assert_eq!(types, json!(["JSON", "PROTOBUF", "AVRO", "ICEBERG"]));
    assert_eq!(app.get("/schemas").await.json(), json!([]));
    let r = app.get("/schemas/ids/1").await;
    assert_eq!((r.status.as_u16(), r.code()), (404, 40403));
    assert_eq!(r.json()["message"], "Schema 1 not found");
    let r = app.get("/subjects/nope/versions").await;
    assert_eq!((r.status.as_u16(), r.code()), (404, 40401));
    assert_eq!(r.json()["message"], "Subject 'nope' not found.");
    let r = app.get("/subjects/nope/versions/latest").await;
    assert_eq!(r.code(), 40401);
    let r = app.get("/v1/metadata/id").await;
    assert!(r.json()["scope"]["clusters"].is_object());
    assert_eq!(app.get("/health/live").await.status.as_u16(), 200);
    assert_eq!(app.get("/health/ready").await.status.as_u16(), 200);
}

#[tokio::test]
async fn framework_errors_use_the_confluent_shape() {
    let app = app();
    let r = app.get("/no/such/path").await;
    assert_eq!((r.status.as_u16(), r.code()), (404, 404));
    assert_eq!(r.json()["message"], "HTTP 404 Not Found");
    let r = app.send("PATCH", "/subjects", None).await;
    assert_eq!((r.status.as_u16(), r.code()), (405, 405));
    let r = app
        .send_typed("POST", "/subjects/s/versions", Some("{}"), "text/plain")
        .await;
    assert_eq!((r.status.as_u16(), r.code()), (415, 415));
    let r = app.send("POST", "/subjects/s/versions", Some("{bad")).await;
    assert_eq!((r.status.as_u16(), r.code()), (400, 400));
    assert!(!r.json()["message"].as_str().unwrap_or("").contains("line"));
    let r = app
        .send("POST", "/subjects/s/versions", Some("{\"schema\": 5}"))
        .await;
    assert_eq!(r.code(), 400, "wrong JSON type for a field is a 400");
    let r = app.get("/schemas/ids/abc").await;
    assert_eq!(r.status.as_u16(), 404);
    let r = app.get("/subjects/s/versions/0").await;
    assert_eq!((r.status.as_u16(), r.code()), (422, 42202));
    let r = app.get("/subjects/s/versions/banana").await;
    assert_eq!(r.code(), 42202);
}

#[tokio::test]
async fn all_accepted_media_types_are_read() {
    let app = app();
    for ct in [
        "application/vnd.schemaregistry.v1+json",
        "application/vnd.schemaregistry+json",
        "application/json; charset=utf-8",
        "application/octet-stream",
    ] {
        let r = app
            .send_typed("PUT", "/config", Some("{\"compatibility\":\"FULL\"}"), ct)
            .await;
        assert_eq!(r.status.as_u16(), 200, "{ct}: {}", r.text);
    }
}

#[tokio::test]
async fn oversized_and_deeply_nested_bodies_are_rejected_cleanly() {
    let app = app_with(HttpConfig {
        max_body_bytes: 1024,
        ..HttpConfig::default()
    });
    let big = format!("{{\"schema\": \"{}\"}}", "x".repeat(4096));
    let r = app.send("POST", "/subjects/s/versions", Some(&big)).await;
    assert_eq!((r.status.as_u16(), r.code()), (413, 413));
    let app = common::app();
    let deep = format!("{}{}", "[".repeat(100_000), "]".repeat(100_000));
    let r = app.send("POST", "/subjects/s/versions", Some(&deep)).await;
    assert_eq!((r.status.as_u16(), r.code()), (400, 400));
    let deep_schema = json!({"schema": format!("{}{}", "[".repeat(50_000), "]".repeat(50_000))});
    let r = app
        .send(
            "POST",
            "/subjects/s/versions",
            Some(&deep_schema.to_string()),
        )
        .await;
    assert!(r.status.is_client_error(), "{}", r.text);
    assert!(r.json()["error_code"].is_i64());
}

#[tokio::test]
async fn config_get_and_put_use_different_keys_and_subject_config_404s() {
    let app = app();
    // Covenant adds one field, the policy preset in force (covenant by default).
    assert_eq!(
        app.get("/config").await.json(),
        json!({"compatibilityLevel": "BACKWARD", "policyPreset": "covenant"})
    );
    let r = app.get("/config/orders-value").await;
    assert_eq!((r.status.as_u16(), r.code()), (404, 40408));
    assert_eq!(
        r.json()["message"],
        "Subject 'orders-value' does not have subject-level compatibility configured"
    );
    let r = app.get("/config/orders-value?defaultToGlobal=TRUE").await;
    assert_eq!(
        r.json(),
        json!({"compatibilityLevel": "BACKWARD", "policyPreset": "covenant"})
    );
    let r = app
        .send(
            "PUT",
            "/config/orders-value",
            Some("{\"compatibility\":\"full_transitive\"}"),
        )
        .await;
    assert_eq!(r.json(), json!({"compatibility": "FULL_TRANSITIVE"}));
    assert_eq!(
        app.get("/config/orders-value").await.json(),
        json!({"compatibilityLevel": "FULL_TRANSITIVE", "policyPreset": "covenant"})
    );
    // Python's ServerConfig may send compatibilityLevel in a PUT.
    let r = app
        .send(
            "PUT",
            "/config",
            Some("{\"compatibilityLevel\":\"NONE\", \"normalize\": true, \"unknown\": 1}"),
        )
        .await;
    assert_eq!(
        r.json(),
        json!({"compatibility": "NONE", "normalize": true})
    );
    let r = app
        .send("PUT", "/config", Some("{\"compatibility\":\"SIDEWAYS\"}"))
        .await;
    assert_eq!((r.status.as_u16(), r.code()), (422, 42203));
    let r = app.send("DELETE", "/config/orders-value", None).await;
    assert_eq!(r.json(), json!({"compatibilityLevel": "FULL_TRANSITIVE"}));
    let r = app.send("DELETE", "/config/orders-value", None).await;
    assert_eq!(r.code(), 40401);
    let r = app.send("DELETE", "/config", None).await;
    assert_eq!(r.json()["compatibilityLevel"], "NONE");
    assert_eq!(
        app.get("/config").await.json()["compatibilityLevel"],
        "BACKWARD"
    );
}

#[tokio::test]
async fn modes_follow_confluent() {
    let app = app();
    assert_eq!(app.get("/mode").await.json(), json!({"mode": "READWRITE"}));
    let r = app.get("/mode/s").await;
    assert_eq!((r.status.as_u16(), r.code()), (404, 40409));
    let r = app
        .send(
            "PUT",
            "/mode/s?force=False",
            Some("{\"mode\":\"readonly\"}"),
        )
        .await;
    assert_eq!(r.json(), json!({"mode": "READONLY"}));
    let r = app
        .send("PUT", "/mode", Some("{\"mode\":\"nonsense\"}"))
        .await;
    assert_eq!((r.status.as_u16(), r.code()), (422, 42204));
    let r = app
        .send("PUT", "/mode/s", Some("{\"mode\":\"FORWARD\"}"))
        .await;
    assert_eq!(r.code(), 42204);
    let r = app
        .send("PUT", "/config/s", Some("{\"compatibility\":\"NONE\"}"))
        .await;
    assert_eq!((r.status.as_u16(), r.code()), (422, 42205));
    let r = app.send("DELETE", "/mode/s", None).await;
    assert_eq!(r.json(), json!({"mode": "READONLY"}));
    assert_eq!(app.send("DELETE", "/mode/s", None).await.code(), 40401);
    let r = app
        .send("PUT", "/mode", Some("{\"mode\":\"IMPORT\"}"))
        .await;
    assert_eq!(r.json(), json!({"mode": "IMPORT"}));
}

#[tokio::test]
async fn trailing_slashes_and_encoded_subjects_route() {
    let app = app();
    app.send("PUT", "/config/a%2Fb", Some("{\"compatibility\":\"NONE\"}"))
        .await;
    let r = app.get("/config/a%2Fb/").await;
    assert_eq!(
        r.json(),
        json!({"compatibilityLevel": "NONE", "policyPreset": "covenant"}),
        "{}",
        r.text
    );
    let r = app.get("/subjects/").await;
    assert_eq!(r.status.as_u16(), 200);
    let r = app
        .send(
            "POST",
            "/compatibility/subjects/x/versions/",
            Some("{\"schema\":\"\\\"string\\\"\"}"),
        )
        .await;
    assert_ne!(r.status.as_u16(), 404, "{}", r.text);
}

#[tokio::test]
async fn openapi_lists_exactly_the_routes_served() {
    let app = app();
    let doc = app.get("/openapi.json").await.json();
    let mut documented: Vec<(String, String)> = Vec::new();
    for (path, ops) in doc["paths"].as_object().expect("paths") {
        for method in ops.as_object().expect("ops").keys() {
            documented.push((method.to_ascii_uppercase(), path.clone()));
        }
    }
    documented.sort();
    let mut served: Vec<(String, String)> = covenant_http::ROUTES
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    served.sort();
    assert_eq!(documented, served);
    // Every path parameter is declared, so generated requests can fill it in.
    for (path, ops) in doc["paths"].as_object().expect("paths") {
        let in_template: Vec<&str> = path
            .split('{')
            .skip(1)
            .filter_map(|rest| rest.split('}').next())
            .collect();
        for (method, op) in ops.as_object().expect("ops") {
            let declared: Vec<&str> = op["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|p| p["in"] == "path")
                .filter_map(|p| p["name"].as_str())
                .collect();
            for name in &in_template {
                assert!(
                    declared.contains(name),
                    "{method} {path} does not declare its path parameter '{name}'"
                );
            }
        }
    }
    for (method, path) in covenant_http::ROUTES.iter() {
        let uri = path
            .replace("{id}", "1")
            .replace("{subject}", "s")
            .replace("{version}", "1");
        let body = matches!(*method, "POST" | "PUT")
            .then_some("{\"schema\":\"\\\"string\\\"\",\"mode\":\"READWRITE\"}");
        let r = app.send(method, &uri, body).await;
        let generic = r.text.contains("HTTP 404 Not Found") || r.status.as_u16() == 405;
        assert!(
            !generic,
            "{method} {path} is documented but not served: {}",
            r.text
        );
    }
}

#[tokio::test]
async fn metrics_are_exposed_in_prometheus_text() {
    let app = app();
    app.get("/subjects").await;
    let r = app.get("/metrics").await;
    assert_eq!(r.status.as_u16(), 200);
    assert!(
        r.text.contains("covenant_http_requests_total"),
        "{}",
        r.text
    );
    assert!(r.text.contains("route=\"/subjects\""), "{}", r.text);
    assert!(
        r.text
            .contains("covenant_http_request_duration_seconds_bucket"),
        "{}",
        r.text
    );
    assert!(
        r.text.contains("covenant_schemas{type=\"AVRO\"}"),
        "{}",
        r.text
    );
}

/// `GET /subjects` with `limit` is read a page at a time from the store; its answers are the
/// slices of the whole list (no `limit`) for prefixes, offsets and soft-deleted subjects.
#[tokio::test]
async fn subject_pages_are_slices_of_the_whole_list() {
    let app = app();
    for (i, subject) in ["b", "a1", "a10", "a2", ":.ctx:a1", "c"].iter().enumerate() {
        let body = json!({"schema": format!("{{\"type\":\"fixed\",\"name\":\"F{i}\",\"size\":{}}}", i + 1)});
        let r = app
            .send(
                "POST",
                &format!("/subjects/{subject}/versions"),
                Some(&body.to_string()),
            )
            .await;
        assert_eq!(r.status.as_u16(), 200, "{}", r.text);
    }
    assert_eq!(
        app.send("DELETE", "/subjects/a2", None)
            .await
            .status
            .as_u16(),
        200
    );
    let list = |query: String| {
        let app = &app;
        async move {
            let r = app.get(&format!("/subjects{query}")).await;
            serde_json::from_str::<Vec<String>>(&r.text).expect(&r.text)
        }
    };
    for filter in [
        "",
        "subjectPrefix=a&",
        "subjectPrefix=a1&",
        "deleted=true&",
        "deletedOnly=true&",
        "subjectPrefix=:*:a&",
    ] {
        let whole = list(format!("?{filter}")).await;
        for offset in 0..whole.len() + 1 {
            for limit in 1..4 {
                let page = list(format!("?{filter}offset={offset}&limit={limit}")).await;
                let expected: Vec<String> =
                    whole.iter().skip(offset).take(limit).cloned().collect();
                assert_eq!(page, expected, "{filter} {offset}+{limit}");
            }
        }
    }
    assert_eq!(list("?deletedOnly=true".into()).await, ["a2"]);
}
