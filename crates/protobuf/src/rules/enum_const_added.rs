//! Confluent `SchemaDiff` difference `ENUM_CONST_ADDED`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "ENUM_CONST_ADDED",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Info,
    summary: "An enum value was added.",
    bad_example: "// before\nsyntax = \"proto3\";\npackage shop;\nenum Status { STATUS_UNSPECIFIED = 0; PAID = 1; }\n// after\nsyntax = \"proto3\";\npackage shop;\nenum Status { STATUS_UNSPECIFIED = 0; PAID = 1; REFUNDED = 2; }",
    good_example: "A value with a number never used before, also in a nested enum.",
    hint: "Compatible; make sure readers handle unknown values.",
    peers: &["confluent:ENUM_CONST_ADDED"],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str = "syntax = \"proto3\";\nenum E { A = 0; }\n";
    const NEW: &str = "syntax = \"proto3\";\nenum E { A = 0; B = 1; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Confluent);
    }

    #[test]
    fn silent_without_a_change() {
        silent(&RULE, OLD, OLD, Confluent);
    }
}
