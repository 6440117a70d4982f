//! buf's `FIELD_NO_DELETE_UNLESS_NAME_RESERVED` (WIRE_JSON).

#[allow(unused_imports)]
use crate::buf::*;
use covenant_engine::{Finding, RuleSpec, Severity};
use prost_reflect::MessageDescriptor;

pub static RULE: RuleSpec = RuleSpec {
    id: "FIELD_NO_DELETE_UNLESS_NAME_RESERVED",
    format: "protobuf",
    category: "wire_json",
    default_severity: Severity::Error,
    summary: "A field was deleted without reserving its name, so JSON data using the name can be misread.",
    bad_example: "string legacy = 3; deleted",
    good_example: "reserved 3; reserved \"legacy\";",
    hint: "Add `reserved \"<name>\";` (and the number) to the message when deleting a field.",
    peers: &[
        "buf:FIELD_NO_DELETE_UNLESS_NAME_RESERVED",
        "confluent:FIELD_REMOVED",
    ],
};

pub(crate) fn check(prev: &MessageDescriptor, cur: &MessageDescriptor, out: &mut Vec<Finding>) {
    for pf in prev.fields() {
        if cur.get_field(pf.number()).is_none() && !cur.reserved_names().any(|n| n == pf.name()) {
            out.push(Finding::new(
                &RULE,
                format!("/{}/fields/{}", cur.full_name(), pf.name()),
                format!(
                    "Field '{}' ({}) on message '{}' was deleted without reserving the name '{}'.",
                    pf.name(),
                    pf.number(),
                    cur.full_name(),
                    pf.name()
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::{Confluent, WireJson};

    const OLD: &str = "syntax = \"proto3\";\nmessage A { int32 x = 1; int32 y = 2; }\n";
    const NEW: &str = "syntax = \"proto3\";\nmessage A { int32 x = 1; reserved 2; }\n";

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
