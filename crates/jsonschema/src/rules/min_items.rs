//! Rules for min items changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static MIN_ITEMS_ADDED: RuleSpec = RuleSpec {
    id: "MIN_ITEMS_ADDED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`minItems` was added, rejecting values that were valid before.",
    bad_example: "writer: {\"type\":\"array\"}\nreader: {\"type\":\"array\",\"minItems\":10}",
    good_example: "writer: {\"type\":\"array\"}\nreader: {\"type\":\"array\"}",
    hint: "Add `minItems` only once every producer already respects it, or keep it out of the schema and validate in the consumer.",
    peers: &["confluent:MIN_ITEMS_ADDED"],
};

pub static MIN_ITEMS_REMOVED: RuleSpec = RuleSpec {
    id: "MIN_ITEMS_REMOVED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`minItems` was removed, accepting more values.",
    bad_example: "writer: {\"type\":\"array\",\"minItems\":5}\nreader: {\"type\":\"array\"}",
    good_example: "writer: {\"type\":\"array\",\"minItems\":5}\nreader: {\"type\":\"array\"}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:MIN_ITEMS_REMOVED"],
};

pub static MIN_ITEMS_INCREASED: RuleSpec = RuleSpec {
    id: "MIN_ITEMS_INCREASED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`minItems` was raised, rejecting values that were valid before.",
    bad_example: "writer: {\"type\":\"array\",\"minItems\":5}\nreader: {\"type\":\"array\",\"minItems\":10}",
    good_example: "writer: {\"type\":\"array\",\"minItems\":5}\nreader: {\"type\":\"array\",\"minItems\":5}",
    hint: "Keep the old `minItems`; tighten it only after every stored and in-flight document satisfies the new bound.",
    peers: &["confluent:MIN_ITEMS_INCREASED"],
};

pub static MIN_ITEMS_DECREASED: RuleSpec = RuleSpec {
    id: "MIN_ITEMS_DECREASED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`minItems` was lowered, accepting more values.",
    bad_example: "writer: {\"type\":\"array\",\"minItems\":10}\nreader: {\"type\":\"array\",\"minItems\":5}",
    good_example: "writer: {\"type\":\"array\",\"minItems\":10}\nreader: {\"type\":\"array\",\"minItems\":5}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:MIN_ITEMS_DECREASED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn min_items_added_fires_on_its_example() {
        fires(&super::MIN_ITEMS_ADDED);
    }

    #[test]
    fn min_items_removed_fires_on_its_example() {
        fires(&super::MIN_ITEMS_REMOVED);
    }

    #[test]
    fn min_items_increased_fires_on_its_example() {
        fires(&super::MIN_ITEMS_INCREASED);
    }

    #[test]
    fn min_items_decreased_fires_on_its_example() {
        fires(&super::MIN_ITEMS_DECREASED);
    }
}
