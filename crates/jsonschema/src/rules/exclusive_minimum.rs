//! Rules for exclusive minimum changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static EXCLUSIVE_MINIMUM_ADDED: RuleSpec = RuleSpec {
    id: "EXCLUSIVE_MINIMUM_ADDED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`exclusiveMinimum` was added, rejecting values that were valid before.",
    bad_example: "writer: {\"type\":\"number\"}\nreader: {\"type\":\"number\",\"exclusiveMinimum\":10}",
    good_example: "writer: {\"type\":\"number\"}\nreader: {\"type\":\"number\"}",
    hint: "Add `exclusiveMinimum` only once every producer already respects it, or keep it out of the schema and validate in the consumer.",
    peers: &["confluent:EXCLUSIVE_MINIMUM_ADDED"],
};

pub static EXCLUSIVE_MINIMUM_REMOVED: RuleSpec = RuleSpec {
    id: "EXCLUSIVE_MINIMUM_REMOVED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`exclusiveMinimum` was removed, accepting more values.",
    bad_example: "writer: {\"type\":\"number\",\"exclusiveMinimum\":5}\nreader: {\"type\":\"number\"}",
    good_example: "writer: {\"type\":\"number\",\"exclusiveMinimum\":5}\nreader: {\"type\":\"number\"}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:EXCLUSIVE_MINIMUM_REMOVED"],
};

pub static EXCLUSIVE_MINIMUM_INCREASED: RuleSpec = RuleSpec {
    id: "EXCLUSIVE_MINIMUM_INCREASED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`exclusiveMinimum` was raised, rejecting values that were valid before.",
    bad_example: "writer: {\"type\":\"number\",\"exclusiveMinimum\":5}\nreader: {\"type\":\"number\",\"exclusiveMinimum\":10}",
    good_example: "writer: {\"type\":\"number\",\"exclusiveMinimum\":5}\nreader: {\"type\":\"number\",\"exclusiveMinimum\":5}",
    hint: "Keep the old `exclusiveMinimum`; tighten it only after every stored and in-flight document satisfies the new bound.",
    peers: &["confluent:EXCLUSIVE_MINIMUM_INCREASED"],
};

pub static EXCLUSIVE_MINIMUM_DECREASED: RuleSpec = RuleSpec {
    id: "EXCLUSIVE_MINIMUM_DECREASED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`exclusiveMinimum` was lowered, accepting more values.",
    bad_example: "writer: {\"type\":\"number\",\"exclusiveMinimum\":10}\nreader: {\"type\":\"number\",\"exclusiveMinimum\":5}",
    good_example: "writer: {\"type\":\"number\",\"exclusiveMinimum\":10}\nreader: {\"type\":\"number\",\"exclusiveMinimum\":5}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:EXCLUSIVE_MINIMUM_DECREASED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn exclusive_minimum_added_fires_on_its_example() {
        fires(&super::EXCLUSIVE_MINIMUM_ADDED);
    }

    #[test]
    fn exclusive_minimum_removed_fires_on_its_example() {
        fires(&super::EXCLUSIVE_MINIMUM_REMOVED);
    }

    #[test]
    fn exclusive_minimum_increased_fires_on_its_example() {
        fires(&super::EXCLUSIVE_MINIMUM_INCREASED);
    }

    #[test]
    fn exclusive_minimum_decreased_fires_on_its_example() {
        fires(&super::EXCLUSIVE_MINIMUM_DECREASED);
    }
}
