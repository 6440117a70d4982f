//! buf's `FIELD_SAME_JSON_NAME` (WIRE_JSON).

use crate::buf::*;
use covenant_engine::{Finding, RuleSpec, Severity};
#[allow(unused_imports)]
use prost_reflect::{Kind, Value};

pub static RULE: RuleSpec = RuleSpec {
    id: "FIELD_SAME_JSON_NAME",
    format: "protobuf",
    category: "wire_json",
    default_severity: Severity::Error,
    summary: "A field's JSON name changed (explicitly or through a rename), which breaks JSON readers.",
    bad_example: "int32 x = 1 [json_name = \"a\"]; -> [json_name = \"b\"]",
    good_example: "keep the json_name",
    hint: "Keep the JSON name; add a new field for a new JSON key.",
    peers: &["buf:FIELD_SAME_JSON_NAME"],
};

pub(crate) fn check(prev: &FieldView, cur: &FieldView, out: &mut Vec<Finding>) {
    if prev.extension {
        return;
    }
    if prev.json_name != cur.json_name {
        out.push(Finding::new(
            &RULE,
            cur.path(),
            format!(
                "{} changed option 'json_name' from '{}' to '{}'.",
                cur.describe(),
                prev.json_name,
                cur.json_name
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::{Confluent, WireJson};

    const OLD: &str = "syntax = \"proto3\";\nmessage A { int32 x = 1 [json_name = \"a\"]; }\n";
    const NEW: &str = "syntax = \"proto3\";\nmessage A { int32 x = 1 [json_name = \"b\"]; }\n";

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
