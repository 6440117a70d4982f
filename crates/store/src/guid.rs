//! Schema guids: the identifier Confluent's 8.0 clients frame messages with (magic byte `0x01`
//! and 16 bytes) and fetch through `GET /schemas/guids/{guid}`.
//!
//! A guid is the MD5 of the stored record — schema text, references, metadata and rule set
//! fed in Confluent's order — printed as a UUID. It is derived, not random, so the same
//! record has the same guid in every context and in every registry that stores the same
//! text, which is what lets a migrated registry serve messages framed by the one it replaces.

use crate::SchemaRef;
use md5::{Digest, Md5};
use serde_json::Value;
use std::collections::{BTreeMap, BTreeSet};

/// The guid of a stored record.
pub fn guid_of(
    schema: &str,
    references: &[SchemaRef],
    metadata: Option<&Value>,
    rule_set: Option<&Value>,
) -> String {
    let mut md = Md5::new();
    md.update(schema.as_bytes());
    for reference in references {
        md.update(reference.name.as_bytes());
        md.update(reference.subject.as_bytes());
        // A version is a Java `int`: four big-endian bytes.
        md.update((reference.version as i32).to_be_bytes());
    }
    if let Some(metadata) = metadata.filter(|m| !m.is_null()) {
        md.update([1u8]);
        hash_metadata(&mut md, metadata);
    }
    if let Some(rule_set) = rule_set.filter(|r| !r.is_null()) {
        md.update([1u8]);
        hash_rule_set(&mut md, rule_set);
    }
    format_uuid(md.finalize().into())
}

/// A guid as given in a path, in UUID form or as 32 hex digits, in the printed UUID form;
/// `None` when it is neither.
pub fn parse_guid(text: &str) -> Option<String> {
    let hex: String = if text.len() == 36 {
        let dashes_in_place = text
            .char_indices()
            .all(|(i, c)| (c == '-') == matches!(i, 8 | 13 | 18 | 23));
        if !dashes_in_place {
            return None;
        }
        text.chars().filter(|c| *c != '-').collect()
    } else {
        text.to_string()
    };
    if hex.len() != 32 || !hex.bytes().all(|b| b.is_ascii_hexdigit()) {
        return None;
    }
    let hex = hex.to_ascii_lowercase();
    Some(format!(
        "{}-{}-{}-{}-{}",
        &hex[0..8],
        &hex[8..12],
        &hex[12..16],
        &hex[16..20],
        &hex[20..32]
    ))
}

/// The 16 bytes of an MD5 printed as a lowercase UUID. Printed by `uuid` rather than a
/// `format!` per byte and [`parse_guid`] over the result: that was 0.8 % of the server's
/// processor time registering new subjects (`benches/RESULTS.md`).
fn format_uuid(bytes: [u8; 16]) -> String {
    uuid::Uuid::from_bytes(bytes).hyphenated().to_string()
}

fn text(value: &Value) -> Option<&str> {
    value.as_str()
}

/// Tags (key, then each value), properties (key, value), sensitive names: each in sorted
/// order, as Confluent keeps them in sorted maps and sets.
fn hash_metadata(md: &mut Md5, metadata: &Value) {
    if let Some(tags) = metadata.get("tags").and_then(Value::as_object) {
        let sorted: BTreeMap<&str, BTreeSet<&str>> = tags
            .iter()
            .map(|(k, v)| (k.as_str(), string_set(v)))
            .collect();
        for (key, values) in sorted {
            md.update(key.as_bytes());
            for value in values {
                md.update(value.as_bytes());
            }
        }
    }
    hash_string_map(md, metadata.get("properties"));
    if let Some(sensitive) = metadata.get("sensitive") {
        for name in string_set(sensitive) {
            md.update(name.as_bytes());
        }
    }
}

fn hash_rule_set(md: &mut Md5, rule_set: &Value) {
    for kind in ["migrationRules", "domainRules", "encodingRules"] {
        if let Some(rules) = rule_set.get(kind).and_then(Value::as_array) {
            for rule in rules {
                hash_rule(md, rule);
            }
        }
    }
    if let Some(enable_at) = rule_set.get("enableAt").and_then(text) {
        md.update(enable_at.as_bytes());
    }
}

