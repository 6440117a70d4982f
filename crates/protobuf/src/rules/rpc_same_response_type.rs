//! buf's `RPC_SAME_RESPONSE_TYPE` (WIRE and WIRE_JSON).

use covenant_engine::{Finding, RuleSpec, Severity};
use prost_reflect::MethodDescriptor;

pub static RULE: RuleSpec = RuleSpec {
    id: "RPC_SAME_RESPONSE_TYPE",
    format: "protobuf",
    category: "wire",
    default_severity: Severity::Error,
    summary: "An rpc's response type changed to a different message.",
    bad_example: "rpc Get(GetRequest) -> rpc Get(FetchRequest)",
    good_example: "evolve GetRequest compatibly",
    hint: "Keep the message type and evolve it compatibly, or add a new rpc.",
    peers: &["buf:RPC_SAME_RESPONSE_TYPE"],
};

pub(crate) fn check(prev: &MethodDescriptor, cur: &MethodDescriptor, out: &mut Vec<Finding>) {
    let property = |m: &MethodDescriptor| format!("'{}'", m.output().full_name());
    super::shared::rpc_property_changed(&RULE, "response type", property, prev, cur, out);
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::{Confluent, Wire};

    const OLD: &str =
        "syntax = \"proto3\";\nmessage A {}\nmessage B {}\nservice S { rpc M(A) returns (A); }\n";
    const NEW: &str =
        "syntax = \"proto3\";\nmessage A {}\nmessage B {}\nservice S { rpc M(B) returns (B); }\n";

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
