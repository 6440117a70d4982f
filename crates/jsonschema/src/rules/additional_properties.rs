//! Rules for additional properties changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static ADDITIONAL_PROPERTIES_ADDED: RuleSpec = RuleSpec {
    id: "ADDITIONAL_PROPERTIES_ADDED",
    format: "json",
    category: "content-model",
    default_severity: Severity::Info,
    summary: "`additionalProperties: false` was removed, so unknown properties are accepted.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":false}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":false}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}",
    hint: "Opening a content model is safe for readers.",
    peers: &["confluent:ADDITIONAL_PROPERTIES_ADDED"],
};

pub static ADDITIONAL_PROPERTIES_REMOVED: RuleSpec = RuleSpec {
    id: "ADDITIONAL_PROPERTIES_REMOVED",
    format: "json",
    category: "content-model",
    default_severity: Severity::Error,
    summary: "`additionalProperties: false` was added, rejecting documents with extra properties. Compatible under the LENIENT policy.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":false}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}",
    hint: "Keep the model open; list the properties you know instead of closing it.",
    peers: &["confluent:ADDITIONAL_PROPERTIES_REMOVED"],
};

pub static ADDITIONAL_PROPERTIES_NARROWED: RuleSpec = RuleSpec {
    id: "ADDITIONAL_PROPERTIES_NARROWED",
    format: "json",
    category: "content-model",
    default_severity: Severity::Error,
    summary: "`additionalProperties` became a schema where it was open, constraining extra properties. Compatible under the LENIENT policy.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":{\"type\":\"string\"}}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}",
    hint: "Keep `additionalProperties` open, or make sure every extra property old producers write matches the new schema.",
    peers: &["confluent:ADDITIONAL_PROPERTIES_NARROWED"],
};

pub static ADDITIONAL_PROPERTIES_EXTENDED: RuleSpec = RuleSpec {
    id: "ADDITIONAL_PROPERTIES_EXTENDED",
    format: "json",
    category: "content-model",
    default_severity: Severity::Info,
    summary: "A schema for `additionalProperties` was removed, so extra properties are unconstrained.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":{\"type\":\"string\"}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"additionalProperties\":{\"type\":\"string\"}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}",
    hint: "Opening a content model is safe for readers.",
    peers: &["confluent:ADDITIONAL_PROPERTIES_EXTENDED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn additional_properties_added_fires_on_its_example() {
        fires(&super::ADDITIONAL_PROPERTIES_ADDED);
    }

    #[test]
    fn additional_properties_removed_fires_on_its_example() {
        fires(&super::ADDITIONAL_PROPERTIES_REMOVED);
    }

    #[test]
    fn additional_properties_narrowed_fires_on_its_example() {
        fires(&super::ADDITIONAL_PROPERTIES_NARROWED);
    }

    #[test]
    fn additional_properties_extended_fires_on_its_example() {
        fires(&super::ADDITIONAL_PROPERTIES_EXTENDED);
    }
}
