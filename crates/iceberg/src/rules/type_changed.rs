//! A type change Iceberg cannot apply to existing data.

use super::{Change, Pair, describe, type_change};
use covenant_engine::{Finding, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "ICEBERG_TYPE_CHANGED",
    format: "iceberg",
    category: "structural",
    default_severity: Severity::Error,
    summary: "A column's type changed in a way Iceberg does not promote (anything but int to long, float to double and decimal precision widening; also primitive to nested type, or a list's or map's element ids), so data files already written cannot be read as the new type.",
    bad_example: "max_leverage: \"int\" -> \"decimal(10, 2)\"",
    good_example: "add {\"id\": 31, \"name\": \"max_leverage_decimal\", \"required\": false, \"type\": \"decimal(10, 2)\"}, backfill it, and drop the old column later",
    hint: "Add a new column with the new type, backfill it from the old one, move consumers over, then drop the old column.",
    peers: &["iceberg:TypeUtil.isPromotionAllowed"],
};

pub(crate) fn check(pair: &Pair<'_>, out: &mut Vec<Finding>) {
    for (old, new) in pair.matched() {
        if let Some(Change::Incompatible(why)) = type_change(old.ty, new.ty) {
            out.push(Finding::new(
                &RULE,
                new.pointer.clone(),
                format!(
                    "Column {} was written as {} and is read as {}: {why}.",
                    describe(new),
                    old.ty,
                    new.ty
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
    fn the_seed_int_to_decimal_is_refused() {
        let old = schema(&[(1, "max_leverage", false, "int")]);
        let new = schema(&[(1, "max_leverage", false, "decimal(10, 2)")]);
        let f = fires(&RULE, &old, &new);
        assert!(f.is_error());
        assert!(
            f.message.contains("int cannot be read as decimal(10, 2)"),
            "{}",
            f.message
        );
    }

    #[test]
    fn narrowing_date_to_timestamp_and_nesting_are_refused() {
        for (from, to, why) in [
            ("long", "int", "promotes only"),
            ("date", "timestamp", "specification allows it"),
            ("decimal(9, 2)", "decimal(9, 3)", "scale"),
            (
                "string",
                r#"{"type":"list","element-id":5,"element":"string","element-required":false}"#,
                "primitives and nested",
            ),
        ] {
            let old = schema(&[(1, "c", false, from)]);
            let new = schema(&[(1, "c", false, to)]);
            let f = fires(&RULE, &old, &new);
            assert!(f.message.contains(why), "{from} -> {to}: {}", f.message);
        }
        let same = schema(&[(1, "c", false, "long")]);
        silent(&RULE, &same, &same);
    }
}
