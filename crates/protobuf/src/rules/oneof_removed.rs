//! Confluent `SchemaDiff` difference `ONEOF_REMOVED`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "ONEOF_REMOVED",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Info,
    summary: "A oneof was removed.",
    bad_example: "// before\nsyntax = \"proto3\";\npackage shop;\nmessage Order { string id = 1; oneof payment { string card = 5; } }\n// after\nsyntax = \"proto3\";\npackage shop;\nmessage Order { string id = 1; }",
    good_example: "message Order { string id = 1; reserved 5; reserved \"card\"; }",
    hint: "Compatible when all of its fields are gone; surviving fields are reported separately.",
    peers: &["confluent:ONEOF_REMOVED"],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str =
        "syntax = \"proto3\";\nmessage A { string x = 1; oneof k { string y = 2; } }\n";
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
