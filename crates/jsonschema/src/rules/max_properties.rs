//! Rules for max properties changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static MAX_PROPERTIES_ADDED: RuleSpec = RuleSpec {
    id: "MAX_PROPERTIES_ADDED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`maxProperties` was added, rejecting values that were valid before.",
    bad_example: "writer: {\"type\":\"object\"}\nreader: {\"type\":\"object\",\"maxProperties\":10}",
    good_example: "writer: {\"type\":\"object\"}\nreader: {\"type\":\"object\"}",
    hint: "Add `maxProperties` only once every producer already respects it, or keep it out of the schema and validate in the consumer.",
    peers: &["confluent:MAX_PROPERTIES_ADDED"],
};

pub static MAX_PROPERTIES_REMOVED: RuleSpec = RuleSpec {
    id: "MAX_PROPERTIES_REMOVED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`maxProperties` was removed, accepting more values.",
    bad_example: "writer: {\"type\":\"object\",\"maxProperties\":10}\nreader: {\"type\":\"object\"}",
    good_example: "writer: {\"type\":\"object\",\"maxProperties\":10}\nreader: {\"type\":\"object\"}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:MAX_PROPERTIES_REMOVED"],
};

pub static MAX_PROPERTIES_DECREASED: RuleSpec = RuleSpec {
    id: "MAX_PROPERTIES_DECREASED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`maxProperties` was lowered, rejecting values that were valid before.",
    bad_example: "writer: {\"type\":\"object\",\"maxProperties\":10}\nreader: {\"type\":\"object\",\"maxProperties\":5}",
    good_example: "writer: {\"type\":\"object\",\"maxProperties\":10}\nreader: {\"type\":\"object\",\"maxProperties\":10}",
    hint: "Keep the old `maxProperties`; tighten it only after every stored and in-flight document satisfies the new bound.",
    peers: &["confluent:MAX_PROPERTIES_DECREASED"],
};

pub static MAX_PROPERTIES_INCREASED: RuleSpec = RuleSpec {
    id: "MAX_PROPERTIES_INCREASED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`maxProperties` was raised, accepting more values.",
    bad_example: "writer: {\"type\":\"object\",\"maxProperties\":5}\nreader: {\"type\":\"object\",\"maxProperties\":10}",
    good_example: "writer: {\"type\":\"object\",\"maxProperties\":5}\nreader: {\"type\":\"object\",\"maxProperties\":10}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:MAX_PROPERTIES_INCREASED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn max_properties_added_fires_on_its_example() {
        fires(&super::MAX_PROPERTIES_ADDED);
    }

    #[test]
    fn max_properties_removed_fires_on_its_example() {
        fires(&super::MAX_PROPERTIES_REMOVED);
    }

    #[test]
    fn max_properties_decreased_fires_on_its_example() {
        fires(&super::MAX_PROPERTIES_DECREASED);
    }

    #[test]
    fn max_properties_increased_fires_on_its_example() {
        fires(&super::MAX_PROPERTIES_INCREASED);
    }
}
