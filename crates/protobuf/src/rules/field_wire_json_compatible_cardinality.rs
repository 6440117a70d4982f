//! buf's `FIELD_WIRE_JSON_COMPATIBLE_CARDINALITY` (WIRE_JSON).

use crate::buf::FieldView;
use covenant_engine::{Finding, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "FIELD_WIRE_JSON_COMPATIBLE_CARDINALITY",
    format: "protobuf",
    category: "wire_json",
    default_severity: Severity::Error,
    summary: "A field changed cardinality in a way that breaks the wire or the JSON encoding (maps and lists differ in JSON).",
    bad_example: "repeated Entry entries = 1; -> map<string, string> entries = 1;",
    good_example: "optional int32 n = 1; -> int32 n = 1;",
    hint: "Keep the cardinality; add a new field for a new shape.",
    peers: &[
        "buf:FIELD_WIRE_JSON_COMPATIBLE_CARDINALITY",
        "confluent:FIELD_NUMERIC_LABEL_CHANGED",
    ],
};

pub(crate) fn check(prev: &FieldView, cur: &FieldView, out: &mut Vec<Finding>) {
    super::shared::cardinality_changed(&RULE, true, prev, cur, out);
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::{Confluent, WireJson};

    const OLD: &str = "syntax = \"proto3\";\nmessage A { int32 x = 1; }\n";
    const NEW: &str = "syntax = \"proto3\";\nmessage A { repeated int32 x = 1; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, WireJson);
    }

    #[test]
    fn silent_without_a_change_or_under_confluent() {
        silent(&RULE, OLD, OLD, WireJson);
        silent(&RULE, OLD, NEW, Confluent);
    }
}
