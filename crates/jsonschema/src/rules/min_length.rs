//! Rules for min length changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static MIN_LENGTH_ADDED: RuleSpec = RuleSpec {
    id: "MIN_LENGTH_ADDED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`minLength` was added, rejecting values that were valid before.",
    bad_example: "writer: {\"type\":\"string\"}\nreader: {\"type\":\"string\",\"minLength\":10}",
    good_example: "writer: {\"type\":\"string\"}\nreader: {\"type\":\"string\"}",
    hint: "Add `minLength` only once every producer already respects it, or keep it out of the schema and validate in the consumer.",
    peers: &["confluent:MIN_LENGTH_ADDED"],
};

pub static MIN_LENGTH_REMOVED: RuleSpec = RuleSpec {
    id: "MIN_LENGTH_REMOVED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`minLength` was removed, accepting more values.",
    bad_example: "writer: {\"type\":\"string\",\"minLength\":5}\nreader: {\"type\":\"string\"}",
    good_example: "writer: {\"type\":\"string\",\"minLength\":5}\nreader: {\"type\":\"string\"}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:MIN_LENGTH_REMOVED"],
};

pub static MIN_LENGTH_INCREASED: RuleSpec = RuleSpec {
    id: "MIN_LENGTH_INCREASED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`minLength` was raised, rejecting values that were valid before.",
    bad_example: "writer: {\"type\":\"string\",\"minLength\":5}\nreader: {\"type\":\"string\",\"minLength\":10}",
    good_example: "writer: {\"type\":\"string\",\"minLength\":5}\nreader: {\"type\":\"string\",\"minLength\":5}",
    hint: "Keep the old `minLength`; tighten it only after every stored and in-flight document satisfies the new bound.",
    peers: &["confluent:MIN_LENGTH_INCREASED"],
};

pub static MIN_LENGTH_DECREASED: RuleSpec = RuleSpec {
    id: "MIN_LENGTH_DECREASED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`minLength` was lowered, accepting more values.",
    bad_example: "writer: {\"type\":\"string\",\"minLength\":10}\nreader: {\"type\":\"string\",\"minLength\":5}",
    good_example: "writer: {\"type\":\"string\",\"minLength\":10}\nreader: {\"type\":\"string\",\"minLength\":5}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:MIN_LENGTH_DECREASED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn min_length_added_fires_on_its_example() {
        fires(&super::MIN_LENGTH_ADDED);
    }

    #[test]
    fn min_length_removed_fires_on_its_example() {
        fires(&super::MIN_LENGTH_REMOVED);
    }

    #[test]
    fn min_length_increased_fires_on_its_example() {
        fires(&super::MIN_LENGTH_INCREASED);
    }

    #[test]
    fn min_length_decreased_fires_on_its_example() {
        fires(&super::MIN_LENGTH_DECREASED);
    }
}
