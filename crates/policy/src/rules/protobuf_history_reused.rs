//! A Protobuf number or name, once used or reserved, belongs to its field forever: data
//! written by any earlier version may still be replayed, so the check looks at every version
//! the subject ever had, not only the latest one, whatever the level and strictness.
//!
//! A field renamed in place (the same number and type, held in every version since) is not
//! reuse: its data is read as itself under the new name. That is a rename, which
//! `LIKELY_RENAME` reports as it does in every format. Reuse is a number that returns after
//! its field was removed, or that another type took over.

use crate::pair::Pair;
use covenant_engine::numbering::{Candidates, Declaration, name_key, type_key};
use covenant_engine::{FieldTree, Finding, Node, NodeKind, RuleSpec, Severity};
use foldhash::HashSet;
use std::collections::BTreeMap;

pub static RULE: RuleSpec = RuleSpec {
    id: "PROTOBUF_HISTORY_REUSED",
    format: "protobuf",
    category: "semantic",
    // An error: bytes written under the old field are read as the new one without any
    // decoding failure. Dropping a reservation does not make the number free again; only a
    // new number (or a new message) is safe. Source: schema-evolution-rules Rule 9, §9.1-9.3.
    default_severity: Severity::Error,
    summary: "A Protobuf field or enum value uses a number or name that an earlier version of the subject (any version, not only the latest) gave to another field or value, or reserved: a number back after its field was removed, or taken by another type. A field renamed in place (same number and type in every version since) is a rename, LIKELY_RENAME. Source: schema-evolution-rules Rule 9, §9.1-9.3.",
    bad_example: "v1: message CaseLifecycleEvent { string case_id = 2; string legacy_owner = 7; }\nv2: message CaseLifecycleEvent { string case_id = 2; reserved 7; reserved \"legacy_owner\"; }\nv3: message CaseLifecycleEvent { string case_id = 2; string escalation_note = 7; }",
    good_example: "v3: message CaseLifecycleEvent {\n  string case_id = 2;\n  string escalation_note = 8;\n  reserved 7;\n  reserved \"legacy_owner\";\n}",
    hint: "Give the new field a number and name never used in the subject's history, and keep the reservations of removed fields for good.",
    peers: &[
        "buf:FIELD_NO_DELETE_UNLESS_NUMBER_RESERVED",
        "buf:RESERVED_MESSAGE_NO_DELETE",
    ],
};

/// One member (field or enum value) as the rule sees it.
struct Member<'a> {
    name: &'a str,
    number: i64,
    /// Its name's search key, made once for the search in every earlier version.
    key: u64,
    /// Its type's key (0 for an enum value).
    type_key: u64,
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
                    key: name_key(&c.name),
                    type_key: type_key(c),
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
                    key: name_key(&v.name),
                    type_key: 0,
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

/// Whether a message field holding `number` with `type_key` was renamed in place: each of
/// the `later` versions (oldest first, up to the latest) still holds the number with that
/// type and does not reserve it, so no version ever removed the field.
fn renamed_in_place(number: i64, type_key: u64, later: &[(Option<i64>, &Declaration)]) -> bool {
    later.iter().all(|(_, d)| {
        !d.reserves_number(number) && d.holders_of(number).any(|h| h.type_key == type_key)
    })
}

