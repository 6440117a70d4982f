//! Avro schemas: parsing, Parsing Canonical Form, fingerprints, compatibility rules and
//! schema resolution of binary data.
//!
//! Compatibility follows Java's `SchemaCompatibility` (what Confluent Schema Registry runs):
//! the same verdicts, but every incompatibility is reported, with a path by name such as
//! `/fields/customer/fields/id/type`, a plain-language message and a hint.

mod canonical;
mod compat;
mod datum;
mod default;
mod depth;
mod fields;
mod identity;
mod json;
pub use fields::field_tree;
pub use identity::{identity_of, identity_string};
mod model;
mod parse;
mod position;
mod shape;
mod text;
pub use position::locate;
pub mod rules;
mod values;

use covenant_engine::budget::Metered;
use covenant_engine::{CheckOptions, Finding, Format, Limits, Reference, RuleSpec, SchemaError};

pub use parse::MAX_DEPTH;

/// A parsed Avro schema.
#[derive(Debug, Clone)]
pub struct AvroSchema {
    arena: model::Arena,
    canonical: String,
}

impl AvroSchema {
    /// The Parsing Canonical Form as the Avro specification defines it (referenced named
    /// types inlined at first use).
    pub fn canonical_form(&self) -> String {
        self.canonical.clone()
    }
    /// CRC-64-AVRO ("Rabin") fingerprint of the canonical form.
    pub fn rabin_fingerprint(&self) -> u64 {
        canonical::rabin(self.canonical.as_bytes())
    }
    /// SHA-256 fingerprint of the canonical form.
    pub fn sha256_fingerprint(&self) -> [u8; 32] {
        canonical::sha256(self.canonical.as_bytes())
    }
    /// The schema with every referenced named type inlined (Confluent's `format=resolved`),
    /// in the same stable JSON form as [`Format::normalized`].
    pub fn resolved_form(&self) -> String {
        canonical::json_form(&self.arena, true).to_string()
    }
}

/// Decodes one datum written with `writer`, read as `reader` by the specification's schema
/// resolution, in Avro's JSON encoding.
pub fn decode_with(
    m: Metered<'_>,
    writer: &AvroSchema,
    reader: &AvroSchema,
    bytes: &[u8],
) -> Result<serde_json::Value, String> {
    datum::decode(m, &writer.arena, &reader.arena, bytes)
}

/// Like [`decode_with`], with the reader's logical types applied so that what two readers make
/// of the same bytes can be compared: decimals as decimal text, times as a unit-free count
/// with their kind (`instant:`, `local:`, `date:`, `time:`), plain bytes as text, unions
/// unwrapped.
pub fn decode_values_with(
    m: Metered<'_>,
    writer: &AvroSchema,
    reader: &AvroSchema,
    bytes: &[u8],
) -> Result<serde_json::Value, String> {
    datum::decode_values(m, &writer.arena, &reader.arena, bytes)
}

/// Encodes one datum, given in Avro's JSON encoding (a non-null union value as
/// `{"<branch type or full name>": value}`, bytes and fixed as strings of code points 0-255).
pub fn encode_with(schema: &AvroSchema, datum: &serde_json::Value) -> Result<Vec<u8>, String> {
    datum::encode(&schema.arena, datum)
}

pub struct AvroFormat;

impl Format for AvroFormat {
    type Schema = AvroSchema;
    const NAME: &'static str = "AVRO";

    fn parse_with(
        text: &str,
        references: &[Reference],
        limits: &Limits,
    ) -> Result<AvroSchema, SchemaError> {
        let arena = parse::parse(text, references, limits)?;
        let canonical = canonical::parsing_canonical_form(&arena);
        Ok(AvroSchema { arena, canonical })
    }

    /// Full names, fixed key order, every attribute kept, no whitespace; referenced named
    /// types stay references (their own subjects carry them).
    fn normalized(schema: &AvroSchema) -> String {
        canonical::json_form(&schema.arena, false).to_string()
    }

    fn check(
        _m: Metered<'_>,
        reader: &AvroSchema,
        writer: &AvroSchema,
        _options: &CheckOptions,
    ) -> Vec<Finding> {
        let mut findings = compat::Checker::new(&reader.arena, &writer.arena).check_root();
        for finding in &mut findings {
            if finding.path.is_empty() {
                finding.path.push('/');
            }
        }
        findings
    }

    fn lint(schema: &AvroSchema, _options: &CheckOptions) -> Vec<Finding> {
        rules::union_default_not_first_branch::lint(&schema.arena)
    }
}

/// Every Avro rule, in catalog order.
pub fn rules() -> &'static [&'static RuleSpec] {
    rules::rules()
}
