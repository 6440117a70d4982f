//! Protobuf as Confluent prints and reads it: the identity text (whitespace, comments and the
//! descriptor form make no difference), the normalized layout, the bundled imports and custom
//! options nothing defines.

use covenant_engine::Format;
use covenant_protobuf::{ProtobufFormat, ProtobufSchema, identity_string};

const ORDER: &str = r#"syntax = "proto3";
package acme;
import "google/protobuf/timestamp.proto";
option java_package = "com.acme";
message Order {
  string id = 1;
  google.protobuf.Timestamp at = 2;
  map<string, Line> lines = 3;
  message Line { int64 qty = 1; }
  oneof pay { string card = 5; string iban = 4; }
}
enum Status { UNKNOWN = 0; DONE = 1; }
"#;

const ORDER_SPACED: &str = "/* Orders. */ syntax=\"proto3\"; package acme;\n\n\
    import \"google/protobuf/timestamp.proto\";  option java_package=\"com.acme\";\n\
    // An order.\nmessage Order {\n\n\tstring id = 1; // its id\n  .google.protobuf.Timestamp at = 2;\n\
    map<string,Line> lines=3; message Line { int64 qty = 1; }\n\
    oneof pay { string card = 5; string iban = 4; } }\nenum Status { UNKNOWN = 0; DONE = 1; }";

/// Confluent compares `canonicalString()` (protobuf-provider ProtobufSchema.java `equals`).
#[test]
fn whitespace_comments_and_the_descriptor_form_print_alike() {
    let a = ProtobufFormat::parse(ORDER, &[]).unwrap();
    let b = ProtobufFormat::parse(ORDER_SPACED, &[]).unwrap();
    assert_eq!(a.canonical_text(), b.canonical_text());
    let descriptor = ProtobufFormat::parse(&a.to_descriptor_base64(), &[]).unwrap();
    assert_eq!(descriptor.canonical_text(), a.canonical_text());
    assert_eq!(descriptor.text(), a.canonical_text());
    assert_eq!(identity_string(ORDER), Some(a.canonical_text()));
    // Field order is part of the identity; the normalized form sorts it away.
    let swapped = ORDER.replace(
        "string id = 1;\n  google.protobuf.Timestamp at = 2;",
        "google.protobuf.Timestamp at = 2;\n  string id = 1;",
    );
    let c = ProtobufFormat::parse(&swapped, &[]).unwrap();
    assert_ne!(c.canonical_text(), a.canonical_text());
    assert_eq!(
        ProtobufFormat::normalized(&c),
        ProtobufFormat::normalized(&a)
    );
}

#[test]
fn a_schema_needing_references_has_no_identity_of_its_own() {
    let text = "syntax = \"proto3\";\nimport \"other.proto\";\nmessage A { other.B b = 1; }\n";
    assert_eq!(identity_string(text), None);
}

/// The layout of `ProtobufSchemaUtils.toString` with normalize on (protobuf-provider
/// ProtobufSchemaUtils.java): blank lines between the file's sections and a message's, blank
/// lines inside nested blocks indented, fields by number, oneofs after the fields.
#[test]
fn normalized_text_is_laid_out_as_confluent_prints_it() {
    let a = ProtobufFormat::parse(ORDER, &[]).unwrap();
    let expected = "syntax = \"proto3\";
package acme;

import \"google/protobuf/timestamp.proto\";

option java_package = \"com.acme\";

message Order {
  string id = 1;
  .google.protobuf.Timestamp at = 2;
  map<string, .acme.Order.Line> lines = 3;

  oneof pay {
    string iban = 4;
    string card = 5;
  }

  message Line {
    int64 qty = 1;
  }
}
enum Status {
  UNKNOWN = 0;
  DONE = 1;
}
";
    assert_eq!(ProtobufFormat::normalized(&a), expected);
    let nested = "syntax = \"proto3\";\nmessage A {\n  message B {\n    reserved 3;\n    int32 x = 1;\n  }\n}\n";
    let b = ProtobufFormat::parse(nested, &[]).unwrap();
    assert_eq!(
        ProtobufFormat::normalized(&b),
        "syntax = \"proto3\";\n\nmessage A {\n  message B {\n    reserved 3;\n  \n    int32 x = 1;\n  }\n}\n"
    );
    // proto2 drops its syntax line; several field options go one per line.
    let p2 = "syntax = \"proto2\";\nmessage M { optional int32 a = 1 [default = 7, deprecated = true]; }\n";
    let m = ProtobufFormat::parse(p2, &[]).unwrap();
    assert_eq!(
        ProtobufFormat::normalized(&m),
        "\nmessage M {\n  optional int32 a = 1 [\n    default = 7,\n    deprecated = true\n  ];\n}\n"
    );
    let again = ProtobufFormat::parse(&ProtobufFormat::normalized(&m), &[]).unwrap();
    assert_eq!(
        ProtobufFormat::normalized(&again),
        ProtobufFormat::normalized(&m)
    );
}

