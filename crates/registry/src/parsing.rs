//! Schema text parsed into its format's model within the configured limits, and stored
//! schemas parsed once and cached by id.

use crate::{Registry, RegistryError, RegistryResult, cache};
use covenant_engine::{Limits, Reference};
use covenant_schema::{ParsedSchema, SchemaType};
use covenant_store::SchemaRecord;
use std::str::FromStr;
use std::sync::Arc;

pub(crate) fn parse_type(text: Option<&str>) -> RegistryResult<SchemaType> {
    match text {
        None => Ok(SchemaType::Avro),
        Some(t) if t.trim().is_empty() => Ok(SchemaType::Avro),
        Some(t) => SchemaType::from_str(t.trim())
            .map_err(|_| RegistryError::InvalidSchema(format!("Invalid schema type {t}"))),
    }
}

/// Parses schema text of any format within the default [`Limits`]; Protobuf also accepts a
/// base64 `FileDescriptorProto`.
pub fn parse_schema(
    schema_type: SchemaType,
    text: &str,
    references: &[Reference],
) -> RegistryResult<ParsedSchema> {
    parse_schema_with(schema_type, text, references, &Limits::default())
}

/// [`parse_schema`] within `limits`: a schema beyond them is a 42201 naming the limit.
pub fn parse_schema_with(
    schema_type: SchemaType,
    text: &str,
    references: &[Reference],
    limits: &Limits,
) -> RegistryResult<ParsedSchema> {
    if text.trim().is_empty() {
        return Err(RegistryError::InvalidSchema("Empty schema".into()));
    }
    // The Protobuf format also reads a base64 `FileDescriptorProto` when the text is not
    // `.proto` text.
    ParsedSchema::parse_with(schema_type, text, references, limits).map_err(|text_error| {
        RegistryError::InvalidSchema(format!(
            "Invalid schema of type {schema_type}, details: {text_error}"
        ))
    })
}

/// Whether a request sent a Protobuf schema as a base64 `FileDescriptorProto`; the answer
/// then gives it back in that form (clients cache the answer's text by id).
pub fn sent_as_descriptor(schema_type: Option<&str>, text: &str) -> bool {
    schema_type.is_some_and(|t| t.trim().eq_ignore_ascii_case("PROTOBUF"))
        && covenant_protobuf::is_descriptor_base64(text)
}

impl Registry {
    /// The parsed form of a stored schema, cached by id.
    pub(crate) async fn parse_record(
        &self,
        record: &SchemaRecord,
    ) -> RegistryResult<Arc<ParsedSchema>> {
        if let Some(p) = self.cached_parsed(record.id) {
            return Ok(p);
        }
        let parent = self.parent_of_stored(record.id).await?;
        let (_, refs) = self
            .resolve_references(&record.references, &parent, true)
            .await?;
        let schema_type = parse_type(Some(&record.schema_type))?;
        let parsed = Arc::new(parse_schema_with(
            schema_type,
            &record.schema,
            &refs,
            &self.schema_limits,
        )?);
        self.parsed.insert(
            record.id,
            parsed.clone(),
            cache::parsed_size(record.schema.len()),
        );
        Ok(parsed)
    }
}
