//! Confluent `SchemaDiff` difference `ENUM_ADDED`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "ENUM_ADDED",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Info,
    summary: "An enum was added.",
    bad_example: "// before\nsyntax = \"proto3\";\npackage shop;\nmessage Order { string id = 1; }\n// after\nsyntax = \"proto3\";\npackage shop;\nmessage Order { string id = 1; }\nenum Status { STATUS_UNSPECIFIED = 0; PAID = 1; }",
    good_example: "A nested enum: message Order { enum Kind { KIND_UNSPECIFIED = 0; } string id = 1; }",
    hint: "Adding an enum is compatible.",
    peers: &["confluent:ENUM_ADDED"],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str = "syntax = \"proto3\";\nmessage A { string x = 1; }\n";
    const NEW: &str =
        "syntax = \"proto3\";\nmessage A { string x = 1; }\nenum E { E_UNSPECIFIED = 0; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Confluent);
    }

    #[test]
    fn silent_without_a_change() {
        silent(&RULE, OLD, OLD, Confluent);
    }
}
