//! Protobuf identity through a running `covenant serve`: a schema is the same schema whatever
//! its whitespace and comments, and whether it came as `.proto` text or as a base64
//! `FileDescriptorProto`; the imports Confluent resolves by itself need no references; custom
//! options nothing defines are passed over; the normalized text is laid out as Confluent
//! prints it.

use crate::support;

use base64::Engine;
use serde_json::{Value, json};
use support::TestServer;

const ORDER: &str = "syntax = \"proto3\";\npackage acme;\n\nmessage Order {\n  string id = 1;\n  int64 amount = 2;\n  repeated string tags = 3;\n}\n";

/// The same schema with other whitespace and comments.
const ORDER_SPACED: &str = "// Orders.\nsyntax   =   \"proto3\";\n\n\npackage acme;   // the package\n/* An order. */\nmessage Order\n{\n\tstring id = 1;  // its id\n    int64 amount=2;\n\n  repeated   string tags = 3;\n}";

fn proto(text: &str) -> Option<Value> {
    Some(json!({"schemaType": "PROTOBUF", "schema": text}))
}

fn id_and_version(answer: &Value) -> (Option<i64>, Option<i64>) {
    (answer["id"].as_i64(), answer["version"].as_i64())
}

/// Follows Confluent's `ProtobufSchema.equals`/`canonicalString` (protobuf-provider
/// ProtobufSchema.java) and `AbstractSchemaRegistry.lookUpSchemaUnderSubject` (core
/// storage/AbstractSchemaRegistry.java): schemas compare by the text the schema printer gives
/// back, which has no comments and its own whitespace.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn whitespace_and_comment_variants_are_the_registered_version() {
    let server = TestServer::start().await;
    let (status, first) = server.register("orders-value", "PROTOBUF", ORDER).await;
    assert_eq!(status, 200, "{first}");
    let id = first["id"].as_i64().expect("id");

    let (status, again) = server
        .register("orders-value", "PROTOBUF", ORDER_SPACED)
        .await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["id"].as_i64(), Some(id), "{again}");
    let (_, versions) = server
        .call("GET", "/subjects/orders-value/versions", None)
        .await;
    assert_eq!(versions, json!([1]));

    let (status, found) = server
        .call("POST", "/subjects/orders-value", proto(ORDER_SPACED))
        .await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(id_and_version(&found), (Some(id), Some(1)));

    // Another subject gets the same id.
    let (status, other) = server
        .register("other-value", "PROTOBUF", ORDER_SPACED)
        .await;
    assert_eq!(status, 200, "{other}");
    assert_eq!(other["id"].as_i64(), Some(id), "{other}");

    // A real change is a new version.
    let changed = ORDER.replace("int64 amount = 2;", "int64 amount = 2;\n  string note = 4;");
    let (status, next) = server.register("orders-value", "PROTOBUF", &changed).await;
    assert_eq!(status, 200, "{next}");
    assert_ne!(next["id"].as_i64(), Some(id), "{next}");
}

/// Appends a varint.
fn varint(mut v: u64, out: &mut Vec<u8>) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Appends a length-delimited field.
fn bytes_field(number: u64, bytes: &[u8], out: &mut Vec<u8>) {
    varint(number << 3 | 2, out);
    varint(bytes.len() as u64, out);
    out.extend_from_slice(bytes);
}

fn varint_field(number: u64, value: u64, out: &mut Vec<u8>) {
    varint(number << 3, out);
    varint(value, out);
}

/// A `FieldDescriptorProto`: name, number, label, type.
fn field(name: &str, number: u64, label: u64, kind: u64) -> Vec<u8> {
    let mut out = Vec::new();
    bytes_field(1, name.as_bytes(), &mut out);
    varint_field(3, number, &mut out);
    varint_field(4, label, &mut out);
    varint_field(5, kind, &mut out);
    out
}

/// [`ORDER`] as protoc describes it, and as Confluent's Python serializer sends it
/// (`FileDescriptorProto`, base64): no json names, no source info.
fn order_descriptor() -> String {
    const OPTIONAL: u64 = 1;
    const REPEATED: u64 = 3;
    const INT64: u64 = 3;
    const STRING: u64 = 9;
    let mut message = Vec::new();
    bytes_field(1, b"Order", &mut message);
    bytes_field(2, &field("id", 1, OPTIONAL, STRING), &mut message);
    bytes_field(2, &field("amount", 2, OPTIONAL, INT64), &mut message);
    bytes_field(2, &field("tags", 3, REPEATED, STRING), &mut message);
    let mut file = Vec::new();
    bytes_field(1, b"acme/order.proto", &mut file);
    bytes_field(2, b"acme", &mut file);
    bytes_field(4, &message, &mut file);
    bytes_field(12, b"proto3", &mut file);
    base64::engine::general_purpose::STANDARD.encode(file)
}

