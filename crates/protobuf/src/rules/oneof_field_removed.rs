//! Confluent `SchemaDiff` difference `ONEOF_FIELD_REMOVED`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "ONEOF_FIELD_REMOVED",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Error,
    summary: "A member of a oneof that still exists was removed, so data that set it loses its value.",
    bad_example: "oneof k { string a = 1; string b = 2; } -> oneof k { string a = 1; }",
    good_example: "keep b and stop writing it",
    hint: "Keep the member (deprecated) or remove the whole oneof.",
    peers: &[
        "confluent:ONEOF_FIELD_REMOVED",
        "buf:FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED",
    ],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str =
        "syntax = \"proto3\";\nmessage A { oneof k { string y = 2; string z = 3; } }\n";
    const NEW: &str = "syntax = \"proto3\";\nmessage A { oneof k { string y = 2; } }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Confluent);
    }

    #[test]
    fn silent_without_a_change() {
        silent(&RULE, OLD, OLD, Confluent);
    }
}
