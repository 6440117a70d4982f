//! Confluent `SchemaDiff` difference `FIELD_ADDED`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "FIELD_ADDED",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Info,
    summary: "A field was added.",
    bad_example: "// before\nsyntax = \"proto3\";\npackage shop;\nmessage Order { string id = 1; }\n// after\nsyntax = \"proto3\";\npackage shop;\nmessage Order { string id = 1; string note = 2; }",
    good_example: "message Order { string id = 1; optional string note = 2; }",
    hint: "Compatible: old data simply lacks the field.",
    peers: &["confluent:FIELD_ADDED"],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str = "syntax = \"proto3\";\nmessage A { string x = 1; }\n";
    const NEW: &str = "syntax = \"proto3\";\nmessage A { string x = 1; string y = 2; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Confluent);
    }

    #[test]
    fn silent_without_a_change() {
        silent(&RULE, OLD, OLD, Confluent);
    }
}
