//! Rules for schema changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static SCHEMA_ADDED: RuleSpec = RuleSpec {
    id: "SCHEMA_ADDED",
    format: "json",
    category: "structural",
    default_severity: Severity::Error,
    summary: "A subschema appeared where there was none (for example `items` added), which constrains data that was unconstrained.",
    bad_example: "writer: {\"type\":\"array\"}\nreader: {\"type\":\"array\",\"items\":{\"type\":\"string\"}}",
    good_example: "writer: {\"type\":\"array\"}\nreader: {\"type\":\"array\"}",
    hint: "Only add a subschema that accepts every value old producers could write, or add it in a new optional property.",
    peers: &["confluent:SCHEMA_ADDED"],
};

pub static SCHEMA_REMOVED: RuleSpec = RuleSpec {
    id: "SCHEMA_REMOVED",
    format: "json",
    category: "structural",
    default_severity: Severity::Info,
    summary: "A subschema was removed, so data it constrained is now unconstrained.",
    bad_example: "writer: {\"type\":\"array\",\"items\":{\"type\":\"string\"}}\nreader: {\"type\":\"array\"}",
    good_example: "writer: {\"type\":\"array\",\"items\":{\"type\":\"string\"}}\nreader: {\"type\":\"array\"}",
    hint: "Removing a constraint is safe for readers.",
    peers: &["confluent:SCHEMA_REMOVED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn schema_added_fires_on_its_example() {
        fires(&super::SCHEMA_ADDED);
    }

    #[test]
    fn schema_removed_fires_on_its_example() {
        fires(&super::SCHEMA_REMOVED);
    }
}
