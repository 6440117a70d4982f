//! Confluent's behaviour where a client can tell the difference, through a running `covenant
//! serve`: content negotiation and body encodings, Avro primitives written as objects, the
//! stored Avro text (and so its guid), the codes of repeated deletes and empty lookups, and
//! registrations under a subject alias.

use crate::support;

use serde_json::{Value, json};
use support::{Serve, V1};

async fn started() -> (tempfile::TempDir, Serve, reqwest::Client) {
    let dir = tempfile::tempdir().expect("tempdir");
    let serve = Serve::spawn(&dir.path().join("data"), |_| {});
    let http = covenant_exporter::client::client();
    support::wait_ready(&http, &serve.base).await;
    (dir, serve, http)
}

async fn call(serve: &Serve, method: &str, path: &str, body: Option<Value>) -> (u16, Value) {
    let http = covenant_exporter::client::client();
    support::call(&http, &serve.base, method, path, V1, body).await
}

/// Sends raw bytes with the given headers; answers status, Content-Type and JSON body.
async fn raw(
    http: &reqwest::Client,
    serve: &Serve,
    method: &str,
    path: &str,
    headers: &[(&str, &str)],
    body: Option<Vec<u8>>,
) -> (u16, String, Value) {
    let method = reqwest::Method::from_bytes(method.as_bytes()).expect("method");
    let mut request = http.request(method, format!("{}{path}", serve.base));
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    if let Some(body) = body {
        request = request.body(body);
    }
    let response = request.send().await.expect("request");
    let status = response.status().as_u16();
    let content_type = response
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_string();
    let text = response.text().await.expect("body");
    (
        status,
        content_type,
        serde_json::from_str(&text).unwrap_or(Value::String(text)),
    )
}

