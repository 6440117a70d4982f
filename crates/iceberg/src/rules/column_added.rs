//! A column the reader has and the writer's data lacks, optional or with an initial default:
//! Iceberg reads it as null (or as its `initial-default`) from old data files.

use super::{Pair, describe};
use covenant_engine::{Finding, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "ICEBERG_COLUMN_ADDED",
    format: "iceberg",
    category: "structural",
    default_severity: Severity::Info,
    summary: "A column (or nested field) was added as optional, or as required with an initial default; rows written without it read as null or as that default.",
    bad_example: "v2 adds {\"id\": 23, \"name\": \"margin_trading_allowed\", \"required\": false, \"type\": \"boolean\"}",
    good_example: "ALTER TABLE t ADD COLUMN margin_trading_allowed boolean",
    hint: "Nothing to do: existing data files read the column as null (or its initial default).",
    peers: &["iceberg:UpdateSchema.addColumn"],
};

pub(crate) fn check(pair: &Pair<'_>, out: &mut Vec<Finding>) {
    for c in pair.added_fields() {
        let default = c.field.and_then(|f| f.initial_default.as_ref());
        let reads = match default {
            Some(v) => format!("its initial default {v}"),
            None if !c.required => "null".to_string(),
            None => continue,
        };
        out.push(Finding::new(
            &RULE,
            c.pointer.clone(),
            format!("Column {} of type {} is not in the writer's schema; rows written without it read {reads}.", describe(c), c.ty),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::*;

    #[test]
    fn an_optional_column_added_is_reported_as_info() {
        let old = schema(&[(1, "symbol", true, "string")]);
        let new = schema(&[
            (1, "symbol", true, "string"),
            (2, "margin_trading_allowed", false, "boolean"),
        ]);
        let f = fires(&RULE, &old, &new);
        assert_eq!(f.path, "/fields/margin_trading_allowed");
        assert!(f.message.contains("read null"), "{}", f.message);
        silent(&RULE, &old, &old);
    }

    #[test]
    fn a_nested_struct_added_is_one_finding() {
        let old = schema(&[(1, "a", true, "int")]);
        let new = schema(&[
            (1, "a", true, "int"),
            (
                2,
                "s",
                false,
                r#"{"type":"struct","fields":[{"id":3,"name":"x","required":true,"type":"int"}]}"#,
            ),
        ]);
        assert_eq!(fires(&RULE, &old, &new).path, "/fields/s");
    }
}
