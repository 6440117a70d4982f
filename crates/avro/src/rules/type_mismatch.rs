use crate::compat::Issue;
use crate::model::{Kind, Name};
use crate::text::{Piece, text};
use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "TYPE_MISMATCH",
    format: "avro",
    category: "structural",
    default_severity: Severity::Error,
    summary: "The reader's type cannot read the writer's type: they differ and no Avro promotion (int->long->float->double, string<->bytes) applies.",
    bad_example: "writer: {\"name\":\"amount\",\"type\":\"string\"}\nreader: {\"name\":\"amount\",\"type\":\"int\"}",
    good_example: "writer: {\"name\":\"amount\",\"type\":\"int\"}\nreader: {\"name\":\"amount\",\"type\":\"long\"}",
    hint: "Only widen types along Avro's promotions (int to long, float or double; long to float or double; float to double; string and bytes); otherwise add a new field with the new type and deprecate the old one.",
    peers: &[
        "confluent:TYPE_MISMATCH",
        "avro-java:TYPE_MISMATCH",
        "buf:FIELD_SAME_TYPE",
    ],
};

/// The specification's promotions, for a reader and writer of different kinds (neither a union).
pub fn promotes(reader: &Kind, writer: &Kind) -> bool {
    matches!(
        (reader, writer),
        (Kind::Long, Kind::Int)
            | (Kind::Float, Kind::Int | Kind::Long)
            | (Kind::Double, Kind::Int | Kind::Long | Kind::Float)
            | (Kind::Bytes, Kind::String)
            | (Kind::String, Kind::Bytes)
    )
}

pub fn issue(path: &str, reader: &dyn Piece, writer: &dyn Piece) -> Issue {
    Issue::new(
        &RULE,
        path,
        text(&[
            &"Reader type '",
            reader,
            &"' cannot read writer type '",
            writer,
            &"'.",
        ]),
    )
}

/// Java's verdict for a reader enum field with an enum default that the writer lacks.
pub fn enum_default_without_field(path: String, field: &str, writer_record: &Name) -> Issue {
    Issue::new(
        &RULE,
        path,
        text(&[
            &"Reader field '",
            &field,
            &"' is missing in the writer's record '",
            writer_record,
            &"' and has no field default; its enum's default symbol does not count as one.",
        ]),
    )
    .with_hint("Give the field itself a 'default' symbol, not only its enum type.")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::rules::test_support::{findings, pair};

    fn field(ty: &str) -> String {
        format!(r#"{{"type":"record","name":"R","fields":[{{"name":"f","type":{ty}}}]}}"#)
    }

    #[test]
    fn promotions_follow_the_specification() {
        assert!(promotes(&Kind::Double, &Kind::Int));
        assert!(promotes(&Kind::Bytes, &Kind::String));
        assert!(!promotes(&Kind::Int, &Kind::Long));
        assert!(findings(&field("\"long\""), &field("\"int\"")).is_empty());
        assert_eq!(
            findings(&field("\"int\""), &field("\"long\"")),
            vec![pair("TYPE_MISMATCH", "/fields/f/type")]
        );
    }

    #[test]
    fn mismatch_inside_arrays_and_maps_has_a_path() {
        let w = field(r#"{"type":"map","values":{"type":"array","items":"string"}}"#);
        let r = field(r#"{"type":"map","values":{"type":"array","items":"boolean"}}"#);
        assert_eq!(
            findings(&r, &w),
            vec![pair("TYPE_MISMATCH", "/fields/f/type/values/items")]
        );
    }

    #[test]
    fn every_mismatch_is_reported() {
        let w = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"string"},{"name":"b","type":"string"}]}"#;
        let r = r#"{"type":"record","name":"R","fields":[{"name":"a","type":"int"},{"name":"b","type":"boolean"}]}"#;
        assert_eq!(
            findings(r, w),
            vec![
                pair("TYPE_MISMATCH", "/fields/a/type"),
                pair("TYPE_MISMATCH", "/fields/b/type")
            ]
        );
    }

    #[test]
    fn recursive_types_terminate() {
        let list = r#"{"type":"record","name":"Node","fields":[{"name":"v","type":"int"},{"name":"next","type":["null","Node"]}]}"#;
        let wider = r#"{"type":"record","name":"Node","fields":[{"name":"v","type":"long"},{"name":"next","type":["null","Node"]}]}"#;
        assert!(findings(wider, list).is_empty());
        assert_eq!(
            findings(list, wider),
            vec![pair("TYPE_MISMATCH", "/fields/v/type")]
        );
    }
}
