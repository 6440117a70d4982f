//! A schema's identity: the text stored for it and the content key a registration
//! deduplicates on (same key, same id), and how an older stored record is recognized as the
//! same schema.

use crate::Registry;
use covenant_schema::{ParsedSchema, SchemaType};
use covenant_store::{NewSchema, SchemaRef, StoredVersion};
use serde_json::Value;
use sha2::Digest;

/// Whether a stored schema is the candidate (whose key is `key`). Records stored before the
/// identity last changed carry an older key, so theirs is derived again from their text.
pub(crate) fn same_identity(stored: &covenant_store::SchemaRecord, key: &str) -> bool {
    stored.content_key == key
        || content_key(
            &stored.schema_type,
            &stored.schema,
            &stored.references,
            &stored.metadata,
            &stored.rule_set,
        ) == key
}

/// The identity a registration deduplicates on: same key, same id. Public so that tools moving
/// schemas between registries key them exactly as the registry would.
pub fn content_key(
    schema_type: &str,
    text: &str,
    references: &[SchemaRef],
    metadata: &Option<Value>,
    rule_set: &Option<Value>,
) -> String {
    // Avro compares as Confluent does: the schema as the Avro library prints it. Protobuf as
    // the schema printed back (whitespace and comments aside, text and descriptor alike); a
    // schema that needs its references to compile is keyed from its parsed form when
    // registered (see `Registry::prepare`), here from its text.
    let printed = if schema_type == SchemaType::Avro.as_str() {
        covenant_avro::identity_string(text)
    } else if schema_type == SchemaType::Protobuf.as_str() {
        covenant_protobuf::identity_string(text)
    } else {
        None
    };
    let text = printed.as_deref().unwrap_or(text);
    identity_key(schema_type, text, references, metadata, rule_set)
}

/// [`content_key`] of a schema whose identity text is known (for Avro, the schema as the Avro
/// library prints it).
pub(crate) fn identity_key(
    schema_type: &str,
    text: &str,
    references: &[SchemaRef],
    metadata: &Option<Value>,
    rule_set: &Option<Value>,
) -> String {
    // The JSON array `[type, text, references, metadata, rule set]`, written straight into the
    // digest: the key of every stored schema depends on these exact bytes.
    let mut digest = DigestWriter(sha2::Sha256::new());
    let identity = (schema_type, text, references, metadata, rule_set);
    serde_json::to_writer(&mut digest, &identity).expect("a digest accepts every write");
    lower_hex(&digest.0.finalize())
}

/// Feeds what is written into a digest.
pub(crate) struct DigestWriter(sha2::Sha256);

impl std::io::Write for DigestWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        sha2::Digest::update(&mut self.0, bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

pub(crate) fn lower_hex(bytes: &[u8]) -> String {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut out = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        out.push(DIGITS[usize::from(b >> 4)] as char);
        out.push(DIGITS[usize::from(b & 0x0f)] as char);
    }
    out
}

/// The text stored for a schema: the normalized form when asked, otherwise compact JSON for
/// the JSON-based formats (so whitespace does not split identities) and the trimmed .proto text
/// for Protobuf. Avro primitives written as `{"type": "int"}` are stored as `"int"`, like
/// Confluent.
///
/// It also tells whether that text is the schema as the Avro library prints it, the identity
/// of its content key ([`content_key`]): the key is then derived from the text itself, not
/// printed a second time (printing twice was 2.9 % of the server's processor time registering
/// new subjects, `benches/RESULTS.md`).
pub(crate) fn stored_text(
    schema_type: SchemaType,
    raw: &str,
    parsed: &ParsedSchema,
    normalize: bool,
) -> (String, bool) {
    if normalize {
        return (parsed.normalized(), false);
    }
    match schema_type {
        SchemaType::Avro | SchemaType::Json | SchemaType::Iceberg => {
            match serde_json::from_str::<Value>(raw) {
                Ok(value) => {
                    let value = match value {
                        Value::Object(map)
                            if schema_type == SchemaType::Avro
                                && map.len() == 1
                                && matches!(map.get("type"), Some(Value::String(t)) if is_avro_primitive(t)) =>
                        {
                            map.get("type").cloned().unwrap_or(Value::Null)
                        }
                        value => value,
                    };
                    // Avro is stored as the Avro library prints it (compact, its attribute
                    // order, names relative to their namespace), as Confluent stores it: the
                    // same schema then has the same text, guid and id in both.
                    match schema_type {
                        SchemaType::Avro => (covenant_avro::identity_of(&value), true),
                        _ => (value.to_string(), false),
                    }
                }
                Err(_) => (raw.trim().to_string(), false),
            }
        }
        // Base64 descriptor input is stored as .proto text, as Confluent's canonical string.
        SchemaType::Protobuf => match parsed {
            ParsedSchema::Protobuf(p) => (p.text().trim().to_string(), false),
            _ => (raw.trim().to_string(), false),
        },
    }
}

pub(crate) fn is_avro_primitive(t: &str) -> bool {
    matches!(
        t,
        "null" | "boolean" | "int" | "long" | "float" | "double" | "bytes" | "string"
    )
}

impl Registry {
    /// The first of `versions` that is the Protobuf `candidate` once parsed: a version keyed
    /// from its text before Protobuf was keyed by its printed form, whose text needs its
    /// references to compile (the others are found by [`same_identity`]).
    pub(crate) async fn same_protobuf<'v>(
        &self,
        versions: Vec<&'v StoredVersion>,
        candidate: &NewSchema,
    ) -> Option<&'v StoredVersion> {
        if candidate.schema_type != SchemaType::Protobuf.as_str() {
            return None;
        }
        for v in versions {
            let stored = &v.schema;
            if stored.schema_type != candidate.schema_type
                || stored.references.is_empty()
                || stored.references != candidate.references
                || stored.metadata != candidate.metadata
                || stored.rule_set != candidate.rule_set
            {
                continue;
            }
            if let Ok(parsed) = self.parse_record(stored).await
                && let ParsedSchema::Protobuf(p) = parsed.as_ref()
            {
                let key = identity_key(
                    &stored.schema_type,
                    &p.canonical_text(),
                    &stored.references,
                    &stored.metadata,
                    &stored.rule_set,
                );
                if key == candidate.content_key {
                    return Some(v);
                }
            }
        }
        None
    }
}
