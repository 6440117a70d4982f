//! buf's `RESERVED_MESSAGE_NO_DELETE` (WIRE and WIRE_JSON).

use super::shared::{Reserved, reservations_deleted};
use covenant_engine::{Finding, RuleSpec, Severity};
use prost_reflect::MessageDescriptor;

pub static RULE: RuleSpec = RuleSpec {
    id: "RESERVED_MESSAGE_NO_DELETE",
    format: "protobuf",
    category: "wire",
    default_severity: Severity::Error,
    summary: "A reserved number range or name was removed from a message, allowing reuse of retired fields.",
    bad_example: "reserved 3, 5; -> reserved 3;",
    good_example: "keep every reserved number and name",
    hint: "Never remove reservations; they protect old data.",
    peers: &["buf:RESERVED_MESSAGE_NO_DELETE"],
};

pub(crate) fn check(prev: &MessageDescriptor, cur: &MessageDescriptor, out: &mut Vec<Finding>) {
    fn reserved(d: &MessageDescriptor) -> Reserved<'_> {
        Reserved {
            ranges: d
                .reserved_ranges()
                .map(|r| (i64::from(r.start), i64::from(r.end) - 1))
                .collect(),
            names: d.reserved_names().collect(),
        }
    }
    reservations_deleted(
        &RULE,
        "message",
        cur.full_name(),
        &reserved(prev),
        &reserved(cur),
        out,
    );
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::{Confluent, Wire};

    const OLD: &str =
        "syntax = \"proto3\";\nmessage A { int32 x = 1; reserved 2, 3; reserved \"b\"; }\n";
    const NEW: &str = "syntax = \"proto3\";\nmessage A { int32 x = 1; reserved 2; }\n";

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
