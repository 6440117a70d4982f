//! A field disappeared and another of the same type appeared beside it: a rename, which every
//! reader, query and dashboard experiences as a removal plus an addition.

use crate::pair::{Located, Pair};
use covenant_engine::{Finding, Node, NodeKind, RuleSpec, Severity};
use foldhash::{HashMap, HashMapExt, HashSet};

pub static RULE: RuleSpec = RuleSpec {
    id: "LIKELY_RENAME",
    format: "any",
    category: "semantic",
    // An error under the `covenant` preset (a warning under `confluent`): the seeds' Rule 2,
    // "treat rename as remove + add", in every format, an optional field or a CDC column
    // included. Pairing by type is a heuristic, which is why the refusal names the way
    // through (the additive change, or an approval).
    default_severity: Severity::Error,
    summary: "A field was removed and another with the same type added in its place; a rename is a removal plus an addition for old consumers, queries, dashboards and replay.",
    bad_example: "v1: {\"name\": \"caseOwner\", \"type\": \"string\"}\nv2: {\"name\": \"assignedOfficer\", \"type\": \"string\"}",
    good_example: "v2: keep {\"name\": \"caseOwner\", \"type\": \"string\", \"doc\": \"Deprecated: use assignedOfficer.\"}\n    add {\"name\": \"assignedOfficer\", \"type\": [\"null\", \"string\"], \"default\": null, \"aliases\": [\"caseOwner\"]}\n    write both; remove caseOwner after the deprecation window",
    hint: "Add the new field beside the old one, write both, migrate consumers, mark the old field deprecated (an Avro alias helps readers resolve it), and remove it only after the retention and deprecation window. For a CDC column: add the new column nullable, backfill, dual-write, update the CDC contract, then drop the old one. Source: schema-evolution-rules Rule 2, §11, §19.2.",
    peers: &["buf:FIELD_SAME_NAME"],
};

fn rename_hint(old: &str, new: &str) -> String {
    format!(
        "Add '{new}' beside '{old}', write both, migrate consumers to '{new}', mark '{old}' deprecated (an Avro alias helps readers resolve it), and remove '{old}' only after the retention and deprecation window."
    )
}

/// Pairs each removed field with the added field that most plausibly replaced it: one that
/// declares the old name as an alias, then one with the same field number, then the only
/// added field of the same type when exactly one field of that type was removed.
pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (old_parent, new_parent) in pair.matched() {
        let old_children = fields(old_parent);
        let new_children = fields(new_parent);
        // Sets, not scans: a record of many thousand fields must stay linear.
        let new_names: HashSet<&str> = new_children.iter().map(|n| n.name.as_str()).collect();
        let mut removed: Vec<_> = old_children
            .iter()
            .filter(|o| !new_names.contains(o.name.as_str()))
            .copied()
            .collect();
        // Nothing removed, nothing renamed: so it is for most records of most changes.
        if removed.is_empty() {
            continue;
        }
        let old_names: HashSet<&str> = old_children.iter().map(|o| o.name.as_str()).collect();
        let added: Vec<_> = new_children
            .iter()
            .filter(|n| !old_names.contains(n.name.as_str()))
            .copied()
            .collect();
        let same_type =
            |a: &Node, b: &Node| a.type_name == b.type_name && a.logical_type == b.logical_type;
        let mut by_alias: HashMap<&str, Vec<usize>> = HashMap::new();
        let mut by_number: HashMap<i64, Vec<usize>> = HashMap::new();
        for (i, n) in added.iter().enumerate() {
            for alias in &n.aliases {
                by_alias.entry(alias.as_str()).or_default().push(i);
            }
            if let Some(number) = n.number {
                by_number.entry(number).or_default().push(i);
            }
        }
        let mut taken = vec![false; added.len()];
        let mut pairs = Vec::new();
        removed.retain(|old| {
            let free = |ids: Option<&Vec<usize>>, ok: &dyn Fn(usize) -> bool| {
                ids.into_iter()
                    .flatten()
                    .copied()
                    .find(|i| !taken[*i] && ok(*i))
            };
            let by_alias = free(by_alias.get(old.name.as_str()), &|_| true);
            // A number taken over by another type is reuse, not a rename.
            let by_number = || {
                old.number
                    .and_then(|number| free(by_number.get(&number), &|i| same_type(added[i], old)))
            };
            match by_alias.or_else(by_number) {
                Some(i) => {
                    taken[i] = true;
                    pairs.push((*old, added[i]));
                    false
                }
                None => true,
            }
        });
        let added: Vec<&Node> = added
            .iter()
            .zip(&taken)
            .filter(|(_, taken)| !**taken)
            .map(|(n, _)| *n)
            .collect();
        // A Protobuf field whose number the new version reserves was retired on purpose: a
        // rename keeps its number, so it is not paired by type with an added field.
        let parent = new_parent.node;
        removed.retain(|old| {
            !old.number
                .is_some_and(|n| parent.reserves_number(n) || parent.reserves_name(&old.name))
        });
        let type_of = |n: &'_ Node| (n.type_name.clone(), n.logical_type.clone());
        let mut removed_by_type: HashMap<_, usize> = HashMap::new();
        for old in &removed {
            *removed_by_type.entry(type_of(old)).or_default() += 1;
        }
        let mut added_by_type: HashMap<_, Vec<&Node>> = HashMap::new();
        for new in &added {
            added_by_type.entry(type_of(new)).or_default().push(new);
        }
        for old in &removed {
            let key = type_of(old);
            if let (Some(1), Some([new])) = (
                removed_by_type.get(&key),
                added_by_type.get(&key).map(Vec::as_slice),
            ) {
                pairs.push((*old, *new));
            }
        }
        for (old, new) in pairs {
            let how = if new.aliases.contains(&old.name) {
                format!(
                    "; its alias '{}' lets Avro readers resolve old data, but queries, dashboards and lineage still see a removal and an addition",
                    old.name
                )
            } else if old.number.is_some() && old.number == new.number && pair.format() == "iceberg"
            {
                format!(
                    " under the same field id {}; Iceberg reads the old data under the new name, but queries, views and consumers that name the column see a removal and an addition",
                    old.number.unwrap_or_default()
                )
            } else if old.number.is_some() && old.number == new.number {
                format!(
                    " under the same number {}; binary readers are unaffected, but JSON encodings, generated code and queries see a removal and an addition",
                    old.number.unwrap_or_default()
                )
            } else {
                format!(
                    " with the same type '{}'; old consumers and replayed data see a removal and an addition",
                    new.display_type()
                )
            };
            findings.push(
                Finding::new(
                    &RULE,
                    new.path.clone(),
                    format!("Field '{}' looks renamed to '{}'{how}.", old.name, new.name),
                )
                .with_hint(rename_hint(&old.name, &new.name)),
            );
        }
    }
    findings
}

