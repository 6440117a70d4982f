//! Confluent `SchemaDiff` difference `FIELD_NAMED_TYPE_CHANGED`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "FIELD_NAMED_TYPE_CHANGED",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Error,
    summary: "A message-typed field now refers to a different message, or the referenced message changed incompatibly.",
    bad_example: "Address home = 2; -> Location home = 2;",
    good_example: "keep Address and evolve it compatibly",
    hint: "Keep the field's message type and evolve that message compatibly; for a different type add a new field.",
    peers: &[
        "confluent:FIELD_NAMED_TYPE_CHANGED",
        "buf:FIELD_WIRE_COMPATIBLE_TYPE",
    ],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str = "syntax = \"proto3\";\nmessage A { B x = 1; }\nmessage B { string y = 1; }\nmessage C { string y = 1; }\n";
    const NEW: &str = "syntax = \"proto3\";\nmessage A { C x = 1; }\nmessage B { string y = 1; }\nmessage C { string y = 1; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Confluent);
    }

    #[test]
    fn silent_without_a_change() {
        silent(&RULE, OLD, OLD, Confluent);
    }
}
