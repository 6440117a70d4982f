//! A column renamed under the same id: Iceberg reads the same data under the new name.

use super::{Change, Pair, type_change};
use crate::index::Role;
use covenant_engine::{Finding, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "ICEBERG_COLUMN_RENAMED",
    format: "iceberg",
    category: "structural",
    default_severity: Severity::Info,
    summary: "A column kept its id and type but changed its name; Iceberg reads old data under the new name (metadata only), but queries, views and consumers that name the column break.",
    bad_example: "{\"id\": 12, \"name\": \"tick_size\", ...} -> {\"id\": 12, \"name\": \"price_increment\", ...}",
    good_example: "ALTER TABLE t RENAME COLUMN tick_size TO price_increment, after a view or a deprecation window for the old name",
    hint: "Keep the old name available to consumers (a view, or a deprecation window) and move every query to the new name before renaming.",
    peers: &["iceberg:UpdateSchema.renameColumn"],
};

/// Whether the later column reads the earlier one's data: the same or a promoted type.
pub(crate) fn same_data(old: &crate::types::Type, new: &crate::types::Type) -> bool {
    matches!(type_change(old, new), None | Some(Change::Promoted))
}

pub(crate) fn check(pair: &Pair<'_>, out: &mut Vec<Finding>) {
    for (old, new) in pair.matched() {
        if new.role != Role::Field || old.name == new.name || !same_data(old.ty, new.ty) {
            continue;
        }
        out.push(Finding::new(
            &RULE,
            new.pointer.clone(),
            format!("Column '{}' (id {}) was renamed to '{}'; its data is kept, but anything that names '{}' must change.", old.names.join("."), new.id, new.name, old.name),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::*;

    #[test]
    fn the_seed_rename_by_id() {
        let old = schema(&[
            (1, "symbol", true, "string"),
            (2, "tick_size", false, "decimal(38, 18)"),
        ]);
        let new = schema(&[
            (1, "symbol", true, "string"),
            (2, "price_increment", false, "decimal(38, 18)"),
        ]);
        let f = fires(&RULE, &old, &new);
        assert_eq!(f.path, "/fields/price_increment");
        assert!(
            f.message
                .contains("'tick_size' (id 2) was renamed to 'price_increment'"),
            "{}",
            f.message
        );
        assert!(backward(&old, &new).iter().all(|f| !f.is_error()));
    }

    #[test]
    fn a_new_type_under_the_old_id_is_not_a_rename() {
        let old = schema(&[(2, "tick_size", false, "decimal(38, 18)")]);
        let new = schema(&[(2, "listed_at", false, "timestamp")]);
        silent(&RULE, &old, &new);
    }
}
