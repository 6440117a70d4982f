//! Confluent `SchemaDiff` difference `REQUIRED_FIELD_REMOVED`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "REQUIRED_FIELD_REMOVED",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Error,
    summary: "A proto2 required field was removed; old readers still require it.",
    bad_example: "required string id = 4; deleted",
    good_example: "keep the required field until every reader is upgraded",
    hint: "Keep the field; required fields can never be removed safely.",
    peers: &[
        "confluent:REQUIRED_FIELD_REMOVED",
        "buf:MESSAGE_SAME_REQUIRED_FIELDS",
    ],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str =
        "syntax = \"proto2\";\nmessage A { optional string x = 1; required string y = 2; }\n";
    const NEW: &str = "syntax = \"proto2\";\nmessage A { optional string x = 1; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Confluent);
    }

    #[test]
    fn silent_without_a_change() {
        silent(&RULE, OLD, OLD, Confluent);
    }
}
