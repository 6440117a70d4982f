//! Rules for dependency schema changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static DEPENDENCY_SCHEMA_ADDED: RuleSpec = RuleSpec {
    id: "DEPENDENCY_SCHEMA_ADDED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Error,
    summary: "A schema dependency (`dependencies`/`dependentSchemas`) was added.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}},\"dependencies\":{\"a\":{\"required\":[\"b\"]}}}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}}}",
    hint: "Add the dependency only once every producer satisfies it.",
    peers: &["confluent:DEPENDENCY_SCHEMA_ADDED"],
};

pub static DEPENDENCY_SCHEMA_REMOVED: RuleSpec = RuleSpec {
    id: "DEPENDENCY_SCHEMA_REMOVED",
    format: "json",
    category: "constraint",
    default_severity: Severity::Info,
    summary: "A schema dependency was removed.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}},\"dependencies\":{\"a\":{\"required\":[\"b\"]}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}}}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}},\"dependencies\":{\"a\":{\"required\":[\"b\"]}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"},\"b\":{\"type\":\"string\"},\"c\":{\"type\":\"string\"}}}",
    hint: "Loosening a constraint is safe for readers.",
    peers: &["confluent:DEPENDENCY_SCHEMA_REMOVED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn dependency_schema_added_fires_on_its_example() {
        fires(&super::DEPENDENCY_SCHEMA_ADDED);
    }

    #[test]
    fn dependency_schema_removed_fires_on_its_example() {
        fires(&super::DEPENDENCY_SCHEMA_REMOVED);
    }
}
