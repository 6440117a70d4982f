//! buf's `FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED` (WIRE and WIRE_JSON).

#[allow(unused_imports)]
use crate::buf::*;
use covenant_engine::{Finding, RuleSpec, Severity};
use prost_reflect::MessageDescriptor;

pub static RULE: RuleSpec = RuleSpec {
    id: "FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED",
    format: "protobuf",
    category: "wire",
    default_severity: Severity::Error,
    summary: "A field was deleted without reserving its number, so the number can be reused with another meaning.",
    bad_example: "string legacy = 3; deleted",
    good_example: "reserved 3;",
    hint: "Add `reserved <number>;` to the message when deleting a field.",
    peers: &[
        "buf:FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED",
        "confluent:FIELD_REMOVED",
    ],
};

pub(crate) fn check(prev: &MessageDescriptor, cur: &MessageDescriptor, out: &mut Vec<Finding>) {
    for pf in prev.fields() {
        if cur.get_field(pf.number()).is_none() && !message_number_reserved(cur, pf.number()) {
            out.push(Finding::new(
                &RULE,
                format!("/{}/fields/{}", cur.full_name(), pf.name()),
                format!(
                    "Field '{}' ({}) on message '{}' was deleted without reserving the number {}.",
                    pf.name(),
                    pf.number(),
                    cur.full_name(),
                    pf.number()
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::{Confluent, Wire};

    const OLD: &str = "syntax = \"proto3\";\nmessage A { int32 x = 1; int32 y = 2; }\n";
    const NEW: &str = "syntax = \"proto3\";\nmessage A { int32 x = 1; }\n";

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
