//! One entry point over the four schema formats, for callers that hold a schema type as data
//! (the registry, the CLI). Each format crate stays independent of the others.

use covenant_avro::{AvroFormat, AvroSchema};
use covenant_engine::budget::Metered;
use covenant_engine::{
    CheckOptions, Finding, Format, Level, Limits, PriorVersion, Reference, Report, RuleSpec,
    SchemaError, Severity, check_history,
};
use covenant_iceberg::{IcebergFormat, IcebergSchema};
use covenant_jsonschema::{JsonSchema, JsonSchemaFormat};
use covenant_protobuf::{ProtobufFormat, ProtobufSchema};
use std::fmt;
use std::str::FromStr;

pub use covenant_engine as engine;

/// Confluent's `schemaType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum SchemaType {
    #[default]
    Avro,
    Json,
    Protobuf,
    /// An Apache Iceberg table schema (not a Confluent type).
    Iceberg,
}

impl SchemaType {
    pub const ALL: [SchemaType; 4] = [
        SchemaType::Avro,
        SchemaType::Json,
        SchemaType::Protobuf,
        SchemaType::Iceberg,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            SchemaType::Avro => AvroFormat::NAME,
            SchemaType::Json => JsonSchemaFormat::NAME,
            SchemaType::Protobuf => ProtobufFormat::NAME,
            SchemaType::Iceberg => IcebergFormat::NAME,
        }
    }
}

impl fmt::Display for SchemaType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

impl FromStr for SchemaType {
    type Err = String;
    /// Accepts Confluent's names case-insensitively, plus the CLI's `json`/`jsonschema`/`proto`,
    /// and `ICEBERG`.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.to_ascii_uppercase().as_str() {
            "AVRO" => Ok(SchemaType::Avro),
            "JSON" | "JSONSCHEMA" | "JSON_SCHEMA" => Ok(SchemaType::Json),
            "PROTOBUF" | "PROTO" => Ok(SchemaType::Protobuf),
            "ICEBERG" => Ok(SchemaType::Iceberg),
            _ => Err(format!("Invalid schema type {s}")),
        }
    }
}

/// A parsed schema of any format.
#[derive(Debug, Clone)]
pub enum ParsedSchema {
    Avro(AvroSchema),
    Json(JsonSchema),
    Protobuf(ProtobufSchema),
    Iceberg(IcebergSchema),
}

impl ParsedSchema {
    /// Parses within the default [`Limits`].
    pub fn parse(
        schema_type: SchemaType,
        text: &str,
        references: &[Reference],
    ) -> Result<ParsedSchema, SchemaError> {
        Self::parse_with(schema_type, text, references, &Limits::default())
    }

    /// Parses, refusing a schema beyond `limits` (a `LimitExceeded` error naming the limit).
    pub fn parse_with(
        schema_type: SchemaType,
        text: &str,
        references: &[Reference],
        limits: &Limits,
    ) -> Result<ParsedSchema, SchemaError> {
        Ok(match schema_type {
            SchemaType::Avro => {
                ParsedSchema::Avro(AvroFormat::parse_with(text, references, limits)?)
            }
            SchemaType::Json => {
                ParsedSchema::Json(JsonSchemaFormat::parse_with(text, references, limits)?)
            }
            SchemaType::Protobuf => {
                ParsedSchema::Protobuf(ProtobufFormat::parse_with(text, references, limits)?)
            }
            SchemaType::Iceberg => {
                ParsedSchema::Iceberg(IcebergFormat::parse_with(text, references, limits)?)
            }
        })
    }

    pub fn schema_type(&self) -> SchemaType {
        match self {
            ParsedSchema::Avro(_) => SchemaType::Avro,
            ParsedSchema::Json(_) => SchemaType::Json,
            ParsedSchema::Protobuf(_) => SchemaType::Protobuf,
            ParsedSchema::Iceberg(_) => SchemaType::Iceberg,
        }
    }

    /// The normalized text used for `normalize=true` lookups.
    pub fn normalized(&self) -> String {
        match self {
            ParsedSchema::Avro(s) => AvroFormat::normalized(s),
            ParsedSchema::Json(s) => JsonSchemaFormat::normalized(s),
            ParsedSchema::Protobuf(s) => ProtobufFormat::normalized(s),
            ParsedSchema::Iceberg(s) => IcebergFormat::normalized(s),
        }
    }
}

/// The rule a history gets when versions of a subject have different schema types.
pub static SCHEMA_TYPE_CHANGED: RuleSpec = RuleSpec {
    id: "SCHEMA_TYPE_CHANGED",
    format: "any",
    category: "structural",
    default_severity: Severity::Error,
    summary: "The new version has a different schema type (Avro, JSON Schema, Protobuf, Iceberg) than an earlier one; no reader of one can read the other.",
    bad_example: "version 1: AVRO record; version 2: PROTOBUF message",
    good_example: "a new subject (or a new topic) for the Protobuf message",
    hint: "Register the new format under a new subject and migrate consumers to it.",
    peers: &[],
};

