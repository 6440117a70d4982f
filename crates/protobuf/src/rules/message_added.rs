//! Confluent `SchemaDiff` difference `MESSAGE_ADDED`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "MESSAGE_ADDED",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Info,
    summary: "A message was added.",
    bad_example: "// before\nsyntax = \"proto3\";\npackage shop;\nmessage Order { string id = 1; }\n// after\nsyntax = \"proto3\";\npackage shop;\nmessage Order { string id = 1; }\nmessage Refund { string id = 1; }",
    good_example: "A nested message: message Order { message Line { int64 qty = 1; } string id = 1; }",
    hint: "Adding a message is compatible.",
    peers: &["confluent:MESSAGE_ADDED"],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str = "syntax = \"proto3\";\nmessage A { string x = 1; }\n";
    const NEW: &str =
        "syntax = \"proto3\";\nmessage A { string x = 1; }\nmessage B { string y = 1; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Confluent);
    }

    #[test]
    fn silent_without_a_change() {
        silent(&RULE, OLD, OLD, Confluent);
    }
}
