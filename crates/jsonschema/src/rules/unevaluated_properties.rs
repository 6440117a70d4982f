//! Rules for unevaluated properties changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static UNEVALUATED_PROPERTIES_ADDED: RuleSpec = RuleSpec {
    id: "UNEVALUATED_PROPERTIES_ADDED",
    format: "json",
    category: "content-model",
    default_severity: Severity::Info,
    summary: "`unevaluatedProperties: false` was removed or opened.",
    bad_example: "writer: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"unevaluatedProperties\":false}\nreader: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}",
    good_example: "writer: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"unevaluatedProperties\":false}\nreader: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}",
    hint: "Opening a content model is safe for readers.",
    peers: &["confluent:UNEVALUATED_PROPERTIES_ADDED"],
};

pub static UNEVALUATED_PROPERTIES_REMOVED: RuleSpec = RuleSpec {
    id: "UNEVALUATED_PROPERTIES_REMOVED",
    format: "json",
    category: "content-model",
    default_severity: Severity::Error,
    summary: "`unevaluatedProperties: false` was added, rejecting extra properties. Compatible under the LENIENT policy.",
    bad_example: "writer: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}\nreader: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"unevaluatedProperties\":false}",
    good_example: "writer: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}\nreader: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}",
    hint: "Keep the model open; list the properties you know instead of closing it.",
    peers: &["confluent:UNEVALUATED_PROPERTIES_REMOVED"],
};

pub static UNEVALUATED_PROPERTIES_NARROWED: RuleSpec = RuleSpec {
    id: "UNEVALUATED_PROPERTIES_NARROWED",
    format: "json",
    category: "content-model",
    default_severity: Severity::Error,
    summary: "`unevaluatedProperties` became a schema where it was open. Compatible under the LENIENT policy.",
    bad_example: "writer: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}\nreader: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"unevaluatedProperties\":{\"type\":\"string\"}}",
    good_example: "writer: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}\nreader: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}",
    hint: "Keep it open, or make sure every extra property old producers write matches the new schema.",
    peers: &["confluent:UNEVALUATED_PROPERTIES_NARROWED"],
};

pub static UNEVALUATED_PROPERTIES_EXTENDED: RuleSpec = RuleSpec {
    id: "UNEVALUATED_PROPERTIES_EXTENDED",
    format: "json",
    category: "content-model",
    default_severity: Severity::Info,
    summary: "An `unevaluatedProperties` schema was removed or loosened to `true`.",
    bad_example: "writer: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"unevaluatedProperties\":{\"type\":\"string\"}}\nreader: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}",
    good_example: "writer: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}},\"unevaluatedProperties\":{\"type\":\"string\"}}\nreader: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}",
    hint: "Opening a content model is safe for readers.",
    peers: &["confluent:UNEVALUATED_PROPERTIES_EXTENDED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn unevaluated_properties_added_fires_on_its_example() {
        fires(&super::UNEVALUATED_PROPERTIES_ADDED);
    }

    #[test]
    fn unevaluated_properties_removed_fires_on_its_example() {
        fires(&super::UNEVALUATED_PROPERTIES_REMOVED);
    }

    #[test]
    fn unevaluated_properties_narrowed_fires_on_its_example() {
        fires(&super::UNEVALUATED_PROPERTIES_NARROWED);
    }

    #[test]
    fn unevaluated_properties_extended_fires_on_its_example() {
        fires(&super::UNEVALUATED_PROPERTIES_EXTENDED);
    }
}
