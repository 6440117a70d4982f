//! In JSON Schema `format` is a constraint when validators assert it: adding `"format":
//! "email"` to a string that old producers filled freely rejects their documents, like any
//! other tightened constraint.

use crate::pair::Pair;
use covenant_engine::{Finding, NodeKind, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "JSON_FORMAT_ADDED",
    format: "json",
    category: "semantic",
    // An error, like the other tightened constraints of §10.4: documents old producers wrote
    // may not match the format. It is a semantic rule rather than a structural one because
    // whether `format` asserts depends on the validators consumers run; a subject whose
    // validators treat formats as annotations turns it down per subject.
    default_severity: Severity::Error,
    summary: "A JSON Schema property gained a `format` (or changed it) that old documents may not satisfy (`email`, `uri`, `uuid`, ...); where validators assert formats, this is a tightening like a shorter `maxLength`. Changes between date and time formats are VALUE_REINTERPRETED. Source: schema-evolution-rules §10.4.",
    bad_example: "v1: {\"contact\": {\"type\": \"string\"}}\nv2: {\"contact\": {\"type\": \"string\", \"format\": \"email\"}}",
    good_example: "v2 adds {\"contactEmail\": {\"type\": \"string\", \"format\": \"email\"}} and keeps contact as it was",
    hint: "Add a new property with the format and keep the old one unconstrained, or validate the format in consumers without making old documents invalid.",
    peers: &[],
};

const TIME_FORMATS: [&str; 3] = ["date", "date-time", "time"];

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (old, new) in pair.matched() {
        if new.node.kind != NodeKind::Field || old.node.type_name != new.node.type_name {
            continue;
        }
        let (before, after) = (
            old.node.logical_type.as_deref(),
            new.node.logical_type.as_deref(),
        );
        let message = match (before, after) {
            (None, Some(f)) => format!(
                "Property '{}' gained format '{f}'; documents old producers wrote may not match it.",
                new.node.name
            ),
            (Some(a), Some(b))
                if a != b && !(TIME_FORMATS.contains(&a) && TIME_FORMATS.contains(&b)) =>
            {
                format!(
                    "Property '{}' changed format from '{a}' to '{b}'; documents old producers wrote may not match it.",
                    new.node.name
                )
            }
            _ => continue,
        };
        findings.push(Finding::new(&RULE, new.node.path.clone(), message));
    }
    findings
}

#[cfg(test)]
mod tests {
    use crate::rules::testkit::*;

    #[test]
    fn format_added_or_changed_on_a_string() {
        let old = json(vec![property("contact", "string")]);
        let new = json(vec![property("contact", "string").logical("email")]);
        let findings = run("JSON_FORMAT_ADDED", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert!(findings[0].is_error());
        let uri = json(vec![property("contact", "string").logical("uri")]);
        assert_eq!(run("JSON_FORMAT_ADDED", &new, &uri, &none()).len(), 1);
        assert!(run("JSON_FORMAT_ADDED", &new, &old, &none()).is_empty());
        let date = json(vec![property("at", "string").logical("date")]);
        let stamp = json(vec![property("at", "string").logical("date-time")]);
        assert!(run("JSON_FORMAT_ADDED", &date, &stamp, &none()).is_empty());
    }
}
