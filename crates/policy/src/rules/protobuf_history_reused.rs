//! A Protobuf number or name, once used or reserved, belongs to its field forever: data
//! written by any earlier version may still be replayed, so the check looks at every version
//! the subject ever had, not only the latest one, whatever the level and strictness.

use crate::pair::Pair;
use covenant_engine::{FieldTree, Finding, Node, NodeKind, RuleSpec, Severity};
use std::collections::{BTreeMap, HashSet};

pub static RULE: RuleSpec = RuleSpec {
    id: "PROTOBUF_HISTORY_REUSED",
    format: "protobuf",
    category: "semantic",
    // An error: bytes written under the old field are read as the new one without any
    // decoding failure. Dropping a reservation does not make the number free again; only a
    // new number (or a new message) is safe. Source: schema-evolution-rules Rule 9, §9.1-9.3.
    default_severity: Severity::Error,
    summary: "A Protobuf field or enum value uses a number or name that an earlier version of the subject (any version, not only the latest) gave to another field or value, or reserved. Source: schema-evolution-rules Rule 9, §9.1-9.3.",
    bad_example: "v1: message CaseLifecycleEvent { string case_id = 2; string legacy_owner = 7; }\nv2: message CaseLifecycleEvent { string case_id = 2; reserved 7; reserved \"legacy_owner\"; }\nv3: message CaseLifecycleEvent { string case_id = 2; string escalation_note = 7; }",
    good_example: "v3: message CaseLifecycleEvent {\n  string case_id = 2;\n  string escalation_note = 8;\n  reserved 7;\n  reserved \"legacy_owner\";\n}",
    hint: "Give the new field a number and name never used in the subject's history, and keep the reservations of removed fields for good.",
    peers: &[
        "buf:FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED",
        "buf:RESERVED_MESSAGE_NO_DELETE",
    ],
};

/// What one earlier version said about a message or enum: who held each number and name, and
/// what it reserved.
struct Earlier<'a> {
    version: Option<i64>,
    declaration: &'a Node,
    members: Vec<Member<'a>>,
    /// (number, position in `members`) and (name, position), sorted: a member's conflicts
    /// are found by two searches instead of a scan of every earlier member, which made the
    /// rule quadratic in the size of a message.
    by_number: Vec<(i64, usize)>,
    by_name: Vec<(&'a str, usize)>,
}

impl<'a> Earlier<'a> {
    fn new(version: Option<i64>, declaration: &'a Node) -> Earlier<'a> {
        let members = members(declaration);
        let mut by_number: Vec<(i64, usize)> = members
            .iter()
            .enumerate()
            .map(|(i, m)| (m.number, i))
            .collect();
        by_number.sort_unstable();
        let mut by_name: Vec<(&str, usize)> = members
            .iter()
            .enumerate()
            .map(|(i, m)| (m.name, i))
            .collect();
        by_name.sort_unstable();
        Earlier {
            version,
            declaration,
            members,
            by_number,
            by_name,
        }
    }

    /// Positions of the earlier members sharing `member`'s number or name, in declaration
    /// order: the only ones that can conflict with it.
    fn sharing(&self, member: &Member<'_>) -> Vec<usize> {
        let numbers = equal_range(&self.by_number, |(n, _)| n.cmp(&member.number));
        let names = equal_range(&self.by_name, |(n, _)| n.cmp(&member.name));
        let mut out: Vec<usize> = numbers
            .iter()
            .map(|(_, i)| *i)
            .chain(names.iter().map(|(_, i)| *i))
            .collect();
        out.sort_unstable();
        out.dedup();
        out
    }
}

/// The entries of a sorted slice that `order` finds equal.
fn equal_range<T>(sorted: &[T], order: impl Fn(&T) -> std::cmp::Ordering) -> &[T] {
    let start = sorted.partition_point(|x| order(x).is_lt());
    let end = start + sorted[start..].partition_point(|x| order(x).is_eq());
    &sorted[start..end]
}

/// One member (field or enum value) as the rule sees it.
struct Member<'a> {
    name: &'a str,
    number: i64,
}

fn members(declaration: &Node) -> Vec<Member<'_>> {
    match declaration.kind {
        NodeKind::Record => declaration
            .children
            .iter()
            .filter(|c| c.kind == NodeKind::Field)
            .filter_map(|c| {
                Some(Member {
                    name: &c.name,
                    number: c.number?,
                })
            })
            .collect(),
        NodeKind::Enum => declaration
            .enum_values
            .iter()
            .filter_map(|v| {
                Some(Member {
                    name: &v.name,
                    number: v.number?,
                })
            })
            .collect(),
        _ => Vec::new(),
    }
}

/// Messages and enums of a tree by path.
fn declarations(tree: &FieldTree) -> BTreeMap<&str, &Node> {
    tree.nodes()
        .into_iter()
        .filter(|n| matches!(n.kind, NodeKind::Record | NodeKind::Enum))
        .map(|n| (n.path.as_str(), n))
        .collect()
}

fn in_version(version: Option<i64>) -> String {
    match version {
        Some(v) => format!("in version {v}"),
        None => "in an earlier version".to_string(),
    }
}

