//! Confluent `SchemaDiff` difference `MESSAGE_REMOVED`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "MESSAGE_REMOVED",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Error,
    summary: "A message was removed, so data framed with its message index can no longer be read.",
    bad_example: "message Refund { ... } deleted",
    good_example: "keep message Refund and stop using it",
    hint: "Keep the message (it may be marked deprecated) until no data written with it remains.",
    peers: &["confluent:MESSAGE_REMOVED"],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str =
        "syntax = \"proto3\";\nmessage A { string x = 1; }\nmessage B { string y = 1; }\n";
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
