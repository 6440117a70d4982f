//! Rules for sum type changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static SUM_TYPE_EXTENDED: RuleSpec = RuleSpec {
    id: "SUM_TYPE_EXTENDED",
    format: "json",
    category: "combinator",
    default_severity: Severity::Info,
    summary: "A `oneOf`/`anyOf` gained a branch, or a schema became one branch of a new union.",
    bad_example: "writer: {\"type\":\"string\"}\nreader: {\"oneOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}",
    good_example: "writer: {\"type\":\"string\"}\nreader: {\"oneOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}",
    hint: "Safe for readers.",
    peers: &["confluent:SUM_TYPE_EXTENDED"],
};

pub static SUM_TYPE_NARROWED: RuleSpec = RuleSpec {
    id: "SUM_TYPE_NARROWED",
    format: "json",
    category: "combinator",
    default_severity: Severity::Error,
    summary: "A `oneOf`/`anyOf` lost a branch, rejecting documents that matched it.",
    bad_example: "writer: {\"oneOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}\nreader: {\"oneOf\":[{\"type\":\"string\"}]}",
    good_example: "writer: {\"oneOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}\nreader: {\"oneOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}",
    hint: "Keep every old branch.",
    peers: &["confluent:SUM_TYPE_NARROWED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn sum_type_extended_fires_on_its_example() {
        fires(&super::SUM_TYPE_EXTENDED);
    }

    #[test]
    fn sum_type_narrowed_fires_on_its_example() {
        fires(&super::SUM_TYPE_NARROWED);
    }
}
