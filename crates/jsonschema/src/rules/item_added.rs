//! Rules for item added changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static ITEM_ADDED_TO_OPEN_CONTENT_MODEL: RuleSpec = RuleSpec {
    id: "ITEM_ADDED_TO_OPEN_CONTENT_MODEL",
    format: "json",
    category: "content-model",
    default_severity: Severity::Error,
    summary: "A tuple item with a non-empty schema was added to an open array, where old producers may have written any value at that position.",
    bad_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}]}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"},{\"type\":\"string\"}]}",
    good_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}]}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}]}",
    hint: "Close the array (`additionalItems: false`) first, or add the item with an empty schema.",
    peers: &["confluent:ITEM_ADDED_TO_OPEN_CONTENT_MODEL"],
};

pub static ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL: RuleSpec = RuleSpec {
    id: "ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
    format: "json",
    category: "content-model",
    default_severity: Severity::Info,
    summary: "A tuple item with an empty schema was added to an open array.",
    bad_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}]}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"},{}]}",
    good_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}]}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"},{}]}",
    hint: "Safe: the item accepts anything.",
    peers: &["confluent:ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"],
};

pub static ITEM_ADDED_TO_CLOSED_CONTENT_MODEL: RuleSpec = RuleSpec {
    id: "ITEM_ADDED_TO_CLOSED_CONTENT_MODEL",
    format: "json",
    category: "content-model",
    default_severity: Severity::Info,
    summary: "A tuple item was added to a closed array.",
    bad_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}],\"additionalItems\":false}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"},{\"type\":\"string\"}],\"additionalItems\":false}",
    good_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}],\"additionalItems\":false}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"},{\"type\":\"string\"}],\"additionalItems\":false}",
    hint: "Safe: old arrays never have the item.",
    peers: &["confluent:ITEM_ADDED_TO_CLOSED_CONTENT_MODEL"],
};

pub static ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL: RuleSpec = RuleSpec {
    id: "ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    format: "json",
    category: "content-model",
    default_severity: Severity::Info,
    summary: "A tuple item was added whose schema accepts what the old `additionalItems` schema allowed.",
    bad_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}],\"additionalItems\":{\"type\":\"string\"}}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"},{\"type\":\"string\"}],\"additionalItems\":{\"type\":\"string\"}}",
    good_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}],\"additionalItems\":{\"type\":\"string\"}}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"},{\"type\":\"string\"}],\"additionalItems\":{\"type\":\"string\"}}",
    hint: "Safe: old values still validate.",
    peers: &["confluent:ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"],
};

pub static ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL: RuleSpec = RuleSpec {
    id: "ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    format: "json",
    category: "content-model",
    default_severity: Severity::Error,
    summary: "A tuple item was added whose schema rejects values the old `additionalItems` schema allowed.",
    bad_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}],\"additionalItems\":{\"type\":\"string\"}}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"},{\"type\":\"integer\"}],\"additionalItems\":{\"type\":\"string\"}}",
    good_example: "writer: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}],\"additionalItems\":{\"type\":\"string\"}}\nreader: {\"type\":\"array\",\"items\":[{\"type\":\"string\"}],\"additionalItems\":{\"type\":\"string\"}}",
    hint: "Give the item a schema at least as wide as the old `additionalItems`.",
    peers: &["confluent:ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn item_added_to_open_content_model_fires_on_its_example() {
        fires(&super::ITEM_ADDED_TO_OPEN_CONTENT_MODEL);
    }

    #[test]
    fn item_with_empty_schema_added_to_open_content_model_fires_on_its_example() {
        fires(&super::ITEM_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL);
    }

    #[test]
    fn item_added_to_closed_content_model_fires_on_its_example() {
        fires(&super::ITEM_ADDED_TO_CLOSED_CONTENT_MODEL);
    }

    #[test]
    fn item_added_is_covered_by_partially_open_content_model_fires_on_its_example() {
        fires(&super::ITEM_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL);
    }

    #[test]
    fn item_added_not_covered_by_partially_open_content_model_fires_on_its_example() {
        fires(&super::ITEM_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL);
    }
}
