//! Rules for item removed changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL: RuleSpec = RuleSpec {
    id: "ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL",
    format: "json",
    category: "content-model",
    default_severity: Severity::Info,
    summary: "A tuple item was removed from an open array.",
    bad_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"},{\"type\":\"string\"}]}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}]}",
    good_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"},{\"type\":\"string\"}]}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}]}",
    hint: "Safe for readers.",
    peers: &["confluent:ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL"],
};

pub static ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL: RuleSpec = RuleSpec {
    id: "ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL",
    format: "json",
    category: "content-model",
    default_severity: Severity::Error,
    summary: "A tuple item was removed from a closed array, rejecting arrays that carry it.",
    bad_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"},{\"type\":\"string\"}],\"additionalItems\":false}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}],\"additionalItems\":false}",
    good_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"},{\"type\":\"string\"}],\"additionalItems\":false}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"},{\"type\":\"string\"}],\"additionalItems\":false}",
    hint: "Keep the item, or open the array.",
    peers: &["confluent:ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL"],
};

pub static ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL: RuleSpec = RuleSpec {
    id: "ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
    format: "json",
    category: "content-model",
    default_severity: Severity::Info,
    summary: "A tuple item whose schema was `false` was removed from a closed array.",
    bad_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"},false],\"additionalItems\":false}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}],\"additionalItems\":false}",
    good_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"},false],\"additionalItems\":false}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}],\"additionalItems\":false}",
    hint: "Safe: no array could carry the item.",
    peers: &["confluent:ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL"],
};

pub static ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL: RuleSpec = RuleSpec {
    id: "ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    format: "json",
    category: "content-model",
    default_severity: Severity::Info,
    summary: "A tuple item was removed and the new `additionalItems` schema accepts its values.",
    bad_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"},{\"type\":\"string\"}],\"additionalItems\":{\"type\":\"string\"}}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}],\"additionalItems\":{\"type\":\"string\"}}",
    good_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"},{\"type\":\"string\"}],\"additionalItems\":{\"type\":\"string\"}}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}],\"additionalItems\":{\"type\":\"string\"}}",
    hint: "Safe: old values still validate.",
    peers: &["confluent:ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"],
};

pub static ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL: RuleSpec = RuleSpec {
    id: "ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    format: "json",
    category: "content-model",
    default_severity: Severity::Error,
    summary: "A tuple item was removed and the new `additionalItems` schema rejects its values.",
    bad_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"},{\"type\":\"integer\"}],\"additionalItems\":{\"type\":\"string\"}}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}],\"additionalItems\":{\"type\":\"string\"}}",
    good_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"},{\"type\":\"integer\"}],\"additionalItems\":{\"type\":\"string\"}}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"},{\"type\":\"integer\"}],\"additionalItems\":{\"type\":\"string\"}}",
    hint: "Keep the item, or widen `additionalItems` to cover its values.",
    peers: &["confluent:ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn item_removed_from_open_content_model_fires_on_its_example() {
        fires(&super::ITEM_REMOVED_FROM_OPEN_CONTENT_MODEL);
    }

    #[test]
    fn item_removed_from_closed_content_model_fires_on_its_example() {
        fires(&super::ITEM_REMOVED_FROM_CLOSED_CONTENT_MODEL);
    }

    #[test]
    fn item_with_false_removed_from_closed_content_model_fires_on_its_example() {
        fires(&super::ITEM_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL);
    }

    #[test]
    fn item_removed_is_covered_by_partially_open_content_model_fires_on_its_example() {
        fires(&super::ITEM_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL);
    }

    #[test]
    fn item_removed_not_covered_by_partially_open_content_model_fires_on_its_example() {
        fires(&super::ITEM_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL);
    }
}
