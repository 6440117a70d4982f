//! An Iceberg field id, once assigned, belongs to its column forever: data files written by
//! any earlier version may still carry it, so a dropped column's id that comes back under
//! another name or type makes those files read as the new column. The structural check sees
//! only the version being replaced; this rule looks at every version the subject had.

use crate::pair::Pair;
use covenant_engine::numbering::NumberedField;
use covenant_engine::{Finding, Node, NodeKind, RuleSpec, Severity};
use foldhash::HashMap;

pub static RULE: RuleSpec = RuleSpec {
    id: "ICEBERG_HISTORY_ID_REUSED",
    format: "iceberg",
    category: "semantic",
    // An error: old data files are read as the new column without any failure.
    default_severity: Severity::Error,
    summary: "An Iceberg column uses a field id that an earlier version of the subject (any version, not only the latest) gave to another column since dropped; data files written then would be read as the new column.",
    bad_example: "v1: {\"id\": 5, \"name\": \"legacy_code\", \"type\": \"string\"}\nv2: id 5 dropped\nv3: {\"id\": 5, \"name\": \"listing_venue\", \"type\": \"int\"}",
    good_example: "v3: {\"id\": 8, \"name\": \"listing_venue\", \"type\": \"int\"} (an id never used)",
    hint: "Give the new column an id the table never used (above its last-column-id); let Iceberg assign ids.",
    peers: &["iceberg:TableMetadata.lastColumnId"],
};

/// Every numbered field of a tree by id: (name, type, path).
fn by_id(root: &Node) -> HashMap<i64, &Node> {
    root.walk()
        .into_iter()
        .filter(|n| n.kind == NodeKind::Field)
        .filter_map(|n| Some((n.number?, n)))
        .collect()
}

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    if pair.format() != "iceberg" {
        return Vec::new();
    }
    let latest = by_id(&pair.old.root);
    let mut findings = Vec::new();
    let history: Vec<(Option<i64>, HashMap<i64, &NumberedField>)> = pair
        .history()
        .into_iter()
        .map(|(v, numbering)| {
            let ids = numbering.fields.iter().map(|f| (f.number, f)).collect();
            (v, ids)
        })
        .collect();
    for (id, node) in by_id(&pair.new.root) {
        if latest.contains_key(&id) {
            continue;
        }
        let earlier = history.iter().find_map(|(version, ids)| {
            let old = ids.get(&id)?;
            (old.name != node.name || old.type_name != node.type_name).then_some((*version, *old))
        });
        if let Some((version, old)) = earlier {
            let when = version.map_or("an earlier version".to_string(), |v| format!("version {v}"));
            findings.push(Finding::new(
                &RULE,
                node.path.clone(),
                format!(
                    "Field id {id} was '{}' of type {} in {when} and was dropped since; it now names '{}' of type {}, so data files written then would be read as '{}'.",
                    old.name, old.type_name, node.name, node.type_name, node.name
                ),
            ));
        }
    }
    findings.sort_by(|a, b| a.path.cmp(&b.path));
    findings
}

#[cfg(test)]
mod tests {
    use crate::rules::testkit::*;
    use covenant_engine::{FieldTree, Node, NodeKind};

    fn table(fields: &[(i64, &str, &str)]) -> FieldTree {
        let mut root = Node::new(NodeKind::Record, "", "", "struct");
        root.children = fields
            .iter()
            .map(|(id, name, ty)| {
                let mut n = Node::new(NodeKind::Field, *name, format!("/fields/{name}"), *ty);
                n.number = Some(*id);
                n
            })
            .collect();
        FieldTree {
            format: "ICEBERG".into(),
            root,
        }
    }

    #[test]
    fn an_id_dropped_two_versions_ago_and_reused_is_found() {
        let v1 = table(&[(1, "symbol", "string"), (5, "legacy_code", "string")]);
        let v2 = table(&[(1, "symbol", "string")]);
        let v3 = table(&[(1, "symbol", "string"), (5, "listing_venue", "int")]);
        let lineage = [(1, &v1), (2, &v2)];
        let found = run_in_history("ICEBERG_HISTORY_ID_REUSED", &lineage, &v3, &none());
        assert_eq!(found.len(), 1, "{found:#?}");
        assert!(
            found[0]
                .message
                .starts_with("Field id 5 was 'legacy_code' of type string in version 1"),
            "{}",
            found[0].message
        );
        let fresh = table(&[(1, "symbol", "string"), (8, "listing_venue", "int")]);
        assert!(run_in_history("ICEBERG_HISTORY_ID_REUSED", &lineage, &fresh, &none()).is_empty());
    }
}
