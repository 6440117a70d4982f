//! A `reserved` statement is a promise about history: the number or name it holds belonged to
//! a field or value that old data may still carry. Dropping it makes reuse one edit away.

use crate::pair::Pair;
use covenant_engine::{Finding, NodeKind, NumberRange, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "PROTOBUF_RESERVED_DROPPED",
    format: "protobuf",
    category: "semantic",
    // An error under the `covenant` preset at every Protobuf strictness (buf's
    // RESERVED_MESSAGE_NO_DELETE runs only at `wire` and above). Source:
    // schema-evolution-rules Rule 9, §9.2.
    default_severity: Severity::Error,
    summary: "A message or enum dropped a `reserved` number range or name, at any Protobuf strictness; the next field may take the number or name of one that old data still carries. Source: schema-evolution-rules Rule 9, §9.2.",
    bad_example: "v1: message CaseEvent { string event_id = 1; reserved 3, 4; reserved \"legacy_status\"; }\nv2: message CaseEvent { string event_id = 1; }",
    good_example: "v2: message CaseEvent { string event_id = 1; reserved 3, 4; reserved \"legacy_status\"; }",
    hint: "Keep every `reserved` statement for good; reservations cost nothing and are the only record that old data used those numbers and names.",
    peers: &[
        "buf:RESERVED_MESSAGE_NO_DELETE",
        "buf:RESERVED_ENUM_NO_DELETE",
    ],
};

fn covered(range: &NumberRange, by: &[NumberRange]) -> bool {
    by.iter()
        .any(|r| r.start <= range.start && r.end >= range.end)
}

fn show(range: &NumberRange) -> String {
    if range.start == range.end {
        range.start.to_string()
    } else {
        format!("{} to {}", range.start, range.end)
    }
}

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    if pair.format() != "protobuf" {
        return Vec::new();
    }
    let mut findings = Vec::new();
    for (old, new) in pair.matched() {
        let (o, n) = (old.node, new.node);
        if !matches!(o.kind, NodeKind::Record | NodeKind::Enum) || o.kind != n.kind {
            continue;
        }
        let mut dropped: Vec<String> = o
            .reserved_numbers
            .iter()
            .filter(|r| !covered(r, &n.reserved_numbers))
            .map(show)
            .collect();
        dropped.extend(
            o.reserved_names
                .iter()
                .filter(|name| !n.reserved_names.contains(name))
                .map(|name| format!("\"{name}\"")),
        );
        if dropped.is_empty() {
            continue;
        }
        let what = if o.kind == NodeKind::Enum {
            "Enum"
        } else {
            "Message"
        };
        findings.push(
            Finding::new(
                &RULE,
                n.path.clone(),
                format!(
                    "{what} '{}' dropped its reservation of {}; a later field may reuse what old data still carries, and old bytes would then be read as the new field.",
                    n.name,
                    dropped.join(", ")
                ),
            )
            .with_hint(format!(
                "Keep `reserved {};` in '{}'.",
                dropped.join(", "),
                n.name
            )),
        );
    }
    findings
}

#[cfg(test)]
mod tests {
    use crate::rules::testkit::*;

    #[test]
    fn dropping_a_reserved_statement_is_an_error() {
        let old = proto(vec![
            message("acme.CaseEvent", vec![("event_id", "string", 1)])
                .reserve(&[3, 4], &["legacy_status"]),
        ]);
        let kept = old.clone();
        let new = proto(vec![message(
            "acme.CaseEvent",
            vec![("event_id", "string", 1)],
        )]);
        let findings = run("PROTOBUF_RESERVED_DROPPED", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "/acme.CaseEvent");
        assert!(
            findings[0]
                .message
                .contains("dropped its reservation of 3, 4, \"legacy_status\""),
            "{}",
            findings[0].message
        );
        assert!(findings[0].is_error());
        assert!(run("PROTOBUF_RESERVED_DROPPED", &old, &kept, &none()).is_empty());
    }
}
