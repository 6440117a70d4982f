//! Identity, partitioning, idempotency and ordering are operational contracts: changing the
//! fields that carry them is breaking unless proven otherwise.
//!
//! The fields are declared in the subject's metadata properties (Confluent data-contract
//! `metadata.properties`), each a comma-separated list of field references (a path, a dotted
//! name such as `Case.caseId`, or a bare name):
//!
//! - `covenant.identity.fields`: the record's business identity or aggregate id;
//! - `covenant.partition.key`: what the record is partitioned by;
//! - `covenant.idempotency.key`: what consumers deduplicate or upsert on;
//! - `covenant.ordering.fields`: sequence numbers or versions that order records.

use crate::context::KEY_PROPERTIES;
use crate::pair::{Located, Pair, quoted_list};
use covenant_engine::{Finding, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "KEY_FIELD_CHANGED",
    format: "any",
    category: "semantic",
    // An error: changing identity, partitioning, idempotency or ordering breaks dedupe,
    // upserts, joins and state stores, and must be reviewed as breaking unless proven
    // otherwise. It only fires for subjects that declare their key fields.
    default_severity: Severity::Error,
    summary: "A field declared as identity, partition key, idempotency key or ordering field (subject metadata `covenant.identity.fields`, `covenant.partition.key`, `covenant.idempotency.key`, `covenant.ordering.fields`) was removed, retyped or changed, or the declaration itself changed.",
    bad_example: "metadata: {\"properties\": {\"covenant.partition.key\": \"caseId\"}}\nv1: {\"name\": \"caseId\", \"type\": \"string\"}\nv2: {\"name\": \"caseId\", \"type\": \"long\"}",
    good_example: "keep caseId unchanged; add the new identity as a new field, bridge old and new ids (a mapping table or an explicit identity migration event), or publish a new subject",
    hint: "Keep the key field unchanged; introduce a new identity as a new field with a bridge (mapping table or identity migration event), or move to a new subject or major contract version with a reviewed migration.",
    peers: &[],
};

fn describe_change(old: &Located<'_>, new: &Located<'_>) -> Option<String> {
    let (o, n) = (old.node, new.node);
    if o.type_name != n.type_name || o.logical_type != n.logical_type {
        Some(format!(
            "changed type from '{}' to '{}'",
            o.display_type(),
            n.display_type()
        ))
    } else if o.number != n.number {
        Some(format!(
            "changed number from {} to {}",
            o.number.unwrap_or_default(),
            n.number.unwrap_or_default()
        ))
    } else if !o.nullable && n.nullable {
        Some("became nullable".to_string())
    } else {
        None
    }
}

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    let mut findings = Vec::new();
    let previous = pair.context.previous();
    let current = &pair.context.metadata;
    for (property, role) in KEY_PROPERTIES {
        let before = previous.field_list(property);
        let after = current.field_list(property);
        if before != after && !before.is_empty() {
            let describe = |list: &[String]| {
                if list.is_empty() {
                    "nothing".to_string()
                } else {
                    quoted_list(list)
                }
            };
            findings.push(Finding::new(
                &RULE,
                "",
                format!(
                    "The declared {role} ('{property}') changed from {} to {}.",
                    describe(&before),
                    describe(&after)
                ),
            ));
        }
        for reference in &before {
            let olds: Vec<_> = pair
                .old_nodes()
                .into_iter()
                .filter(|l| l.node.kind == covenant_engine::NodeKind::Field && l.matches(reference))
                .collect();
            for old in olds {
                let name = &old.node.name;
                match pair.new_at(&old.node.path) {
                    None => findings.push(Finding::new(
                        &RULE,
                        old.node.path.clone(),
                        format!("The {role} '{name}' was removed."),
                    )),
                    Some(new) => {
                        if let Some(change) = describe_change(old, new) {
                            findings.push(Finding::new(
                                &RULE,
                                new.node.path.clone(),
                                format!("The {role} '{name}' {change}."),
                            ));
                        }
                    }
                }
            }
        }
        for reference in &after {
            let found = pair
                .new_nodes()
                .into_iter()
                .any(|l| l.node.kind == covenant_engine::NodeKind::Field && l.matches(reference));
            let reported = before.contains(reference)
                && pair.old_nodes().into_iter().any(|l| l.matches(reference));
            if !found && !reported {
                findings.push(Finding::new(
                    &RULE,
                    "",
                    format!(
                        "The declared {role} '{reference}' ('{property}') names no field of the new schema."
                    ),
                ));
            }
        }
    }
    findings
}

