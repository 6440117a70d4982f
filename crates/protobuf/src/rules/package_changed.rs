//! Confluent `SchemaDiff` difference `PACKAGE_CHANGED`.

use covenant_engine::{RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "PACKAGE_CHANGED",
    format: "protobuf",
    category: "confluent",
    default_severity: Severity::Error,
    summary: "The file's package changed, which renames every type in it.",
    bad_example: "package acme.v1; -> package acme.v2;",
    good_example: "keep package acme.v1; and add new types there",
    hint: "Keep the package; to move types, register them as a new subject.",
    peers: &["confluent:PACKAGE_CHANGED", "buf:FILE_SAME_PACKAGE"],
};

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::Confluent;

    const OLD: &str = "syntax = \"proto3\";\npackage a;\nmessage A { string x = 1; }\n";
    const NEW: &str = "syntax = \"proto3\";\npackage b;\nmessage A { string x = 1; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Confluent);
    }

    #[test]
    fn silent_without_a_change() {
        silent(&RULE, OLD, OLD, Confluent);
    }
}
