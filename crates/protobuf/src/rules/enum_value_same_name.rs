//! buf's `ENUM_VALUE_SAME_NAME` (WIRE_JSON).

#[allow(unused_imports)]
use crate::buf::*;
use covenant_engine::{Finding, RuleSpec, Severity};
use prost_reflect::EnumDescriptor;

pub static RULE: RuleSpec = RuleSpec {
    id: "ENUM_VALUE_SAME_NAME",
    format: "protobuf",
    category: "wire_json",
    default_severity: Severity::Error,
    summary: "An enum number now has a name it did not have before, which breaks JSON readers.",
    bad_example: "ACTIVE = 1; -> ENABLED = 1;",
    good_example: "ACTIVE = 1; ENABLED = 1; (alias, with allow_alias)",
    hint: "Keep the name; to rename, add an alias first and remove the old name only when no JSON data uses it.",
    peers: &["buf:ENUM_VALUE_SAME_NAME", "confluent:ENUM_CONST_CHANGED"],
};

pub(crate) fn check(prev: &EnumDescriptor, cur: &EnumDescriptor, out: &mut Vec<Finding>) {
    let mut numbers: Vec<i32> = prev.values().map(|v| v.number()).collect();
    numbers.sort_unstable();
    numbers.dedup();
    for n in numbers {
        let prev_names: Vec<String> = prev
            .values()
            .filter(|v| v.number() == n)
            .map(|v| v.name().to_string())
            .collect();
        let cur_names: Vec<String> = cur
            .values()
            .filter(|v| v.number() == n)
            .map(|v| v.name().to_string())
            .collect();
        if cur_names.is_empty() {
            continue;
        }
        if !cur_names.iter().all(|c| prev_names.contains(c)) {
            out.push(Finding::new(
                &RULE,
                format!("/{}/values/{}", cur.full_name(), cur_names.join(",")),
                format!(
                    "Enum value {n} on enum '{}' changed name from '{}' to '{}'.",
                    cur.full_name(),
                    prev_names.join("', '"),
                    cur_names.join("', '")
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
    const NEW: &str = "syntax = \"proto3\";\nenum E { A = 0; C = 1; }\n";

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
