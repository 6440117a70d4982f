//! A personal-data tag dropped from a field that still exists.

use crate::pair::{Pair, pii_tags_of, quoted_list};
use covenant_engine::{Finding, NodeKind, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "PII_TAG_REMOVED",
    format: "any",
    category: "semantic",
    // An error: masking and encryption rules are bound to tags, so dropping one silently
    // writes personal data in the clear to every sink. Declassifying needs an explicit,
    // reviewed decision, which a subject override records.
    default_severity: Severity::Error,
    summary: "A field that is still present lost its personal-data tag; masking, encryption and access rules bound to the tag stop applying to it.",
    bad_example: "v1: {\"name\": \"email\", \"type\": \"string\", \"confluent:tags\": [\"PII\"]}\nv2: {\"name\": \"email\", \"type\": \"string\"}",
    good_example: "keep the tag; if the data really is no longer personal (hashed, tokenized), add a new field for the new representation and remove the old one after the deprecation window",
    hint: "Keep the tag on the field; if the data is no longer personal, add a new field for the new representation and retire the old one, or record the declassification by setting this rule for the subject.",
    peers: &[],
};

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for (old, new) in pair.matched() {
        if new.node.kind != NodeKind::Field {
            continue;
        }
        let before = pii_tags_of(old, pair.context.previous());
        let after = pii_tags_of(new, &pair.context.metadata);
        let lost: Vec<String> = before
            .iter()
            .filter(|t| !after.iter().any(|a| a.eq_ignore_ascii_case(t)))
            .cloned()
            .collect();
        if lost.is_empty() || !after.is_empty() {
            continue;
        }
        findings.push(Finding::new(
            &RULE,
            new.node.path.clone(),
            format!(
                "Field '{}' lost its {} tag; masking, encryption and access rules bound to it no longer apply.",
                new.node.name,
                quoted_list(&lost)
            ),
        ));
    }
    findings
}

#[cfg(test)]
mod tests {
    use crate::rules::testkit::*;

    #[test]
    fn inline_tag_dropped() {
        let old = avro("Customer", vec![field("email", "string").tag("PII")]);
        let new = avro("Customer", vec![field("email", "string")]);
        let findings = run("PII_TAG_REMOVED", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "/fields/email");
        assert_eq!(
            findings[0].message,
            "Field 'email' lost its 'PII' tag; masking, encryption and access rules bound to it no longer apply."
        );
        assert!(findings[0].is_error());
    }

    #[test]
    fn tag_moved_from_inline_to_metadata_is_not_a_removal() {
        let old = avro("Customer", vec![field("email", "string").tag("PII")]);
        let new = avro("Customer", vec![field("email", "string")]);
        let mut context = none();
        context
            .metadata
            .tags
            .insert("Customer.email".into(), vec!["PII".into()]);
        assert!(run("PII_TAG_REMOVED", &old, &new, &context).is_empty());
    }

    #[test]
    fn removed_fields_and_other_tags_are_not_this_rule() {
        let old = avro(
            "Customer",
            vec![
                field("email", "string").tag("PII"),
                field("note", "string").tag("INTERNAL"),
            ],
        );
        let new = avro("Customer", vec![field("note", "string")]);
        assert!(run("PII_TAG_REMOVED", &old, &new, &none()).is_empty());
    }
}
