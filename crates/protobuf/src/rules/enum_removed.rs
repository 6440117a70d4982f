//! Confluent `SchemaDiff` difference `ENUM_REMOVED`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "ENUM_REMOVED",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Info,
    summary: "An enum was removed; Confluent treats this as compatible because fields using it are checked separately.",
    bad_example: "// before\nsyntax = \"proto3\";\npackage shop;\nmessage Order { string id = 1; }\nenum Status { STATUS_UNSPECIFIED = 0; }\n// after\nsyntax = \"proto3\";\npackage shop;\nmessage Order { string id = 1; }",
    good_example: "Remove the enum only after no field uses it.",
    hint: "Compatible on its own; fields that used the enum are reported by their own rules.",
    peers: &["confluent:ENUM_REMOVED"],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str =
        "syntax = \"proto3\";\nmessage A { string x = 1; }\nenum E { E_UNSPECIFIED = 0; }\n";
    const NEW: &str = "syntax = \"proto3\";\nmessage A { string x = 1; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Confluent);
    }

    #[test]
    fn silent_without_a_change() {
        silent(&RULE, OLD, OLD, Confluent);
    }
}
