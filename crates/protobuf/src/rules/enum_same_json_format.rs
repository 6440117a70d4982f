//! buf's `ENUM_SAME_JSON_FORMAT` (WIRE_JSON).

use covenant_engine::{Finding, RuleSpec, Severity};
use prost_reflect::EnumDescriptor;

pub static RULE: RuleSpec = RuleSpec {
    id: "ENUM_SAME_JSON_FORMAT",
    format: "protobuf",
    category: "wire_json",
    default_severity: Severity::Error,
    summary: "An enum lost full JSON support (moved to proto2 or legacy JSON field-conflict handling).",
    bad_example: "proto3 enum moved into a proto2 file",
    good_example: "keep the enum in a proto3 file",
    hint: "Keep the enum's syntax and JSON options unchanged.",
    peers: &["buf:ENUM_SAME_JSON_FORMAT"],
};

pub(crate) fn check(prev: &EnumDescriptor, cur: &EnumDescriptor, out: &mut Vec<Finding>) {
    super::shared::json_format_lost(
        &RULE,
        "Enum",
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

    const OLD: &str = "syntax = \"proto3\";\nenum E { A = 0; }\n";
    const NEW: &str = "syntax = \"proto2\";\nenum E { A = 0; }\n";

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
