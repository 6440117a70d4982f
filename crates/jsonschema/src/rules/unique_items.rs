//! Rules for unique items changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static UNIQUE_ITEMS_ADDED: RuleSpec = RuleSpec {
    id: "UNIQUE_ITEMS_ADDED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`uniqueItems: true` was added, rejecting arrays with duplicates.",
    bad_example: "writer: {\"type\":\"array\"}\nreader: {\"type\":\"array\",\"uniqueItems\":true}",
    good_example: "writer: {\"type\":\"array\"}\nreader: {\"type\":\"array\"}",
    hint: "Deduplicate in the consumer instead, or add it once every producer complies.",
    peers: &["confluent:UNIQUE_ITEMS_ADDED"],
};

pub static UNIQUE_ITEMS_REMOVED: RuleSpec = RuleSpec {
    id: "UNIQUE_ITEMS_REMOVED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`uniqueItems` was removed, accepting arrays with duplicates.",
    bad_example: "writer: {\"type\":\"array\",\"uniqueItems\":true}\nreader: {\"type\":\"array\"}",
    good_example: "writer: {\"type\":\"array\",\"uniqueItems\":true}\nreader: {\"type\":\"array\"}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:UNIQUE_ITEMS_REMOVED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn unique_items_added_fires_on_its_example() {
        fires(&super::UNIQUE_ITEMS_ADDED);
    }

    #[test]
    fn unique_items_removed_fires_on_its_example() {
        fires(&super::UNIQUE_ITEMS_REMOVED);
    }
}
