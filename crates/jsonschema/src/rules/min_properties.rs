//! Rules for min properties changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static MIN_PROPERTIES_ADDED: RuleSpec = RuleSpec {
    id: "MIN_PROPERTIES_ADDED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`minProperties` was added, rejecting values that were valid before.",
    bad_example: "writer: {\"type\":\"object\"}\nreader: {\"type\":\"object\",\"minProperties\":10}",
    good_example: "writer: {\"type\":\"object\"}\nreader: {\"type\":\"object\"}",
    hint: "Add `minProperties` only once every producer already respects it, or keep it out of the schema and validate in the consumer.",
    peers: &["confluent:MIN_PROPERTIES_ADDED"],
};

pub static MIN_PROPERTIES_REMOVED: RuleSpec = RuleSpec {
    id: "MIN_PROPERTIES_REMOVED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`minProperties` was removed, accepting more values.",
    bad_example: "writer: {\"type\":\"object\",\"minProperties\":5}\nreader: {\"type\":\"object\"}",
    good_example: "writer: {\"type\":\"object\",\"minProperties\":5}\nreader: {\"type\":\"object\"}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:MIN_PROPERTIES_REMOVED"],
};

pub static MIN_PROPERTIES_INCREASED: RuleSpec = RuleSpec {
    id: "MIN_PROPERTIES_INCREASED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`minProperties` was raised, rejecting values that were valid before.",
    bad_example: "writer: {\"type\":\"object\",\"minProperties\":5}\nreader: {\"type\":\"object\",\"minProperties\":10}",
    good_example: "writer: {\"type\":\"object\",\"minProperties\":5}\nreader: {\"type\":\"object\",\"minProperties\":5}",
    hint: "Keep the old `minProperties`; tighten it only after every stored and in-flight document satisfies the new bound.",
    peers: &["confluent:MIN_PROPERTIES_INCREASED"],
};

pub static MIN_PROPERTIES_DECREASED: RuleSpec = RuleSpec {
    id: "MIN_PROPERTIES_DECREASED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`minProperties` was lowered, accepting more values.",
    bad_example: "writer: {\"type\":\"object\",\"minProperties\":10}\nreader: {\"type\":\"object\",\"minProperties\":5}",
    good_example: "writer: {\"type\":\"object\",\"minProperties\":10}\nreader: {\"type\":\"object\",\"minProperties\":5}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:MIN_PROPERTIES_DECREASED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn min_properties_added_fires_on_its_example() {
        fires(&super::MIN_PROPERTIES_ADDED);
    }

    #[test]
    fn min_properties_removed_fires_on_its_example() {
        fires(&super::MIN_PROPERTIES_REMOVED);
    }

    #[test]
    fn min_properties_increased_fires_on_its_example() {
        fires(&super::MIN_PROPERTIES_INCREASED);
    }

    #[test]
    fn min_properties_decreased_fires_on_its_example() {
        fires(&super::MIN_PROPERTIES_DECREASED);
    }
}
