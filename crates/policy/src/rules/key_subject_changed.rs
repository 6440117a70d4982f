//! A key subject's schema decides which partition a record lands in and which records a
//! compacted topic keeps: any change to its bytes re-partitions and re-keys the stream, even
//! one every reader accepts.

use crate::pair::Pair;
use covenant_engine::{Finding, Node, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "KEY_SUBJECT_CHANGED",
    format: "any",
    category: "semantic",
    // An error: records with the same business key stop hashing to the same partition and
    // stop compacting together, so ordering, dedupe and state stores break although every
    // structural check passes. Source: schema-evolution-rules Rule 10, §11, §23.1.
    default_severity: Severity::Error,
    summary: "The schema of a key subject (a `-key` subject under the TopicNameStrategy, one whose metadata sets `covenant.subject.role` to `key`, or a CDC key record that Debezium names `<server>.<schema>.<table>.Key` in `connect.name`: the table's primary key) changed how keys are written: a field was added, removed, retyped or reordered. Serialized keys change, so partitioning, ordering and compaction change. Source: schema-evolution-rules Rule 10, §11, §23.1.",
    bad_example: "subject case_record-key\nv1: {\"type\": \"record\", \"name\": \"CaseKey\", \"fields\": [{\"name\": \"case_id\", \"type\": \"string\"}]}\nv2: adds {\"name\": \"tenant_id\", \"type\": [\"null\", \"string\"], \"default\": null}",
    good_example: "keep case_record-key unchanged; carry tenant_id in the value, or publish the new key on a new topic with an explicit identity migration (bridge table or migration event)",
    hint: "Do not change a key schema in place: keep the key as it is and carry new data in the value, or move to a new topic and key subject with a bridge table or an explicit identity migration event.",
    peers: &[],
};

/// What about a node changes the bytes of a serialized key.
fn wire_shape(node: &Node) -> (&str, Option<&str>, bool, Option<i64>, Vec<&str>) {
    (
        node.type_name.as_str(),
        node.logical_type.as_deref(),
        node.nullable,
        node.number,
        node.enum_values.iter().map(|v| v.name.as_str()).collect(),
    )
}

fn changes(pair: &Pair<'_>) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for added in pair.added() {
        out.push((
            added.node.path.clone(),
            format!("'{}' was added", added.node.name),
        ));
    }
    for old in pair.old_nodes() {
        match pair.new_at(&old.node.path) {
            None => out.push((
                old.node.path.clone(),
                format!("'{}' was removed", old.node.name),
            )),
            Some(new) if wire_shape(old.node) != wire_shape(new.node) => out.push((
                new.node.path.clone(),
                format!(
                    "'{}' changed from '{}' to '{}'",
                    new.node.name,
                    old.node.display_type(),
                    new.node.display_type()
                ),
            )),
            Some(new) => {
                let names = |n: &Node| {
                    n.children
                        .iter()
                        .map(|c| c.name.clone())
                        .collect::<Vec<_>>()
                };
                let (before, after) = (names(old.node), names(new.node));
                let kept: Vec<&String> = after.iter().filter(|n| before.contains(n)).collect();
                let was: Vec<&String> = before.iter().filter(|n| after.contains(n)).collect();
                if kept != was {
                    out.push((
                        new.node.path.clone(),
                        format!("the fields of '{}' were reordered", new.node.name),
                    ));
                }
            }
        }
    }
    out
}