/// `KNOWN_DEPENDENCIES` of Confluent's protobuf-provider ProtobufSchema.java.
#[test]
fn every_import_confluent_resolves_by_itself_compiles() {
    let known = [
        "confluent/meta.proto",
        "confluent/type/decimal.proto",
        "confluent/type/variant.proto",
        "google/type/calendar_period.proto",
        "google/type/color.proto",
        "google/type/date.proto",
        "google/type/datetime.proto",
        "google/type/dayofweek.proto",
        "google/type/decimal.proto",
        "google/type/expr.proto",
        "google/type/fraction.proto",
        "google/type/interval.proto",
        "google/type/latlng.proto",
        "google/type/money.proto",
        "google/type/month.proto",
        "google/type/phone_number.proto",
        "google/type/postal_address.proto",
        "google/type/quaternion.proto",
        "google/type/timeofday.proto",
        "google/protobuf/any.proto",
        "google/protobuf/api.proto",
        "google/protobuf/descriptor.proto",
        "google/protobuf/duration.proto",
        "google/protobuf/empty.proto",
        "google/protobuf/field_mask.proto",
        "google/protobuf/source_context.proto",
        "google/protobuf/struct.proto",
        "google/protobuf/timestamp.proto",
        "google/protobuf/type.proto",
        "google/protobuf/wrappers.proto",
    ];
    for path in known {
        let text = format!("syntax = \"proto3\";\nimport \"{path}\";\nmessage A {{}}\n");
        ProtobufFormat::parse(&text, &[]).unwrap_or_else(|e| panic!("{path}: {e}"));
    }
    let color = "syntax = \"proto3\";\nimport \"google/type/color.proto\";\n\
        message Paint { google.type.Color c = 1; }\n";
    let s = ProtobufFormat::parse(color, &[]).unwrap();
    let c = s.pool().get_message_by_name("google.type.Color").unwrap();
    let alpha = c.get_field_by_name("alpha").unwrap();
    assert_eq!(alpha.number(), 4);
    assert_eq!(
        alpha.kind().as_message().map(|m| m.full_name().to_string()),
        Some("google.protobuf.FloatValue".to_string())
    );
}

/// Confluent's `toDynamicSchema` reads only the options it knows (protobuf-provider
/// ProtobufSchema.java; ProtobufSchemaTest sets `(my_oneof_option)` without defining it).
#[test]
fn custom_options_nothing_defines_are_passed_over() {
    for text in [
        "syntax = \"proto3\";\nmessage M {\n  oneof o {\n    option (my_option) = true;\n    int32 a = 1;\n  }\n}\n",
        "syntax = \"proto3\";\nmessage M {\n  option (source_ref) = \"x\";\n  int32 a = 1 [(.pkg.tag) = 3];\n}\n",
        "syntax = \"proto3\";\noption (com.custom.map).subject = \"s\";\nmessage M {}\n",
    ] {
        let s: ProtobufSchema =
            ProtobufFormat::parse(text, &[]).unwrap_or_else(|e| panic!("{e}\n{text}"));
        assert!(s.canonical_text().contains("message M"));
    }
    // A defined option is kept; an undefined type is still an error.
    let defined = "syntax = \"proto3\";\nimport \"google/protobuf/descriptor.proto\";\n\
        extend google.protobuf.OneofOptions { bool tagged = 50000; }\n\
        message M { oneof o { option (tagged) = true; int32 a = 1; } }\n";
    let s = ProtobufFormat::parse(defined, &[]).unwrap();
    assert!(
        s.canonical_text().contains("option (tagged) = true;"),
        "{}",
        s.canonical_text()
    );
    let broken = "syntax = \"proto3\";\nmessage M { Missing m = 1; }\n";
    assert!(ProtobufFormat::parse(broken, &[]).is_err());
}
