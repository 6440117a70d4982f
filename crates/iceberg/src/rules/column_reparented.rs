//! A field id that now sits in another struct: Iceberg cannot move fields between structs.

use super::{Pair, describe};
use crate::index::Role;
use covenant_engine::{Finding, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "ICEBERG_COLUMN_REPARENTED",
    format: "iceberg",
    category: "structural",
    default_severity: Severity::Error,
    summary: "A field id moved into another struct (grouping columns into a new struct, or un-nesting them); Iceberg does not allow it, and the old data files keep the field where it was.",
    bad_example: "v1: [a, b, c]\nv2: [a, s: struct<b, c>] keeping the ids of b and c",
    good_example: "v2: [a, b, c, s: struct<b2, c2>] with new ids, backfilled; drop b and c later",
    hint: "Add the new struct with new field ids, backfill it, move consumers, then drop the old columns.",
    peers: &["iceberg:evolution:no-regrouping"],
};

pub(crate) fn check(pair: &Pair<'_>, out: &mut Vec<Finding>) {
    for (old, new) in pair.matched() {
        if new.role == Role::Field && old.parent != new.parent {
            out.push(Finding::new(
                &RULE,
                new.pointer.clone(),
                format!("Field {} was at {} and is now at {}; Iceberg cannot move a field into another struct.", describe(new), old.pointer, new.pointer),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::*;

    #[test]
    fn grouping_columns_into_a_struct_is_refused() {
        let old = schema(&[(1, "a", true, "int"), (2, "b", true, "int")]);
        let new = schema(&[
            (1, "a", true, "int"),
            (
                3,
                "s",
                true,
                r#"{"type":"struct","fields":[{"id":2,"name":"b","required":true,"type":"int"}]}"#,
            ),
        ]);
        let f = fires(&RULE, &old, &new);
        assert_eq!(f.path, "/fields/s/fields/b");
        silent(&RULE, &old, &old);
    }
}