/// Follows Confluent's `ProtobufSchema.toProtoFile(String)` (protobuf-provider
/// ProtobufSchema.java): text that does not parse is read as a base64 `FileDescriptorProto`
/// and turned into the same tree as text, so its canonical string is the text's, and the two
/// forms are one schema.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_descriptor_and_its_text_are_one_schema() {
    let server = TestServer::start().await;
    let descriptor = order_descriptor();
    let (status, text) = server.register("orders-value", "PROTOBUF", ORDER).await;
    assert_eq!(status, 200, "{text}");
    let id = text["id"].as_i64().expect("id");

    let (status, sent) = server
        .register("orders-value", "PROTOBUF", &descriptor)
        .await;
    assert_eq!(status, 200, "{sent}");
    assert_eq!(sent["id"].as_i64(), Some(id), "{sent}");
    let (status, found) = server
        .call("POST", "/subjects/orders-value", proto(&descriptor))
        .await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(id_and_version(&found), (Some(id), Some(1)));
    let (_, versions) = server
        .call("GET", "/subjects/orders-value/versions", None)
        .await;
    assert_eq!(versions, json!([1]));

    // The other way round, in a subject of its own: the descriptor first, then the text.
    let (status, first) = server
        .register("payments-value", "PROTOBUF", &descriptor)
        .await;
    assert_eq!(status, 200, "{first}");
    assert_eq!(first["id"].as_i64(), Some(id), "{first}");
    let (status, found) = server
        .call("POST", "/subjects/payments-value", proto(ORDER_SPACED))
        .await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(id_and_version(&found), (Some(id), Some(1)));
}

/// Follows `KNOWN_DEPENDENCIES` in Confluent's protobuf-provider ProtobufSchema.java: these
/// imports resolve without references.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn confluents_bundled_imports_need_no_references() {
    let server = TestServer::start().await;
    let color = "syntax = \"proto3\";\npackage paint;\nimport \"google/type/color.proto\";\nmessage Paint {\n  google.type.Color color = 1;\n}\n";
    let (status, answer) = server.register("paint-value", "PROTOBUF", color).await;
    assert_eq!(status, 200, "{answer}");

    let every = "syntax = \"proto3\";\npackage all;\n\
        import \"google/type/calendar_period.proto\";\nimport \"google/type/color.proto\";\n\
        import \"google/type/datetime.proto\";\nimport \"google/type/decimal.proto\";\n\
        import \"google/type/expr.proto\";\nimport \"google/type/fraction.proto\";\n\
        import \"google/type/interval.proto\";\nimport \"google/type/month.proto\";\n\
        import \"google/type/phone_number.proto\";\nimport \"google/type/quaternion.proto\";\n\
        import \"confluent/type/variant.proto\";\nimport \"confluent/type/decimal.proto\";\n\
        import \"confluent/meta.proto\";\n\
        message All {\n\
          google.type.CalendarPeriod period = 1;\n  google.type.Color color = 2;\n\
          google.type.DateTime at = 3;\n  google.type.TimeZone zone = 4;\n\
          google.type.Decimal amount = 5;\n  google.type.Expr expr = 6;\n\
          google.type.Fraction share = 7;\n  google.type.Interval during = 8;\n\
          google.type.Month month = 9;\n  google.type.PhoneNumber phone = 10;\n\
          google.type.PhoneNumber.ShortCode short = 11;\n  google.type.Quaternion turn = 12;\n\
          confluent.type.Variant variant = 13;\n\
          confluent.type.Decimal price = 14 [(confluent.field_meta).doc = \"price\"];\n\
        }\n";
    let (status, answer) = server.register("all-value", "PROTOBUF", every).await;
    assert_eq!(status, 200, "{answer}");
}

/// Follows Confluent's `ProtobufSchema.toDynamicSchema` (protobuf-provider ProtobufSchema.java):
/// of a oneof's options only `features` is read, so an option nothing defines is passed over
/// (ProtobufSchemaTest sets `(my_oneof_option)` without defining it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_custom_option_nothing_defines_in_a_oneof_is_accepted() {
    let server = TestServer::start().await;
    let schema = "syntax = \"proto3\";\npackage acme;\nmessage Pay {\n  oneof method {\n    option (my_option) = true;\n    string card = 1;\n    string iban = 2;\n  }\n}\n";
    let (status, answer) = server.register("pay-value", "PROTOBUF", schema).await;
    assert_eq!(status, 200, "{answer}");
    // A type nothing defines is still refused.
    let broken = "syntax = \"proto3\";\nmessage Pay {\n  Missing m = 1;\n}\n";
    let (status, answer) = server.register("broken-value", "PROTOBUF", broken).await;
    assert_eq!(status, 422, "{answer}");
}

/// Follows Confluent's normalized printer, `ProtobufSchemaUtils.toString` with normalize on
/// (protobuf-provider ProtobufSchemaUtils.java): a blank line before the imports, the options
/// and the first message; types fully qualified; fields by number.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn normalized_text_has_confluents_layout() {
    let server = TestServer::start().await;
    let schema = "syntax = \"proto3\";\npackage paint;\nimport \"google/type/color.proto\";\noption java_package = \"com.paint\";\nmessage Paint { string name = 2; google.type.Color color = 1; }\n";
    let (status, answer) = server
        .call(
            "POST",
            "/subjects/paint-value/versions?normalize=true",
            proto(schema),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let id = answer["id"].as_i64().expect("id");
    let (_, stored) = server
        .call("GET", &format!("/schemas/ids/{id}"), None)
        .await;
    assert_eq!(
        stored["schema"].as_str().unwrap_or_default(),
        "syntax = \"proto3\";\npackage paint;\n\nimport \"google/type/color.proto\";\n\n\
         option java_package = \"com.paint\";\n\nmessage Paint {\n  \
         .google.type.Color color = 1;\n  string name = 2;\n}\n",
        "{stored}"
    );
}
