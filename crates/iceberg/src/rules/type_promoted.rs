//! A type widened the way Iceberg promotes: int→long, float→double, decimal precision.

use super::{Change, Pair, describe, type_change};
use covenant_engine::{Finding, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "ICEBERG_TYPE_PROMOTED",
    format: "iceberg",
    category: "structural",
    default_severity: Severity::Info,
    summary: "A column's type was promoted as Iceberg allows: int to long, float to double, or a decimal's precision widened with the same scale.",
    bad_example: "max_leverage: \"int\" -> \"long\"",
    good_example: "ALTER TABLE t ALTER COLUMN max_leverage TYPE bigint",
    hint: "Nothing to do for Iceberg readers; consumers that copy the column elsewhere must accept the wider type.",
    peers: &["iceberg:TypeUtil.isPromotionAllowed"],
};

pub(crate) fn check(pair: &Pair<'_>, out: &mut Vec<Finding>) {
    for (old, new) in pair.matched() {
        if let Some(Change::Promoted) = type_change(old.ty, new.ty) {
            out.push(Finding::new(
                &RULE,
                new.pointer.clone(),
                format!(
                    "Column {} is read as {} from data written as {}.",
                    describe(new),
                    new.ty,
                    old.ty
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::*;

    #[test]
    fn int_to_long_and_decimal_widening() {
        let old = schema(&[
            (1, "max_leverage", false, "int"),
            (2, "p", false, "decimal(9, 2)"),
        ]);
        let new = schema(&[
            (1, "max_leverage", false, "long"),
            (2, "p", false, "decimal(18,2)"),
        ]);
        let all = of(&RULE, &backward(&old, &new));
        assert_eq!(all.len(), 2, "{all:#?}");
        assert!(backward(&old, &new).iter().all(|f| !f.is_error()));
    }
}
