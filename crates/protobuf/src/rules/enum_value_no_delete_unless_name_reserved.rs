//! buf's `ENUM_VALUE_NO_DELETE_UNLESS_NAME_RESERVED` (WIRE_JSON).

#[allow(unused_imports)]
use crate::buf::*;
use covenant_engine::{Finding, RuleSpec, Severity};
use prost_reflect::EnumDescriptor;

pub static RULE: RuleSpec = RuleSpec {
    id: "ENUM_VALUE_NO_DELETE_UNLESS_NAME_RESERVED",
    format: "protobuf",
    category: "wire_json",
    default_severity: Severity::Error,
    summary: "An enum value was deleted without reserving its name, so JSON data using the name can no longer be read.",
    bad_example: "REFUNDED = 4; deleted",
    good_example: "reserved 4; reserved \"REFUNDED\";",
    hint: "Add `reserved \"<NAME>\";` (and the number) to the enum when deleting a value.",
    peers: &[
        "buf:ENUM_VALUE_NO_DELETE_UNLESS_NAME_RESERVED",
        "confluent:ENUM_CONST_REMOVED",
    ],
};

pub(crate) fn check(prev: &EnumDescriptor, cur: &EnumDescriptor, out: &mut Vec<Finding>) {
    let mut seen: Vec<i32> = Vec::new();
    for pv in prev.values() {
        let n = pv.number();
        if seen.contains(&n) || cur.get_value(n).is_some() {
            continue;
        }
        seen.push(n);
        let all_reserved = prev
            .values()
            .filter(|v| v.number() == n)
            .all(|v| cur.reserved_names().any(|r| r == v.name()));
        if !all_reserved {
            out.push(Finding::new(
                &RULE,
                format!("/{}/values/{}", cur.full_name(), pv.name()),
                format!(
                    "Enum value '{}' ({n}) on enum '{}' was deleted without reserving the name '{}'.",
                    pv.name(),
                    cur.full_name(),
                    pv.name()
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::{Confluent, WireJson};

    const OLD: &str = "syntax = \"proto3\";\nenum E { A = 0; B = 1; }\n";
    const NEW: &str = "syntax = \"proto3\";\nenum E { A = 0; reserved 1; }\n";

    #[test]
    fn fires_on_the_change() {
        fires(&RULE, OLD, NEW, WireJson);
    }

    #[test]
    fn silent_without_a_change_or_under_confluent() {
        silent(&RULE, OLD, OLD, WireJson);
        silent(&RULE, OLD, NEW, Confluent);
    }
}
