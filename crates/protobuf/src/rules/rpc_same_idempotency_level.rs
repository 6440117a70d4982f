//! buf's `RPC_SAME_IDEMPOTENCY_LEVEL` (WIRE and WIRE_JSON).

use covenant_engine::{Finding, RuleSpec, Severity};
use prost_reflect::MethodDescriptor;

pub static RULE: RuleSpec = RuleSpec {
    id: "RPC_SAME_IDEMPOTENCY_LEVEL",
    format: "protobuf",
    category: "wire",
    default_severity: Severity::Error,
    summary: "An rpc's idempotency_level option changed, which changes how clients may retry it.",
    bad_example: "option idempotency_level = NO_SIDE_EFFECTS; removed",
    good_example: "keep the idempotency level",
    hint: "Keep the idempotency level; add a new rpc for different semantics.",
    peers: &["buf:RPC_SAME_IDEMPOTENCY_LEVEL"],
};

pub(crate) fn check(prev: &MethodDescriptor, cur: &MethodDescriptor, out: &mut Vec<Finding>) {
    let level = |m: &MethodDescriptor| -> i32 {
        m.options()
            .get_field_by_name("idempotency_level")
            .and_then(|v| v.as_enum_number())
            .unwrap_or(0)
    };
    if level(prev) != level(cur) {
        out.push(Finding::new(
            &RULE,
            format!(
                "/{}/methods/{}",
                cur.parent_service().full_name(),
                cur.name()
            ),
            format!(
                "RPC '{}' on service '{}' changed option 'idempotency_level' from {} to {}.",
                cur.name(),
                cur.parent_service().full_name(),
                level(prev),
                level(cur)
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::{Confluent, Wire};

    const OLD: &str = "syntax = \"proto3\";\nmessage A {}\nservice S { rpc M(A) returns (A) { option idempotency_level = NO_SIDE_EFFECTS; } }\n";
    const NEW: &str = "syntax = \"proto3\";\nmessage A {}\nservice S { rpc M(A) returns (A); }\n";

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
