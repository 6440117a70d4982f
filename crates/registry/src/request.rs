//! The shapes of what the registry is asked (a schema request, a version, options) and of
//! what a registration answers.

use crate::AcceptedRisk;
use crate::RegistryError;
use crate::RegistryResult;
use crate::SubjectRead;
use covenant_store::{Audit, SchemaRecord, SchemaRef};
use serde_json::Value;
use std::sync::Arc;

/// A register, lookup or compatibility request body, as the domain sees it.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct SchemaRequest {
    pub schema: String,
    pub schema_type: Option<String>,
    pub references: Vec<SchemaRef>,
    pub metadata: Option<Value>,
    pub rule_set: Option<Value>,
    /// IMPORT mode: the id to register under.
    pub id: Option<i64>,
    /// An explicit version; `-1` means "register unless equal to the latest".
    pub version: Option<i64>,
    /// Payloads written with this schema, replayed through earlier versions as readers under
    /// FORWARD and FULL levels (a Covenant extension; Confluent clients send none).
    pub samples: Vec<CandidateSample>,
}

/// A payload written with a candidate schema, submitted alongside it.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CandidateSample {
    /// avro, protobuf, json or confluent, as for stored samples.
    pub encoding: String,
    /// Protobuf: the message's full name (needed without Confluent framing).
    pub message_name: Option<String>,
    pub payload: Vec<u8>,
}

/// A `{v}` path segment: a number or the latest non-deleted version.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum VersionSpec {
    Latest,
    Number(i64),
}

impl VersionSpec {
    /// Parses Confluent's version syntax: `latest` (any case), `-1`, or `1..2^31-1`.
    pub fn parse(text: &str) -> RegistryResult<VersionSpec> {
        let t = text.trim();
        if t.eq_ignore_ascii_case("latest") {
            return Ok(VersionSpec::Latest);
        }
        match t.parse::<i64>() {
            Ok(-1) => Ok(VersionSpec::Latest),
            Ok(n) if (1..=i64::from(i32::MAX)).contains(&n) => Ok(VersionSpec::Number(n)),
            _ => Err(RegistryError::InvalidVersion(text.to_string())),
        }
    }
}

/// Options of a registration call.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct RegisterOptions<'a> {
    pub normalize: bool,
    /// Skip the compatibility check (`force=true`).
    pub force: bool,
    /// Who registers; the store records it in the registration's transaction.
    pub audit: Audit<'a>,
    /// What the request read of the subject with its alias, for the first round to start
    /// from ([`crate::Registry::alias_target_for_content`]).
    pub first_read: Option<&'a SubjectRead>,
}

/// What a registration returned.
#[derive(Debug, Clone, PartialEq)]
pub struct Registration {
    pub id: i64,
    pub version: i64,
    pub schema: Arc<SchemaRecord>,
    /// False when an existing version was returned.
    pub created: bool,
    /// The approvals whose accepted risk let this version through (empty for most).
    pub approvals: Vec<AcceptedRisk>,
}

/// Output formats of schema text.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TextFormat {
    /// The stored canonical text.
    Default,
    /// Protobuf: base64 `FileDescriptorProto`.
    Serialized,
    /// Avro: references inlined.
    Resolved,
}

impl TextFormat {
    /// Unknown values fall back to the canonical text, as Confluent does.
    pub fn parse(text: Option<&str>) -> TextFormat {
        match text.map(|t| t.trim().to_ascii_lowercase()) {
            Some(t) if t == "serialized" => TextFormat::Serialized,
            Some(t) if t == "resolved" => TextFormat::Resolved,
            _ => TextFormat::Default,
        }
    }
}
