//! Data the schema does not describe: a reader decoding with the schema drops it.

use super::Evidence;
use covenant_engine::{Finding, RuleSpec, Severity};
use std::collections::HashSet;

pub static RULE: RuleSpec = RuleSpec {
    id: "PROFILE_FIELD_NOT_IN_SCHEMA",
    format: "any",
    category: "profile",
    default_severity: Severity::Warning,
    summary: "The data carries a field the schema does not declare (outside escape-hatch columns), so it is dropped or rejected on the way through the registry's schema.",
    bad_example: "records carry \"settlementCurrency\" but the schema has no such field",
    good_example: "{\"name\": \"settlement_currency\", \"type\": [\"null\", \"string\"], \"default\": null} added as an optional field, or the field kept in vendor_data on purpose",
    hint: "Add it to the schema as an optional field if consumers need it, or keep it in the escape-hatch column until it is common enough to promote.",
    peers: &[],
};

pub(super) fn check(evidence: &Evidence<'_>) -> Vec<Finding> {
    let Some(declared) = evidence.declared else {
        return Vec::new();
    };
    let profile = evidence.profile;
    let known: HashSet<&str> = declared.iter().map(|f| f.path.as_str()).collect();
    let hatches: Vec<String> = profile
        .escape_hatches
        .iter()
        .map(|h| format!("/{}", crate::segment(h)))
        .collect();
    profile
        .paths
        .iter()
        .filter(|(path, _)| !known.contains(path.as_str()))
        .filter(|(path, _)| !hatches.iter().any(|h| path.starts_with(&format!("{h}/"))))
        // Only the outermost undeclared path: its children are reported with it.
        .filter(|(path, _)| parent(path).is_none_or(|p| known.contains(p)))
        .map(|(path, stats)| {
            Finding::new(
                &RULE,
                path.clone(),
                format!(
                    "'{path}' is present in {} of {} records but not declared by the schema.",
                    stats.present, profile.records
                ),
            )
        })
        .collect()
}

/// The path one level up, `None` at the top.
fn parent(path: &str) -> Option<&str> {
    let trimmed = path.strip_suffix("[]").unwrap_or(path);
    if trimmed.len() < path.len() {
        return Some(trimmed);
    }
    match trimmed.rfind('/') {
        Some(0) | None => None,
        Some(at) => Some(&trimmed[..at]),
    }
}

#[cfg(test)]
mod tests {
    use crate::ProfileOptions;
    use crate::rules::testkit::*;
    use serde_json::json;

    #[test]
    fn undeclared_fields_are_reported_once_at_their_top() {
        let p = profile(
            &[
                json!({"id": 1, "extra": {"a": 1}, "vendor_data": {"k": 1}, "limits": [{"cap": 1, "new": 2}]}),
            ],
            ProfileOptions {
                escape_hatches: vec!["vendor_data".into()],
                ..ProfileOptions::default()
            },
        );
        let declared = [
            declared("/id", false),
            declared("/vendor_data", true),
            declared("/limits", false),
            declared("/limits[]", false),
            declared("/limits[]/cap", false),
        ];
        let paths: Vec<String> = run("PROFILE_FIELD_NOT_IN_SCHEMA", &p, Some(&declared))
            .into_iter()
            .map(|f| f.path)
            .collect();
        assert_eq!(paths, ["/extra", "/limits[]/new"]);
    }
}
