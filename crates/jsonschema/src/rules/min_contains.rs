//! Rules for min contains changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static MIN_CONTAINS_ADDED: RuleSpec = RuleSpec {
    id: "MIN_CONTAINS_ADDED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`minContains` was added, rejecting values that were valid before.",
    bad_example: "writer: {\"type\":\"array\",\"contains\":{\"type\":\"string\"}}\nreader: {\"type\":\"array\",\"contains\":{\"type\":\"string\"},\"minContains\":10}",
    good_example: "writer: {\"type\":\"array\",\"contains\":{\"type\":\"string\"}}\nreader: {\"type\":\"array\",\"contains\":{\"type\":\"string\"}}",
    hint: "Add `minContains` only once every producer already respects it, or keep it out of the schema and validate in the consumer.",
    peers: &["confluent:MIN_CONTAINS_ADDED"],
};

pub static MIN_CONTAINS_REMOVED: RuleSpec = RuleSpec {
    id: "MIN_CONTAINS_REMOVED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`minContains` was removed, accepting more values.",
    bad_example: "writer: {\"type\":\"array\",\"contains\":{\"type\":\"string\"},\"minContains\":5}\nreader: {\"type\":\"array\",\"contains\":{\"type\":\"string\"}}",
    good_example: "writer: {\"type\":\"array\",\"contains\":{\"type\":\"string\"},\"minContains\":5}\nreader: {\"type\":\"array\",\"contains\":{\"type\":\"string\"}}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:MIN_CONTAINS_REMOVED"],
};

pub static MIN_CONTAINS_INCREASED: RuleSpec = RuleSpec {
    id: "MIN_CONTAINS_INCREASED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`minContains` was raised, rejecting values that were valid before.",
    bad_example: "writer: {\"type\":\"array\",\"contains\":{\"type\":\"string\"},\"minContains\":5}\nreader: {\"type\":\"array\",\"contains\":{\"type\":\"string\"},\"minContains\":10}",
    good_example: "writer: {\"type\":\"array\",\"contains\":{\"type\":\"string\"},\"minContains\":5}\nreader: {\"type\":\"array\",\"contains\":{\"type\":\"string\"},\"minContains\":5}",
    hint: "Keep the old `minContains`; tighten it only after every stored and in-flight document satisfies the new bound.",
    peers: &["confluent:MIN_CONTAINS_INCREASED"],
};

pub static MIN_CONTAINS_DECREASED: RuleSpec = RuleSpec {
    id: "MIN_CONTAINS_DECREASED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`minContains` was lowered, accepting more values.",
    bad_example: "writer: {\"type\":\"array\",\"contains\":{\"type\":\"string\"},\"minContains\":10}\nreader: {\"type\":\"array\",\"contains\":{\"type\":\"string\"},\"minContains\":5}",
    good_example: "writer: {\"type\":\"array\",\"contains\":{\"type\":\"string\"},\"minContains\":10}\nreader: {\"type\":\"array\",\"contains\":{\"type\":\"string\"},\"minContains\":5}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:MIN_CONTAINS_DECREASED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn min_contains_added_fires_on_its_example() {
        fires(&super::MIN_CONTAINS_ADDED);
    }

    #[test]
    fn min_contains_removed_fires_on_its_example() {
        fires(&super::MIN_CONTAINS_REMOVED);
    }

    #[test]
    fn min_contains_increased_fires_on_its_example() {
        fires(&super::MIN_CONTAINS_INCREASED);
    }

    #[test]
    fn min_contains_decreased_fires_on_its_example() {
        fires(&super::MIN_CONTAINS_DECREASED);
    }
}
