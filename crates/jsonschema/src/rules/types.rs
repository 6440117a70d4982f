//! Rules for types changes (Confluent difference types of the same name).

use covenant_engine::{RuleSpec, Severity};

pub static TYPE_CHANGED: RuleSpec = RuleSpec {
    id: "TYPE_CHANGED",
    format: "json",
    category: "structural",
    default_severity: Severity::Error,
    summary: "A schema's type changed to an unrelated type.",
    bad_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"integer\"}}}",
    good_example: "writer: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}\nreader: {\"type\":\"object\",\"properties\":{\"a\":{\"type\":\"string\"}}}",
    hint: "Keep the old type; add a new property with the new type and migrate producers to it.",
    peers: &["confluent:TYPE_CHANGED"],
};

pub static TYPE_NARROWED: RuleSpec = RuleSpec {
    id: "TYPE_NARROWED",
    format: "json",
    category: "structural",
    default_severity: Severity::Error,
    summary: "`number` became `integer`, rejecting fractional values written before.",
    bad_example: "writer: {\"type\":\"number\"}\nreader: {\"type\":\"integer\"}",
    good_example: "writer: {\"type\":\"number\"}\nreader: {\"type\":\"number\"}",
    hint: "Keep `number`, or validate integrality in the consumer instead of in the schema.",
    peers: &["confluent:TYPE_NARROWED"],
};

pub static TYPE_EXTENDED: RuleSpec = RuleSpec {
    id: "TYPE_EXTENDED",
    format: "json",
    category: "structural",
    default_severity: Severity::Info,
    summary: "`integer` became `number`, accepting more values.",
    bad_example: "writer: {\"type\":\"integer\"}\nreader: {\"type\":\"number\"}",
    good_example: "writer: {\"type\":\"integer\"}\nreader: {\"type\":\"number\"}",
    hint: "Widening is safe for readers; check producers of the new range are expected.",
    peers: &["confluent:TYPE_EXTENDED"],
};

#[cfg(test)]
mod tests {
    use crate::rules::test_support::fires;

    #[test]
    fn type_changed_fires_on_its_example() {
        fires(&super::TYPE_CHANGED);
    }

    #[test]
    fn type_narrowed_fires_on_its_example() {
        fires(&super::TYPE_NARROWED);
    }

    #[test]
    fn type_extended_fires_on_its_example() {
        fires(&super::TYPE_EXTENDED);
    }
}