#[cfg(test)]
mod tests {
    use crate::context::{PARTITION_KEY, SubjectMetadata};
    use crate::rules::testkit::*;
    use crate::{IDEMPOTENCY_KEY, IDENTITY_FIELDS, PolicyContext};

    fn declaring(property: &str, value: &str) -> PolicyContext {
        let mut context = none();
        context
            .metadata
            .properties
            .insert(property.into(), value.into());
        context
    }

    #[test]
    fn retyped_partition_key() {
        let old = avro("Case", vec![field("caseId", "string")]);
        let new = avro("Case", vec![field("caseId", "long")]);
        let findings = run(
            "KEY_FIELD_CHANGED",
            &old,
            &new,
            &declaring(PARTITION_KEY, "caseId"),
        );
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "/fields/caseId");
        assert_eq!(
            findings[0].message,
            "The partition key 'caseId' changed type from 'string' to 'long'."
        );
        assert!(findings[0].is_error());
    }

    #[test]
    fn removed_identity_field_by_dotted_name() {
        let old = avro(
            "Case",
            vec![field("caseId", "string"), field("tenantId", "string")],
        );
        let new = avro("Case", vec![field("caseId", "string")]);
        let findings = run(
            "KEY_FIELD_CHANGED",
            &old,
            &new,
            &declaring(IDENTITY_FIELDS, "Case.caseId, Case.tenantId"),
        );
        let messages: Vec<&str> = findings.iter().map(|f| f.message.as_str()).collect();
        assert_eq!(messages, ["The identity field 'tenantId' was removed."]);
    }

    #[test]
    fn changed_declaration_between_versions() {
        let tree = avro(
            "Case",
            vec![field("eventId", "string"), field("caseId", "string")],
        );
        let mut context = declaring(IDEMPOTENCY_KEY, "caseId");
        let mut previous = SubjectMetadata::default();
        previous
            .properties
            .insert(IDEMPOTENCY_KEY.into(), "eventId".into());
        context.previous_metadata = Some(previous);
        let findings = run("KEY_FIELD_CHANGED", &tree, &tree, &context);
        assert_eq!(findings.len(), 1);
        assert_eq!(findings[0].path, "");
        assert_eq!(
            findings[0].message,
            "The declared idempotency key ('covenant.idempotency.key') changed from 'eventId' to 'caseId'."
        );
    }

    #[test]
    fn declared_key_missing_from_a_new_subject() {
        let tree = avro("Case", vec![field("caseId", "string")]);
        let findings = run(
            "KEY_FIELD_CHANGED",
            &covenant_engine::FieldTree::empty("AVRO"),
            &tree,
            &declaring(PARTITION_KEY, "case_id"),
        );
        assert_eq!(findings.len(), 1);
        assert!(findings[0].message.contains("names no field"));
    }

    #[test]
    fn undeclared_or_unchanged_keys_are_quiet() {
        let old = avro("Case", vec![field("caseId", "string")]);
        let new = avro("Case", vec![field("caseId", "long")]);
        assert!(run("KEY_FIELD_CHANGED", &old, &new, &none()).is_empty());
        assert!(
            run(
                "KEY_FIELD_CHANGED",
                &old,
                &old,
                &declaring(PARTITION_KEY, "caseId")
            )
            .is_empty()
        );
    }
}
