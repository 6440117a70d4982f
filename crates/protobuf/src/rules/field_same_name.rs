//! buf's `FIELD_SAME_NAME` (WIRE_JSON).

use crate::buf::*;
use covenant_engine::{Finding, RuleSpec, Severity};
#[allow(unused_imports)]
use prost_reflect::{Kind, Value};

pub static RULE: RuleSpec = RuleSpec {
    id: "FIELD_SAME_NAME",
    format: "protobuf",
    category: "wire_json",
    default_severity: Severity::Error,
    summary: "A field number now has a different name, which breaks JSON and text readers.",
    bad_example: "string customer_id = 2; -> string buyer_id = 2;",
    good_example: "string buyer_id = 7; (new number, old one kept)",
    hint: "Keep the name; to rename, add a new field and deprecate the old one.",
    peers: &["buf:FIELD_SAME_NAME", "confluent:FIELD_NAME_CHANGED"],
};

pub(crate) fn check(prev: &FieldView, cur: &FieldView, out: &mut Vec<Finding>) {
    if prev.name != cur.name {
        out.push(Finding::new(
            &RULE,
            cur.path(),
            format!(
                "{} changed name from '{}' to '{}'.",
                cur.describe(),
                prev.name,
                cur.name
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
    const NEW: &str = "syntax = \"proto3\";\nmessage A { int32 y = 1; }\n";

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
