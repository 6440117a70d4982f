//! A third real client against `covenant serve`: the `schema_registry_converter` crate
//! (reqwest-based), with its Avro, Protobuf and JSON Schema encoders and decoders and its
//! registry helpers. Every request it makes must be answered the way Confluent would.

use apache_avro::types::Value as AvroValue;
use schema_registry_converter::async_impl::avro::{AvroDecoder, AvroEncoder};
use schema_registry_converter::async_impl::json::{JsonDecoder, JsonEncoder};
use schema_registry_converter::async_impl::proto_decoder::ProtoDecoder;
use schema_registry_converter::async_impl::proto_encoder::ProtoEncoder;
use schema_registry_converter::async_impl::schema_registry::{
    SrSettings, get_all_subjects, get_all_versions, get_schema_by_id,
    get_schema_by_subject_and_version, is_compatible_schema, post_schema,
};
use schema_registry_converter::prost_reflect::ReflectMessage;
use schema_registry_converter::schema_registry_common::{
    SchemaType, SubjectNameStrategy, SuppliedReference, SuppliedSchema,
};
use std::collections::HashMap;
use std::net::TcpListener;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// The server process, killed when the test ends (also on panic).
struct Server {
    child: Child,
    url: String,
    _dir: tempfile::TempDir,
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

async fn start() -> Server {
    let dir = tempfile::tempdir().expect("temp dir");
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port");
    let child = Command::new(env!("CARGO_BIN_EXE_covenant"))
        .args([
            "serve",
            "--listen",
            &format!("127.0.0.1:{port}"),
            "--data-dir",
        ])
        .arg(dir.path())
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn covenant serve");
    let server = Server {
        child,
        url: format!("http://127.0.0.1:{port}"),
        _dir: dir,
    };
    let http = covenant_exporter::client::client();
    let deadline = Instant::now() + Duration::from_secs(30);
    while Instant::now() < deadline {
        if let Ok(r) = http
            .get(format!("{}/health/ready", server.url))
            .send()
            .await
            && r.status().is_success()
        {
            return server;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!("server at {} did not become ready", server.url);
}

const USER_V1: &str = r#"{"type":"record","name":"User","namespace":"acme.rs","fields":[{"name":"name","type":"string"}]}"#;
const USER_V2: &str = r#"{"type":"record","name":"User","namespace":"acme.rs","fields":[{"name":"name","type":"string"},{"name":"age","type":"int","default":7}]}"#;
const USER_V2_NO_DEFAULT: &str = r#"{"type":"record","name":"User","namespace":"acme.rs","fields":[{"name":"name","type":"string"},{"name":"age","type":"int"}]}"#;

fn avro(text: &str) -> SuppliedSchema {
    SuppliedSchema::new(Some("acme.rs.User".into()), SchemaType::Avro, text.into())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_rust_client_works_against_covenant() {
    let server = start().await;
    let sr = SrSettings::new(server.url.clone());
    avro_roundtrip(&sr).await;
    avro_references(&sr).await;
    protobuf_roundtrip(&sr).await;
    json_roundtrip(&sr).await;
    registry_helpers(&sr).await;
}

async fn avro_roundtrip(sr: &SrSettings) {
    let v1 = post_schema(sr, "users-value".into(), avro(USER_V1))
        .await
        .expect("post v1");
    assert!(v1.id > 0);
    assert_eq!(v1.schema_type, SchemaType::Avro);

    // Encoding with the latest schema of the topic's value subject.
    let bytes = AvroEncoder::new(sr.clone())
        .encode(
            vec![("name", AvroValue::String("ann".into()))],
            SubjectNameStrategy::TopicNameStrategy("users".into(), false),
        )
        .await
        .expect("encode");
    assert_eq!(bytes[0], 0);
    assert_eq!(
        u32::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]),
        v1.id
    );
    assert_eq!(&bytes[5..], &[0x06, b'a', b'n', b'n']);
    let decoded = AvroDecoder::new(sr.clone())
        .decode(Some(&bytes))
        .await
        .expect("decode");
    assert_eq!(
        decoded.value,
        AvroValue::Record(vec![("name".into(), AvroValue::String("ann".into()))])
    );
    assert_eq!(
        decoded.name.map(|n| n.fullname(None)),
        Some("acme.rs.User".to_string())
    );

    // A compatible evolution is accepted and gets a new id; an incompatible one is refused.
    assert!(
        is_compatible_schema(sr, "users-value".into(), avro(USER_V2))
            .await
            .expect("compatibility v2")
    );
    assert!(
        !is_compatible_schema(sr, "users-value".into(), avro(USER_V2_NO_DEFAULT))
            .await
            .expect("compatibility v2 without default")
    );
    let refused = post_schema(sr, "users-value".into(), avro(USER_V2_NO_DEFAULT))
        .await
        .expect_err("incompatible schema must be refused");
    let message = format!("{refused:?}");
    assert!(
        message.contains("409") || message.contains("incompatible"),
        "{message}"
    );
    let v2 = post_schema(sr, "users-value".into(), avro(USER_V2))
        .await
        .expect("post v2");
    assert_ne!(v2.id, v1.id);
    let again = post_schema(sr, "users-value".into(), avro(USER_V1))
        .await
        .expect("re-post v1");
    assert_eq!(again.id, v1.id, "an existing schema returns its id");

    // Encoding with a supplied schema registers (or finds) it under the record-name subject.
    let supplied = AvroEncoder::new(sr.clone())
        .encode(
            vec![
                ("name", AvroValue::String("bo".into())),
                ("age", AvroValue::Int(3)),
            ],
            SubjectNameStrategy::RecordNameStrategyWithSchema(avro(USER_V2)),
        )
        .await
        .expect("encode with supplied schema");
    let id = u32::from_be_bytes([supplied[1], supplied[2], supplied[3], supplied[4]]);
    assert_eq!(id, v2.id, "same content in another subject shares the id");
    let fetched = get_schema_by_id(id, sr).await.expect("schema by id");
    assert_eq!(fetched.schema_type, SchemaType::Avro);
    assert!(fetched.schema.contains("\"age\""));
}

async fn avro_references(sr: &SrSettings) {
    let address = r#"{"type":"record","name":"Address","namespace":"acme.rs","fields":[{"name":"street","type":"string"}]}"#;
    // The crate inlines a reference where the short name (same namespace) or `.ns.Name` is used.
    let person = r#"{"type":"record","name":"Person","namespace":"acme.rs","fields":[{"name":"home","type":"Address"}]}"#;
    // The crate registers each reference first (POST .../versions, then POST /subjects/{s}
    // for its version) and sends the resolved references with the schema.
    let schema = SuppliedSchema::new(
        Some("acme.rs.Person".into()),
        SchemaType::Avro,
        person.into(),
    )
    .with_references(vec![SuppliedReference::new(
        "acme.rs.Address".into(),
        "acme.rs.Address".into(),
        address.into(),
    )]);
    let registered = post_schema(sr, "people-value".into(), schema)
        .await
        .expect("post with reference");
    assert_eq!(registered.references.len(), 1);
    assert_eq!(registered.references[0].subject, "acme.rs.Address");
    assert_eq!(registered.references[0].version, 1);
    let bytes = AvroEncoder::new(sr.clone())
        .encode(
            vec![(
                "home",
                AvroValue::Record(vec![("street".into(), AvroValue::String("Main".into()))]),
            )],
            SubjectNameStrategy::TopicNameStrategy("people".into(), false),
        )
        .await
        .expect("encode with reference");
    let decoded = AvroDecoder::new(sr.clone())
        .decode(Some(&bytes))
        .await
        .expect("decode with reference");
    assert_eq!(
        decoded.value,
        AvroValue::Record(vec![(
            "home".into(),
            AvroValue::Record(vec![("street".into(), AvroValue::String("Main".into()))])
        )])
    );
}

const ORDER_PROTO: &str = r#"syntax = "proto3";
package acme.rs;

message Order {
  string id = 1;
  int64 amount = 2;
  Line line = 3;

  message Line {
    string sku = 1;
    int32 quantity = 2;
  }
}
"#;

async fn protobuf_roundtrip(sr: &SrSettings) {
    let schema = SuppliedSchema::new(
        Some("acme.rs.Order".into()),
        SchemaType::Protobuf,
        ORDER_PROTO.into(),
    );
    let registered = post_schema(sr, "orders-value".into(), schema)
        .await
        .expect("post proto");
    assert_eq!(registered.schema_type, SchemaType::Protobuf);

    let value =
        serde_json::json!({"id": "o-1", "amount": "42", "line": {"sku": "A-7", "quantity": 3}});
    let strategy = SubjectNameStrategy::TopicNameStrategy("orders".into(), false);
    let encoder = ProtoEncoder::new(sr.clone());
    let bytes = encoder
        .encode_json(&value, "acme.rs.Order", &strategy)
        .await
        .expect("encode proto");
    assert_eq!(
        u32::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]),
        registered.id
    );
    assert_eq!(
        bytes[5], 0,
        "the first message is written as the single index byte 0"
    );
    let decoded = ProtoDecoder::new(sr.clone())
        .decode(Some(&bytes))
        .await
        .expect("decode proto");
    let message = decoded.as_message().expect("a message");
    assert_eq!(message.descriptor().full_name(), "acme.rs.Order");
    assert_eq!(
        message
            .get_field_by_name("id")
            .and_then(|v| v.as_str().map(str::to_string)),
        Some("o-1".into())
    );
    assert_eq!(
        message.get_field_by_name("amount").and_then(|v| v.as_i64()),
        Some(42)
    );

