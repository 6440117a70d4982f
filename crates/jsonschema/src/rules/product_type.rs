//! Rules for product type changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static PRODUCT_TYPE_EXTENDED: RuleSpec = RuleSpec {
    id: "PRODUCT_TYPE_EXTENDED",
    format: "json",
    category: "combinator",
    default_severity: Severity::Error,
    summary: "An `allOf` gained a branch, adding a constraint.",
    bad_example: "writer: {\"allOf\":[{\"type\":\"object\"}]}\nreader: {\"allOf\":[{\"type\":\"object\"},{\"required\":[\"a\"]}]}",
    good_example: "writer: {\"allOf\":[{\"type\":\"object\"}]}\nreader: {\"allOf\":[{\"type\":\"object\"}]}",
    hint: "Only add branches every old document satisfies.",
    peers: &["confluent:PRODUCT_TYPE_EXTENDED"],
};

pub static PRODUCT_TYPE_NARROWED: RuleSpec = RuleSpec {
    id: "PRODUCT_TYPE_NARROWED",
    format: "json",
    category: "combinator",
    default_severity: Severity::Info,
    summary: "An `allOf` lost a branch, or became one of its branches, dropping a constraint.",
    bad_example: "writer: {\"allOf\":[{\"type\":\"string\"},{\"maxLength\":5}]}\nreader: {\"type\":\"string\"}",
    good_example: "writer: {\"allOf\":[{\"type\":\"string\"},{\"maxLength\":5}]}\nreader: {\"type\":\"string\"}",
    hint: "Safe for readers.",
    peers: &["confluent:PRODUCT_TYPE_NARROWED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn product_type_extended_fires_on_its_example() {
        fires(&super::PRODUCT_TYPE_EXTENDED);
    }

    #[test]
    fn product_type_narrowed_fires_on_its_example() {
        fires(&super::PRODUCT_TYPE_NARROWED);
    }
}
