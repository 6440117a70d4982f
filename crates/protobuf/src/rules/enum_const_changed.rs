//! Confluent `SchemaDiff` difference `ENUM_CONST_CHANGED`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "ENUM_CONST_CHANGED",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Info,
    summary: "An enum number now has a different name; the wire value is unchanged.",
    bad_example: "// before\nsyntax = \"proto3\";\npackage shop;\nenum Status { STATUS_UNSPECIFIED = 0; PAID = 1; }\n// after\nsyntax = \"proto3\";\npackage shop;\nenum Status { STATUS_UNSPECIFIED = 0; SETTLED = 1; }",
    good_example: "Keep the old name as an alias: option allow_alias = true; PAID = 1 [deprecated = true]; SETTLED = 1;",
    hint: "Compatible on the wire; JSON readers see the new name (see ENUM_VALUE_SAME_NAME).",
    peers: &["confluent:ENUM_CONST_CHANGED"],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str = "syntax = \"proto3\";\nenum E { A = 0; B = 1; }\n";
    const NEW: &str = "syntax = \"proto3\";\nenum E { A = 0; C = 1; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Confluent);
    }

    #[test]
    fn silent_without_a_change() {
        silent(&RULE, OLD, OLD, Confluent);
    }
}
