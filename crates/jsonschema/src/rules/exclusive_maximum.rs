//! Rules for exclusive maximum changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static EXCLUSIVE_MAXIMUM_ADDED: RuleSpec = RuleSpec {
    id: "EXCLUSIVE_MAXIMUM_ADDED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`exclusiveMaximum` was added, rejecting values that were valid before.",
    bad_example: "writer: {\"type\":\"number\"}\nreader: {\"type\":\"number\",\"exclusiveMaximum\":10}",
    good_example: "writer: {\"type\":\"number\"}\nreader: {\"type\":\"number\"}",
    hint: "Add `exclusiveMaximum` only once every producer already respects it, or keep it out of the schema and validate in the consumer.",
    peers: &["confluent:EXCLUSIVE_MAXIMUM_ADDED"],
};

pub static EXCLUSIVE_MAXIMUM_REMOVED: RuleSpec = RuleSpec {
    id: "EXCLUSIVE_MAXIMUM_REMOVED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`exclusiveMaximum` was removed, accepting more values.",
    bad_example: "writer: {\"type\":\"number\",\"exclusiveMaximum\":10}\nreader: {\"type\":\"number\"}",
    good_example: "writer: {\"type\":\"number\",\"exclusiveMaximum\":10}\nreader: {\"type\":\"number\"}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:EXCLUSIVE_MAXIMUM_REMOVED"],
};

pub static EXCLUSIVE_MAXIMUM_DECREASED: RuleSpec = RuleSpec {
    id: "EXCLUSIVE_MAXIMUM_DECREASED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`exclusiveMaximum` was lowered, rejecting values that were valid before.",
    bad_example: "writer: {\"type\":\"number\",\"exclusiveMaximum\":10}\nreader: {\"type\":\"number\",\"exclusiveMaximum\":5}",
    good_example: "writer: {\"type\":\"number\",\"exclusiveMaximum\":10}\nreader: {\"type\":\"number\",\"exclusiveMaximum\":10}",
    hint: "Keep the old `exclusiveMaximum`; tighten it only after every stored and in-flight document satisfies the new bound.",
    peers: &["confluent:EXCLUSIVE_MAXIMUM_DECREASED"],
};

pub static EXCLUSIVE_MAXIMUM_INCREASED: RuleSpec = RuleSpec {
    id: "EXCLUSIVE_MAXIMUM_INCREASED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`exclusiveMaximum` was raised, accepting more values.",
    bad_example: "writer: {\"type\":\"number\",\"exclusiveMaximum\":5}\nreader: {\"type\":\"number\",\"exclusiveMaximum\":10}",
    good_example: "writer: {\"type\":\"number\",\"exclusiveMaximum\":5}\nreader: {\"type\":\"number\",\"exclusiveMaximum\":10}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:EXCLUSIVE_MAXIMUM_INCREASED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn exclusive_maximum_added_fires_on_its_example() {
        fires(&super::EXCLUSIVE_MAXIMUM_ADDED);
    }

    #[test]
    fn exclusive_maximum_removed_fires_on_its_example() {
        fires(&super::EXCLUSIVE_MAXIMUM_REMOVED);
    }

    #[test]
    fn exclusive_maximum_decreased_fires_on_its_example() {
        fires(&super::EXCLUSIVE_MAXIMUM_DECREASED);
    }

    #[test]
    fn exclusive_maximum_increased_fires_on_its_example() {
        fires(&super::EXCLUSIVE_MAXIMUM_INCREASED);
    }
}
