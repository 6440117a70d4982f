//! Confluent `SchemaDiff` difference `FIELD_SCALAR_KIND_CHANGED`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "FIELD_SCALAR_KIND_CHANGED",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Error,
    summary: "A scalar field changed to a type with a different wire encoding.",
    bad_example: "int32 count = 2; -> string count = 2;",
    good_example: "int32 -> int64 (same varint encoding)",
    hint: "Only change within a compatible group (int32/int64/uint32/uint64/bool/enum, sint32/sint64, fixed32/sfixed32, fixed64/sfixed64, string/bytes); otherwise add a new field.",
    peers: &[
        "confluent:FIELD_SCALAR_KIND_CHANGED",
        "buf:FIELD_WIRE_COMPATIBLE_TYPE",
    ],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str = "syntax = \"proto3\";\nmessage A { int32 x = 1; }\n";
    const NEW: &str = "syntax = \"proto3\";\nmessage A { string x = 1; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Confluent);
    }

    #[test]
    fn silent_without_a_change() {
        silent(&RULE, OLD, OLD, Confluent);
    }
}
