//! Confluent `SchemaDiff` difference `SYNTAX_CHANGED`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "SYNTAX_CHANGED",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Info,
    summary: "The file's syntax (proto2/proto3) changed, which changes field presence and defaults.",
    bad_example: "// before\nsyntax = \"proto2\";\npackage shop;\nmessage Order { optional string id = 1; }\n// after\nsyntax = \"proto3\";\npackage shop;\nmessage Order { optional string id = 1; }",
    good_example: "Keep the syntax of the first version; proto3's `optional` gives a proto2-like presence where needed.",
    hint: "Keep the syntax; field presence and JSON defaults differ between proto2 and proto3.",
    peers: &["confluent:SYNTAX_CHANGED", "buf:FILE_SAME_SYNTAX"],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str = "syntax = \"proto2\";\nmessage A { optional string x = 1; }\n";
    const NEW: &str = "syntax = \"proto3\";\nmessage A { optional string x = 1; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Confluent);
    }

    #[test]
    fn silent_without_a_change() {
        silent(&RULE, OLD, OLD, Confluent);
    }
}