/// Follows client/…/rest/Versions.java (lines 24-35: v1+json weight 1,
/// `vnd.schemaregistry+json; qs=0.9`, `json; qs=0.5`, the types every resource `@Produces`),
/// Jersey's 406 when no produced type fits `Accept`, rest-utils WebApplicationExceptionMapper
/// (error_code = status), and jackson-core ByteSourceJsonBootstrapper.detectEncoding for bodies
/// in UTF-16/32.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn content_negotiation_and_body_encodings() {
    let (_dir, serve, http) = started().await;
    let expect = [
        (None, V1),
        (Some("*/*"), V1),
        (Some("application/json"), "application/json"),
        (
            Some("application/json, application/vnd.schemaregistry+json"),
            "application/vnd.schemaregistry+json",
        ),
        (
            Some("application/vnd.schemaregistry.v1+json;q=0.2, application/json;q=0.9"),
            "application/json",
        ),
        (Some("application/*"), V1),
    ];
    for (accept, wanted) in expect {
        let headers: Vec<(&str, &str)> = accept.map(|a| ("accept", a)).into_iter().collect();
        let (status, content_type, body) =
            raw(&http, &serve, "GET", "/subjects", &headers, None).await;
        assert_eq!((status, content_type.as_str()), (200, wanted), "{accept:?}");
        assert_eq!(body, json!([]));
    }
    // An error answer carries the negotiated type too.
    let (status, content_type, body) = raw(
        &http,
        &serve,
        "GET",
        "/subjects/none/versions",
        &[("accept", "application/json")],
        None,
    )
    .await;
    assert_eq!((status, content_type.as_str()), (404, "application/json"));
    assert_eq!(body["error_code"], 40401);
    for accept in [
        "application/vnd.schemaregistry.v2+json",
        "text/*",
        "text/plain",
        "application/octet-stream",
    ] {
        let (status, content_type, body) = raw(
            &http,
            &serve,
            "GET",
            "/subjects",
            &[("accept", accept)],
            None,
        )
        .await;
        assert_eq!((status, content_type.as_str()), (406, V1), "{accept}");
        assert_eq!(body["error_code"], 406, "{accept}: {body}");
    }
    // Prometheus text is not negotiated.
    let (status, _, _) = raw(
        &http,
        &serve,
        "GET",
        "/metrics",
        &[("accept", "text/plain")],
        None,
    )
    .await;
    assert_eq!(status, 200);

    // The same registration in UTF-16 (both orders, with and without BOM) and UTF-32.
    let text = json!({"schema": r#"{"type":"record","name":"Cafe","doc":"Café 😀","fields":[]}"#})
        .to_string();
    let utf16 = |big: bool, bom: bool| -> Vec<u8> {
        let units = bom.then_some(0xFEFF).into_iter().chain(text.encode_utf16());
        units
            .flat_map(|u: u16| {
                if big {
                    u.to_be_bytes()
                } else {
                    u.to_le_bytes()
                }
            })
            .collect()
    };
    let utf32be: Vec<u8> = text
        .chars()
        .flat_map(|c| (c as u32).to_be_bytes())
        .collect();
    let mut ids = Vec::new();
    for body in [
        text.clone().into_bytes(),
        utf16(false, false),
        utf16(true, false),
        utf16(false, true),
        utf32be,
    ] {
        let (status, _, answer) = raw(
            &http,
            &serve,
            "POST",
            "/subjects/encoded/versions",
            &[("content-type", V1)],
            Some(body),
        )
        .await;
        assert_eq!(status, 200, "{answer}");
        ids.push(answer["id"].clone());
    }
    assert!(ids.iter().all(|id| *id == ids[0]), "{ids:?}");
    let (_, versions) = call(&serve, "GET", "/subjects/encoded/versions", None).await;
    assert_eq!(versions, json!([1]));
}

/// Follows Avro's Schema.java `parse` (lang/java/avro/src/main/java/org/apache/avro/Schema.java,
/// the primitive branch keeps only attributes outside SCHEMA_RESERVED as properties), which
/// Confluent's AvroSchema (client/…/avro/AvroSchema.java) parses with.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn avro_primitives_drop_reserved_attributes() {
    let (_dir, serve, _http) = started().await;
    let (status, plain) = call(
        &serve,
        "POST",
        "/subjects/prim/versions",
        Some(json!({"schema": "\"int\""})),
    )
    .await;
    assert_eq!(status, 200, "{plain}");
    for written in [
        r#"{"type":"int","name":"foo"}"#,
        r#"{"type":"int","doc":"a number"}"#,
        r#"{"type":"int","name":"foo","namespace":"n","aliases":["a"]}"#,
    ] {
        let (status, found) = call(
            &serve,
            "POST",
            "/subjects/prim",
            Some(json!({"schema": written})),
        )
        .await;
        assert_eq!(status, 200, "{written}: {found}");
        assert_eq!((&found["id"], &found["version"]), (&plain["id"], &json!(1)));
        let (status, again) = call(
            &serve,
            "POST",
            "/subjects/prim/versions",
            Some(json!({"schema": written})),
        )
        .await;
        assert_eq!((status, &again["id"]), (200, &plain["id"]), "{written}");
    }
    // An unreserved attribute is a property: a different schema.
    let (status, other) = call(
        &serve,
        "POST",
        "/subjects/prim",
        Some(json!({"schema": r#"{"type":"int","connect.name":"x"}"#})),
    )
    .await;
    assert_eq!((status, &other["error_code"]), (404, &json!(40403)));
}

/// Follows client/…/avro/AvroSchema.java `canonicalString()` (`schemaObj.toString(…, false)`),
/// which core/…/storage/AbstractSchemaRegistry.java stores, and client/…/rest/entities/Schema.java
/// (the guid is the MD5 of the stored text).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn avro_is_stored_as_avro_prints_it() {
    let (_dir, serve, _http) = started().await;
    let pretty = r#"{
        "fields": [
            {"type": {"type": "fixed", "size": 4, "name": "com.acme.Tag"}, "name": "tag"},
            {"name": "again", "order": "ascending", "type": "com.acme.Tag", "doc": "same"}
        ],
        "aliases": ["OldOrder"],
        "connect.name": "orders",
        "doc": "An order",
        "name": "com.acme.Order",
        "type": "record"
    }"#;
    let printed = concat!(
        r#"{"type":"record","name":"Order","namespace":"com.acme","doc":"An order","fields":["#,
        r#"{"name":"tag","type":{"type":"fixed","name":"Tag","size":4}},"#,
        r#"{"name":"again","type":"Tag","doc":"same"}],"#,
        r#""connect.name":"orders","aliases":["OldOrder"]}"#
    );
    let (status, registered) = call(
        &serve,
        "POST",
        "/subjects/orders-value/versions",
        Some(json!({"schema": pretty})),
    )
    .await;
    assert_eq!(status, 200, "{registered}");
    let id = registered["id"].as_i64().expect("id");
    let (_, by_id) = call(&serve, "GET", &format!("/schemas/ids/{id}"), None).await;
    assert_eq!(by_id["schema"], printed, "{by_id}");
    use md5::{Digest, Md5};
    let hex: String = Md5::digest(printed.as_bytes())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    let guid = covenant_store::guid::parse_guid(&hex).expect("guid");
    assert_eq!(by_id["guid"], json!(guid));
    // The printed text itself names the same schema.
    let (status, again) = call(
        &serve,
        "POST",
        "/subjects/orders-value/versions",
        Some(json!({"schema": printed})),
    )
    .await;
    assert_eq!((status, again["id"].as_i64()), (200, Some(id)));
}

/// Follows core/…/storage/AbstractSchemaRegistry.java `deleteSchemaVersion` validation (a
/// soft-deleted version answers SchemaVersionSoftDeletedException, 40406, before the subject
/// is looked at; RestApiTest `testDeleteSchemaVersionPermanent`), core/…/rest/resources/
/// SubjectsResource.java `lookUpSchemaUnderSubject` (a `@NotNull` body: 422 from rest-utils
/// ConstraintViolationExceptionMapper; no schema matches no version: 40403).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn repeated_deletes_and_empty_lookups_answer_confluents_codes() {
    let (_dir, serve, http) = started().await;
    let schema = json!({"schema": r#"{"type":"record","name":"R","fields":[]}"#});
    let (status, _) = call(&serve, "POST", "/subjects/d/versions", Some(schema)).await;
    assert_eq!(status, 200);

    let (status, empty) = call(&serve, "POST", "/subjects/d", Some(json!({}))).await;
    assert_eq!(
        (status, &empty["error_code"]),
        (404, &json!(40403)),
        "{empty}"
    );
    let (_, blank) = call(&serve, "POST", "/subjects/d", Some(json!({"schema": ""}))).await;
    assert_eq!(blank["error_code"], 40403, "{blank}");
    let (_, missing) = call(&serve, "POST", "/subjects/nothing", Some(json!({}))).await;
    assert_eq!(missing["error_code"], 40401, "{missing}");
    let (status, _, none) = raw(
        &http,
        &serve,
        "POST",
        "/subjects/d",
        &[("content-type", V1)],
        Some(Vec::new()),
    )
    .await;
    assert_eq!((status, &none["error_code"]), (422, &json!(422)), "{none}");

    let (status, v) = call(&serve, "DELETE", "/subjects/d/versions/1", None).await;
    assert_eq!((status, v), (200, json!(1)));
    let (status, again) = call(&serve, "DELETE", "/subjects/d/versions/1", None).await;
    assert_eq!(
        (status, &again["error_code"]),
        (404, &json!(40406)),
        "{again}"
    );
    let (_, latest) = call(&serve, "DELETE", "/subjects/d/versions/latest", None).await;
    assert_eq!(latest["error_code"], 40402, "{latest}");
    let (_, other) = call(&serve, "DELETE", "/subjects/d/versions/7", None).await;
    assert_eq!(other["error_code"], 40402, "{other}");
    let (_, none) = call(&serve, "DELETE", "/subjects/nothing/versions/1", None).await;
    assert_eq!(none["error_code"], 40401, "{none}");
}

/// Follows core/…/rest/filters/AliasFilter.java `modifyUriPath` (the segment after `subjects`
/// is replaced by the alias's target) and `replaceQueryParams` (`?subject=` on `/schemas/ids`),
/// with AliasFilterTest: `/config/{alias}` is not rewritten.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn registrations_under_an_alias_go_to_its_target() {
    let (_dir, serve, _http) = started().await;
    let (status, _) = call(
        &serve,
        "PUT",
        "/config/short",
        Some(json!({"alias": "orders-value"})),
    )
    .await;
    assert_eq!(status, 200);
    let schema = json!({"schema": r#"{"type":"record","name":"O","fields":[]}"#});
    let (status, registered) = call(
        &serve,
        "POST",
        "/subjects/short/versions",
        Some(schema.clone()),
    )
    .await;
    assert_eq!(status, 200, "{registered}");
    let (_, subjects) = call(&serve, "GET", "/subjects", None).await;
    assert_eq!(subjects, json!(["orders-value"]));
    let (_, versions) = call(&serve, "GET", "/subjects/orders-value/versions", None).await;
    assert_eq!(versions, json!([1]));
    let (_, through) = call(&serve, "GET", "/subjects/short/versions/1", None).await;
    assert_eq!(
        (&through["subject"], &through["id"]),
        (&json!("orders-value"), &registered["id"])
    );
    let (status, compatible) = call(
        &serve,
        "POST",
        "/compatibility/subjects/short/versions/latest",
        Some(schema),
    )
    .await;
    assert_eq!((status, &compatible["is_compatible"]), (200, &json!(true)));
    // The alias's own config is not rewritten.
    let (_, config) = call(&serve, "GET", "/config/short", None).await;
    assert_eq!(config["alias"], "orders-value", "{config}");
    // Deleting through the alias deletes the target's version.
    let (status, deleted) = call(&serve, "DELETE", "/subjects/short/versions/1", None).await;
    assert_eq!((status, deleted), (200, json!(1)));
    let (_, gone) = call(&serve, "GET", "/subjects/orders-value/versions", None).await;
    assert_eq!(gone["error_code"], 40401, "{gone}");
}
