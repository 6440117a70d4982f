//! Rules for dependency array changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static DEPENDENCY_ARRAY_ADDED: RuleSpec = RuleSpec {
    id: "DEPENDENCY_ARRAY_ADDED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "A property dependency (`dependencies`/`dependentRequired`) was added.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}},\"dependencies\":{\"a\":[\"b\"]}}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}}}",
    hint: "Add the dependency only once every producer writes the dependent properties together.",
    peers: &["confluent:DEPENDENCY_ARRAY_ADDED"],
};

pub static DEPENDENCY_ARRAY_REMOVED: RuleSpec = RuleSpec {
    id: "DEPENDENCY_ARRAY_REMOVED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "A property dependency was removed.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}},\"dependencies\":{\"a\":[\"b\"]}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}}}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}},\"dependencies\":{\"a\":[\"b\"]}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}}}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:DEPENDENCY_ARRAY_REMOVED"],
};

pub static DEPENDENCY_ARRAY_EXTENDED: RuleSpec = RuleSpec {
    id: "DEPENDENCY_ARRAY_EXTENDED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "A property dependency now requires more properties.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}},\"dependencies\":{\"a\":[\"b\"]}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}},\"dependencies\":{\"a\":[\"b\",\"c\"]}}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}},\"dependencies\":{\"a\":[\"b\"]}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}},\"dependencies\":{\"a\":[\"b\"]}}",
    hint: "Keep the old list of dependent properties.",
    peers: &["confluent:DEPENDENCY_ARRAY_EXTENDED"],
};

pub static DEPENDENCY_ARRAY_NARROWED: RuleSpec = RuleSpec {
    id: "DEPENDENCY_ARRAY_NARROWED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "A property dependency now requires fewer properties.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}},\"dependencies\":{\"a\":[\"b\",\"c\"]}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}},\"dependencies\":{\"a\":[\"b\"]}}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}},\"dependencies\":{\"a\":[\"b\",\"c\"]}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}},\"dependencies\":{\"a\":[\"b\"]}}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:DEPENDENCY_ARRAY_NARROWED"],
};

pub static DEPENDENCY_ARRAY_CHANGED: RuleSpec = RuleSpec {
    id: "DEPENDENCY_ARRAY_CHANGED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "A property dependency requires different properties.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}},\"dependencies\":{\"a\":[\"b\"]}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}},\"dependencies\":{\"a\":[\"c\"]}}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}},\"dependencies\":{\"a\":[\"b\"]}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}},\"dependencies\":{\"a\":[\"b\"]}}",
    hint: "Keep the old list of dependent properties.",
    peers: &["confluent:DEPENDENCY_ARRAY_CHANGED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn dependency_array_added_fires_on_its_example() {
        fires(&super::DEPENDENCY_ARRAY_ADDED);
    }

    #[test]
    fn dependency_array_removed_fires_on_its_example() {
        fires(&super::DEPENDENCY_ARRAY_REMOVED);
    }

    #[test]
    fn dependency_array_extended_fires_on_its_example() {
        fires(&super::DEPENDENCY_ARRAY_EXTENDED);
    }

    #[test]
    fn dependency_array_narrowed_fires_on_its_example() {
        fires(&super::DEPENDENCY_ARRAY_NARROWED);
    }

    #[test]
    fn dependency_array_changed_fires_on_its_example() {
        fires(&super::DEPENDENCY_ARRAY_CHANGED);
    }
}