/// Judges `candidate` against `history` (oldest first) at `level`, under the budget `m`
/// proves installed.
pub fn check(
    m: Metered<'_>,
    level: Level,
    candidate: &ParsedSchema,
    history: &[(i64, &ParsedSchema)],
    options: &CheckOptions,
) -> Report {
    fn same<'a, S>(
        history: &[(i64, &'a ParsedSchema)],
        pick: impl Fn(&'a ParsedSchema) -> Option<&'a S>,
    ) -> Result<Vec<PriorVersion<'a, S>>, i64> {
        history
            .iter()
            .map(|(version, schema)| {
                pick(schema)
                    .map(|schema| PriorVersion {
                        version: *version,
                        schema,
                    })
                    .ok_or(*version)
            })
            .collect()
    }
    let result = match candidate {
        ParsedSchema::Avro(c) => same(history, |s| match s {
            ParsedSchema::Avro(s) => Some(s),
            _ => None,
        })
        .map(|h| check_history::<AvroFormat>(m, level, c, &h, options)),
        ParsedSchema::Json(c) => same(history, |s| match s {
            ParsedSchema::Json(s) => Some(s),
            _ => None,
        })
        .map(|h| check_history::<JsonSchemaFormat>(m, level, c, &h, options)),
        ParsedSchema::Protobuf(c) => same(history, |s| match s {
            ParsedSchema::Protobuf(s) => Some(s),
            _ => None,
        })
        .map(|h| check_history::<ProtobufFormat>(m, level, c, &h, options)),
        ParsedSchema::Iceberg(c) => same(history, |s| match s {
            ParsedSchema::Iceberg(s) => Some(s),
            _ => None,
        })
        .map(|h| check_history::<IcebergFormat>(m, level, c, &h, options)),
    };
    match result {
        Ok(report) => report,
        Err(version) if level == Level::None => {
            let _ = version;
            Report::from_findings(Vec::new())
        }
        Err(version) => {
            let mut finding = Finding::new(
                &SCHEMA_TYPE_CHANGED,
                "",
                format!(
                    "The new schema is {} but version {version} is not.",
                    candidate.schema_type()
                ),
            );
            finding.version = Some(version);
            Report::from_findings(vec![finding])
        }
    }
}

/// The line and column of a finding's `path` in a schema `text` of `schema_type`, so a
/// report can point editors and code-scanning tools at the line; `None` where the path has no
/// single place in the text.
pub fn locate(
    schema_type: SchemaType,
    text: &str,
    path: &str,
) -> Option<covenant_engine::Position> {
    match schema_type {
        SchemaType::Avro => covenant_avro::locate(text, path),
        SchemaType::Json => covenant_jsonschema::locate(text, path),
        SchemaType::Protobuf => covenant_protobuf::locate(text, path),
        SchemaType::Iceberg => covenant_iceberg::locate(text, path),
    }
}

/// A schema text prepared to [`locate`] many finding paths: Protobuf and JSON Schema texts
/// are parsed once here, not once per finding.
pub enum Locator<'a> {
    Protobuf(covenant_protobuf::Locator),
    Json(covenant_engine::JsonText<'a>),
    /// Formats located path by path.
    Other(SchemaType, &'a str),
}

impl<'a> Locator<'a> {
    pub fn new(schema_type: SchemaType, text: &'a str) -> Locator<'a> {
        match schema_type {
            SchemaType::Protobuf => Locator::Protobuf(covenant_protobuf::Locator::new(text)),
            SchemaType::Json => Locator::Json(covenant_engine::JsonText::parse(text)),
            other => Locator::Other(other, text),
        }
    }

    /// A locator for `text`, the text `schema` was parsed from; a Protobuf schema's compiled
    /// descriptors locate without parsing the text again.
    pub fn for_schema(schema: &ParsedSchema, text: &'a str) -> Locator<'a> {
        match schema {
            ParsedSchema::Protobuf(p) => {
                Locator::Protobuf(covenant_protobuf::Locator::for_schema(p, text))
            }
            other => Locator::new(other.schema_type(), text),
        }
    }

    /// The same answer as [`locate`] with this locator's type and text.
    pub fn locate(&self, path: &str) -> Option<covenant_engine::Position> {
        match self {
            Locator::Protobuf(l) => l.locate(path),
            Locator::Json(j) => j.locate_pointer(path),
            Locator::Other(schema_type, text) => locate(*schema_type, text, path),
        }
    }
}

/// The rule catalog of every format, in the order the catalog document lists them.
pub fn rule_groups() -> Vec<(&'static str, &'static [&'static RuleSpec])> {
    static GENERAL: [&RuleSpec; 1] = [&SCHEMA_TYPE_CHANGED];
    vec![
        ("General", &GENERAL[..]),
        ("Avro", covenant_avro::rules()),
        ("JSON Schema", covenant_jsonschema::rules()),
        ("Protobuf", covenant_protobuf::rules()),
        ("Iceberg", covenant_iceberg::rules()),
    ]
}

/// Finds a rule spec by id across all formats.
pub fn find_rule(id: &str) -> Option<&'static RuleSpec> {
    rule_groups()
        .into_iter()
        .flat_map(|(_, rules)| rules.iter().copied())
        .find(|r| r.id == id)
}
