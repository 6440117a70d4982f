//! Rules for property removed changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL: RuleSpec = RuleSpec {
    id: "PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL",
    format: "json",
    category: "content-model",
    default_severity: Severity::Info,
    summary: "A property was removed from an open content model.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}",
    hint: "Safe for readers; the property is still accepted as an additional property.",
    peers: &["confluent:PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL"],
};

pub static PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL: RuleSpec = RuleSpec {
    id: "PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL",
    format: "json",
    category: "content-model",
    default_severity: Severity::Error,
    summary: "A property was removed from a closed content model, so documents that carry it are rejected. Compatible under the LENIENT policy.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"}},\"additionalProperties\":false}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":false}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"}},\"additionalProperties\":false}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"}},\"additionalProperties\":false}",
    hint: "Keep the property (mark it deprecated in its description), or set its schema to `false` only after producers stopped writing it.",
    peers: &["confluent:PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL"],
};

pub static PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL: RuleSpec = RuleSpec {
    id: "PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL",
    format: "json",
    category: "content-model",
    default_severity: Severity::Info,
    summary: "A property whose schema was `false` was removed from a closed content model.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":false},\"additionalProperties\":false}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":false}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":false},\"additionalProperties\":false}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":false}",
    hint: "Safe: no document could carry the property.",
    peers: &["confluent:PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL"],
};

pub static PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL: RuleSpec = RuleSpec {
    id: "PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    format: "json",
    category: "content-model",
    default_severity: Severity::Info,
    summary: "A property was removed and the new `additionalProperties`/`patternProperties` schema still accepts its values.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"}},\"additionalProperties\":{\"type\":\"string\"}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":{\"type\":\"string\"}}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"}},\"additionalProperties\":{\"type\":\"string\"}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":{\"type\":\"string\"}}",
    hint: "Safe: old values still validate as additional properties.",
    peers: &["confluent:PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"],
};

pub static PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL: RuleSpec = RuleSpec {
    id: "PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL",
    format: "json",
    category: "content-model",
    default_severity: Severity::Error,
    summary: "A property was removed and the new `additionalProperties`/`patternProperties` schema rejects its old values. Compatible under the LENIENT policy.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"integer\"}},\"additionalProperties\":{\"type\":\"string\"}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":{\"type\":\"string\"}}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"integer\"}},\"additionalProperties\":{\"type\":\"string\"}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"integer\"}},\"additionalProperties\":{\"type\":\"string\"}}",
    hint: "Keep the property, or widen the additional-properties schema to cover its values.",
    peers: &["confluent:PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn property_removed_from_open_content_model_fires_on_its_example() {
        fires(&super::PROPERTY_REMOVED_FROM_OPEN_CONTENT_MODEL);
    }

    #[test]
    fn property_removed_from_closed_content_model_fires_on_its_example() {
        fires(&super::PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL);
    }

    #[test]
    fn property_with_false_removed_from_closed_content_model_fires_on_its_example() {
        fires(&super::PROPERTY_WITH_FALSE_REMOVED_FROM_CLOSED_CONTENT_MODEL);
    }

    #[test]
    fn property_removed_is_covered_by_partially_open_content_model_fires_on_its_example() {
        fires(&super::PROPERTY_REMOVED_IS_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL);
    }

    #[test]
    fn property_removed_not_covered_by_partially_open_content_model_fires_on_its_example() {
        fires(&super::PROPERTY_REMOVED_NOT_COVERED_BY_PARTIALLY_OPEN_CONTENT_MODEL);
    }
}
