//! Personal data entering a contract is a governance change even when every parser copes.

use crate::pair::{Pair, pii_tags_of, quoted_list};
use covenant_engine::{Finding, NodeKind, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "PII_TAG_ADDED",
    format: "any",
    category: "semantic",
    // A warning: adding personal data is schema-compatible but governance-breaking until
    // classification, masking, sinks, retention and access have been reviewed.
    default_severity: Severity::Warning,
    summary: "A field tagged as personal data (Confluent data-contract tags such as `confluent:tags: [\"PII\"]`, subject metadata tags, or `covenant.pii.fields`) was added, or an existing field gained such a tag.",
    bad_example: "v2 adds {\"name\": \"email\", \"type\": \"string\", \"confluent:tags\": [\"PII\"]} with no classification, masking or sink review",
    good_example: "before registering v2: update the classification, masking or encryption rule for the PII tag, allowed sinks, retention, non-production data handling, access control and lineage",
    hint: "Before producers write it, update classification, masking or encryption rules for the tag, allowed sinks, retention, non-production handling, access control and lineage.",
    peers: &[],
};

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    let mut findings = Vec::new();
    for new in pair.new_nodes() {
        if new.node.kind != NodeKind::Field {
            continue;
        }
        let now = pii_tags_of(new, &pair.context.metadata);
        if now.is_empty() {
            continue;
        }
        let name = &new.node.name;
        let message = match pair.old_at(&new.node.path) {
            None => format!(
                "Field '{name}' was added tagged {}; personal data needs a governance review before it is written.",
                quoted_list(&now)
            ),
            Some(old) => {
                let before = pii_tags_of(old, pair.context.previous());
                let gained: Vec<String> = now
                    .iter()
                    .filter(|t| !before.iter().any(|b| b.eq_ignore_ascii_case(t)))
                    .cloned()
                    .collect();
                if !before.is_empty() || gained.is_empty() {
                    continue;
                }
                format!(
                    "Field '{name}' is now tagged {}; it holds personal data that consumers and sinks did not have to protect before.",
                    quoted_list(&gained)
                )
            }
        };
        findings.push(Finding::new(&RULE, new.node.path.clone(), message));
    }
    findings
}

#[cfg(test)]
mod tests {
    use crate::context::{PII_FIELDS, PII_TAGS};
    use crate::rules::testkit::*;

    #[test]
    fn field_added_with_inline_pii_tag() {
        let old = avro("Customer", vec![field("customerId", "string")]);
        let new = avro(
            "Customer",
            vec![
                field("customerId", "string"),
                field("email", "string").tag("PII"),
            ],
        );
        let findings = run("PII_TAG_ADDED", &old, &new, &none());
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "/fields/email");
        assert_eq!(
            findings[0].message,
            "Field 'email' was added tagged 'PII'; personal data needs a governance review before it is written."
        );
    }

    #[test]
    fn existing_field_gains_a_tag_through_metadata() {
        let old = json(vec![property("email", "string")]);
        let new = json(vec![property("email", "string")]);
        let mut context = none();
        context
            .metadata
            .tags
            .insert("email".into(), vec!["PII".into()]);
        context.previous_metadata = Some(Default::default());
        let findings = run("PII_TAG_ADDED", &old, &new, &context);
        assert_eq!(findings.len(), 1);
        assert!(findings[0].message.contains("is now tagged 'PII'"));
    }

    #[test]
    fn declared_fields_and_custom_tag_names() {
        let old = avro("Patient", vec![]);
        let new = avro(
            "Patient",
            vec![
                field("diagnosis", "string").tag("PHI"),
                field("nhsNumber", "string"),
            ],
        );
        let mut context = none();
        context
            .metadata
            .properties
            .insert(PII_TAGS.into(), "PHI".into());
        context
            .metadata
            .properties
            .insert(PII_FIELDS.into(), "nhsNumber".into());
        let findings = run("PII_TAG_ADDED", &old, &new, &context);
        let paths: Vec<&str> = findings.iter().map(|f| f.path.as_str()).collect();
        assert_eq!(paths, ["/fields/diagnosis", "/fields/nhsNumber"]);
    }

    #[test]
    fn untagged_and_already_tagged_fields_are_quiet() {
        let old = avro("C", vec![field("email", "string").tag("PII")]);
        let new = avro(
            "C",
            vec![
                field("email", "string").tag("PII"),
                field("note", "string").tag("INTERNAL"),
            ],
        );
        assert!(run("PII_TAG_ADDED", &old, &new, &none()).is_empty());
    }
}
