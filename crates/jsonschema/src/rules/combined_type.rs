//! Rules for combined type changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static COMBINED_TYPE_EXTENDED: RuleSpec = RuleSpec {
    id: "COMBINED_TYPE_EXTENDED",
    format: "json",
    category: "combinator",
    default_severity: Severity::Info,
    summary: "A combinator became more permissive (for example `oneOf` to `anyOf`).",
    bad_example: "writer: {\"oneOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}\nreader: {\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}",
    good_example: "writer: {\"oneOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}\nreader: {\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}",
    hint: "Safe for readers.",
    peers: &["confluent:COMBINED_TYPE_EXTENDED"],
};

pub static COMBINED_TYPE_CHANGED: RuleSpec = RuleSpec {
    id: "COMBINED_TYPE_CHANGED",
    format: "json",
    category: "combinator",
    default_severity: Severity::Error,
    summary: "A combinator changed kind in a way that can reject documents (for example `anyOf` to `allOf`).",
    bad_example: "writer: {\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}\nreader: {\"allOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}",
    good_example: "writer: {\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}\nreader: {\"anyOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}",
    hint: "Keep the combinator; express the new intent with a new property.",
    peers: &["confluent:COMBINED_TYPE_CHANGED"],
};

pub static COMBINED_TYPE_SUBSCHEMAS_CHANGED: RuleSpec = RuleSpec {
    id: "COMBINED_TYPE_SUBSCHEMAS_CHANGED",
    format: "json",
    category: "combinator",
    default_severity: Severity::Error,
    summary: "The branches of a combinator could not all be matched to compatible branches of the new schema.",
    bad_example: "writer: {\"oneOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}\nreader: {\"oneOf\":[{\"type\":\"boolean\"},{\"type\":\"null\"}]}",
    good_example: "writer: {\"oneOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}\nreader: {\"oneOf\":[{\"type\":\"string\"},{\"type\":\"integer\"}]}",
    hint: "Keep every old branch (or a wider one) in the new combinator.",
    peers: &["confluent:COMBINED_TYPE_SUBSCHEMAS_CHANGED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn combined_type_extended_fires_on_its_example() {
        fires(&super::COMBINED_TYPE_EXTENDED);
    }

    #[test]
    fn combined_type_changed_fires_on_its_example() {
        fires(&super::COMBINED_TYPE_CHANGED);
    }

    #[test]
    fn combined_type_subschemas_changed_fires_on_its_example() {
        fires(&super::COMBINED_TYPE_SUBSCHEMAS_CHANGED);
    }
}
