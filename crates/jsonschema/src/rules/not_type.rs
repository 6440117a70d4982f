//! Rules for not type changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static NOT_TYPE_EXTENDED: RuleSpec = RuleSpec {
    id: "NOT_TYPE_EXTENDED",
    format: "json",
    category: "combinator",
    default_severity: Severity::Error,
    summary: "A `not` schema now excludes more documents.",
    bad_example: "writer: {\"not\":{\"type\":\"string\"}}\nreader: {\"not\":{\"type\":[\"string\",\"integer\"]}}",
    good_example: "writer: {\"not\":{\"type\":\"string\"}}\nreader: {\"not\":{\"type\":\"string\"}}",
    hint: "Only narrow what `not` excludes.",
    peers: &["confluent:NOT_TYPE_EXTENDED"],
};

pub static NOT_TYPE_NARROWED: RuleSpec = RuleSpec {
    id: "NOT_TYPE_NARROWED",
    format: "json",
    category: "combinator",
    default_severity: Severity::Info,
    summary: "A `not` schema now excludes fewer documents.",
    bad_example: "writer: {\"not\":{\"type\":[\"string\",\"integer\"]}}\nreader: {\"not\":{\"type\":\"string\"}}",
    good_example: "writer: {\"not\":{\"type\":[\"string\",\"integer\"]}}\nreader: {\"not\":{\"type\":\"string\"}}",
    hint: "Safe for readers.",
    peers: &["confluent:NOT_TYPE_NARROWED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn not_type_extended_fires_on_its_example() {
        fires(&super::NOT_TYPE_EXTENDED);
    }

    #[test]
    fn not_type_narrowed_fires_on_its_example() {
        fires(&super::NOT_TYPE_NARROWED);
    }
}
