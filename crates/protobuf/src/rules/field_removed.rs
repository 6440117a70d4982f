//! Confluent `SchemaDiff` difference `FIELD_REMOVED`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "FIELD_REMOVED",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Info,
    summary: "A field was removed; Confluent treats this as compatible.",
    bad_example: "// before\nsyntax = \"proto3\";\npackage shop;\nmessage Order { string id = 1; string legacy = 3; }\n// after\nsyntax = \"proto3\";\npackage shop;\nmessage Order { string id = 1; }",
    good_example: "message Order { string id = 1; reserved 3; reserved \"legacy\"; }",
    hint: "Reserve the removed field's number and name so they are never reused.",
    peers: &["confluent:FIELD_REMOVED"],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str = "syntax = \"proto3\";\nmessage A { string x = 1; string y = 2; }\n";
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
