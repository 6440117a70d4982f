//! Rules for property added changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL: RuleSpec = RuleSpec {
    id: "REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
    format: "json",
    category: "content-model",
    default_severity: Severity::Error,
    summary: "A required property without a default was added to an open content model.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"}},\"required\":[\"b\"]}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}",
    hint: "Make the property optional or give it a default.",
    peers: &["confluent:REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"],
};

pub static REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL: RuleSpec = RuleSpec {
    id: "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL",
    format: "json",
    category: "content-model",
    default_severity: Severity::Error,
    summary: "A required property with a default was added to an open content model, where old producers may have written it with another type. Compatible under the LENIENT policy.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\",\"default\":\"x\"}},\"required\":[\"b\"]}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}",
    hint: "Close the content model first, or pick a property name old producers cannot have used.",
    peers: &["confluent:REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL"],
};

pub static OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL: RuleSpec = RuleSpec {
    id: "OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL",
    format: "json",
    category: "content-model",
    default_severity: Severity::Error,
    summary: "An optional property was added to an open content model, where old producers may have written it with another type. Compatible under the LENIENT policy.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"}}}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}",
    hint: "Close the content model (`additionalProperties: false`) before adding properties, or add the property with an empty schema.",
    peers: &["confluent:OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL"],
};

pub static PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL: RuleSpec = RuleSpec {
    id: "PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL",
    format: "json",
    category: "content-model",
    default_severity: Severity::Info,
    summary: "A property with an empty schema was added to an open content model.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{}}}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{}}}",
    hint: "Safe: the property accepts anything old producers wrote.",
    peers: &["confluent:PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL"],
};

pub static REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL: RuleSpec = RuleSpec {
    id: "REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
    format: "json",
    category: "content-model",
    default_severity: Severity::Error,
    summary: "A required property without a default was added to a closed or partially open content model.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":false}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"}},\"additionalProperties\":false,\"required\":[\"b\"]}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":false}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":false}",
    hint: "Make the property optional or give it a default.",
    peers: &["confluent:REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"],
};

pub static REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL: RuleSpec = RuleSpec {
    id: "REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL",
    format: "json",
    category: "content-model",
    default_severity: Severity::Info,
    summary: "A required property with a default was added to a closed or partially open content model.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":false}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\",\"default\":\"x\"}},\"additionalProperties\":false,\"required\":[\"b\"]}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":false}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\",\"default\":\"x\"}},\"additionalProperties\":false,\"required\":[\"b\"]}",
    hint: "Safe: old documents never have the property and readers use the default.",
    peers: &["confluent:REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL"],
};

pub static OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL: RuleSpec = RuleSpec {
    id: "OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL",
    format: "json",
    category: "content-model",
    default_severity: Severity::Info,
    summary: "An optional property was added to a closed or partially open content model.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":false}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"}},\"additionalProperties\":false}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":false}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"}},\"additionalProperties\":false}",
    hint: "Safe: old documents never have the property.",
    peers: &["confluent:OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"],
};

pub static PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL: RuleSpec = RuleSpec {
    id: "PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    format: "json",
    category: "content-model",
    default_severity: Severity::Info,
    summary: "A property was added whose schema accepts everything the old `additionalProperties`/`patternProperties` schema allowed for it.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":{\"type\":\"string\"}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"}},\"additionalProperties\":{\"type\":\"string\"}}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":{\"type\":\"string\"}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"}},\"additionalProperties\":{\"type\":\"string\"}}",
    hint: "Safe: values old producers wrote still validate.",
    peers: &["confluent:PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"],
};

pub static PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL: RuleSpec = RuleSpec {
    id: "PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    format: "json",
    category: "content-model",
    default_severity: Severity::Error,
    summary: "A property was added whose schema rejects values the old `additionalProperties`/`patternProperties` schema allowed for it. Compatible under the LENIENT policy.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":{\"type\":\"string\"}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"integer\"}},\"additionalProperties\":{\"type\":\"string\"}}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":{\"type\":\"string\"}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":{\"type\":\"string\"}}",
    hint: "Give the new property a schema at least as wide as the old additional-properties schema.",
    peers: &["confluent:PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn required_property_added_to_open_content_model_fires_on_its_example() {
        fires(&super::REQUIRED_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL);
    }

    #[test]
    fn required_property_with_default_added_to_open_content_model_fires_on_its_example() {
        fires(&super::REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_OPEN_CONTENT_MODEL);
    }

    #[test]
    fn optional_property_added_to_open_content_model_fires_on_its_example() {
        fires(&super::OPTIONAL_PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL);
    }

    #[test]
    fn property_with_empty_schema_added_to_open_content_model_fires_on_its_example() {
        fires(&super::PROPERTY_WITH_EMPTY_SCHEMA_ADDED_TO_OPEN_CONTENT_MODEL);
    }

    #[test]
    fn required_property_added_to_unopen_content_model_fires_on_its_example() {
        fires(&super::REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL);
    }

    #[test]
    fn required_property_with_default_added_to_unopen_content_model_fires_on_its_example() {
        fires(&super::REQUIRED_PROPERTY_WITH_DEFAULT_ADDED_TO_UNOPEN_CONTENT_MODEL);
    }

    #[test]
    fn optional_property_added_to_unopen_content_model_fires_on_its_example() {
        fires(&super::OPTIONAL_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL);
    }

    #[test]
    fn property_added_is_covered_by_partially_open_content_model_fires_on_its_example() {
        fires(&super::PROPERTY_ADDED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL);
    }

    #[test]
    fn property_added_not_covered_by_partially_open_content_model_fires_on_its_example() {
        fires(&super::PROPERTY_ADDED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL);
    }
}
