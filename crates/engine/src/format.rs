use crate::budget::Metered;
use crate::{Finding, Limits};
use std::fmt;

/// A schema that another schema refers to, as a registry supplies it: Confluent-style
/// `name` (an Avro full name, a JSON Schema `$ref` URI, or a Protobuf import path), the
/// subject and version it was registered under, and its text. Callers pass transitive
/// references flattened, dependencies first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub name: String,
    pub subject: String,
    pub version: i64,
    pub schema: String,
}

/// How strictly Protobuf changes are judged.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProtobufStrictness {
    /// Confluent Schema Registry's rules.
    #[default]
    Confluent,
    /// Confluent's rules plus buf's WIRE category: anything that breaks old bytes.
    Wire,
    /// WIRE plus buf's WIRE_JSON category: anything that breaks the JSON encoding too.
    WireJson,
}

impl ProtobufStrictness {
    pub fn parse(text: &str) -> Option<Self> {
        match text.to_ascii_lowercase().as_str() {
            "confluent" => Some(Self::Confluent),
            "wire" => Some(Self::Wire),
            "wire_json" | "wire-json" => Some(Self::WireJson),
            _ => None,
        }
    }
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Confluent => "confluent",
            Self::Wire => "wire",
            Self::WireJson => "wire_json",
        }
    }
}

/// Confluent's JSON Schema compatibility policy.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum JsonPolicy {
    #[default]
    Strict,
    Lenient,
}

/// Whether a check builds its info findings (what changed without harm to anyone).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum InfoFindings {
    #[default]
    Built,
    /// Only warnings and errors are built. A registration keeps only errors, and a long
    /// history yields hundreds of thousands of infos ("field added", against each earlier
    /// version), which cost more than the comparison itself.
    Skipped,
}

/// Options that change how a pair is judged. Not `Default`-free on purpose: the defaults are
/// Confluent's, which is what a client of a Confluent-compatible registry expects.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct CheckOptions {
    pub protobuf_strictness: ProtobufStrictness,
    pub json_policy: JsonPolicy,
    pub info_findings: InfoFindings,
}

impl CheckOptions {
    /// Whether findings of `severity` are wanted; formats may skip building the others.
    pub fn wants(&self, severity: crate::Severity) -> bool {
        severity != crate::Severity::Info || self.info_findings == InfoFindings::Built
    }
}

/// What kind of problem made a schema text unusable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum SchemaErrorKind {
    /// Not parseable text (JSON syntax, .proto syntax).
    Syntax,
    /// A type or `$ref` that is not defined and not supplied as a reference.
    UnknownType,
    /// A default value that does not match its type.
    InvalidDefault,
    /// A name defined twice (field, symbol, type).
    Duplicate,
    /// A name that breaks the format's naming rules.
    InvalidName,
    /// A structurally invalid construct (bad union, wrong keyword type, ...).
    Invalid,
    /// Valid, but larger or deeper than a configured [`crate::Limits`] value allows.
    LimitExceeded,
}

/// A schema text that cannot be used, with the path of the offending element.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub struct SchemaError {
    pub kind: SchemaErrorKind,
    /// JSON-pointer-like path (`/fields/amount/type`) or, for Protobuf, `file:line:column`.
    pub path: String,
    pub message: String,
}

impl SchemaError {
    pub fn new(kind: SchemaErrorKind, path: impl Into<String>, message: impl Into<String>) -> Self {
        SchemaError {
            kind,
            path: path.into(),
            message: message.into(),
        }
    }
}

impl fmt::Display for SchemaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.path.is_empty() {
            write!(f, "{}", self.message)
        } else {
            write!(f, "{}: {}", self.path, self.message)
        }
    }
}

/// A schema format: parsing, identity and pairwise compatibility.
///
/// `check` answers one question: can a consumer using `reader` read data produced with
/// `writer`? Every level is built from that question by [`crate::check_history`].
pub trait Format {
    type Schema: Send + Sync;

    /// The Confluent `schemaType` name: `AVRO`, `JSON` or `PROTOBUF`.
    const NAME: &'static str;

    /// Parses with the default [`Limits`].
    fn parse(text: &str, references: &[Reference]) -> Result<Self::Schema, SchemaError> {
        Self::parse_with(text, references, &Limits::default())
    }

    /// Parses, refusing a schema that exceeds `limits` with a
    /// [`SchemaErrorKind::LimitExceeded`] error; a schema that parses can be walked by every
    /// check in bounded stack.
    fn parse_with(
        text: &str,
        references: &[Reference],
        limits: &Limits,
    ) -> Result<Self::Schema, SchemaError>;

    /// The normalized text used for `normalize=true` lookups and identity.
    fn normalized(schema: &Self::Schema) -> String;

    /// All findings for reading `writer` data with `reader`, under the budget `m` proves
    /// installed (a comparison of two schemas walks pairs of their nodes).
    fn check(
        m: Metered<'_>,
        reader: &Self::Schema,
        writer: &Self::Schema,
        options: &CheckOptions,
    ) -> Vec<Finding>;

    /// [`Format::check`] as one pass of a level. A format whose rules include some about the
    /// history of the text (reservations kept, deletions reserved) runs those only when
    /// `pass.history`, comparing the earlier version with the later one whatever the
    /// direction; rules about readability run for `reader` and `writer` as given. Formats
    /// without history rules keep this default.
    fn check_pass(
        m: Metered<'_>,
        reader: &Self::Schema,
        writer: &Self::Schema,
        options: &CheckOptions,
        _pass: crate::Pass,
    ) -> Vec<Finding> {
        Self::check(m, reader, writer, options)
    }

    /// Findings about one schema on its own (e.g. an undeclared JSON Schema dialect).
    fn lint(_schema: &Self::Schema, _options: &CheckOptions) -> Vec<Finding> {
        Vec::new()
    }
}
