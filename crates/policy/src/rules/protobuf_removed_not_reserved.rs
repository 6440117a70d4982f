//! In Protobuf a number is the field: removing one without reserving it invites reuse, and
//! reuse makes old bytes decode as a different field.

use crate::pair::Pair;
use covenant_engine::{Finding, Node, NodeKind, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "PROTOBUF_REMOVED_NOT_RESERVED",
    format: "protobuf",
    category: "semantic",
    // An error under the `covenant` preset (seeds Rule 9): removal itself may be acceptable
    // at the subject's level, but an unreserved number is one edit away from silent
    // corruption. It applies at every Protobuf strictness, unlike the wire rules.
    default_severity: Severity::Error,
    summary: "A Protobuf field or enum value was removed without reserving both its number and its name, or its number was reused by a field of another type, so old bytes can be read as a different field.",
    bad_example: "v1: message CaseLifecycleEvent { string event_id = 1; string case_id = 2; string legacy_owner = 7; }\nv2: message CaseLifecycleEvent { string event_id = 1; string case_id = 2; int64 escalation_level = 7; }",
    good_example: "v2: message CaseLifecycleEvent {\n  string event_id = 1;\n  string case_id = 2;\n  reserved 7;\n  reserved \"legacy_owner\";\n}",
    hint: "Reserve the removed number and name (`reserved 7; reserved \"legacy_owner\";`) and give any new field a new number.",
    peers: &[
        "buf:FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED",
        "buf:FIELD_NO_DELETE_UNLESS_NAME_RESERVED",
        "buf:ENUM_VALUE_NO_DELETE_UNLESS_NUMBER_RESERVED",
    ],
};

fn missing_reservations(parent: &Node, name: &str, number: i64) -> Option<String> {
    match (parent.reserves_number(number), parent.reserves_name(name)) {
        (true, true) => None,
        (false, true) => Some(format!("number {number}")),
        (true, false) => Some(format!("name '{name}'")),
        (false, false) => Some(format!("number {number} and name '{name}'")),
    }
}

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    if pair.format() != "protobuf" {
        return Vec::new();
    }
    let mut findings = Vec::new();
    for (old, new) in pair.matched() {
        let parent = new.node;
        if parent.kind == NodeKind::Record {
            // Indexed once: messages may hold tens of thousands of fields.
            let names: foldhash::HashSet<&str> =
                parent.children.iter().map(|n| n.name.as_str()).collect();
            let mut by_number: foldhash::HashMap<i64, &covenant_engine::Node> =
                foldhash::HashMap::default();
            for n in parent.children.iter().filter(|n| n.kind == NodeKind::Field) {
                if let Some(number) = n.number {
                    by_number.entry(number).or_insert(n);
                }
            }
            for gone in old
                .node
                .children
                .iter()
                .filter(|c| c.kind == NodeKind::Field && !names.contains(c.name.as_str()))
            {
                let Some(number) = gone.number else { continue };
                let reuser = by_number.get(&number).copied();
                let message = match reuser {
                    // Same type under a new name is a rename, reported by LIKELY_RENAME.
                    Some(n) if n.type_name == gone.type_name => continue,
                    Some(n) => format!(
                        "Field '{}' ({number}) was removed and its number is reused by '{}' with type '{}'; old data is read as the new field.",
                        gone.name,
                        n.name,
                        n.display_type()
                    ),
                    None => match missing_reservations(parent, &gone.name, number) {
                        None => continue,
                        Some(missing) => format!(
                            "Field '{}' ({number}) was removed without reserving its {missing}.",
                            gone.name
                        ),
                    },
                };
                findings.push(Finding::new(&RULE, parent.path.clone(), message));
            }
        }
        if parent.kind == NodeKind::Enum {
            // Sets, not scans: enums may hold tens of thousands of values.
            let names: foldhash::HashSet<&str> =
                parent.enum_values.iter().map(|n| n.name.as_str()).collect();
            let numbers: foldhash::HashSet<i64> =
                parent.enum_values.iter().filter_map(|n| n.number).collect();
            for gone in old
                .node
                .enum_values
                .iter()
                .filter(|v| !names.contains(v.name.as_str()))
            {
                let Some(number) = gone.number else { continue };
                if numbers.contains(&number) {
                    continue;
                }
                if let Some(missing) = missing_reservations(parent, &gone.name, number) {
                    findings.push(Finding::new(
                        &RULE,
                        parent.path.clone(),
                        format!(
                            "Enum value '{}' ({number}) was removed without reserving its {missing}.",
                            gone.name
                        ),
                    ));
                }
            }
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use crate::rules::testkit::*;

    fn v1() -> covenant_engine::FieldTree {
        proto(vec![message(
            "acme.CaseLifecycleEvent",
            vec![
                ("event_id", "string", 1),
                ("case_id", "string", 2),
                ("legacy_owner", "string", 7),
            ],
        )])
    }

    #[test]
    fn legacy_owner_removed_without_reservation() {
        let new = proto(vec![message(
            "acme.CaseLifecycleEvent",
            vec![("event_id", "string", 1), ("case_id", "string", 2)],
        )]);
        let findings = run("PROTOBUF_REMOVED_NOT_RESERVED", &v1(), &new, &none());
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "/acme.CaseLifecycleEvent");
        assert_eq!(
            findings[0].message,
            "Field 'legacy_owner' (7) was removed without reserving its number 7 and name 'legacy_owner'."
        );
    }

    #[test]
    fn field_seven_reused_with_another_type() {
        let new = proto(vec![message(
            "acme.CaseLifecycleEvent",
            vec![
                ("event_id", "string", 1),
                ("case_id", "string", 2),
                ("escalation_level", "int64", 7),
            ],
        )]);
        let findings = run("PROTOBUF_REMOVED_NOT_RESERVED", &v1(), &new, &none());
        assert_eq!(findings.len(), 1);
        assert!(
            findings[0]
                .message
                .contains("number is reused by 'escalation_level'")
        );
    }

    #[test]
    fn reserved_number_and_name_is_the_safe_removal() {
        let new = proto(vec![
            message(
                "acme.CaseLifecycleEvent",
                vec![("event_id", "string", 1), ("case_id", "string", 2)],
            )
            .reserve(&[7], &["legacy_owner"]),
        ]);
        assert!(run("PROTOBUF_REMOVED_NOT_RESERVED", &v1(), &new, &none()).is_empty());
        let half = proto(vec![
            message(
                "acme.CaseLifecycleEvent",
                vec![("event_id", "string", 1), ("case_id", "string", 2)],
            )
            .reserve(&[7], &[]),
        ]);
        let findings = run("PROTOBUF_REMOVED_NOT_RESERVED", &v1(), &half, &none());
        assert!(
            findings[0]
                .message
                .ends_with("without reserving its name 'legacy_owner'.")
        );
    }

    #[test]
    fn enum_value_removed_without_reservation() {
        let old = proto(vec![proto_enum(
            "acme.CaseStatus",
            &[
                ("CASE_STATUS_UNSPECIFIED", 0),
                ("CASE_STATUS_OPEN", 1),
                ("CASE_STATUS_LEGACY", 9),
            ],
        )]);
        let new = proto(vec![proto_enum(
            "acme.CaseStatus",
            &[("CASE_STATUS_UNSPECIFIED", 0), ("CASE_STATUS_OPEN", 1)],
        )]);
        let findings = run("PROTOBUF_REMOVED_NOT_RESERVED", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "/acme.CaseStatus");
        assert!(
            findings[0]
                .message
                .starts_with("Enum value 'CASE_STATUS_LEGACY' (9)")
        );
    }
}
