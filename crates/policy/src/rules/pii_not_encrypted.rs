//! A field tagged as personal data that no `ENCRYPT` rule covers travels in clear text: every
//! broker, mirror, sink and replay sees it.

use crate::ProtectedField;
use crate::pair::{Pair, pii_tags_of, quoted_list};
use covenant_engine::{Finding, NodeKind, RuleSpec, Severity};

pub static RULE: RuleSpec = RuleSpec {
    id: "PII_NOT_ENCRYPTED",
    format: "any",
    category: "semantic",
    // A warning: encryption is one way to protect personal data (masking at the sink, a
    // private topic are others), but the tag says the field needs protecting and the rule set
    // says nothing protects it on the wire.
    default_severity: Severity::Warning,
    summary: "A field tagged as personal data (`confluent:tags: [\"PII\"]`, subject metadata tags or `covenant.pii.fields`) is not covered by any `ENCRYPT` rule of the version's rule set (nor an `ENCRYPT_PAYLOAD` rule), so producers write it in clear text.",
    bad_example: "{\"name\": \"email\", \"type\": \"string\", \"confluent:tags\": [\"PII\"]} with no ruleSet",
    good_example: "ruleSet.domainRules: [{\"name\": \"encrypt-pii\", \"kind\": \"TRANSFORM\", \"mode\": \"WRITEREAD\", \"type\": \"ENCRYPT\", \"tags\": [\"PII\"], \"params\": {\"encrypt.kek.name\": \"pii-kek\", \"encrypt.kms.type\": \"aws-kms\", \"encrypt.kms.key.id\": \"arn:...\"}}]",
    hint: "Add an ENCRYPT domain rule for the tag (with `encrypt.kek.name`, `encrypt.kms.type`, `encrypt.kms.key.id`) to the schema's ruleSet or the subject's defaultRuleSet/overrideRuleSet, so producers encrypt the field with a key from the DEK Registry; or record why the field may travel in clear text.",
    peers: &[],
};

pub(crate) fn check(pair: &Pair<'_>) -> Vec<Finding> {
    if pair.context.encryption.is_none() {
        return Vec::new();
    }
    protected(pair)
        .into_iter()
        .filter(|f| f.kek.is_none() && !f.pii_tags.is_empty())
        .map(|f| {
            Finding::new(
                &RULE,
                f.path,
                format!(
                    "Field '{}' is tagged {} but no ENCRYPT rule of the rule set covers it; producers write it in clear text.",
                    f.name,
                    quoted_list(&f.pii_tags)
                ),
            )
        })
        .collect()
}

/// A field of the new tree that carries personal data or is encrypted, and the KEK that
/// encrypts it (`None`: clear text).
pub(crate) fn protected(pair: &Pair<'_>) -> Vec<ProtectedField> {
    let encryption = pair.context.encryption.clone().unwrap_or_default();
    pair.new_nodes()
        .into_iter()
        .filter(|l| l.node.kind == NodeKind::Field)
        .filter_map(|l| {
            let pii_tags = pii_tags_of(l, &pair.context.metadata);
            let mut tags = pii_tags.clone();
            tags.extend(
                l.node
                    .tags
                    .iter()
                    .filter(|t| !pii_tags.contains(t))
                    .cloned(),
            );
            let kek = encryption.kek_for(&tags).map(str::to_string);
            (!pii_tags.is_empty() || kek.is_some()).then(|| ProtectedField {
                path: l.node.path.clone(),
                name: l.node.name.clone(),
                pii_tags,
                tags,
                kek,
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use crate::context::Encryption;
    use crate::rules::testkit::*;
    use serde_json::json;

    fn encrypting(rule_set: serde_json::Value) -> crate::PolicyContext {
        crate::PolicyContext {
            encryption: Some(Encryption::of_rule_set(Some(&rule_set))),
            ..none()
        }
    }

    fn paths(context: &crate::PolicyContext) -> Vec<String> {
        let old = avro("Customer", vec![field("id", "string")]);
        let new = avro(
            "Customer",
            vec![
                field("id", "string"),
                field("email", "string").tag("PII"),
                field("phone", "string").tag("pii"),
                field("note", "string").tag("PUBLIC"),
            ],
        );
        run("PII_NOT_ENCRYPTED", &old, &new, context)
            .into_iter()
            .map(|f| f.path)
            .collect()
    }

    #[test]
    fn tagged_fields_without_an_encrypt_rule() {
        let no_rules = encrypting(json!({}));
        assert_eq!(paths(&no_rules), ["/fields/email", "/fields/phone"]);
        let other_tag = encrypting(json!({"domainRules": [
            {"name": "e", "type": "ENCRYPT", "tags": ["SECRET"], "params": {"encrypt.kek.name": "k"}}
        ]}));
        assert_eq!(paths(&other_tag).len(), 2);
    }

    #[test]
    fn an_encrypt_rule_for_the_tag_or_the_payload_covers_them() {
        let covered = encrypting(json!({"domainRules": [
            {"name": "e", "type": "ENCRYPT", "tags": ["PII"], "params": {"encrypt.kek.name": "k"}}
        ]}));
        assert!(paths(&covered).is_empty(), "{:?}", paths(&covered));
        let payload = encrypting(json!({"domainRules": [
            {"name": "p", "type": "ENCRYPT_PAYLOAD", "params": {"encrypt.kek.name": "k"}}
        ]}));
        assert!(paths(&payload).is_empty());
    }

    #[test]
    fn a_disabled_rule_covers_nothing_and_an_unknown_rule_set_says_nothing() {
        let disabled = encrypting(json!({"domainRules": [
            {"name": "e", "type": "ENCRYPT", "tags": ["PII"], "disabled": true}
        ]}));
        assert_eq!(paths(&disabled).len(), 2);
        assert!(paths(&none()).is_empty(), "no rule set known, no finding");
    }

    #[test]
    fn the_kek_of_each_tag_is_the_first_enabled_rules() {
        let e = Encryption::of_rule_set(Some(&json!({"domainRules": [
            {"name": "a", "type": "ENCRYPT", "tags": ["PII"], "params": {"encrypt.kek.name": "first"}},
            {"name": "b", "type": "ENCRYPT", "tags": ["PII", "SECRET"], "params": {"encrypt.kek.name": "second"}},
            {"name": "c", "type": "CEL", "tags": ["OTHER"]}
        ]})));
        assert_eq!(e.kek_for(&["pii".into()]), Some("first"));
        assert_eq!(e.kek_for(&["SECRET".into()]), Some("second"));
        assert_eq!(e.kek_for(&["OTHER".into()]), None);
    }

    #[test]
    fn protected_fields_name_their_kek_or_none() {
        let tree = avro(
            "Customer",
            vec![
                field("id", "string"),
                field("email", "string").tag("PII"),
                field("card", "string").tag("SECRET"),
            ],
        );
        let context = encrypting(json!({"domainRules": [
            {"name": "e", "type": "ENCRYPT", "tags": ["SECRET"], "params": {"encrypt.kek.name": "cards"}}
        ]}));
        let fields = crate::protected_fields(&tree, &context);
        let seen: Vec<(&str, Option<&str>)> = fields
            .iter()
            .map(|f| (f.path.as_str(), f.kek.as_deref()))
            .collect();
        assert_eq!(
            seen,
            [("/fields/email", None), ("/fields/card", Some("cards"))]
        );
    }
}
