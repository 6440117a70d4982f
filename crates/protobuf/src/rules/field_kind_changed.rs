//! Confluent `SchemaDiff` difference `FIELD_KIND_CHANGED`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "FIELD_KIND_CHANGED",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Error,
    summary: "A field changed between scalar, message and map kinds.",
    bad_example: "string address = 3; -> Address address = 3;",
    good_example: "Address address_v2 = 7; (new number)",
    hint: "Add a new field with a new number and deprecate the old one.",
    peers: &[
        "confluent:FIELD_KIND_CHANGED",
        "buf:FIELD_WIRE_COMPATIBLE_TYPE",
    ],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str =
        "syntax = \"proto3\";\nmessage A { string x = 1; }\nmessage B { string y = 1; }\n";
    const NEW: &str = "syntax = \"proto3\";\nmessage A { B x = 1; }\nmessage B { string y = 1; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Confluent);
    }

    #[test]
    fn silent_without_a_change() {
        silent(&RULE, OLD, OLD, Confluent);
    }
}
