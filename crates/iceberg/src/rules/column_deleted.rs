//! A column the writer's data has and the reader dropped: the data stays in the files and is
//! no longer read.

use super::{Pair, describe};
use covenant_engine::{Finding, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "ICEBERG_COLUMN_DELETED",
    format: "iceberg",
    category: "structural",
    default_severity: Severity::Info,
    summary: "A column (or nested field) was dropped; its data stays in the data files but is no longer read, and its id must never be used again.",
    bad_example: "v1: {\"id\": 9, \"name\": \"legacy_code\", ...}; v2 has no id 9",
    good_example: "ALTER TABLE t DROP COLUMN legacy_code, after its consumers have moved off it",
    hint: "Readers of new data are unaffected; make sure no consumer still selects the column, and never give its id to another column.",
    peers: &["iceberg:UpdateSchema.deleteColumn"],
};

pub(crate) fn check(pair: &Pair<'_>, out: &mut Vec<Finding>) {
    for c in pair.deleted_fields() {
        out.push(Finding::new(
            &RULE,
            c.pointer.clone(),
            format!("Column {} of the writer's schema is not in the reader's; its values are kept in the files but not read.", describe(c)),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::*;

    #[test]
    fn a_dropped_column_is_reported_at_its_old_path() {
        let old = schema(&[(1, "a", true, "int"), (2, "legacy", false, "string")]);
        let new = schema(&[(1, "a", true, "int")]);
        let f = fires(&RULE, &old, &new);
        assert_eq!(f.path, "/fields/legacy");
        assert!(!f.is_error());
        silent(&RULE, &new, &old);
    }
}
