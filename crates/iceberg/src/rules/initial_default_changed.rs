//! A field's `initial-default` changed: the value old rows read would change after the fact.

use super::{Pair, describe};
use crate::index::Role;
use covenant_engine::{Finding, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "ICEBERG_INITIAL_DEFAULT_CHANGED",
    format: "iceberg",
    category: "structural",
    default_severity: Severity::Error,
    summary: "A field's `initial-default` (format version 3) was set, changed or removed after the field was added; the specification fixes it at creation, because it is the value every row written before the field existed reads.",
    bad_example: "{\"id\": 7, \"name\": \"venue\", \"initial-default\": \"XNAS\"} -> \"initial-default\": \"XNYS\"",
    good_example: "change the write-default instead: {\"write-default\": \"XNYS\"}",
    hint: "Leave initial-default as it was; change write-default for new rows.",
    peers: &["iceberg:spec:default-values"],
};

pub(crate) fn check(pair: &Pair<'_>, out: &mut Vec<Finding>) {
    for (old, new) in pair.matched() {
        let (Some(a), Some(b)) = (old.field, new.field) else {
            continue;
        };
        if new.role == Role::Field && a.initial_default != b.initial_default {
            let show =
                |v: &Option<serde_json::Value>| v.as_ref().map_or("none".into(), |v| v.to_string());
            out.push(Finding::new(
                &RULE,
                new.pointer.clone(),
                format!("Column {} changed its initial-default from {} to {}; rows written before the column existed would read a different value.", describe(new), show(&a.initial_default), show(&b.initial_default)),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RULE;
    use crate::rules::testing::*;

    #[test]
    fn changing_the_initial_default_is_refused_the_write_default_is_not() {
        let v = |initial: &str, write: &str| {
            format!(
                r#"{{"type":"struct","fields":[{{"id":1,"name":"venue","required":true,"type":"string","initial-default":"{initial}","write-default":"{write}"}}]}}"#
            )
        };
        assert!(fires(&RULE, &v("XNAS", "XNAS"), &v("XNYS", "XNAS")).is_error());
        silent(&RULE, &v("XNAS", "XNAS"), &v("XNAS", "XNYS"));
    }
}