fn fields<'a>(parent: &Located<'a>) -> Vec<&'a Node> {
    parent
        .node
        .children
        .iter()
        .filter(|c| c.kind == NodeKind::Field)
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::rules::testkit::*;

    #[test]
    fn case_owner_renamed_to_assigned_officer() {
        let old = avro(
            "CaseEvent",
            vec![field("caseId", "string"), field("caseOwner", "string")],
        );
        let new = avro(
            "CaseEvent",
            vec![
                field("caseId", "string"),
                field("assignedOfficer", "string"),
            ],
        );
        let findings = run("LIKELY_RENAME", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "/fields/assignedOfficer");
        assert_eq!(
            findings[0].message,
            "Field 'caseOwner' looks renamed to 'assignedOfficer' with the same type 'string'; old consumers and replayed data see a removal and an addition."
        );
        assert!(
            findings[0]
                .hint
                .contains("Add 'assignedOfficer' beside 'caseOwner'")
        );
    }

    #[test]
    fn a_reserved_protobuf_field_is_retired_not_renamed() {
        let old = proto(vec![message(
            "acme.CaseEvent",
            vec![("event_id", "string", 1), ("legacy_owner", "string", 7)],
        )]);
        let retired = proto(vec![
            message(
                "acme.CaseEvent",
                vec![
                    ("event_id", "string", 1),
                    ("closure_reason_code", "string", 5),
                ],
            )
            .reserve(&[7], &["legacy_owner"]),
        ]);
        assert!(run("LIKELY_RENAME", &old, &retired, &none()).is_empty());
        let renamed = proto(vec![message(
            "acme.CaseEvent",
            vec![
                ("event_id", "string", 1),
                ("closure_reason_code", "string", 5),
            ],
        )]);
        assert_eq!(run("LIKELY_RENAME", &old, &renamed, &none()).len(), 1);
    }

    #[test]
    fn alias_declares_the_rename_but_it_is_still_reported() {
        let old = avro("CaseEvent", vec![field("caseOwnerId", "string").nullable()]);
        let new = avro(
            "CaseEvent",
            vec![
                field("assignedOfficerId", "string")
                    .nullable()
                    .alias("caseOwnerId"),
                field("note", "string"),
            ],
        );
        let findings = run("LIKELY_RENAME", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert!(findings[0].message.contains("alias 'caseOwnerId'"));
    }

    #[test]
    fn protobuf_same_number_new_name_is_a_rename() {
        let old = proto(vec![message(
            "acme.CaseEvent",
            vec![("event_id", "string", 1), ("owner", "string", 2)],
        )]);
        let new = proto(vec![message(
            "acme.CaseEvent",
            vec![("event_id", "string", 1), ("assigned_officer", "string", 2)],
        )]);
        let findings = run("LIKELY_RENAME", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "/acme.CaseEvent/fields/assigned_officer");
        assert!(findings[0].message.contains("same number 2"));
    }

    #[test]
    fn protobuf_number_reused_by_another_type_is_not_a_rename() {
        let old = proto(vec![message("acme.E", vec![("legacy_owner", "string", 7)])]);
        let new = proto(vec![message(
            "acme.E",
            vec![("escalation_level", "int64", 7)],
        )]);
        assert!(run("LIKELY_RENAME", &old, &new, &none()).is_empty());
    }

    #[test]
    fn different_types_or_ambiguous_pairs_are_not_renames() {
        let old = avro("E", vec![field("caseOwner", "string")]);
        let new = avro("E", vec![field("assignedOfficer", "long")]);
        assert!(run("LIKELY_RENAME", &old, &new, &none()).is_empty());

        let old = avro("E", vec![field("a", "string"), field("b", "string")]);
        let new = avro("E", vec![field("c", "string"), field("d", "string")]);
        assert!(run("LIKELY_RENAME", &old, &new, &none()).is_empty());

        let old = avro("E", vec![field("a", "string")]);
        let new = avro("E", vec![field("a", "string"), field("b", "string")]);
        assert!(run("LIKELY_RENAME", &old, &new, &none()).is_empty());
    }

    #[test]
    fn nested_renames_are_found_under_their_record() {
        let old = avro(
            "E",
            vec![field("owner", "record:acme.Owner").child(field("fullName", "string"))],
        );
        let new = avro(
            "E",
            vec![field("owner", "record:acme.Owner").child(field("displayName", "string"))],
        );
        let findings = run("LIKELY_RENAME", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "/fields/owner/fields/displayName");
    }
}