/// Why `member` of `current` may not use its number or name, judged against one earlier
/// version of the same declaration; `current_names` are the names `current` declares.
fn conflict(
    member: &Member<'_>,
    current: &Node,
    current_names: &HashSet<&str>,
    earlier: &Earlier<'_>,
) -> Option<String> {
    let old = earlier.declaration;
    let when = || in_version(earlier.version);
    let (name, number) = (member.name, member.number);
    if old.reserves_number(number) && !current.reserves_number(number) {
        return Some(format!("number {number} was reserved {}", when()));
    }
    if old.reserves_name(name) {
        return Some(format!("name '{name}' was reserved {}", when()));
    }
    for held in earlier
        .sharing(member)
        .into_iter()
        .map(|i| &earlier.members[i])
    {
        // An enum alias keeps its partner: both names still share the number.
        if held.number == number && held.name != name && !current_names.contains(held.name) {
            return Some(format!(
                "number {number} belonged to '{}' {}",
                held.name,
                when()
            ));
        }
        if held.name == name && held.number != number {
            return Some(format!(
                "name '{name}' had number {} {}",
                held.number,
                when()
            ));
        }
    }
    None
}

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    if pair.format() != "protobuf" {
        return Vec::new();
    }
    let history: Vec<(Option<i64>, BTreeMap<&str, &Node>)> = pair
        .history()
        .into_iter()
        .map(|(v, tree)| (v, declarations(tree)))
        .collect();
    let mut findings = Vec::new();
    for (path, current) in declarations(pair.new) {
        let what = if current.kind == NodeKind::Enum {
            "Enum value"
        } else {
            "Field"
        };
        let earlier: Vec<Earlier<'_>> = history
            .iter()
            .filter_map(|(version, declared)| Some(Earlier::new(*version, declared.get(path)?)))
            .collect();
        let current_members = members(current);
        let current_names: HashSet<&str> = current_members.iter().map(|m| m.name).collect();
        for member in current_members {
            let reason = earlier
                .iter()
                .find_map(|e| conflict(&member, current, &current_names, e));
            if let Some(reason) = reason {
                findings.push(Finding::new(
                    &RULE,
                    path,
                    format!(
                        "{what} '{}' = {} reuses history: {reason}; data written then is read as '{}'.",
                        member.name, member.number, member.name
                    ),
                ));
            }
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use crate::rules::testkit::*;
    use crate::{PolicyContext, PolicySettings};
    use covenant_engine::{FieldTree, Finding};

    const EVENT: &str = "acme.CaseLifecycleEvent";

    fn v1() -> FieldTree {
        proto(vec![message(
            EVENT,
            vec![("case_id", "string", 2), ("legacy_owner", "string", 7)],
        )])
    }

    fn v2() -> FieldTree {
        proto(vec![
            message(EVENT, vec![("case_id", "string", 2)]).reserve(&[7], &["legacy_owner"]),
        ])
    }

    fn over(history: &[FieldTree], new: &FieldTree) -> Vec<Finding> {
        let numbered: Vec<(i64, &FieldTree)> = history
            .iter()
            .enumerate()
            .map(|(i, t)| (i as i64 + 1, t))
            .collect();
        crate::evaluate_in_history(
            &numbered,
            new,
            &PolicyContext::default(),
            &PolicySettings::default(),
        )
        .into_iter()
        .filter(|f| f.rule == "PROTOBUF_HISTORY_REUSED")
        .collect()
    }

    #[test]
    fn dropping_the_reservation_and_reusing_seven_is_caught_from_the_whole_history() {
        let v3 = proto(vec![message(
            EVENT,
            vec![("case_id", "string", 2), ("escalation_note", "string", 7)],
        )]);
        let findings = over(&[v1(), v2()], &v3);
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(findings[0].is_error());
        assert_eq!(findings[0].path, "/acme.CaseLifecycleEvent");
        assert_eq!(
            findings[0].message,
            "Field 'escalation_note' = 7 reuses history: number 7 belonged to 'legacy_owner' in version 1; data written then is read as 'escalation_note'."
        );
    }

    #[test]
    fn reusing_seven_straight_from_v1_with_the_same_type() {
        let v3 = proto(vec![message(
            EVENT,
            vec![("case_id", "string", 2), ("escalation_note", "string", 7)],
        )]);
        let findings = run("PROTOBUF_HISTORY_REUSED", &v1(), &v3, &none());
        assert_eq!(findings.len(), 1);
        assert!(findings[0].message.contains("belonged to 'legacy_owner'"));
    }

    #[test]
    fn a_name_moved_to_another_number_or_a_reserved_name_reused() {
        let moved = proto(vec![message(EVENT, vec![("case_id", "string", 3)])]);
        let findings = over(&[v1()], &moved);
        assert!(findings[0].message.contains("name 'case_id' had number 2"));
        let renamed = proto(vec![message(
            EVENT,
            vec![("case_id", "string", 2), ("legacy_owner", "string", 9)],
        )]);
        let findings = over(&[v2()], &renamed);
        assert!(
            findings[0]
                .message
                .contains("name 'legacy_owner' was reserved in version 1")
        );
    }

    #[test]
    fn new_numbers_and_kept_reservations_are_fine() {
        let v3 = proto(vec![
            message(
                EVENT,
                vec![("case_id", "string", 2), ("escalation_note", "string", 8)],
            )
            .reserve(&[7], &["legacy_owner"]),
        ]);
        assert!(over(&[v1(), v2()], &v3).is_empty());
    }

    #[test]
    fn enum_values_keep_their_numbers_but_aliases_may_share_one() {
        let old = proto(vec![proto_enum(
            "acme.Status",
            &[("STATUS_UNSPECIFIED", 0), ("STATUS_LEGACY", 9)],
        )]);
        let reused = proto(vec![proto_enum(
            "acme.Status",
            &[("STATUS_UNSPECIFIED", 0), ("STATUS_PAUSED", 9)],
        )]);
        assert_eq!(over(std::slice::from_ref(&old), &reused).len(), 1);
        let alias = proto(vec![proto_enum(
            "acme.Status",
            &[
                ("STATUS_UNSPECIFIED", 0),
                ("STATUS_LEGACY", 9),
                ("STATUS_OLD", 9),
            ],
        )]);
        assert!(over(&[old], &alias).is_empty());
    }
}
