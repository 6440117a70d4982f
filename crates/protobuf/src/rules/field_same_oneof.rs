//! buf's `FIELD_SAME_ONEOF` (WIRE and WIRE_JSON).

use crate::buf::*;
use covenant_engine::{Finding, RuleSpec, Severity};
#[allow(unused_imports)]
use prost_reflect::{Kind, Value};

pub static RULE: RuleSpec = RuleSpec {
    id: "FIELD_SAME_ONEOF",
    format: "protobuf",
    category: "wire",
    default_severity: Severity::Error,
    summary: "A field moved into, out of, or between oneofs, which changes which other fields it clears.",
    bad_example: "int32 a = 1; -> oneof k { int32 a = 1; }",
    good_example: "oneof k { int32 a_v2 = 5; }",
    hint: "Leave existing fields where they are; add new fields with new numbers to the oneof.",
    peers: &[
        "buf:FIELD_SAME_ONEOF",
        "confluent:FIELD_MOVED_TO_EXISTING_ONEOF",
        "confluent:MULTIPLE_FIELDS_MOVED_TO_ONEOF",
    ],
};

pub(crate) fn check(prev: &FieldView, cur: &FieldView, out: &mut Vec<Finding>) {
    if prev.extension {
        return;
    }
    match (prev.oneof(), cur.oneof()) {
        (Some(p), Some(c)) if p != c => out.push(Finding::new(
            &RULE,
            cur.path(),
            format!("{} moved from oneof '{p}' to oneof '{c}'.", cur.describe()),
        )),
        (Some(_), None) => out.push(Finding::new(
            &RULE,
            cur.path(),
            format!("{} moved from inside to outside a oneof.", cur.describe()),
        )),
        (None, Some(_)) => out.push(Finding::new(
            &RULE,
            cur.path(),
            format!("{} moved from outside to inside a oneof.", cur.describe()),
        )),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::{Confluent, Wire};

    const OLD: &str = "syntax = \"proto3\";\nmessage A { int32 x = 1; int32 y = 2; }\n";
    const NEW: &str = "syntax = \"proto3\";\nmessage A { int32 x = 1; oneof k { int32 y = 2; } }\n";

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
