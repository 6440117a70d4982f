use crate::compat::Issue;
use crate::model::Fixed;
use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "FIXED_SIZE_MISMATCH",
    format: "avro",
    category: "wire",
    default_severity: Severity::Error,
    summary: "A fixed type changed its size, so the reader would consume the wrong number of bytes.",
    bad_example: "writer: {\"type\":\"fixed\",\"name\":\"Hash\",\"size\":16}\nreader: {\"type\":\"fixed\",\"name\":\"Hash\",\"size\":32}",
    good_example: "reader: add a new field {\"name\":\"hash32\",\"type\":{\"type\":\"fixed\",\"name\":\"Hash32\",\"size\":32}} and keep the 16-byte one",
    hint: "A fixed size can never change; introduce a new fixed type under a new name and migrate to it.",
    peers: &[
        "confluent:FIXED_SIZE_MISMATCH",
        "avro-java:FIXED_SIZE_MISMATCH",
    ],
};

pub fn check(reader: &Fixed, writer: &Fixed) -> Option<Issue> {
    if reader.size == writer.size {
        return None;
    }
    Some(Issue::new(
        &RULE,
        "/size",
        format!(
            "Fixed '{}' has size {} in the reader but {} in the writer.",
            reader.named.name.full(),
            reader.size,
            writer.size
        ),
    ))
}

#[cfg(test)]
mod tests {
    use crate::rules::test_support::{findings, pair};

    #[test]
    fn size_change_is_reported_inside_records() {
        let w = r#"{"type":"record","name":"R","fields":[{"name":"h","type":{"type":"fixed","name":"H","size":4}}]}"#;
        let r = r#"{"type":"record","name":"R","fields":[{"name":"h","type":{"type":"fixed","name":"H","size":8}}]}"#;
        assert_eq!(
            findings(r, w),
            vec![pair("FIXED_SIZE_MISMATCH", "/fields/h/type/size")]
        );
        assert!(findings(w, w).is_empty());
    }
}
