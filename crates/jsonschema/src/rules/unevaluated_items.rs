//! Rules for unevaluated items changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static UNEVALUATED_ITEMS_ADDED: RuleSpec = RuleSpec {
    id: "UNEVALUATED_ITEMS_ADDED",
    format: "json",
    category: "content-model",
    default_severity: Severity::Info,
    summary: "`unevaluatedItems: false` was removed or opened.",
    bad_example: "writer: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"}],\"unevaluatedItems\":false}\nreader: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"}]}",
    good_example: "writer: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"}],\"unevaluatedItems\":false}\nreader: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"}]}",
    hint: "Opening a content model is safe for readers.",
    peers: &["confluent:UNEVALUATED_ITEMS_ADDED"],
};

pub static UNEVALUATED_ITEMS_REMOVED: RuleSpec = RuleSpec {
    id: "UNEVALUATED_ITEMS_REMOVED",
    format: "json",
    category: "content-model",
    default_severity: Severity::Error,
    summary: "`unevaluatedItems: false` was added, rejecting longer arrays.",
    bad_example: "writer: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"}]}\nreader: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"}],\"unevaluatedItems\":false}",
    good_example: "writer: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"}]}\nreader: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"}]}",
    hint: "Keep the array open.",
    peers: &["confluent:UNEVALUATED_ITEMS_REMOVED"],
};

pub static UNEVALUATED_ITEMS_NARROWED: RuleSpec = RuleSpec {
    id: "UNEVALUATED_ITEMS_NARROWED",
    format: "json",
    category: "content-model",
    default_severity: Severity::Error,
    summary: "`unevaluatedItems` became a schema where it was open.",
    bad_example: "writer: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"}]}\nreader: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"}],\"unevaluatedItems\":{\"type\":\"string\"}}",
    good_example: "writer: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"}]}\nreader: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"}]}",
    hint: "Keep it open, or make sure every extra item old producers write matches the new schema.",
    peers: &["confluent:UNEVALUATED_ITEMS_NARROWED"],
};

pub static UNEVALUATED_ITEMS_EXTENDED: RuleSpec = RuleSpec {
    id: "UNEVALUATED_ITEMS_EXTENDED",
    format: "json",
    category: "content-model",
    default_severity: Severity::Info,
    summary: "An `unevaluatedItems` schema was removed or loosened to `true`.",
    bad_example: "writer: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"}],\"unevaluatedItems\":{\"type\":\"string\"}}\nreader: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"}]}",
    good_example: "writer: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"}],\"unevaluatedItems\":{\"type\":\"string\"}}\nreader: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"prefixItems\":[{\"type\":\"string\"}]}",
    hint: "Opening a content model is safe for readers.",
    peers: &["confluent:UNEVALUATED_ITEMS_EXTENDED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn unevaluated_items_added_fires_on_its_example() {
        fires(&super::UNEVALUATED_ITEMS_ADDED);
    }

    #[test]
    fn unevaluated_items_removed_fires_on_its_example() {
        fires(&super::UNEVALUATED_ITEMS_REMOVED);
    }

    #[test]
    fn unevaluated_items_narrowed_fires_on_its_example() {
        fires(&super::UNEVALUATED_ITEMS_NARROWED);
    }

    #[test]
    fn unevaluated_items_extended_fires_on_its_example() {
        fires(&super::UNEVALUATED_ITEMS_EXTENDED);
    }
}
