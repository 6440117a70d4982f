//! Confluent `SchemaDiff` difference `MESSAGE_MOVED`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "MESSAGE_MOVED",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Info,
    summary: "A message changed position in its file or parent; message indexes refer to the schema id they were written with, so this is compatible.",
    bad_example: "// before\nsyntax = \"proto3\";\npackage shop;\nmessage Order { string id = 1; }\nmessage Refund { string id = 1; }\n// after\nsyntax = \"proto3\";\npackage shop;\nmessage Refund { string id = 1; }\nmessage Order { string id = 1; }",
    good_example: "Add new messages after the existing ones, so message indexes stay the same.",
    hint: "Compatible: message indexes are resolved against the writer's schema.",
    peers: &["confluent:MESSAGE_MOVED"],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str =
        "syntax = \"proto3\";\nmessage A { string x = 1; }\nmessage B { string y = 1; }\n";
    const NEW: &str =
        "syntax = \"proto3\";\nmessage B { string y = 1; }\nmessage A { string x = 1; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Confluent);
    }

    #[test]
    fn silent_without_a_change() {
        silent(&RULE, OLD, OLD, Confluent);
    }
}
