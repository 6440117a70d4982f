//! Confluent `SchemaDiff` difference `ONEOF_FIELD_MOVED_TO_TOP_LEVEL`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "ONEOF_FIELD_MOVED_TO_TOP_LEVEL",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Info,
    summary: "A oneof member became a top-level field with the same number and type; this only relaxes exclusivity.",
    bad_example: "// before\nsyntax = \"proto3\";\npackage shop;\nmessage Order { oneof payment { string card = 5; string iban = 6; } }\n// after\nsyntax = \"proto3\";\npackage shop;\nmessage Order { oneof payment { string card = 5; } string iban = 6; }",
    good_example: "Keep the member inside the oneof when writers rely on exclusivity.",
    hint: "Compatible for Confluent; buf's FIELD_SAME_ONEOF rejects it for generated code.",
    peers: &[
        "confluent:ONEOF_FIELD_MOVED_TO_TOP_LEVEL",
        "buf:FIELD_SAME_ONEOF",
    ],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str = "syntax = \"proto3\";\nmessage A { oneof k { int32 y = 2; int32 z = 3; } }\n";
    const NEW: &str = "syntax = \"proto3\";\nmessage A { oneof k { int32 y = 2; } int32 z = 3; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Confluent);
    }

    #[test]
    fn silent_without_a_change() {
        silent(&RULE, OLD, OLD, Confluent);
    }
}
