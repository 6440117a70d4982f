//! Rules for multiple of changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static MULTIPLE_OF_ADDED: RuleSpec = RuleSpec {
    id: "MULTIPLE_OF_ADDED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`multipleOf` was added, rejecting numbers that were valid before.",
    bad_example: "writer: {\"type\":\"number\"}\nreader: {\"type\":\"number\",\"multipleOf\":2}",
    good_example: "writer: {\"type\":\"number\"}\nreader: {\"type\":\"number\"}",
    hint: "Add `multipleOf` only once every producer complies.",
    peers: &["confluent:MULTIPLE_OF_ADDED"],
};

pub static MULTIPLE_OF_REMOVED: RuleSpec = RuleSpec {
    id: "MULTIPLE_OF_REMOVED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`multipleOf` was removed, accepting more numbers.",
    bad_example: "writer: {\"type\":\"number\",\"multipleOf\":2}\nreader: {\"type\":\"number\"}",
    good_example: "writer: {\"type\":\"number\",\"multipleOf\":2}\nreader: {\"type\":\"number\"}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:MULTIPLE_OF_REMOVED"],
};

pub static MULTIPLE_OF_EXPANDED: RuleSpec = RuleSpec {
    id: "MULTIPLE_OF_EXPANDED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`multipleOf` became a multiple of the old value, rejecting numbers that were valid before.",
    bad_example: "writer: {\"type\":\"number\",\"multipleOf\":2}\nreader: {\"type\":\"number\",\"multipleOf\":4}",
    good_example: "writer: {\"type\":\"number\",\"multipleOf\":2}\nreader: {\"type\":\"number\",\"multipleOf\":2}",
    hint: "Keep the old divisor, or a divisor of it.",
    peers: &["confluent:MULTIPLE_OF_EXPANDED"],
};

pub static MULTIPLE_OF_REDUCED: RuleSpec = RuleSpec {
    id: "MULTIPLE_OF_REDUCED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "`multipleOf` became a divisor of the old value, accepting more numbers.",
    bad_example: "writer: {\"type\":\"number\",\"multipleOf\":4}\nreader: {\"type\":\"number\",\"multipleOf\":2}",
    good_example: "writer: {\"type\":\"number\",\"multipleOf\":4}\nreader: {\"type\":\"number\",\"multipleOf\":2}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:MULTIPLE_OF_REDUCED"],
};

pub static MULTIPLE_OF_CHANGED: RuleSpec = RuleSpec {
    id: "MULTIPLE_OF_CHANGED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "`multipleOf` changed to an unrelated value.",
    bad_example: "writer: {\"type\":\"number\",\"multipleOf\":2}\nreader: {\"type\":\"number\",\"multipleOf\":3}",
    good_example: "writer: {\"type\":\"number\",\"multipleOf\":2}\nreader: {\"type\":\"number\",\"multipleOf\":2}",
    hint: "Only change `multipleOf` to a divisor of the old value.",
    peers: &["confluent:MULTIPLE_OF_CHANGED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn multiple_of_added_fires_on_its_example() {
        fires(&super::MULTIPLE_OF_ADDED);
    }

    #[test]
    fn multiple_of_removed_fires_on_its_example() {
        fires(&super::MULTIPLE_OF_REMOVED);
    }

    #[test]
    fn multiple_of_expanded_fires_on_its_example() {
        fires(&super::MULTIPLE_OF_EXPANDED);
    }

    #[test]
    fn multiple_of_reduced_fires_on_its_example() {
        fires(&super::MULTIPLE_OF_REDUCED);
    }

    #[test]
    fn multiple_of_changed_fires_on_its_example() {
        fires(&super::MULTIPLE_OF_CHANGED);
    }
}
