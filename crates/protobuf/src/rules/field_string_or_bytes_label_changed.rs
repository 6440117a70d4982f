//! Confluent `SchemaDiff` difference `FIELD_STRING_OR_BYTES_LABEL_CHANGED`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "FIELD_STRING_OR_BYTES_LABEL_CHANGED",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Info,
    summary: "A string or bytes field changed between singular and repeated; the encoding is the same, so Confluent accepts it.",
    bad_example: "// before\nsyntax = \"proto3\";\npackage shop;\nmessage Order { optional string tag = 1; }\n// after\nsyntax = \"proto3\";\npackage shop;\nmessage Order { repeated string tag = 1; }",
    good_example: "message Order { repeated bytes tag = 1; }",
    hint: "Compatible on the wire; a singular reader keeps the last value.",
    peers: &["confluent:FIELD_STRING_OR_BYTES_LABEL_CHANGED"],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str = "syntax = \"proto3\";\nmessage A { optional string x = 1; }\n";
    const NEW: &str = "syntax = \"proto3\";\nmessage A { repeated string x = 1; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Confluent);
    }

    #[test]
    fn silent_without_a_change() {
        silent(&RULE, OLD, OLD, Confluent);
    }
}
