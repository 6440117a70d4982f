//! Rules for max items changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static MAX_ITEMS_ADDED: RuleSpec = RuleSpec {
    id: "MAX_ITEMS_ADDED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`maxItems` was added, rejecting values that were valid before.",
    bad_example: "writer: {\"type\":\"array\"}\nreader: {\"type\":\"array\",\"maxItems\":10}",
    good_example: "writer: {\"type\":\"array\"}\nreader: {\"type\":\"array\"}",
    hint: "Add `maxItems` only once every producer already respects it, or keep it out of the schema and validate in the consumer.",
    peers: &["confluent:MAX_ITEMS_ADDED"],
};

pub static MAX_ITEMS_REMOVED: RuleSpec = RuleSpec {
    id: "MAX_ITEMS_REMOVED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`maxItems` was removed, accepting more values.",
    bad_example: "writer: {\"type\":\"array\",\"maxItems\":10}\nreader: {\"type\":\"array\"}",
    good_example: "writer: {\"type\":\"array\",\"maxItems\":10}\nreader: {\"type\":\"array\"}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:MAX_ITEMS_REMOVED"],
};

pub static MAX_ITEMS_DECREASED: RuleSpec = RuleSpec {
    id: "MAX_ITEMS_DECREASED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`maxItems` was lowered, rejecting values that were valid before.",
    bad_example: "writer: {\"type\":\"array\",\"maxItems\":10}\nreader: {\"type\":\"array\",\"maxItems\":5}",
    good_example: "writer: {\"type\":\"array\",\"maxItems\":10}\nreader: {\"type\":\"array\",\"maxItems\":10}",
    hint: "Keep the old `maxItems`; tighten it only after every stored and in-flight document satisfies the new bound.",
    peers: &["confluent:MAX_ITEMS_DECREASED"],
};

pub static MAX_ITEMS_INCREASED: RuleSpec = RuleSpec {
    id: "MAX_ITEMS_INCREASED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`maxItems` was raised, accepting more values.",
    bad_example: "writer: {\"type\":\"array\",\"maxItems\":5}\nreader: {\"type\":\"array\",\"maxItems\":10}",
    good_example: "writer: {\"type\":\"array\",\"maxItems\":5}\nreader: {\"type\":\"array\",\"maxItems\":10}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:MAX_ITEMS_INCREASED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn max_items_added_fires_on_its_example() {
        fires(&super::MAX_ITEMS_ADDED);
    }

    #[test]
    fn max_items_removed_fires_on_its_example() {
        fires(&super::MAX_ITEMS_REMOVED);
    }

    #[test]
    fn max_items_decreased_fires_on_its_example() {
        fires(&super::MAX_ITEMS_DECREASED);
    }

    #[test]
    fn max_items_increased_fires_on_its_example() {
        fires(&super::MAX_ITEMS_INCREASED);
    }
}
