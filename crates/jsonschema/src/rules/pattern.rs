//! Rules for pattern changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static PATTERN_ADDED: RuleSpec = RuleSpec {
    id: "PATTERN_ADDED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "A `pattern` was added to a string, rejecting strings that were valid before.",
    bad_example: "writer: {\"type\":\"string\"}\nreader: {\"type\":\"string\",\"pattern\":\"^[a-z]+$\"}",
    good_example: "writer: {\"type\":\"string\"}\nreader: {\"type\":\"string\"}",
    hint: "Validate the format in the consumer, or add the pattern only once every producer complies.",
    peers: &["confluent:PATTERN_ADDED"],
};

pub static PATTERN_REMOVED: RuleSpec = RuleSpec {
    id: "PATTERN_REMOVED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "A string's `pattern` was removed, accepting more strings.",
    bad_example: "writer: {\"type\":\"string\",\"pattern\":\"^[a-z]+$\"}\nreader: {\"type\":\"string\"}",
    good_example: "writer: {\"type\":\"string\",\"pattern\":\"^[a-z]+$\"}\nreader: {\"type\":\"string\"}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:PATTERN_REMOVED"],
};

pub static PATTERN_CHANGED: RuleSpec = RuleSpec {
    id: "PATTERN_CHANGED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "A string's `pattern` changed, which may reject strings that were valid before.",
    bad_example: "writer: {\"type\":\"string\",\"pattern\":\"^[a-z]+$\"}\nreader: {\"type\":\"string\",\"pattern\":\"^[0-9]+$\"}",
    good_example: "writer: {\"type\":\"string\",\"pattern\":\"^[a-z]+$\"}\nreader: {\"type\":\"string\",\"pattern\":\"^[a-z]+$\"}",
    hint: "Keep the old pattern, or only change it to one that accepts a superset of the old strings and remove it in between.",
    peers: &["confluent:PATTERN_CHANGED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn pattern_added_fires_on_its_example() {
        fires(&super::PATTERN_ADDED);
    }

    #[test]
    fn pattern_removed_fires_on_its_example() {
        fires(&super::PATTERN_REMOVED);
    }

    #[test]
    fn pattern_changed_fires_on_its_example() {
        fires(&super::PATTERN_CHANGED);
    }
}
