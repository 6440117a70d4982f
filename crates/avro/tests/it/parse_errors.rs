//! Invalid schema texts are typed errors with a path, never panics.

use covenant_avro::AvroFormat;
use covenant_engine::{Format, SchemaErrorKind};

fn error(text: &str) -> (SchemaErrorKind, String) {
    let e = AvroFormat::parse(text, &[]).expect_err("schema must be rejected");
    (e.kind, e.path)
}

fn record(fields: &str) -> String {
    format!(r#"{{"type":"record","name":"R","fields":[{fields}]}}"#)
}

#[test]
fn each_kind_of_error_has_a_path() {
    use SchemaErrorKind::*;
    assert_eq!(error("{\"type\":").0, Syntax);
    assert_eq!(error("\"Nope\""), (UnknownType, "/".into()));
    assert_eq!(
        error(&record(r#"{"name":"amount","type":"int","default":"x"}"#)),
        (InvalidDefault, "/fields/amount/default".into())
    );
    assert_eq!(
        error(&record(
            r#"{"name":"a","type":"int"},{"name":"a","type":"long"}"#
        )),
        (Duplicate, "/fields/a".into())
    );
    assert_eq!(
        error(r#"{"type":"enum","name":"E","symbols":["A","A"]}"#),
        (Duplicate, "/symbols".into())
    );
    assert_eq!(
        error(&record(
            r#"{"name":"a","type":{"type":"fixed","name":"F","size":1}},{"name":"b","type":{"type":"fixed","name":"F","size":2}}"#
        )),
        (Duplicate, "/fields/b/type/name".into())
    );
    assert_eq!(
        error(r#"{"type":"record","name":"1bad","fields":[]}"#).0,
        InvalidName
    );
    assert_eq!(
        error(&record(r#"{"name":"a-b","type":"int"}"#)).0,
        InvalidName
    );
    assert_eq!(
        error(&record(r#"{"name":"u","type":["int","int"]}"#)),
        (Duplicate, "/fields/u/type/1".into())
    );
    assert_eq!(
        error(&record(r#"{"name":"u","type":["int",["null"]]}"#)),
        (Invalid, "/fields/u/type/1".into())
    );
    assert_eq!(
        error(&record(r#"{"name":"amount","type":"Money"}"#)),
        (UnknownType, "/fields/amount/type".into())
    );
    assert_eq!(
        error(r#"{"type":"enum","name":"E","symbols":["A"],"default":"B"}"#),
        (InvalidDefault, "/default".into())
    );
    assert_eq!(error(r#"{"type":"array"}"#).0, Invalid);
    assert_eq!(error("42").0, Invalid);
}

#[test]
fn defaults_follow_java() {
    for ok in [
        r#"{"name":"u","type":["null","string"],"default":null}"#,
        r#"{"name":"u","type":["null","string"],"default":"later branch, as Java accepts"}"#,
        r#"{"name":"b","type":"bytes","default":"\u00ff"}"#,
        r#"{"name":"l","type":"long","default":9007199254740993}"#,
        r#"{"name":"d","type":"double","default":1}"#,
        r#"{"name":"r","type":{"type":"record","name":"In","fields":[{"name":"x","type":"int","default":1}]},"default":{}}"#,
        r#"{"name":"m","type":{"type":"map","values":"int"},"default":{"a":1}}"#,
    ] {
        AvroFormat::parse(&record(ok), &[]).unwrap_or_else(|e| panic!("{ok}: {e}"));
    }
    for bad in [
        r#"{"name":"i","type":"int","default":2147483648}"#,
        r#"{"name":"i","type":"int","default":1.5}"#,
        r#"{"name":"r","type":{"type":"record","name":"In","fields":[{"name":"x","type":"int"}]},"default":{}}"#,
        r#"{"name":"a","type":{"type":"array","items":"int"},"default":["x"]}"#,
    ] {
        assert_eq!(
            error(&record(bad)).0,
            SchemaErrorKind::InvalidDefault,
            "{bad}"
        );
    }
}

#[test]
fn deep_nesting_is_an_error_not_a_stack_overflow() {
    let nested = |n: usize| {
        format!(
            "{}\"int\"{}",
            "{\"type\":\"array\",\"items\":".repeat(n),
            "}".repeat(n)
        )
    };
    assert!(AvroFormat::parse(&nested(100_000), &[]).is_err());
    assert!(AvroFormat::parse(&nested(130), &[]).is_err());
    assert!(AvroFormat::parse(&nested(100), &[]).is_ok());
}

#[test]
fn invalid_logical_types_degrade_to_the_underlying_type() {
    let s = |t: &str| AvroFormat::parse(t, &[]).expect("parses");
    let bad_decimal = s(r#"{"type":"bytes","logicalType":"decimal","precision":2,"scale":3}"#);
    assert_eq!(bad_decimal.canonical_form(), "\"bytes\"");
    assert!(AvroFormat::normalized(&bad_decimal).contains("\"logicalType\":\"decimal\""));
    let too_precise =
        s(r#"{"type":"fixed","name":"D","size":2,"logicalType":"decimal","precision":5}"#);
    let fits = s(r#"{"type":"fixed","name":"D","size":2,"logicalType":"decimal","precision":4}"#);
    assert_ne!(
        AvroFormat::normalized(&too_precise),
        AvroFormat::normalized(&fits)
    );
    assert!(AvroFormat::normalized(&fits).contains("\"scale\":0"));
    let date_on_string = s(r#"{"type":"string","logicalType":"date"}"#);
    assert_eq!(
        AvroFormat::normalized(&date_on_string),
        r#"{"type":"string","logicalType":"date"}"#
    );
    let duration = s(r#"{"type":"fixed","name":"Dur","size":12,"logicalType":"duration"}"#);
    assert!(AvroFormat::normalized(&duration).contains("duration"));
}