/// A CDC connector's key record: Debezium names it `<server>.<schema>.<table>.Key` in
/// `connect.name`, and its fields are the table's primary key, whatever the subject is called
/// (the RecordNameStrategy names the subject after the record).
fn is_cdc_key(pair: &Pair<'_>) -> bool {
    [&pair.old.root, &pair.new.root].iter().any(|root| {
        root.annotations
            .get("connect.name")
            .is_some_and(|name| name.trim().ends_with(".Key"))
    })
}

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    let key = pair.context.is_key_subject() || is_cdc_key(pair);
    if !key || pair.old.root.children.is_empty() {
        return Vec::new();
    }
    let subject = pair
        .context
        .subject
        .as_deref()
        .unwrap_or("this key subject");
    changes(pair)
        .into_iter()
        .map(|(path, what)| {
            Finding::new(
                &RULE,
                path,
                format!(
                    "In key subject '{subject}', {what}: serialized keys change, so records of one key move partitions and stop compacting together."
                ),
            )
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::rules::testkit::*;
    use crate::{PolicyContext, SUBJECT_ROLE};

    fn subject(name: &str) -> PolicyContext {
        PolicyContext {
            subject: Some(name.into()),
            ..PolicyContext::default()
        }
    }

    #[test]
    fn tenant_id_added_to_case_record_key() {
        let old = avro("CaseKey", vec![field("case_id", "string")]);
        let new = avro(
            "CaseKey",
            vec![
                field("case_id", "string"),
                field("tenant_id", "string").nullable(),
            ],
        );
        let findings = run(
            "KEY_SUBJECT_CHANGED",
            &old,
            &new,
            &subject("case_record-key"),
        );
        assert_eq!(findings.len(), 1);
        assert!(findings[0].is_error());
        assert_eq!(findings[0].path, "/fields/tenant_id");
        assert_eq!(
            findings[0].message,
            "In key subject 'case_record-key', 'tenant_id' was added: serialized keys change, so records of one key move partitions and stop compacting together."
        );
        assert!(
            run(
                "KEY_SUBJECT_CHANGED",
                &old,
                &new,
                &subject("case_record-value")
            )
            .is_empty()
        );
    }

    #[test]
    fn a_subject_marked_as_key_and_retyped_or_reordered_fields() {
        let mut context = none();
        context
            .metadata
            .properties
            .insert(SUBJECT_ROLE.into(), "key".into());
        let old = avro("K", vec![field("a", "string"), field("b", "int")]);
        let new = avro("K", vec![field("b", "long"), field("a", "string")]);
        let messages: Vec<String> = run("KEY_SUBJECT_CHANGED", &old, &new, &context)
            .into_iter()
            .map(|f| f.message)
            .collect();
        assert_eq!(messages.len(), 2, "{messages:?}");
        assert!(messages[0].contains("the fields of 'K' were reordered"));
        assert!(messages[1].contains("'b' changed from 'int' to 'long'"));
    }

    #[test]
    fn doc_only_changes_and_first_versions_are_fine() {
        let old = avro("CaseKey", vec![field("case_id", "string")]);
        let new = avro("CaseKey", vec![field("case_id", "string").doc("The case.")]);
        let key = subject("case_record-key");
        assert!(run("KEY_SUBJECT_CHANGED", &old, &new, &key).is_empty());
        let first = covenant_engine::FieldTree::empty("AVRO");
        assert!(run("KEY_SUBJECT_CHANGED", &first, &new, &key).is_empty());
    }

    #[test]
    fn a_debezium_key_record_is_a_key_whatever_the_subject() {
        use covenant_schema::{ParsedSchema, SchemaType};
        let key = |fields: &str| {
            let text = format!(
                r#"{{"type":"record","name":"Key","namespace":"dbserver1.public.case_record","fields":[{fields}],"connect.name":"dbserver1.public.case_record.Key"}}"#
            );
            covenant_engine::budget::unlimited(|m| {
                crate::field_tree(
                    m,
                    &ParsedSchema::parse(SchemaType::Avro, &text, &[]).expect("valid Avro"),
                )
            })
        };
        let old = key(r#"{"name":"case_id","type":"string"}"#);
        let new = key(r#"{"name":"case_id","type":"string"},{"name":"tenant_id","type":"string"}"#);
        let findings = run(
            "KEY_SUBJECT_CHANGED",
            &old,
            &new,
            &subject("dbserver1.public.case_record.Key"),
        );
        assert_eq!(findings.len(), 1, "{findings:?}");
        assert_eq!(findings[0].path, "/fields/tenant_id");
        assert_eq!(run("KEY_SUBJECT_CHANGED", &old, &new, &none()).len(), 1);
        let plain = avro("CaseKey", vec![field("case_id", "string")]);
        let wider = avro(
            "CaseKey",
            vec![field("case_id", "string"), field("tenant_id", "string")],
        );
        assert!(run("KEY_SUBJECT_CHANGED", &plain, &wider, &none()).is_empty());
    }
}
