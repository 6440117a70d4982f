//! A required column made optional: always allowed.

use super::{Pair, describe};
use covenant_engine::{Finding, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "ICEBERG_REQUIRED_TO_OPTIONAL",
    format: "iceberg",
    category: "structural",
    default_severity: Severity::Info,
    summary: "A column (or list element or map value) that was required in the writer's schema is optional in the reader's; Iceberg always allows this.",
    bad_example: "status: \"required\": true -> \"required\": false",
    good_example: "ALTER TABLE t ALTER COLUMN status DROP NOT NULL",
    hint: "Consumers that assumed a value is always present must handle null from now on.",
    peers: &["iceberg:UpdateSchema.makeColumnOptional"],
};

pub(crate) fn check(pair: &Pair<'_>, out: &mut Vec<Finding>) {
    for (old, new) in pair.matched() {
        if old.required && !new.required {
            out.push(Finding::new(
                &RULE,
                new.pointer.clone(),
                format!(
                    "Column {} is optional in the reader and was required in the writer's schema.",
                    describe(new)
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
    fn dropping_not_null_is_info() {
        let old = schema(&[(1, "status", true, "string")]);
        let new = schema(&[(1, "status", false, "string")]);
        assert!(!fires(&RULE, &old, &new).is_error());
        silent(&RULE, &new, &old);
    }
}
