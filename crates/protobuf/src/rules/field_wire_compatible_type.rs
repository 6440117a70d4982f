//! buf's `FIELD_WIRE_COMPATIBLE_TYPE` (WIRE).

use crate::buf::*;
use covenant_engine::{Finding, RuleSpec, Severity};
#[allow(unused_imports)]
use prost_reflect::{Kind, Value};

pub static RULE: RuleSpec = RuleSpec {
    id: "FIELD_WIRE_COMPATIBLE_TYPE",
    format: "protobuf",
    category: "wire",
    default_severity: Severity::Error,
    summary: "A field's type changed to one with a different wire encoding (string to bytes is allowed).",
    bad_example: "int32 count = 2; -> sint32 count = 2;",
    good_example: "int32 count = 2; -> int64 count = 2;",
    hint: "Stay within a wire-compatible group (int32/uint32/int64/uint64/bool, sint32/sint64, fixed32/sfixed32, fixed64/sfixed64, string to bytes) or add a new field.",
    peers: &[
        "buf:FIELD_WIRE_COMPATIBLE_TYPE",
        "confluent:FIELD_SCALAR_KIND_CHANGED",
    ],
};

pub(crate) fn check(prev: &FieldView, cur: &FieldView, out: &mut Vec<Finding>) {
    let string_to_bytes = matches!(prev.kind, Kind::String) && matches!(cur.kind, Kind::Bytes);
    let changed_group = wire_group(prev) != wire_group(cur) && !string_to_bytes;
    if changed_group || (wire_group(prev) == wire_group(cur) && !same_named_type(prev, cur)) {
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
    use covenant_engine::ProtobufStrictness::{Confluent, Wire};

    const OLD: &str = "syntax = \"proto3\";\nmessage A { int32 x = 1; }\n";
    const NEW: &str = "syntax = \"proto3\";\nmessage A { sint32 x = 1; }\n";

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
