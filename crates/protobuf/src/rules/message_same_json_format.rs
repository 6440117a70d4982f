//! buf's `MESSAGE_SAME_JSON_FORMAT` (WIRE_JSON).

use covenant_engine::{Finding, RuleSpec, Severity};
use prost_reflect::MessageDescriptor;

pub static RULE: RuleSpec = RuleSpec {
    id: "MESSAGE_SAME_JSON_FORMAT",
    format: "protobuf",
    category: "wire_json",
    default_severity: Severity::Error,
    summary: "A message lost full JSON support (moved to proto2 or legacy JSON field-conflict handling).",
    bad_example: "proto3 message moved into a proto2 file",
    good_example: "keep the message in a proto3 file",
    hint: "Keep the message's syntax and JSON options unchanged.",
    peers: &["buf:MESSAGE_SAME_JSON_FORMAT"],
};

pub(crate) fn check(prev: &MessageDescriptor, cur: &MessageDescriptor, out: &mut Vec<Finding>) {
    super::shared::json_format_lost(
        &RULE,
        "Message",
        cur.full_name(),
        (&prev.parent_file(), &prev.options()),
        (&cur.parent_file(), &cur.options()),
        out,
    );
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::{Confluent, WireJson};

    const OLD: &str = "syntax = \"proto3\";\nmessage A { int32 x = 1; }\n";
    const NEW: &str = "syntax = \"proto2\";\nmessage A { optional int32 x = 1; }\n";

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
