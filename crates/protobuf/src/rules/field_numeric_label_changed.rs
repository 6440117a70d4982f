//! Confluent `SchemaDiff` difference `FIELD_NUMERIC_LABEL_CHANGED`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "FIELD_NUMERIC_LABEL_CHANGED",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Error,
    summary: "A numeric field changed between singular and repeated.",
    bad_example: "optional int32 n = 1; -> repeated int32 n = 1;",
    good_example: "repeated int32 values = 9; (new number)",
    hint: "Packed repeated numbers are not readable as a singular value; add a new field instead.",
    peers: &[
        "confluent:FIELD_NUMERIC_LABEL_CHANGED",
        "buf:FIELD_WIRE_COMPATIBLE_CARDINALITY",
    ],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str = "syntax = \"proto3\";\nmessage A { optional int32 x = 1; }\n";
    const NEW: &str = "syntax = \"proto3\";\nmessage A { repeated int32 x = 1; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Confluent);
    }

    #[test]
    fn silent_without_a_change() {
        silent(&RULE, OLD, OLD, Confluent);
    }
}
