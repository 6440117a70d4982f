//! Protobuf: parsing without protoc, compatibility and wire-safety rules.

use covenant_engine::{
    CheckOptions, Finding, Format, Reference, RuleSpec, SchemaError, SchemaErrorKind,
};

/// A parsed `.proto` file with its imports resolved.
#[derive(Debug, Clone)]
pub struct ProtobufSchema {
    text: String,
}

impl ProtobufSchema {
    /// Parses a base64-encoded `FileDescriptorProto`, as Confluent clients send with
    /// `format=serialized`; imports come from `references`.
    pub fn from_descriptor_base64(
        _b64: &str,
        _references: &[Reference],
    ) -> Result<ProtobufSchema, SchemaError> {
        Err(SchemaError::new(
            SchemaErrorKind::Invalid,
            "",
            "Protobuf descriptors are not available yet",
        ))
    }
    /// The file as a base64-encoded `FileDescriptorProto` (Confluent's `format=serialized`).
    pub fn to_descriptor_base64(&self) -> String {
        String::new()
    }
    /// Confluent wire-format message indexes of a message, by full name.
    pub fn message_indexes(&self, _full_name: &str) -> Option<Vec<i32>> {
        None
    }
    /// The full name of the message at `indexes`.
    pub fn message_name(&self, _indexes: &[i32]) -> Option<String> {
        None
    }
}

pub struct ProtobufFormat;

impl Format for ProtobufFormat {
    type Schema = ProtobufSchema;
    const NAME: &'static str = "PROTOBUF";

    fn parse(_text: &str, _references: &[Reference]) -> Result<ProtobufSchema, SchemaError> {
        Err(SchemaError::new(
            SchemaErrorKind::Invalid,
            "",
            "Protobuf parsing is not available yet",
        ))
    }

    fn normalized(schema: &ProtobufSchema) -> String {
        schema.text.clone()
    }

    fn check(
        _reader: &ProtobufSchema,
        _writer: &ProtobufSchema,
        _options: &CheckOptions,
    ) -> Vec<Finding> {
        Vec::new()
    }
}

/// Every Protobuf rule, in catalog order.
pub fn rules() -> &'static [&'static RuleSpec] {
    &[]
}
