//! A field kept its name but its wire identity now belongs to another field: a Protobuf field
//! whose number changed (schema-evolution-rules §9.1, "Never change field numbers"), or an
//! Avro alias that makes a reader take another field's data.
//!
//! Each format binds data to fields differently, so the rule asks each its own question:
//!
//! - Protobuf binds by number. A name that still exists under another number decodes old
//!   bytes into the wrong field: swapping `event_id = 1` and `case_id = 2` puts every case id
//!   in `event_id`. Both the binary and the structural check see only renames.
//! - Avro binds by name, then by the reader's aliases. Moving a field to another position is
//!   harmless, so there is no number analogue; the danger is an alias naming an old field
//!   that is not this field's predecessor (the old schema had both, or the new one still has
//!   the aliased field), so old data of one field lands in another.
//! - JSON Schema binds properties by name only and has no numbers or aliases, so there is no
//!   analogue: a renamed property is a removal plus an addition (`LIKELY_RENAME`).

use crate::pair::{Located, Pair};
use covenant_engine::{Finding, Node, NodeKind, RuleSpec, Severity};
use foldhash::HashMap;

pub static RULE: RuleSpec = RuleSpec {
    id: "FIELD_IDENTITY_MOVED",
    format: "any",
    category: "semantic",
    // An error: the data decodes without complaint and lands in the wrong field, which no
    // reader can detect afterwards.
    default_severity: Severity::Error,
    summary: "A field that still exists now binds to another field's data: a Protobuf field name under a different number (evolution rules §9.1), or an Avro alias naming an old field that is not this field's predecessor. JSON Schema has no analogue (properties bind by name only).",
    bad_example: "v1: message CaseEvent { string event_id = 1; string case_id = 2; }\nv2: message CaseEvent { string case_id = 1; string event_id = 2; }",
    good_example: "v2: message CaseEvent {\n  string event_id = 1 [deprecated = true];\n  string case_id = 2;\n  string source_event_id = 3;\n}",
    hint: "Never change a field's number or point an alias at another field: add a new field with a new number (or name) and deprecate the old one; remove it later with `reserved`.",
    peers: &["buf:FIELD_SAME_NAME", "buf:FIELD_SAME_JSON_NAME"],
};

fn fields<'a>(parent: &Located<'a>) -> Vec<&'a Node> {
    parent
        .node
        .children
        .iter()
        .filter(|c| c.kind == NodeKind::Field)
        .collect()
}

fn hint(name: &str) -> String {
    format!(
        "Keep '{name}' where it was; add a new field with a new number (or name) for the new meaning, mark the old one deprecated, and reserve it when it is removed."
    )
}

/// Protobuf (and Iceberg ids): a field name present in both versions under different
/// numbers. Maps, not scans: a struct of many thousand fields must stay linear.
fn number_moved(old: &[&Node], new: &[&Node], out: &mut Vec<Finding>) {
    let by_name: HashMap<&str, &Node> = old.iter().map(|o| (o.name.as_str(), *o)).collect();
    let by_number: HashMap<i64, &Node> = old.iter().filter_map(|o| Some((o.number?, *o))).collect();
    for n in new {
        let Some(o) = by_name.get(n.name.as_str()) else {
            continue;
        };
        let (Some(was), Some(now)) = (o.number, n.number) else {
            continue;
        };
        if was == now {
            continue;
        }
        let taken = by_number
            .get(&now)
            .map(|x| {
                format!(
                    "; number {now} was '{}', so its old data now decodes as '{}'",
                    x.name, n.name
                )
            })
            .unwrap_or_default();
        out.push(
            Finding::new(
                &RULE,
                n.path.clone(),
                format!(
                    "Field '{}' moved from number {was} to {now}{taken}; data written with number {was} is no longer read as '{}'.",
                    n.name, n.name
                ),
            )
            .with_hint(hint(&n.name)),
        );
    }
}

