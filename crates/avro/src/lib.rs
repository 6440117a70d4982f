//! Avro schemas: parsing, Parsing Canonical Form, fingerprints and compatibility rules.

use covenant_engine::{
    CheckOptions, Finding, Format, Reference, RuleSpec, SchemaError, SchemaErrorKind,
};

/// A parsed Avro schema.
#[derive(Debug, Clone)]
pub struct AvroSchema {
    text: String,
}

impl AvroSchema {
    /// The Parsing Canonical Form as the Avro specification defines it.
    pub fn canonical_form(&self) -> String {
        self.text.clone()
    }
    /// CRC-64-AVRO ("Rabin") fingerprint of the canonical form.
    pub fn rabin_fingerprint(&self) -> u64 {
        0
    }
    /// SHA-256 fingerprint of the canonical form.
    pub fn sha256_fingerprint(&self) -> [u8; 32] {
        [0; 32]
    }
}

pub struct AvroFormat;

impl Format for AvroFormat {
    type Schema = AvroSchema;
    const NAME: &'static str = "AVRO";

    fn parse(_text: &str, _references: &[Reference]) -> Result<AvroSchema, SchemaError> {
        Err(SchemaError::new(
            SchemaErrorKind::Invalid,
            "",
            "Avro parsing is not available yet",
        ))
    }

    fn normalized(schema: &AvroSchema) -> String {
        schema.text.clone()
    }

    fn check(_reader: &AvroSchema, _writer: &AvroSchema, _options: &CheckOptions) -> Vec<Finding> {
        Vec::new()
    }
}

/// Every Avro rule, in catalog order.
pub fn rules() -> &'static [&'static RuleSpec] {
    &[]
}
