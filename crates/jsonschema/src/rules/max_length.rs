//! Rules for max length changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static MAX_LENGTH_ADDED: RuleSpec = RuleSpec {
    id: "MAX_LENGTH_ADDED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`maxLength` was added, rejecting values that were valid before.",
    bad_example: "writer: {\"type\":\"string\"}\nreader: {\"type\":\"string\",\"maxLength\":10}",
    good_example: "writer: {\"type\":\"string\"}\nreader: {\"type\":\"string\"}",
    hint: "Add `maxLength` only once every producer already respects it, or keep it out of the schema and validate in the consumer.",
    peers: &["confluent:MAX_LENGTH_ADDED"],
};

pub static MAX_LENGTH_REMOVED: RuleSpec = RuleSpec {
    id: "MAX_LENGTH_REMOVED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`maxLength` was removed, accepting more values.",
    bad_example: "writer: {\"type\":\"string\",\"maxLength\":10}\nreader: {\"type\":\"string\"}",
    good_example: "writer: {\"type\":\"string\",\"maxLength\":10}\nreader: {\"type\":\"string\"}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:MAX_LENGTH_REMOVED"],
};

pub static MAX_LENGTH_DECREASED: RuleSpec = RuleSpec {
    id: "MAX_LENGTH_DECREASED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`maxLength` was lowered, rejecting values that were valid before.",
    bad_example: "writer: {\"type\":\"string\",\"maxLength\":10}\nreader: {\"type\":\"string\",\"maxLength\":5}",
    good_example: "writer: {\"type\":\"string\",\"maxLength\":10}\nreader: {\"type\":\"string\",\"maxLength\":10}",
    hint: "Keep the old `maxLength`; tighten it only after every stored and in-flight document satisfies the new bound.",
    peers: &["confluent:MAX_LENGTH_DECREASED"],
};

pub static MAX_LENGTH_INCREASED: RuleSpec = RuleSpec {
    id: "MAX_LENGTH_INCREASED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`maxLength` was raised, accepting more values.",
    bad_example: "writer: {\"type\":\"string\",\"maxLength\":5}\nreader: {\"type\":\"string\",\"maxLength\":10}",
    good_example: "writer: {\"type\":\"string\",\"maxLength\":5}\nreader: {\"type\":\"string\",\"maxLength\":10}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:MAX_LENGTH_INCREASED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn max_length_added_fires_on_its_example() {
        fires(&super::MAX_LENGTH_ADDED);
    }

    #[test]
    fn max_length_removed_fires_on_its_example() {
        fires(&super::MAX_LENGTH_REMOVED);
    }

    #[test]
    fn max_length_decreased_fires_on_its_example() {
        fires(&super::MAX_LENGTH_DECREASED);
    }

    #[test]
    fn max_length_increased_fires_on_its_example() {
        fires(&super::MAX_LENGTH_INCREASED);
    }
}
