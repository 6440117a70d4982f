//! Confluent `SchemaDiff` difference `FIELD_NAME_CHANGED`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "FIELD_NAME_CHANGED",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Info,
    summary: "A field number now has a different name; the wire encoding is unchanged.",
    bad_example: "// before\nsyntax = \"proto3\";\npackage shop;\nmessage Order { string customer_id = 2; }\n// after\nsyntax = \"proto3\";\npackage shop;\nmessage Order { string buyer_id = 2; }",
    good_example: "Add a new field and deprecate the old one when JSON readers depend on the name.",
    hint: "Compatible on the wire; JSON and generated code see the new name (see FIELD_SAME_NAME).",
    peers: &["confluent:FIELD_NAME_CHANGED"],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str = "syntax = \"proto3\";\nmessage A { string x = 1; }\n";
    const NEW: &str = "syntax = \"proto3\";\nmessage A { string z = 1; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Confluent);
    }

    #[test]
    fn silent_without_a_change() {
        silent(&RULE, OLD, OLD, Confluent);
    }
}