fn hash_rule(md: &mut Md5, rule: &Value) {
    for key in ["name", "doc", "kind", "mode", "type"] {
        if let Some(value) = rule.get(key).and_then(text) {
            md.update(value.as_bytes());
        }
    }
    if let Some(tags) = rule.get("tags") {
        for tag in string_set(tags) {
            md.update(tag.as_bytes());
        }
    }
    hash_string_map(md, rule.get("params"));
    for key in ["expr", "onSuccess", "onFailure"] {
        if let Some(value) = rule.get(key).and_then(text) {
            md.update(value.as_bytes());
        }
    }
    if rule.get("disabled").and_then(Value::as_bool) == Some(true) {
        md.update([1u8]);
    }
}

fn hash_string_map(md: &mut Md5, map: Option<&Value>) {
    let Some(map) = map.and_then(Value::as_object) else {
        return;
    };
    let sorted: BTreeMap<&str, &str> = map
        .iter()
        .filter_map(|(k, v)| Some((k.as_str(), v.as_str()?)))
        .collect();
    for (key, value) in sorted {
        md.update(key.as_bytes());
        md.update(value.as_bytes());
    }
}

fn string_set(value: &Value) -> BTreeSet<&str> {
    value
        .as_array()
        .map(|items| items.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    // Expected values computed independently with Python's `hashlib.md5` and `uuid.UUID(bytes=...)`
    // over the byte sequence Confluent's `Schema.updateHash` feeds the digest.
    #[test]
    fn a_bare_schema_hashes_its_text() {
        assert_eq!(
            guid_of("\"string\"", &[], None, None),
            "095d71cf-1255-6b9d-5e33-0ad575b3df5d"
        );
    }

    #[test]
    fn references_metadata_and_rules_are_fed_in_order() {
        let reference = SchemaRef {
            name: "b.avsc".into(),
            subject: "b-value".into(),
            version: 2,
        };
        let metadata = json!({"properties": {"owner": "billing"}});
        let rule_set = json!({"domainRules": [{
            "name": "checkSku", "kind": "CONDITION", "mode": "WRITE", "type": "CEL",
            "expr": "message.sku != \"\""
        }]});
        assert_eq!(
            guid_of(
                r#"{"type":"record","name":"A","fields":[]}"#,
                &[reference],
                Some(&metadata),
                Some(&rule_set)
            ),
            "c6354e90-8c1d-46b0-2a5f-c382bbcc6f7c"
        );
    }

    #[test]
    fn references_metadata_and_rules_change_the_guid() {
        let bare = guid_of("{}", &[], None, None);
        let reference = SchemaRef {
            name: "other.json".into(),
            subject: "other".into(),
            version: 1,
        };
        let with_ref = guid_of("{}", std::slice::from_ref(&reference), None, None);
        let with_metadata = guid_of("{}", &[], Some(&json!({})), None);
        let with_rules = guid_of("{}", &[], None, Some(&json!({})));
        assert_ne!(bare, with_ref);
        assert_ne!(bare, with_metadata);
        assert_ne!(bare, with_rules);
    }

    #[test]
    fn metadata_order_does_not_matter() {
        let a = json!({"properties": {"owner": "billing", "domain": "orders"}, "tags": {"f": ["PII", "A"]}});
        let b = json!({"tags": {"f": ["A", "PII"]}, "properties": {"domain": "orders", "owner": "billing"}});
        assert_eq!(
            guid_of("{}", &[], Some(&a), None),
            guid_of("{}", &[], Some(&b), None)
        );
    }

    #[test]
    fn guids_parse_as_uuids_or_bare_hex() {
        let canonical = "0a1b2c3d-4e5f-6071-8293-a4b5c6d7e8f9";
        assert_eq!(parse_guid(canonical).as_deref(), Some(canonical));
        assert_eq!(
            parse_guid("0A1B2C3D4E5F60718293A4B5C6D7E8F9").as_deref(),
            Some(canonical)
        );
        assert_eq!(parse_guid("0a1b2c3d-4e5f-6071-8293a4b5c6d7-e8f9"), None);
        assert_eq!(parse_guid("not-a-guid"), None);
        assert_eq!(parse_guid(""), None);
    }
}