    // The nested message: message indexes [0, 0].
    let line = serde_json::json!({"sku": "B-1", "quantity": 2});
    let nested = encoder
        .encode_json(&line, "acme.rs.Order.Line", &strategy)
        .await
        .expect("encode nested proto");
    let decoded = ProtoDecoder::new(sr.clone())
        .decode(Some(&nested))
        .await
        .expect("decode nested proto");
    let message = decoded.as_message().expect("a message");
    assert_eq!(message.descriptor().full_name(), "acme.rs.Order.Line");
    assert_eq!(
        message
            .get_field_by_name("quantity")
            .and_then(|v| v.as_i32()),
        Some(2)
    );

    // Reusing field number 2 with another type is refused.
    let broken = ORDER_PROTO.replace("int64 amount = 2;", "string amount = 2;");
    assert!(
        !is_compatible_schema(
            sr,
            "orders-value".into(),
            SuppliedSchema::new(None, SchemaType::Protobuf, broken)
        )
        .await
        .expect("proto compatibility")
    );
}

async fn json_roundtrip(sr: &SrSettings) {
    let schema = r#"{"$schema":"http://json-schema.org/draft-07/schema#","title":"Event","type":"object","properties":{"id":{"type":"integer"},"kind":{"type":"string"}},"required":["id"],"additionalProperties":false}"#;
    let mut properties = HashMap::new();
    properties.insert("owner".to_string(), "events-team".to_string());
    let registered = post_schema(
        sr,
        "events-value".into(),
        SuppliedSchema::new(None, SchemaType::Json, schema.into()).with_properties(properties),
    )
    .await
    .expect("post json");
    assert_eq!(registered.schema_type, SchemaType::Json);
    assert_eq!(
        registered
            .properties
            .as_ref()
            .and_then(|p| p.get("owner"))
            .map(String::as_str),
        Some("events-team"),
        "metadata properties round-trip"
    );
    let value = serde_json::json!({"id": 5, "kind": "created"});
    let bytes = JsonEncoder::new(sr.clone())
        .encode(
            &value,
            SubjectNameStrategy::TopicNameStrategy("events".into(), false),
        )
        .await
        .expect("encode json");
    assert_eq!(
        u32::from_be_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]),
        registered.id
    );
    let decoded = JsonDecoder::new(sr.clone())
        .decode(Some(&bytes))
        .await
        .expect("decode json")
        .expect("a value");
    assert_eq!(decoded.value, value);
    let invalid = JsonEncoder::new(sr.clone())
        .encode(
            &serde_json::json!({"id": "five"}),
            SubjectNameStrategy::TopicNameStrategy("events".into(), false),
        )
        .await;
    assert!(
        invalid.is_err(),
        "the encoder validates against the registered schema"
    );
}

async fn registry_helpers(sr: &SrSettings) {
    let subjects = get_all_subjects(sr).await.expect("subjects");
    for expected in [
        "users-value",
        "acme.rs.User",
        "acme.rs.Address",
        "people-value",
        "orders-value",
        "events-value",
    ] {
        assert!(
            subjects.iter().any(|s| s == expected),
            "{expected} in {subjects:?}"
        );
    }
    assert_eq!(
        get_all_versions(sr, "users-value".into())
            .await
            .expect("versions"),
        vec![1, 2]
    );
    let first = get_schema_by_subject_and_version(sr, "users-value", Some(1))
        .await
        .expect("version 1");
    let latest = get_schema_by_subject_and_version(sr, "users-value", None)
        .await
        .expect("latest");
    assert_eq!(first.version, Some(1));
    assert_eq!(latest.version, Some(2));
    assert_eq!(first.subject.as_deref(), Some("users-value"));
    assert!(get_all_versions(sr, "nowhere-value".into()).await.is_err());
    assert!(get_schema_by_id(9999, sr).await.is_err());
}
