//! A required column the writer's data lacks, without an initial default: no value exists for
//! the rows already written.

use super::{Pair, describe};
use covenant_engine::{Finding, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "ICEBERG_REQUIRED_COLUMN_ADDED",
    format: "iceberg",
    category: "structural",
    default_severity: Severity::Error,
    summary: "A required column (or nested field) without an `initial-default` is missing from data written earlier; Iceberg calls this an incompatible change (`allowIncompatibleChanges`).",
    bad_example: "v2 adds {\"id\": 23, \"name\": \"risk_limit\", \"required\": true, \"type\": \"long\"}",
    good_example: "v2 adds {\"id\": 23, \"name\": \"risk_limit\", \"required\": false, \"type\": \"long\"}",
    hint: "Add the column as optional (and make it required later only if every row has a value), or give it an initial-default on a format version 3 table.",
    peers: &["iceberg:UpdateSchema.addRequiredColumn"],
};

pub(crate) fn check(pair: &Pair<'_>, out: &mut Vec<Finding>) {
    for c in pair.added_fields() {
        if !c.required || c.field.is_some_and(|f| f.initial_default.is_some()) {
            continue;
        }
        out.push(Finding::new(
            &RULE,
            c.pointer.clone(),
            format!("Column {} is required but not in the writer's schema, and has no initial-default; rows written without it have no value for it.", describe(c)),
        ));
    }
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::*;

    #[test]
    fn required_without_default_is_an_error_with_default_it_is_not() {
        let old = schema(&[(1, "symbol", true, "string")]);
        let new = schema(&[(1, "symbol", true, "string"), (2, "risk", true, "long")]);
        let f = fires(&RULE, &old, &new);
        assert!(f.is_error());
        assert_eq!(f.path, "/fields/risk");
        let defaulted = r#"{"type":"struct","fields":[{"id":1,"name":"symbol","required":true,"type":"string"},{"id":2,"name":"risk","required":true,"type":"long","initial-default":0}]}"#;
        silent(&RULE, &old, defaulted);
    }

    #[test]
    fn forward_a_dropped_required_column_is_missing_for_old_readers() {
        use crate::IcebergFormat;
        use covenant_engine::{CheckOptions, Direction, Format, check_pair};
        let old = IcebergFormat::parse(
            &schema(&[(1, "a", true, "int"), (2, "b", true, "int")]),
            &[],
        )
        .expect("old");
        let new = IcebergFormat::parse(&schema(&[(1, "a", true, "int")]), &[]).expect("new");
        let f = covenant_engine::budget::unlimited(|m| {
            check_pair::<IcebergFormat>(m, Direction::Forward, &new, &old, &CheckOptions::default())
        });
        assert!(
            f.iter().any(|f| f.rule == RULE.id && f.path == "/fields/b"),
            "{f:#?}"
        );
    }
}
