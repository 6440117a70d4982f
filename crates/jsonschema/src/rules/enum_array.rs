//! Rules for enum array changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static ENUM_ARRAY_EXTENDED: RuleSpec = RuleSpec {
    id: "ENUM_ARRAY_EXTENDED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "Values were added to an `enum`.",
    bad_example: "writer: {\"enum\":[\"a\"]}\nreader: {\"enum\":[\"a\",\"b\"]}",
    good_example: "writer: {\"enum\":[\"a\"]}\nreader: {\"enum\":[\"a\",\"b\"]}",
    hint: "Safe for readers.",
    peers: &["confluent:ENUM_ARRAY_EXTENDED"],
};

pub static ENUM_ARRAY_NARROWED: RuleSpec = RuleSpec {
    id: "ENUM_ARRAY_NARROWED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "Values were removed from an `enum`, rejecting documents that use them.",
    bad_example: "writer: {\"enum\":[\"a\",\"b\"]}\nreader: {\"enum\":[\"a\"]}",
    good_example: "writer: {\"enum\":[\"a\",\"b\"]}\nreader: {\"enum\":[\"a\",\"b\"]}",
    hint: "Keep the old values; deprecate them in the description instead.",
    peers: &["confluent:ENUM_ARRAY_NARROWED"],
};

pub static ENUM_ARRAY_CHANGED: RuleSpec = RuleSpec {
    id: "ENUM_ARRAY_CHANGED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "An `enum` or `const` changed to values that are neither a superset nor a subset.",
    bad_example: "writer: {\"enum\":[\"a\"]}\nreader: {\"enum\":[\"b\"]}",
    good_example: "writer: {\"enum\":[\"a\"]}\nreader: {\"enum\":[\"a\"]}",
    hint: "Only add values; never remove or rename them.",
    peers: &["confluent:ENUM_ARRAY_CHANGED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn enum_array_extended_fires_on_its_example() {
        fires(&super::ENUM_ARRAY_EXTENDED);
    }

    #[test]
    fn enum_array_narrowed_fires_on_its_example() {
        fires(&super::ENUM_ARRAY_NARROWED);
    }

    #[test]
    fn enum_array_changed_fires_on_its_example() {
        fires(&super::ENUM_ARRAY_CHANGED);
    }
}
