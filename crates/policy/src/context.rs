//! What the policy knows beyond the two schemas: the subject's data-contract metadata and the
//! consumers known to read each field.

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

/// Metadata property naming the fields that identify a record (its business identity or
/// aggregate id), as comma-separated field references.
pub const IDENTITY_FIELDS: &str = "covenant.identity.fields";
/// Metadata property naming the field(s) the record is partitioned by.
pub const PARTITION_KEY: &str = "covenant.partition.key";
/// Metadata property naming the field(s) consumers deduplicate or upsert on.
pub const IDEMPOTENCY_KEY: &str = "covenant.idempotency.key";
/// Metadata property naming the field(s) that order records (sequence numbers, versions).
pub const ORDERING_FIELDS: &str = "covenant.ordering.fields";
/// Metadata property naming fields that hold personal data, in addition to inline tags.
pub const PII_FIELDS: &str = "covenant.pii.fields";
/// Metadata property listing the tag names that mark personal data; `PII` when absent.
pub const PII_TAGS: &str = "covenant.pii.tags";

/// Metadata property marking a subject as a record-key subject (`key`) when its name does not
/// follow the TopicNameStrategy's `-key` suffix.
pub const SUBJECT_ROLE: &str = "covenant.subject.role";

/// The key-field properties, with the words findings use for them.
pub const KEY_PROPERTIES: [(&str, &str); 4] = [
    (IDENTITY_FIELDS, "identity field"),
    (PARTITION_KEY, "partition key"),
    (IDEMPOTENCY_KEY, "idempotency key"),
    (ORDERING_FIELDS, "ordering field"),
];

/// A subject version's data-contract metadata in Confluent's shape (`metadata` of a
/// registered schema): free-form `properties` and `tags` by field path
/// (`Order.customer.ssn`). Unknown members such as `sensitive` are ignored.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SubjectMetadata {
    #[serde(default)]
    pub properties: BTreeMap<String, String>,
    #[serde(default)]
    pub tags: BTreeMap<String, Vec<String>>,
}

impl SubjectMetadata {
    /// The comma-separated field references stored under `key`, trimmed, empty ones dropped.
    pub fn field_list(&self, key: &str) -> Vec<String> {
        self.properties
            .get(key)
            .map(|v| {
                v.split(',')
                    .map(str::trim)
                    .filter(|s| !s.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The tag names that mark personal data for this subject.
    pub fn pii_tags(&self) -> Vec<String> {
        let declared = self.field_list(PII_TAGS);
        if declared.is_empty() {
            vec!["PII".to_string()]
        } else {
            declared
        }
    }
}

/// Everything a semantic rule may consult besides the two field trees.
///
/// `metadata` belongs to the version being registered; `previous_metadata` to the version it
/// is compared with, when the registry has it (otherwise the same metadata is assumed for
/// both, so a key declaration cannot appear to change). `consumers` maps a field reference
/// (a path such as `/fields/status`, a dotted name such as `Case.status`, or a bare name) to
/// the consumers known to read it.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PolicyContext {
    #[serde(default)]
    pub metadata: SubjectMetadata,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub previous_metadata: Option<SubjectMetadata>,
    #[serde(default)]
    pub consumers: BTreeMap<String, Vec<String>>,
    /// The subject the schema is registered under, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    /// Field references that have a deprecation record (at any stage).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub deprecated: Vec<String>,
    /// Field reference to the last time (ms since the epoch) a read of it was reported.
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub last_used: BTreeMap<String, i64>,
    /// What the `ENCRYPT` rules of the version's rule set cover; `None` when the rule set is
    /// not known (a schema file judged on its own), so no rule guesses about encryption.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub encryption: Option<Encryption>,
}

/// The client-side field encryption a rule set declares: Confluent's `ENCRYPT` domain rules
/// (`type: ENCRYPT`, the tags whose fields they encrypt, the KEK in `encrypt.kek.name`) and
/// `ENCRYPT_PAYLOAD` rules, which encrypt the whole message.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Encryption {
    /// Tag to the KEK that encrypts the fields carrying it (the first enabled rule's).
    #[serde(default, skip_serializing_if = "BTreeMap::is_empty")]
    pub tags: BTreeMap<String, String>,
    /// The KEK of an enabled `ENCRYPT_PAYLOAD` rule: every field is ciphertext on the wire.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload_kek: Option<String>,
}

impl Encryption {
    /// Reads the encryption rules of a Confluent `ruleSet` (`domainRules`; disabled rules and
    /// rules of other types are skipped). A rule without `encrypt.kek.name` is listed with
    /// an empty KEK name: the client would refuse it, but it states the intent.
    pub fn of_rule_set(rule_set: Option<&serde_json::Value>) -> Encryption {
        let mut out = Encryption::default();
        let rules = rule_set
            .and_then(|r| r.get("domainRules"))
            .and_then(|r| r.as_array())
            .map(Vec::as_slice)
            .unwrap_or_default();
        for rule in rules {
            if rule.get("disabled").and_then(|d| d.as_bool()) == Some(true) {
                continue;
            }
            let kek = rule
                .pointer("/params/encrypt.kek.name")
                .and_then(|k| k.as_str())
                .unwrap_or_default()
                .to_string();
            match rule.get("type").and_then(|t| t.as_str()) {
                Some("ENCRYPT") => {
                    let tags = rule.get("tags").and_then(|t| t.as_array());
                    for tag in tags.into_iter().flatten().filter_map(|t| t.as_str()) {
                        out.tags
                            .entry(tag.to_string())
                            .or_insert_with(|| kek.clone());
                    }
                }
                Some("ENCRYPT_PAYLOAD") => {
                    out.payload_kek.get_or_insert(kek);
                }
                _ => {}
            }
        }
        out
    }

    /// The KEK that encrypts a field carrying `tags`, if any rule covers one of them.
    pub fn kek_for<'a>(&'a self, tags: &[String]) -> Option<&'a str> {
        if let Some(kek) = &self.payload_kek {
            return Some(kek);
        }
        tags.iter().find_map(|tag| {
            self.tags
                .iter()
                .find(|(t, _)| t.eq_ignore_ascii_case(tag))
                .map(|(_, kek)| kek.as_str())
        })
    }
}

