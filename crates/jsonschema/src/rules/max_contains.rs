//! Rules for max contains changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static MAX_CONTAINS_ADDED: RuleSpec = RuleSpec {
    id: "MAX_CONTAINS_ADDED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`maxContains` was added, rejecting values that were valid before.",
    bad_example: "writer: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"contains\":{\"type\":\"string\"}}\nreader: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"contains\":{\"type\":\"string\"},\"maxContains\":10}",
    good_example: "writer: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"contains\":{\"type\":\"string\"}}\nreader: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"contains\":{\"type\":\"string\"}}",
    hint: "Add `maxContains` only once every producer already respects it, or keep it out of the schema and validate in the consumer.",
    peers: &["confluent:MAX_CONTAINS_ADDED"],
};

pub static MAX_CONTAINS_REMOVED: RuleSpec = RuleSpec {
    id: "MAX_CONTAINS_REMOVED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`maxContains` was removed, accepting more values.",
    bad_example: "writer: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"contains\":{\"type\":\"string\"},\"maxContains\":10}\nreader: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"contains\":{\"type\":\"string\"}}",
    good_example: "writer: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"contains\":{\"type\":\"string\"},\"maxContains\":10}\nreader: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"contains\":{\"type\":\"string\"}}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:MAX_CONTAINS_REMOVED"],
};

pub static MAX_CONTAINS_DECREASED: RuleSpec = RuleSpec {
    id: "MAX_CONTAINS_DECREASED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`maxContains` was lowered, rejecting values that were valid before.",
    bad_example: "writer: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"contains\":{\"type\":\"string\"},\"maxContains\":10}\nreader: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"contains\":{\"type\":\"string\"},\"maxContains\":5}",
    good_example: "writer: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"contains\":{\"type\":\"string\"},\"maxContains\":10}\nreader: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"contains\":{\"type\":\"string\"},\"maxContains\":10}",
    hint: "Keep the old `maxContains`; tighten it only after every stored and in-flight document satisfies the new bound.",
    peers: &["confluent:MAX_CONTAINS_DECREASED"],
};

pub static MAX_CONTAINS_INCREASED: RuleSpec = RuleSpec {
    id: "MAX_CONTAINS_INCREASED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`maxContains` was raised, accepting more values.",
    bad_example: "writer: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"contains\":{\"type\":\"string\"},\"maxContains\":5}\nreader: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"contains\":{\"type\":\"string\"},\"maxContains\":10}",
    good_example: "writer: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"contains\":{\"type\":\"string\"},\"maxContains\":5}\nreader: {\"$schema\":\"https://json-schema.org/draft/2020-12/schema\",\"type\":\"array\",\"contains\":{\"type\":\"string\"},\"maxContains\":10}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:MAX_CONTAINS_INCREASED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn max_contains_added_fires_on_its_example() {
        fires(&super::MAX_CONTAINS_ADDED);
    }

    #[test]
    fn max_contains_removed_fires_on_its_example() {
        fires(&super::MAX_CONTAINS_REMOVED);
    }

    #[test]
    fn max_contains_decreased_fires_on_its_example() {
        fires(&super::MAX_CONTAINS_DECREASED);
    }

    #[test]
    fn max_contains_increased_fires_on_its_example() {
        fires(&super::MAX_CONTAINS_INCREASED);
    }
}
