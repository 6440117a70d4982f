//! buf's `FIELD_WIRE_COMPATIBLE_CARDINALITY` (WIRE).

use crate::buf::FieldView;
use covenant_engine::{Finding, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "FIELD_WIRE_COMPATIBLE_CARDINALITY",
    format: "protobuf",
    category: "wire",
    default_severity: Severity::Error,
    summary: "A field changed cardinality in a way old bytes cannot be read with (singular, required, repeated/map).",
    bad_example: "int32 n = 1; -> repeated int32 n = 1;",
    good_example: "optional int32 n = 1; -> int32 n = 1;",
    hint: "Keep the cardinality; add a new repeated field instead of making a singular one repeated.",
    peers: &[
        "buf:FIELD_WIRE_COMPATIBLE_CARDINALITY",
        "confluent:FIELD_NUMERIC_LABEL_CHANGED",
    ],
};

pub(crate) fn check(prev: &FieldView, cur: &FieldView, out: &mut Vec<Finding>) {
    super::shared::cardinality_changed(&RULE, false, prev, cur, out);
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::{Confluent, Wire};

    const OLD: &str = "syntax = \"proto3\";\nmessage A { int32 x = 1; }\n";
    const NEW: &str = "syntax = \"proto3\";\nmessage A { repeated int32 x = 1; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Wire);
    }

    #[test]
    fn silent_without_a_change_or_under_confluent() {
        silent(&RULE, OLD, OLD, Wire);
        silent(&RULE, OLD, NEW, Confluent);
    }
}
