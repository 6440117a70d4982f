//! Confluent `SchemaDiff` difference `ENUM_CONST_REMOVED`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "ENUM_CONST_REMOVED",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Info,
    summary: "An enum value was removed; Confluent treats this as compatible.",
    bad_example: "// before\nsyntax = \"proto3\";\npackage shop;\nenum Status { STATUS_UNSPECIFIED = 0; PAID = 1; REFUNDED = 2; }\n// after\nsyntax = \"proto3\";\npackage shop;\nenum Status { STATUS_UNSPECIFIED = 0; PAID = 1; }",
    good_example: "enum Status { STATUS_UNSPECIFIED = 0; PAID = 1; reserved 2; reserved \"REFUNDED\"; }",
    hint: "Reserve the removed number and name so they are never reused.",
    peers: &["confluent:ENUM_CONST_REMOVED"],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str = "syntax = \"proto3\";\nenum E { A = 0; B = 1; }\n";
    const NEW: &str = "syntax = \"proto3\";\nenum E { A = 0; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Confluent);
    }

    #[test]
    fn silent_without_a_change() {
        silent(&RULE, OLD, OLD, Confluent);
    }
}
