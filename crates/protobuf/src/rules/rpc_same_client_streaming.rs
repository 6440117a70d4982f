//! buf's `RPC_SAME_CLIENT_STREAMING` (WIRE and WIRE_JSON).

use covenant_engine::{Finding, RuleSpec, Severity};
use prost_reflect::MethodDescriptor;

pub static RULE: RuleSpec = RuleSpec {
    id: "RPC_SAME_CLIENT_STREAMING",
    format: "protobuf",
    category: "wire",
    default_severity: Severity::Error,
    summary: "An rpc changed its client streaming mode, which breaks existing clients and servers.",
    bad_example: "rpc M(A) returns (A); -> rpc M(stream A) returns (A);",
    good_example: "add a new rpc with the new streaming mode",
    hint: "Add a new rpc instead of changing an existing one's streaming mode.",
    peers: &["buf:RPC_SAME_CLIENT_STREAMING"],
};

pub(crate) fn check(prev: &MethodDescriptor, cur: &MethodDescriptor, out: &mut Vec<Finding>) {
    let property = |m: &MethodDescriptor| m.is_client_streaming().to_string();
    super::shared::rpc_property_changed(&RULE, "client streaming", property, prev, cur, out);
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::{fires, silent};
    use covenant_engine::ProtobufStrictness::{Confluent, Wire};

    const OLD: &str = "syntax = \"proto3\";\nmessage A {}\nservice S { rpc M(A) returns (A); }\n";
    const NEW: &str =
        "syntax = \"proto3\";\nmessage A {}\nservice S { rpc M(stream A) returns (A); }\n";

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
