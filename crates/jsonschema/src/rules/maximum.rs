//! Rules for maximum changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static MAXIMUM_ADDED: RuleSpec = RuleSpec {
    id: "MAXIMUM_ADDED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`maximum` was added, rejecting values that were valid before.",
    bad_example: "writer: {\"type\":\"number\"}\nreader: {\"type\":\"number\",\"maximum\":10}",
    good_example: "writer: {\"type\":\"number\"}\nreader: {\"type\":\"number\"}",
    hint: "Add `maximum` only once every producer already respects it, or keep it out of the schema and validate in the consumer.",
    peers: &["confluent:MAXIMUM_ADDED"],
};

pub static MAXIMUM_REMOVED: RuleSpec = RuleSpec {
    id: "MAXIMUM_REMOVED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`maximum` was removed, accepting more values.",
    bad_example: "writer: {\"type\":\"number\",\"maximum\":10}\nreader: {\"type\":\"number\"}",
    good_example: "writer: {\"type\":\"number\",\"maximum\":10}\nreader: {\"type\":\"number\"}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:MAXIMUM_REMOVED"],
};

pub static MAXIMUM_DECREASED: RuleSpec = RuleSpec {
    id: "MAXIMUM_DECREASED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`maximum` was lowered, rejecting values that were valid before.",
    bad_example: "writer: {\"type\":\"number\",\"maximum\":10}\nreader: {\"type\":\"number\",\"maximum\":5}",
    good_example: "writer: {\"type\":\"number\",\"maximum\":10}\nreader: {\"type\":\"number\",\"maximum\":10}",
    hint: "Keep the old `maximum`; tighten it only after every stored and in-flight document satisfies the new bound.",
    peers: &["confluent:MAXIMUM_DECREASED"],
};

pub static MAXIMUM_INCREASED: RuleSpec = RuleSpec {
    id: "MAXIMUM_INCREASED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`maximum` was raised, accepting more values.",
    bad_example: "writer: {\"type\":\"number\",\"maximum\":5}\nreader: {\"type\":\"number\",\"maximum\":10}",
    good_example: "writer: {\"type\":\"number\",\"maximum\":5}\nreader: {\"type\":\"number\",\"maximum\":10}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:MAXIMUM_INCREASED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn maximum_added_fires_on_its_example() {
        fires(&super::MAXIMUM_ADDED);
    }

    #[test]
    fn maximum_removed_fires_on_its_example() {
        fires(&super::MAXIMUM_REMOVED);
    }

    #[test]
    fn maximum_decreased_fires_on_its_example() {
        fires(&super::MAXIMUM_DECREASED);
    }

    #[test]
    fn maximum_increased_fires_on_its_example() {
        fires(&super::MAXIMUM_INCREASED);
    }
}
