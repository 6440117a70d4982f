//! Confluent `SchemaDiff` difference `MULTIPLE_FIELDS_MOVED_TO_ONEOF`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "MULTIPLE_FIELDS_MOVED_TO_ONEOF",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Error,
    summary: "Several existing fields were moved into one oneof, so data that set more than one of them loses values.",
    bad_example: "int32 a = 1; int32 b = 2; -> oneof k { int32 a = 1; int32 b = 2; }",
    good_example: "oneof k { int32 a_v2 = 5; int32 b_v2 = 6; }",
    hint: "Add a new oneof with new field numbers; never make existing fields mutually exclusive.",
    peers: &[
        "confluent:MULTIPLE_FIELDS_MOVED_TO_ONEOF",
        "buf:FIELD_SAME_ONEOF",
    ],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str = "syntax = \"proto3\";\nmessage A { int32 y = 2; int32 z = 3; }\n";
    const NEW: &str = "syntax = \"proto3\";\nmessage A { oneof k { int32 y = 2; int32 z = 3; } }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Confluent);
    }

    #[test]
    fn silent_without_a_change() {
        silent(&RULE, OLD, OLD, Confluent);
    }
}
