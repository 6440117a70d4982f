//! Rules for additional items changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static ADDITIONAL_ITEMS_ADDED: RuleSpec = RuleSpec {
    id: "ADDITIONAL_ITEMS_ADDED",
    format: "json",
    category: "content-model",
    default_severity: Severity::Info,
    summary: "`additionalItems: false` was removed, accepting longer arrays.",
    bad_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}],\"additionalItems\":false}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}]}",
    good_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}],\"additionalItems\":false}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}]}",
    hint: "Opening a content model is safe for readers.",
    peers: &["confluent:ADDITIONAL_ITEMS_ADDED"],
};

pub static ADDITIONAL_ITEMS_REMOVED: RuleSpec = RuleSpec {
    id: "ADDITIONAL_ITEMS_REMOVED",
    format: "json",
    category: "content-model",
    default_severity: Severity::Error,
    summary: "`additionalItems: false` was added, rejecting longer arrays.",
    bad_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}]}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}],\"additionalItems\":false}",
    good_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}]}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}]}",
    hint: "Keep the array open.",
    peers: &["confluent:ADDITIONAL_ITEMS_REMOVED"],
};

pub static ADDITIONAL_ITEMS_NARROWED: RuleSpec = RuleSpec {
    id: "ADDITIONAL_ITEMS_NARROWED",
    format: "json",
    category: "content-model",
    default_severity: Severity::Error,
    summary: "`additionalItems` became a schema where it was open.",
    bad_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}]}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}],\"additionalItems\":{\"type\":\"string\"}}",
    good_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}]}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}]}",
    hint: "Keep it open, or make sure every extra item old producers write matches the new schema.",
    peers: &["confluent:ADDITIONAL_ITEMS_NARROWED"],
};

pub static ADDITIONAL_ITEMS_EXTENDED: RuleSpec = RuleSpec {
    id: "ADDITIONAL_ITEMS_EXTENDED",
    format: "json",
    category: "content-model",
    default_severity: Severity::Info,
    summary: "An `additionalItems` schema was removed.",
    bad_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}],\"additionalItems\":{\"type\":\"string\"}}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}]}",
    good_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}],\"additionalItems\":{\"type\":\"string\"}}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}]}",
    hint: "Opening a content model is safe for readers.",
    peers: &["confluent:ADDITIONAL_ITEMS_EXTENDED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn additional_items_added_fires_on_its_example() {
        fires(&super::ADDITIONAL_ITEMS_ADDED);
    }

    #[test]
    fn additional_items_removed_fires_on_its_example() {
        fires(&super::ADDITIONAL_ITEMS_REMOVED);
    }

    #[test]
    fn additional_items_narrowed_fires_on_its_example() {
        fires(&super::ADDITIONAL_ITEMS_NARROWED);
    }

    #[test]
    fn additional_items_extended_fires_on_its_example() {
        fires(&super::ADDITIONAL_ITEMS_EXTENDED);
    }
}
