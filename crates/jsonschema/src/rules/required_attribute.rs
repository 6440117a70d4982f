//! Rules for required attribute changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static REQUIRED_ATTRIBUTE_ADDED: RuleSpec = RuleSpec {
    id: "REQUIRED_ATTRIBUTE_ADDED",
    format: "json",
    category: "structural",
    default_severity: Severity::Error,
    summary: "An existing property became required without a default, so documents without it are now rejected.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":[\"a\"]}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}",
    hint: "Give the property a `default`, or keep it optional and let consumers handle its absence.",
    peers: &["confluent:REQUIRED_ATTRIBUTE_ADDED"],
};

pub static REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED: RuleSpec = RuleSpec {
    id: "REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED",
    format: "json",
    category: "structural",
    default_severity: Severity::Info,
    summary: "An existing property with a default became required.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"default\":\"x\"}},\"required\":[\"a\"]}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\",\"default\":\"x\"}},\"required\":[\"a\"]}",
    hint: "Readers fill in the default; no action is needed.",
    peers: &["confluent:REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED"],
};

pub static REQUIRED_ATTRIBUTE_REMOVED: RuleSpec = RuleSpec {
    id: "REQUIRED_ATTRIBUTE_REMOVED",
    format: "json",
    category: "structural",
    default_severity: Severity::Info,
    summary: "A property is no longer required.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":[\"a\"]}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"required\":[\"a\"]}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:REQUIRED_ATTRIBUTE_REMOVED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn required_attribute_added_fires_on_its_example() {
        fires(&super::REQUIRED_ATTRIBUTE_ADDED);
    }

    #[test]
    fn required_attribute_with_default_added_fires_on_its_example() {
        fires(&super::REQUIRED_ATTRIBUTE_WITH_DEFAULT_ADDED);
    }

    #[test]
    fn required_attribute_removed_fires_on_its_example() {
        fires(&super::REQUIRED_ATTRIBUTE_REMOVED);
    }
}
