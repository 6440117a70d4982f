use crate::compat::Issue;
use crate::text::{Piece, text};
use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "MISSING_UNION_BRANCH",
    format: "avro",
    category: "structural",
    default_severity: Severity::Error,
    summary: "The writer can produce a type (a union branch, or the whole writer type) that no branch of the reader's union can read.",
    bad_example: "writer: {\"name\":\"id\",\"type\":[\"null\",\"string\",\"long\"]}\nreader: {\"name\":\"id\",\"type\":[\"null\",\"string\"]}",
    good_example: "reader: {\"name\":\"id\",\"type\":[\"null\",\"string\",\"long\"]}",
    hint: "Only add branches to a union that is read; to narrow one, first stop writing the branch and wait until no data with it remains.",
    peers: &[
        "confluent:MISSING_UNION_BRANCH",
        "avro-java:MISSING_UNION_BRANCH",
    ],
};

/// A branch of the writer's union that the reader's union cannot read.
pub fn writer_branch(path: String, reader_union: &dyn Piece, writer_branch: &dyn Piece) -> Issue {
    Issue::new(
        &RULE,
        path,
        text(&[
            &"Reader union ",
            reader_union,
            &" has no branch that can read the writer's '",
            writer_branch,
            &"' values.",
        ]),
    )
}

/// A non-union writer type that no branch of the reader's union can read.
pub fn reader_union(path: &str, reader_union: &dyn Piece, writer: &dyn Piece) -> Issue {
    Issue::new(
        &RULE,
        path,
        text(&[
            &"Reader union ",
            reader_union,
            &" has no branch that can read writer type '",
            writer,
            &"'.",
        ]),
    )
}

#[cfg(test)]
mod tests {
    use crate::rules::test_support::{findings, pair};

    fn field(ty: &str) -> String {
        format!(r#"{{"type":"record","name":"R","fields":[{{"name":"id","type":{ty}}}]}}"#)
    }

    #[test]
    fn removed_branch_is_named_in_the_path() {
        let w = field(r#"["null","string","long"]"#);
        let r = field(r#"["null","string"]"#);
        assert_eq!(
            findings(&r, &w),
            vec![pair("MISSING_UNION_BRANCH", "/fields/id/type/long")]
        );
        assert!(findings(&w, &r).is_empty());
    }

    #[test]
    fn union_reader_needs_a_branch_for_a_plain_writer() {
        assert!(findings(&field(r#"["null","long"]"#), &field("\"int\"")).is_empty());
        assert_eq!(
            findings(&field(r#"["null","boolean"]"#), &field("\"int\"")),
            vec![pair("MISSING_UNION_BRANCH", "/fields/id/type")]
        );
    }

    #[test]
    fn writer_union_read_by_a_plain_type_reports_each_bad_branch() {
        assert_eq!(
            findings(&field("\"string\""), &field(r#"["null","string"]"#)),
            vec![pair("TYPE_MISMATCH", "/fields/id/type")]
        );
    }
}
