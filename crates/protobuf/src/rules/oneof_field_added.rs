//! Confluent `SchemaDiff` difference `ONEOF_FIELD_ADDED`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "ONEOF_FIELD_ADDED",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Info,
    summary: "A field was added to a oneof.",
    bad_example: "// before\nsyntax = \"proto3\";\npackage shop;\nmessage Order { oneof payment { string card = 5; } }\n// after\nsyntax = \"proto3\";\npackage shop;\nmessage Order { oneof payment { string card = 5; string iban = 6; } }",
    good_example: "A new member with a number never used before.",
    hint: "Compatible: old data never sets the new member.",
    peers: &["confluent:ONEOF_FIELD_ADDED"],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str = "syntax = \"proto3\";\nmessage A { oneof k { string y = 2; } }\n";
    const NEW: &str =
        "syntax = \"proto3\";\nmessage A { oneof k { string y = 2; string z = 3; } }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Confluent);
    }

    #[test]
    fn silent_without_a_change() {
        silent(&RULE, OLD, OLD, Confluent);
    }
}