/// Avro: an alias on a new field that names an old field other than its predecessor.
fn alias_moved(old: &[&Node], new: &[&Node], out: &mut Vec<Finding>) {
    for n in new {
        for alias in n.aliases.iter().filter(|a| **a != n.name) {
            if !old.iter().any(|o| &o.name == alias) {
                continue;
            }
            let other_in_old = old.iter().any(|o| o.name == n.name);
            let other_in_new = new.iter().any(|x| &x.name == alias);
            if !other_in_old && !other_in_new {
                // A genuine rename: the alias names this field's predecessor.
                continue;
            }
            out.push(
                Finding::new(
                    &RULE,
                    n.path.clone(),
                    format!(
                        "Field '{}' declares alias '{alias}', but '{alias}' is another field of the earlier version; readers resolving old data by alias take '{alias}''s values as '{}'.",
                        n.name, n.name
                    ),
                )
                .with_hint(hint(&n.name)),
            );
        }
    }
}

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (old_parent, new_parent) in pair.matched() {
        let (old, new) = (fields(old_parent), fields(new_parent));
        match pair.format() {
            // Iceberg binds by field id as Protobuf binds by number: a name under a new id
            // is a new column, and the old column's data is no longer read under that name.
            "protobuf" | "iceberg" => number_moved(&old, &new, &mut findings),
            "avro" => alias_moved(&old, &new, &mut findings),
            _ => {}
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use crate::rules::testkit::*;

    const ID: &str = "FIELD_IDENTITY_MOVED";

    #[test]
    fn swapped_numbers_of_the_seed_example() {
        let old = proto(vec![message(
            "acme.CaseEvent",
            vec![("event_id", "string", 1), ("case_id", "string", 2)],
        )]);
        let new = proto(vec![message(
            "acme.CaseEvent",
            vec![("case_id", "string", 1), ("event_id", "string", 2)],
        )]);
        let findings = run(ID, &old, &new, &none());
        assert_eq!(findings.len(), 2, "{findings:?}");
        assert_eq!(findings[0].path, "/acme.CaseEvent/fields/case_id");
        assert_eq!(
            findings[0].message,
            "Field 'case_id' moved from number 2 to 1; number 1 was 'event_id', so its old data now decodes as 'case_id'; data written with number 2 is no longer read as 'case_id'."
        );
        assert!(
            findings[0]
                .hint
                .contains("add a new field with a new number")
        );
        assert_eq!(findings[0].severity, covenant_engine::Severity::Error);
    }

    #[test]
    fn a_number_moved_to_a_fresh_number_is_reported_too() {
        let old = proto(vec![message("acme.E", vec![("note", "string", 3)])]);
        let new = proto(vec![message("acme.E", vec![("note", "string", 9)])]);
        let findings = run(ID, &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert!(
            findings[0]
                .message
                .starts_with("Field 'note' moved from number 3 to 9;")
        );
    }

    #[test]
    fn same_numbers_added_fields_and_renames_are_not_moves() {
        let old = proto(vec![message(
            "acme.CaseEvent",
            vec![("event_id", "string", 1), ("owner", "string", 2)],
        )]);
        let new = proto(vec![message(
            "acme.CaseEvent",
            vec![
                ("event_id", "string", 1),
                ("assigned_officer", "string", 2),
                ("closure_reason_code", "string", 5),
            ],
        )]);
        assert!(run(ID, &old, &new, &none()).is_empty());
    }

    #[test]
    fn avro_alias_naming_another_live_field() {
        let old = avro(
            "CaseEvent",
            vec![field("eventId", "string"), field("caseId", "string")],
        );
        let new = avro(
            "CaseEvent",
            vec![
                field("eventId", "string").alias("caseId"),
                field("caseId", "string"),
            ],
        );
        let findings = run(ID, &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "/fields/eventId");
        assert!(findings[0].message.contains("declares alias 'caseId'"));
    }

    #[test]
    fn avro_alias_naming_another_removed_field() {
        let old = avro(
            "CaseEvent",
            vec![field("eventId", "string"), field("caseId", "string")],
        );
        let new = avro(
            "CaseEvent",
            vec![field("eventId", "string").alias("caseId")],
        );
        assert_eq!(run(ID, &old, &new, &none()).len(), 1);
    }

    #[test]
    fn avro_rename_with_alias_and_moved_positions_are_fine() {
        let old = avro(
            "CaseEvent",
            vec![field("caseOwner", "string"), field("caseId", "string")],
        );
        let new = avro(
            "CaseEvent",
            vec![
                field("caseId", "string"),
                field("assignedOfficer", "string").alias("caseOwner"),
            ],
        );
        assert!(run(ID, &old, &new, &none()).is_empty());
    }

    #[test]
    fn json_schema_has_no_analogue() {
        let old = json(vec![property("a", "string"), property("b", "string")]);
        let new = json(vec![property("b", "string"), property("a", "string")]);
        assert!(run(ID, &old, &new, &none()).is_empty());
    }
}
