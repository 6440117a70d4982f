//! The table's identifier fields (its row identity for upserts and equality deletes) changed.

use super::Pair;
use crate::index::Index;
use covenant_engine::{Finding, RuleSpec, Severity};
use std::collections::BTreeSet;

pub static RULE: RuleSpec = RuleSpec {
    id: "ICEBERG_IDENTIFIER_FIELDS_CHANGED",
    format: "iceberg",
    category: "key",
    default_severity: Severity::Error,
    summary: "The schema's `identifier-field-ids` changed: the row identity that upserts, MERGE and equality deletes use is different, so rows written under the old identity no longer match.",
    bad_example: "identifier-field-ids: [1] -> [1, 2]",
    good_example: "keep identifier-field-ids [1]; publish a new table for a new identity",
    hint: "Keep the identifier fields; a new row identity needs a new table (or a reviewed migration that rewrites equality deletes).",
    peers: &["iceberg:UpdateSchema.setIdentifierFields"],
};

fn names(index: &Index<'_>, ids: &BTreeSet<i32>) -> String {
    let names: Vec<String> = ids
        .iter()
        .map(|id| {
            index.get(*id).map_or_else(
                || format!("id {id}"),
                |c| format!("'{}'", c.names.join(".")),
            )
        })
        .collect();
    if names.is_empty() {
        "none".into()
    } else {
        names.join(", ")
    }
}

pub(crate) fn check(pair: &Pair<'_>, out: &mut Vec<Finding>) {
    let old: BTreeSet<i32> = pair
        .old_schema
        .identifier_field_ids
        .iter()
        .copied()
        .collect();
    let new: BTreeSet<i32> = pair
        .new_schema
        .identifier_field_ids
        .iter()
        .copied()
        .collect();
    if old != new {
        out.push(Finding::new(
            &RULE,
            "/identifier-field-ids",
            format!(
                "The identifier fields changed from {} to {}.",
                names(&pair.old, &old),
                names(&pair.new, &new)
            ),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::*;

    fn with_ids(ids: &str) -> String {
        format!(
            r#"{{"type":"struct","identifier-field-ids":[{ids}],"fields":[{{"id":1,"name":"exchange","required":true,"type":"string"}},{{"id":2,"name":"symbol","required":true,"type":"string"}}]}}"#
        )
    }

    #[test]
    fn adding_an_identifier_field_is_a_key_change() {
        let f = fires(&RULE, &with_ids("1"), &with_ids("1, 2"));
        assert!(f.is_error());
        assert!(
            f.message
                .contains("from 'exchange' to 'exchange', 'symbol'"),
            "{}",
            f.message
        );
        silent(&RULE, &with_ids("1, 2"), &with_ids("2, 1"));
    }
}
