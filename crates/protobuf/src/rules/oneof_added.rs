//! Confluent `SchemaDiff` difference `ONEOF_ADDED`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "ONEOF_ADDED",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Info,
    summary: "A oneof was added.",
    bad_example: "// before\nsyntax = \"proto3\";\npackage shop;\nmessage Order { string id = 1; }\n// after\nsyntax = \"proto3\";\npackage shop;\nmessage Order { string id = 1; oneof payment { string card = 5; string iban = 6; } }",
    good_example: "A oneof made only of new field numbers.",
    hint: "Compatible when its fields are new.",
    peers: &["confluent:ONEOF_ADDED"],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str = "syntax = \"proto3\";\nmessage A { string x = 1; }\n";
    const NEW: &str =
        "syntax = \"proto3\";\nmessage A { string x = 1; oneof k { string y = 2; } }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Confluent);
    }

    #[test]
    fn silent_without_a_change() {
        silent(&RULE, OLD, OLD, Confluent);
    }
}
