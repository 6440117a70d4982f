//! An optional column made required: rows already written may hold null.

use super::{Pair, describe};
use covenant_engine::{Finding, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "ICEBERG_OPTIONAL_TO_REQUIRED",
    format: "iceberg",
    category: "structural",
    default_severity: Severity::Error,
    summary: "A column (or list element or map value) that was optional in the writer's schema is required in the reader's; rows already written may hold null, so Iceberg treats it as an incompatible change.",
    bad_example: "status: \"required\": false -> \"required\": true",
    good_example: "keep status optional and validate non-null values in the writer",
    hint: "Keep the column optional; enforce presence in producers or with a data-quality check instead.",
    peers: &["iceberg:UpdateSchema.requireColumn"],
};

pub(crate) fn check(pair: &Pair<'_>, out: &mut Vec<Finding>) {
    for (old, new) in pair.matched() {
        if !old.required && new.required {
            out.push(Finding::new(
                &RULE,
                new.pointer.clone(),
                format!("Column {} is required in the reader but was optional in the writer's schema; rows written with null cannot be read.", describe(new)),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::*;

    #[test]
    fn requiring_an_optional_column_or_element_is_an_error() {
        let old = schema(&[(1, "status", false, "string")]);
        let new = schema(&[(1, "status", true, "string")]);
        assert!(fires(&RULE, &old, &new).is_error());
        let list = |req: bool| {
            schema(&[(
                1,
                "l",
                true,
                &format!(
                    r#"{{"type":"list","element-id":2,"element":"int","element-required":{req}}}"#
                ),
            )])
        };
        assert_eq!(
            fires(&RULE, &list(false), &list(true)).path,
            "/fields/l/element"
        );
        silent(&RULE, &new, &old);
    }
}
