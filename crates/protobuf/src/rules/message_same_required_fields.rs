//! buf's `MESSAGE_SAME_REQUIRED_FIELDS` (WIRE and WIRE_JSON).

#[allow(unused_imports)]
use crate::buf::*;
use covenant_engine::{Finding, RuleSpec, Severity};
use prost_reflect::MessageDescriptor;

pub static RULE: RuleSpec = RuleSpec {
    id: "MESSAGE_SAME_REQUIRED_FIELDS",
    format: "protobuf",
    category: "wire",
    default_severity: Severity::Error,
    summary: "A required field was added to or removed from a message; either side then rejects the other's data.",
    bad_example: "required string id = 4; (added)",
    good_example: "optional string id = 4;",
    hint: "Never add or remove required fields; use optional fields and validate in the application.",
    peers: &[
        "buf:MESSAGE_SAME_REQUIRED_FIELDS",
        "confluent:REQUIRED_FIELD_ADDED",
        "confluent:REQUIRED_FIELD_REMOVED",
    ],
};

pub(crate) fn check(prev: &MessageDescriptor, cur: &MessageDescriptor, out: &mut Vec<Finding>) {
    for pf in prev.fields().filter(|f| f.is_required()) {
        if !cur.get_field(pf.number()).is_some_and(|f| f.is_required()) {
            out.push(Finding::new(
                &RULE,
                format!("/{}/fields/{}", cur.full_name(), pf.name()),
                format!(
                    "Message '{}' had required field '{}' ({}) deleted.",
                    cur.full_name(),
                    pf.name(),
                    pf.number()
                ),
            ));
        }
    }
    for cf in cur.fields().filter(|f| f.is_required()) {
        if !prev.get_field(cf.number()).is_some_and(|f| f.is_required()) {
            out.push(Finding::new(
                &RULE,
                format!("/{}/fields/{}", cur.full_name(), cf.name()),
                format!(
                    "Message '{}' had required field '{}' ({}) added.",
                    cur.full_name(),
                    cf.name(),
                    cf.number()
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

    const OLD: &str = "syntax = \"proto2\";\nmessage A { optional int32 x = 1; }\n";
    const NEW: &str =
        "syntax = \"proto2\";\nmessage A { optional int32 x = 1; required int32 y = 2; }\n";

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