impl PolicyContext {
    /// Whether the schema describes record keys: a `-key` subject (TopicNameStrategy) or one
    /// whose metadata says `covenant.subject.role: key`.
    pub fn is_key_subject(&self) -> bool {
        let declared = [&self.metadata, self.previous()].iter().any(|m| {
            m.properties
                .get(SUBJECT_ROLE)
                .is_some_and(|r| r.trim().eq_ignore_ascii_case("key"))
        });
        declared || self.subject.as_deref().is_some_and(|s| s.ends_with("-key"))
    }

    pub fn previous(&self) -> &SubjectMetadata {
        self.previous_metadata.as_ref().unwrap_or(&self.metadata)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn field_lists_are_comma_separated_and_trimmed() {
        let mut metadata = SubjectMetadata::default();
        metadata
            .properties
            .insert(IDENTITY_FIELDS.into(), " caseId, ,tenantId ".into());
        assert_eq!(metadata.field_list(IDENTITY_FIELDS), ["caseId", "tenantId"]);
        assert!(metadata.field_list(PARTITION_KEY).is_empty());
    }

    #[test]
    fn pii_tags_default_to_pii_and_can_be_declared() {
        let mut metadata = SubjectMetadata::default();
        assert_eq!(metadata.pii_tags(), ["PII"]);
        metadata
            .properties
            .insert(PII_TAGS.into(), "PII,PHI".into());
        assert_eq!(metadata.pii_tags(), ["PII", "PHI"]);
    }

    #[test]
    fn context_reads_confluent_metadata_json() {
        let context: PolicyContext = serde_json::from_value(serde_json::json!({
            "metadata": {
                "properties": {"covenant.partition.key": "caseId"},
                "tags": {"Case.email": ["PII"]},
                "sensitive": ["x"]
            },
            "consumers": {"/fields/status": ["sla-monitor"]}
        }))
        .expect("valid context");
        assert_eq!(context.previous().field_list(PARTITION_KEY), ["caseId"]);
        assert_eq!(context.metadata.tags["Case.email"], ["PII"]);
        assert_eq!(context.consumers["/fields/status"], ["sla-monitor"]);
    }
}
