//! buf's `FILE_SAME_PACKAGE` (WIRE and WIRE_JSON).

use covenant_engine::{Finding, RuleSpec, Severity};
use prost_reflect::FileDescriptor;

pub static RULE: RuleSpec = RuleSpec {
    id: "FILE_SAME_PACKAGE",
    format: "protobuf",
    category: "wire",
    default_severity: Severity::Error,
    summary: "A file's package changed, which renames every type it defines.",
    bad_example: "package acme.v1; -> package acme.v2;",
    good_example: "keep package acme.v1;",
    hint: "Keep the package; publish renamed types as a new file or subject.",
    peers: &["buf:FILE_SAME_PACKAGE", "confluent:PACKAGE_CHANGED"],
};

pub(crate) fn check(
    prev: &FileDescriptor,
    cur: &FileDescriptor,
    path: &str,
    out: &mut Vec<Finding>,
) {
    if prev.package_name() != cur.package_name() {
        out.push(Finding::new(
            &RULE,
            path,
            format!(
                "File '{}' changed package from '{}' to '{}'.",
                cur.name(),
                prev.package_name(),
                cur.package_name()
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::{Confluent, Wire};

    const OLD: &str = "syntax = \"proto3\";\npackage a;\nmessage A { int32 x = 1; }\n";
    const NEW: &str = "syntax = \"proto3\";\npackage b;\nmessage A { int32 x = 1; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Wire);
    }

    #[test]
    fn silent_without_a_change_or_under_confluent() {
        silent(&RULE, OLD, OLD, Wire);
        silent(&RULE, OLD, NEW, Confluent);
    }
}
