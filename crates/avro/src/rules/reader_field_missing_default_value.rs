use crate::compat::Issue;
use crate::model::Name;
use crate::text::text;
use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "READER_FIELD_MISSING_DEFAULT_VALUE",
    format: "avro",
    category: "structural",
    default_severity: Severity::Error,
    summary: "A reader field has no counterpart in the writer's record (by name or alias) and no default value to fill it with.",
    bad_example: "reader adds {\"name\":\"closureReason\",\"type\":\"string\"}",
    good_example: "reader adds {\"name\":\"closureReason\",\"type\":[\"null\",\"string\"],\"default\":null}",
    hint: "Give the new field a 'default' (for an optional value, a union with \"null\" first and default null), or keep the old field name as an alias.",
    peers: &[
        "confluent:READER_FIELD_MISSING_DEFAULT_VALUE",
        "avro-java:READER_FIELD_MISSING_DEFAULT_VALUE",
        "buf:FIELD_NO_DELETE",
    ],
};

pub fn issue(path: String, field: &str, writer_record: &Name) -> Issue {
    Issue::new(
        &RULE,
        path,
        text(&[
            &"Reader field '",
            &field,
            &"' has no default value and is missing in the writer's record '",
            writer_record,
            &"'.",
        ]),
    )
}

#[cfg(test)]
mod tests {
    use crate::rules::test_support::{findings, pair};

    const V1: &str =
        r#"{"type":"record","name":"User","fields":[{"name":"name","type":"string"}]}"#;

    #[test]
    fn added_field_needs_default() {
        let r = r#"{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"age","type":"int"},{"name":"id","type":"long"}]}"#;
        assert_eq!(
            findings(r, V1),
            vec![
                pair("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/age"),
                pair("READER_FIELD_MISSING_DEFAULT_VALUE", "/fields/id")
            ]
        );
        let ok = r#"{"type":"record","name":"User","fields":[{"name":"name","type":"string"},{"name":"age","type":"int","default":0}]}"#;
        assert!(findings(ok, V1).is_empty());
        // Removing a field is fine for the reader: the writer's value is skipped.
        assert!(findings(V1, ok).is_empty());
    }

    #[test]
    fn field_alias_finds_the_writer_field() {
        let r = r#"{"type":"record","name":"User","fields":[{"name":"full_name","aliases":["name"],"type":"string"}]}"#;
        assert!(findings(r, V1).is_empty());
    }
}