/// Why `member` of `current` may not use its number or name, judged against one earlier
/// version's declaration (`old`, in `version`) and the versions after it (`later`);
/// `current_names` are the names `current` declares.
fn conflict(
    member: &Member<'_>,
    current: &Node,
    current_names: &HashSet<&str>,
    version: Option<i64>,
    old: &Declaration,
    later: &[(Option<i64>, &Declaration)],
) -> Option<String> {
    let when = || in_version(version);
    let (name, number) = (member.name, member.number);
    if old.reserves_number(number) && !current.reserves_number(number) {
        return Some(format!("number {number} was reserved {}", when()));
    }
    if old.reserves_name(name) {
        return Some(format!("name '{name}' was reserved {}", when()));
    }
    if old.holds_only(number, name, member.key) {
        return None;
    }
    old.find_holding(number, name, member.key, |held| {
        // An enum alias keeps its partner: both names still share the number.
        if held.number == number && held.name != name && !current_names.contains(held.name.as_str())
        {
            // The same field under a new name: a rename, not reuse.
            if current.kind == NodeKind::Record
                && held.type_key == member.type_key
                && renamed_in_place(number, member.type_key, later)
            {
                return None;
            }
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
        None
    })
}

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    if pair.format() != "protobuf" {
        return Vec::new();
    }
    let history = pair.history();
    let mut findings = Vec::new();
    for (path, current) in declarations(pair.new) {
        let what = if current.kind == NodeKind::Enum {
            "Enum value"
        } else {
            "Field"
        };
        let mut earlier: Vec<(Option<i64>, &Declaration)> = history
            .iter()
            .filter_map(|(version, numbering)| Some((*version, numbering.declaration(path)?)))
            .collect();
        // A declaration unchanged since the version before finds only what that one found,
        // and the oldest version with a conflict is the one reported.
        earlier.dedup_by(|later, before| later.1.fingerprint == before.1.fingerprint);
        let current_members = members(current);
        let current_names: HashSet<&str> = current_members.iter().map(|m| m.name).collect();
        let candidates = Candidates::new(current_members.iter().map(|m| (m.name, m.number, m.key)));
        // Versions oldest first: a member's first conflict is the one reported. Each version
        // screens every member at once, and only the members it may hold something against
        // are searched in it.
        let mut reasons: Vec<Option<String>> = vec![None; current_members.len()];
        let mut unsettled = Vec::new();
        for (at, (version, old)) in earlier.iter().enumerate() {
            old.mark_unsettled(&candidates, &mut unsettled);
            let later = &earlier[at + 1..];
            for (i, member) in current_members.iter().enumerate() {
                if unsettled[i] && reasons[i].is_none() {
                    reasons[i] = conflict(member, current, &current_names, *version, old, later);
                }
            }
        }
        for (member, reason) in current_members.iter().zip(reasons) {
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
        covenant_engine::budget::unlimited(|m| {
            crate::evaluate_in_history(
                m,
                &numbered,
                new,
                &PolicyContext::default(),
                &PolicySettings::default(),
            )
        })
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

    /// Versions 2 and 3 declare the message alike; the reservation is reported from the
    /// oldest of them, as a search of every version finds it.
    #[test]
    fn an_unchanged_declaration_reports_from_its_oldest_version() {
        let bare = proto(vec![message(EVENT, vec![("case_id", "string", 2)])]);
        let reused = proto(vec![message(
            EVENT,
            vec![("case_id", "string", 2), ("escalation_note", "string", 7)],
        )]);
        let findings = over(&[bare, v2(), v2()], &reused);
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(
            findings[0]
                .message
                .contains("number 7 was reserved in version 2;"),
            "{}",
            findings[0].message
        );
    }

    /// What a registry runs: parsed schemas, the earlier ones judged by the numbering each
    /// keeps, give what the field trees of every version give.
    #[test]
    fn parsed_schemas_judge_as_their_trees_do() {
        use covenant_schema::{ParsedSchema, SchemaType};
        let parse = |text: &str| ParsedSchema::parse(SchemaType::Protobuf, text, &[]).unwrap();
        let v1 = parse(
            "syntax = \"proto3\";\npackage acme;\nmessage CaseLifecycleEvent {\n  string case_id = 2;\n  string legacy_owner = 7;\n}\n",
        );
        let v2 = parse(
            "syntax = \"proto3\";\npackage acme;\nmessage CaseLifecycleEvent {\n  string case_id = 2;\n  reserved 7;\n}\n",
        );
        let v3 = parse(
            "syntax = \"proto3\";\npackage acme;\nmessage CaseLifecycleEvent {\n  string case_id = 2;\n  string escalation_note = 7;\n}\n",
        );
        let (context, settings) = (PolicyContext::default(), PolicySettings::default());
        let lineage = [(1, &v1), (2, &v2)];
        let parsed = covenant_engine::budget::unlimited(|m| {
            crate::evaluate_schemas_in_history(m, &lineage, &v3, &context, &settings)
        });
        let trees = [
            covenant_engine::budget::unlimited(|m| crate::field_tree(m, &v1)),
            covenant_engine::budget::unlimited(|m| crate::field_tree(m, &v2)),
        ];
        let from_trees = covenant_engine::budget::unlimited(|m| {
            crate::evaluate_in_history(
                m,
                &[(1, &trees[0]), (2, &trees[1])],
                &covenant_engine::budget::unlimited(|m| crate::field_tree(m, &v3)),
                &context,
                &settings,
            )
        });
        assert_eq!(parsed, from_trees);
        let reused: Vec<&Finding> = parsed
            .iter()
            .filter(|f| f.rule == "PROTOBUF_HISTORY_REUSED")
            .collect();
        assert_eq!(reused.len(), 1, "{parsed:?}");
        assert!(
            reused[0]
                .message
                .contains("belonged to 'legacy_owner' in version 1")
        );
    }

    /// Number 7 taken straight from 'legacy_owner' by a field of the same type, with no
    /// version between that removed it, is the same field renamed: `LIKELY_RENAME` reports
    /// it, as it reports a rename in every format, and history is not reused.
    #[test]
    fn a_rename_in_place_is_a_rename_not_reuse() {
        let v3 = proto(vec![message(
            EVENT,
            vec![("case_id", "string", 2), ("escalation_note", "string", 7)],
        )]);
        assert!(run("PROTOBUF_HISTORY_REUSED", &v1(), &v3, &none()).is_empty());
        let renames = run("LIKELY_RENAME", &v1(), &v3, &none());
        assert_eq!(renames.len(), 1, "{renames:?}");
        assert!(
            renames[0].message.starts_with(
                "Field 'legacy_owner' looks renamed to 'escalation_note' under the same number 7"
            ),
            "{}",
            renames[0].message
        );
        // Renamed in version 2 and unchanged since: version 1's name does not haunt version 3.
        let v3_again = v3.clone();
        assert!(over(&[v1(), v3.clone()], &v3_again).is_empty());
        // Renamed twice, and back to the first name: still one field all along.
        let back = proto(vec![message(
            EVENT,
            vec![("case_id", "string", 2), ("legacy_owner", "string", 7)],
        )]);
        assert!(over(&[v1(), v3], &back).is_empty());
    }

    /// Reuse is a number that comes back after its field was removed, or under another type.
    #[test]
    fn a_number_back_after_removal_or_under_another_type_is_reuse() {
        let bare = proto(vec![message(EVENT, vec![("case_id", "string", 2)])]);
        let back = proto(vec![message(
            EVENT,
            vec![("case_id", "string", 2), ("escalation_note", "string", 7)],
        )]);
        let findings = over(&[v1(), bare], &back);
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(findings[0].is_error());
        assert!(
            findings[0]
                .message
                .contains("number 7 belonged to 'legacy_owner' in version 1"),
            "{}",
            findings[0].message
        );
        let retyped = proto(vec![message(
            EVENT,
            vec![("case_id", "string", 2), ("escalation_count", "int64", 7)],
        )]);
        let findings = over(&[v1()], &retyped);
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert!(
            findings[0]
                .message
                .contains("number 7 belonged to 'legacy_owner'")
        );
        // Renamed in place once, then retyped: the old data is read as another type.
        let renamed = proto(vec![message(
            EVENT,
            vec![("case_id", "string", 2), ("escalation_note", "string", 7)],
        )]);
        assert_eq!(over(&[v1(), renamed], &retyped).len(), 1);
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
