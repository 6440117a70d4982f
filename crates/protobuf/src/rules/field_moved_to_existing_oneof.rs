//! Confluent `SchemaDiff` difference `FIELD_MOVED_TO_EXISTING_ONEOF`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "FIELD_MOVED_TO_EXISTING_ONEOF",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Error,
    summary: "An existing field was moved into a oneof that already had members, making previously independent fields mutually exclusive.",
    bad_example: "int32 a = 1; oneof k { int32 b = 2; } -> oneof k { int32 a = 1; int32 b = 2; }",
    good_example: "oneof k { int32 b = 2; int32 a_v2 = 5; }",
    hint: "Add a new member with a new number instead of moving an existing field.",
    peers: &[
        "confluent:FIELD_MOVED_TO_EXISTING_ONEOF",
        "buf:FIELD_SAME_ONEOF",
    ],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str = "syntax = \"proto3\";\nmessage A { int32 y = 1; oneof k { int32 z = 2; } }\n";
    const NEW: &str = "syntax = \"proto3\";\nmessage A { oneof k { int32 y = 1; int32 z = 2; } }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Confluent);
    }

    #[test]
    fn silent_without_a_change() {
        silent(&RULE, OLD, OLD, Confluent);
    }
}
