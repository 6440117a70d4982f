//! Rules for minimum changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static MINIMUM_ADDED: RuleSpec = RuleSpec {
    id: "MINIMUM_ADDED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`minimum` was added, rejecting values that were valid before.",
    bad_example: "writer: {\"type\":\"number\"}\nreader: {\"type\":\"number\",\"minimum\":10}",
    good_example: "writer: {\"type\":\"number\"}\nreader: {\"type\":\"number\"}",
    hint: "Add `minimum` only once every producer already respects it, or keep it out of the schema and validate in the consumer.",
    peers: &["confluent:MINIMUM_ADDED"],
};

pub static MINIMUM_REMOVED: RuleSpec = RuleSpec {
    id: "MINIMUM_REMOVED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`minimum` was removed, accepting more values.",
    bad_example: "writer: {\"type\":\"number\",\"minimum\":5}\nreader: {\"type\":\"number\"}",
    good_example: "writer: {\"type\":\"number\",\"minimum\":5}\nreader: {\"type\":\"number\"}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:MINIMUM_REMOVED"],
};

pub static MINIMUM_INCREASED: RuleSpec = RuleSpec {
    id: "MINIMUM_INCREASED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`minimum` was raised, rejecting values that were valid before.",
    bad_example: "writer: {\"type\":\"number\",\"minimum\":5}\nreader: {\"type\":\"number\",\"minimum\":10}",
    good_example: "writer: {\"type\":\"number\",\"minimum\":5}\nreader: {\"type\":\"number\",\"minimum\":5}",
    hint: "Keep the old `minimum`; tighten it only after every stored and in-flight document satisfies the new bound.",
    peers: &["confluent:MINIMUM_INCREASED"],
};

pub static MINIMUM_DECREASED: RuleSpec = RuleSpec {
    id: "MINIMUM_DECREASED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`minimum` was lowered, accepting more values.",
    bad_example: "writer: {\"type\":\"number\",\"minimum\":10}\nreader: {\"type\":\"number\",\"minimum\":5}",
    good_example: "writer: {\"type\":\"number\",\"minimum\":10}\nreader: {\"type\":\"number\",\"minimum\":5}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:MINIMUM_DECREASED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn minimum_added_fires_on_its_example() {
        fires(&super::MINIMUM_ADDED);
    }

    #[test]
    fn minimum_removed_fires_on_its_example() {
        fires(&super::MINIMUM_REMOVED);
    }

    #[test]
    fn minimum_increased_fires_on_its_example() {
        fires(&super::MINIMUM_INCREASED);
    }

    #[test]
    fn minimum_decreased_fires_on_its_example() {
        fires(&super::MINIMUM_DECREASED);
    }
}
