use crate::compat::Issue;
use crate::model::Named;
use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "NAME_MISMATCH",
    format: "avro",
    category: "structural",
    default_severity: Severity::Error,
    summary: "A record, enum or fixed type is read by a type of another name, and no reader alias names the writer's type.",
    bad_example: "writer: {\"type\":\"record\",\"name\":\"User\",...}\nreader: {\"type\":\"record\",\"name\":\"Person\",...}",
    good_example: "reader: {\"type\":\"record\",\"name\":\"Person\",\"aliases\":[\"User\"],...}",
    hint: "Keep the type's name, or add the old full name to the new type's 'aliases' so readers still match old data.",
    peers: &["confluent:NAME_MISMATCH", "avro-java:NAME_MISMATCH"],
};

/// Java's `schemaNameEquals`: unqualified names equal, or a reader alias equal to the
/// writer's full name. Namespaces alone never make a mismatch.
pub fn names_match(reader: &Named, writer: &Named) -> bool {
    reader.name.name == writer.name.name
        || (!reader.aliases.is_empty() && reader.aliases.contains(&writer.name.full()))
}

pub fn check(reader: &Named, writer: &Named, kind: &str) -> Option<Issue> {
    if names_match(reader, writer) {
        return None;
    }
    Some(Issue::new(
        &RULE,
        "/name",
        format!(
            "Reader {kind} '{}' does not match the writer's {kind} '{}' and has no alias for it.",
            reader.name.full(),
            writer.name.full()
        ),
    ))
}

#[cfg(test)]
mod tests {
    use crate::rules::test_support::{findings, pair};

    #[test]
    fn renamed_record_is_a_mismatch() {
        let w = r#"{"type":"record","name":"User","fields":[]}"#;
        let r = r#"{"type":"record","name":"Person","fields":[]}"#;
        assert_eq!(findings(r, w), vec![pair("NAME_MISMATCH", "/name")]);
    }

    #[test]
    fn alias_or_namespace_change_matches() {
        let w = r#"{"type":"record","name":"User","namespace":"a","fields":[]}"#;
        let aliased =
            r#"{"type":"record","name":"Person","namespace":"a","aliases":["User"],"fields":[]}"#;
        assert!(findings(aliased, w).is_empty());
        let moved = r#"{"type":"record","name":"User","namespace":"b","fields":[]}"#;
        assert!(findings(moved, w).is_empty());
        // An alias resolves in the reader's namespace, so it names b.User, not a.User.
        let wrong_ns =
            r#"{"type":"record","name":"Person","namespace":"b","aliases":["User"],"fields":[]}"#;
        assert_eq!(findings(wrong_ns, w), vec![pair("NAME_MISMATCH", "/name")]);
    }

    #[test]
    fn enum_and_fixed_names_are_checked_too() {
        let w = r#"{"type":"enum","name":"E","symbols":["A"]}"#;
        let r = r#"{"type":"enum","name":"F","symbols":["A"]}"#;
        assert_eq!(findings(r, w), vec![pair("NAME_MISMATCH", "/name")]);
        let w = r#"{"type":"fixed","name":"E","size":2}"#;
        let r = r#"{"type":"fixed","name":"F","size":2}"#;
        assert_eq!(findings(r, w), vec![pair("NAME_MISMATCH", "/name")]);
    }
}
