//! Rules for metadata changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static ID_CHANGED: RuleSpec = RuleSpec {
    id: "ID_CHANGED",
    format: "json",
    category: "metadata",
    default_severity: Severity::Info,
    summary: "The schema's `$id` changed.",
    bad_example: "writer: {\"$id\":\"urn:a\",\"type\":\"string\"}\nreader: {\"$id\":\"urn:b\",\"type\":\"string\"}",
    good_example: "writer: {\"$id\":\"urn:a\",\"type\":\"string\"}\nreader: {\"$id\":\"urn:b\",\"type\":\"string\"}",
    hint: "Metadata does not affect which documents are valid; no action is needed.",
    peers: &["confluent:ID_CHANGED"],
};

pub static TITLE_CHANGED: RuleSpec = RuleSpec {
    id: "TITLE_CHANGED",
    format: "json",
    category: "metadata",
    default_severity: Severity::Info,
    summary: "A schema's `title` changed.",
    bad_example: "writer: {\"title\":\"A\",\"type\":\"string\"}\nreader: {\"title\":\"B\",\"type\":\"string\"}",
    good_example: "writer: {\"title\":\"A\",\"type\":\"string\"}\nreader: {\"title\":\"B\",\"type\":\"string\"}",
    hint: "Metadata does not affect which documents are valid; no action is needed.",
    peers: &["confluent:TITLE_CHANGED"],
};

pub static DESCRIPTION_CHANGED: RuleSpec = RuleSpec {
    id: "DESCRIPTION_CHANGED",
    format: "json",
    category: "metadata",
    default_severity: Severity::Info,
    summary: "A schema's `description` changed.",
    bad_example: "writer: {\"description\":\"A\",\"type\":\"string\"}\nreader: {\"description\":\"B\",\"type\":\"string\"}",
    good_example: "writer: {\"description\":\"A\",\"type\":\"string\"}\nreader: {\"description\":\"B\",\"type\":\"string\"}",
    hint: "Metadata does not affect which documents are valid; no action is needed.",
    peers: &["confluent:DESCRIPTION_CHANGED"],
};

pub static DEFAULT_CHANGED: RuleSpec = RuleSpec {
    id: "DEFAULT_CHANGED",
    format: "json",
    category: "metadata",
    default_severity: Severity::Info,
    summary: "A schema's `default` changed.",
    bad_example: "writer: {\"default\":\"a\",\"type\":\"string\"}\nreader: {\"default\":\"b\",\"type\":\"string\"}",
    good_example: "writer: {\"default\":\"a\",\"type\":\"string\"}\nreader: {\"default\":\"b\",\"type\":\"string\"}",
    hint: "Readers that fill in defaults will now fill in the new value; make sure consumers expect it.",
    peers: &["confluent:DEFAULT_CHANGED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn id_changed_fires_on_its_example() {
        fires(&super::ID_CHANGED);
    }

    #[test]
    fn title_changed_fires_on_its_example() {
        fires(&super::TITLE_CHANGED);
    }

    #[test]
    fn description_changed_fires_on_its_example() {
        fires(&super::DESCRIPTION_CHANGED);
    }

    #[test]
    fn default_changed_fires_on_its_example() {
        fires(&super::DEFAULT_CHANGED);
    }
}
