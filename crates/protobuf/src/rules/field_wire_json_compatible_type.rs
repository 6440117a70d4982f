//! buf's `FIELD_WIRE_JSON_COMPATIBLE_TYPE` (WIRE_JSON).

use crate::buf::*;
use covenant_engine::{Finding, RuleSpec, Severity};
#[allow(unused_imports)]
use prost_reflect::{Kind, Value};

pub static RULE: RuleSpec = RuleSpec {
    id: "FIELD_WIRE_JSON_COMPATIBLE_TYPE",
    format: "protobuf",
    category: "wire_json",
    default_severity: Severity::Error,
    summary: "A field's type changed to one with a different wire or proto3 JSON encoding.",
    bad_example: "int32 count = 2; -> int64 count = 2; (JSON turns it into a string)",
    good_example: "int32 count = 2; -> uint32 count = 2;",
    hint: "Only change between types that encode the same on the wire and in JSON (int32/uint32, int64/uint64, fixed32/sfixed32, fixed64/sfixed64); otherwise add a new field.",
    peers: &[
        "buf:FIELD_WIRE_JSON_COMPATIBLE_TYPE",
        "confluent:FIELD_SCALAR_KIND_CHANGED",
    ],
};

pub(crate) fn check(prev: &FieldView, cur: &FieldView, out: &mut Vec<Finding>) {
    if wire_json_group(prev) != wire_json_group(cur) || !same_named_type(prev, cur) {
        out.push(Finding::new(
            &RULE,
            cur.path(),
            format!(
                "{} changed type from '{}' to '{}'.",
                cur.describe(),
                prev.type_text(),
                cur.type_text()
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::{Confluent, WireJson};

    const OLD: &str = "syntax = \"proto3\";\nmessage A { int32 x = 1; }\n";
    const NEW: &str = "syntax = \"proto3\";\nmessage A { int64 x = 1; }\n";

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
