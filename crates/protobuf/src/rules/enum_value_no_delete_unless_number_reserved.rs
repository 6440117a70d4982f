//! buf's `ENUM_VALUE_NO_DELETE_UNLESS_NUMBER_RESERVED` (WIRE and WIRE_JSON).

#[allow(unused_imports)]
use crate::buf::*;
use covenant_engine::{Finding, RuleSpec, Severity};
use prost_reflect::EnumDescriptor;

pub static RULE: RuleSpec = RuleSpec {
    id: "ENUM_VALUE_NO_DELETE_UNLESS_NUMBER_RESERVED",
    format: "protobuf",
    category: "wire",
    default_severity: Severity::Error,
    summary: "An enum value was deleted without reserving its number, so the number can be reused with another meaning.",
    bad_example: "REFUNDED = 4; deleted",
    good_example: "reserved 4;",
    hint: "Add `reserved <number>;` to the enum when deleting a value.",
    peers: &[
        "buf:ENUM_VALUE_NO_DELETE_UNLESS_NUMBER_RESERVED",
        "confluent:ENUM_CONST_REMOVED",
    ],
};

/// One finding per deleted number: aliases share a number, and it is the number that is reused.
pub(crate) fn check(prev: &EnumDescriptor, cur: &EnumDescriptor, out: &mut Vec<Finding>) {
    for (i, pv) in prev.values().enumerate() {
        let n = pv.number();
        let first_with_number = prev.values().take(i).all(|v| v.number() != n);
        if first_with_number
            && cur.get_value(n).is_none()
            && !cur.reserved_ranges().any(|r| r.contains(&n))
        {
            out.push(Finding::new(
                &RULE,
                format!("/{}/values/{}", cur.full_name(), pv.name()),
                format!(
                    "Enum value '{}' ({n}) on enum '{}' was deleted without reserving the number {n}.",
                    pv.name(),
                    cur.full_name()
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::{Confluent, Wire};

    const OLD: &str = "syntax = \"proto3\";\nenum E { A = 0; B = 1; }\n";
    const NEW: &str = "syntax = \"proto3\";\nenum E { A = 0; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, Wire);
    }

    #[test]
    fn aliases_count_once() {
        let old =
            "syntax = \"proto3\";\nenum E { option allow_alias = true; A = 0; B = 1; C = 1; }\n";
        let findings = crate::rules::testing::run(old, NEW, Wire);
        assert_eq!(findings.iter().filter(|f| f.rule == RULE.id).count(), 1);
    }

    #[test]
    fn silent_without_a_change_or_under_confluent() {
        silent(&RULE, OLD, OLD, Wire);
        silent(&RULE, OLD, NEW, Confluent);
    }
}
