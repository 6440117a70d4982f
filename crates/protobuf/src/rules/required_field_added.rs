//! Confluent `SchemaDiff` difference `REQUIRED_FIELD_ADDED`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "REQUIRED_FIELD_ADDED",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Error,
    summary: "A proto2 required field was added; old data does not have it, so parsing fails.",
    bad_example: "required string id = 4; (new)",
    good_example: "optional string id = 4;",
    hint: "Add the field as optional and enforce presence in application validation.",
    peers: &[
        "confluent:REQUIRED_FIELD_ADDED",
        "buf:MESSAGE_SAME_REQUIRED_FIELDS",
    ],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str = "syntax = \"proto2\";\nmessage A { optional string x = 1; }\n";
    const NEW: &str =
        "syntax = \"proto2\";\nmessage A { optional string x = 1; required string y = 2; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Confluent);
    }

    #[test]
    fn silent_without_a_change() {
        silent(&RULE, OLD, OLD, Confluent);
    }
}
