//! Subjects, versions, ids, config and modes: the registry's domain logic, with Confluent
//! Schema Registry's semantics. No SQL and no HTTP here: persistence goes through
//! [`covenant_store::Store`], formats through [`covenant_schema`].
//!
//! Concurrency: every write goes through the store, which serializes writes per backend
//! (SQLite: one writer connection; PostgreSQL: a per-subject lock). A registration's
//! compatibility check runs inside that write as the store's guard, so two incompatible
//! versions can never both land. Reads go straight to the store, except schemas by id,
//! which every node serves from memory once read (an id is never rebound to other content;
//! the cache is dropped on permanent deletes, this node's or, through the change feed,
//! another's), and the answers of lookups and idempotent registrations with the settings they
//! inherit ([`answers`]: forgotten by every write that may change them). The caches are
//! bounded LRU maps ([`DEFAULT_CACHE_ENTRIES`], [`Registry::with_cache_entries`]): the least
//! recently used entries are read from the store again.

mod admission;
mod answers;
mod approvals;
mod cache;
mod check_budget;
mod contexts;
mod contract;
pub mod deks;
mod error;
mod evolution;
mod judged;
mod profiles;
mod removal;

pub use admission::AdmissionLimits;
pub use approvals::{
    AcceptedRisk, ApprovalSource, accept as accept_findings, approval_fingerprint,
};
pub use cache::DEFAULT_CACHE_ENTRIES;
pub use check_budget::CheckBudget;
pub use contexts::{prefix_matches, scope_for};
pub use contract::{Contract, merge_metadata, merge_rule_sets};
pub use covenant_policy::RolloutPlan;
pub use covenant_store::ProfileRecord;
pub use covenant_store::SampleRecord;
pub use error::{RegistryError, RegistryResult, finding_text};
use evolution::Evidence;
pub use evolution::{FieldRecords, ReplayLimits, UsageEvidence};
pub use profiles::{
    ProfileFindings, THRESHOLDS_KEY, ThresholdOverrides, TrendPoint, parse_instant,
};
pub use removal::{
    HookFuture, RemovalCheck, RemovalVerdict, field_paths as schema_field_paths_of, removed_fields,
};

use covenant_engine::{
    CheckOptions, InfoFindings, JsonPolicy, Level, Limits, ProtobufStrictness, Reference, Report,
};
use covenant_schema::{ParsedSchema, SchemaType};
use covenant_store::{
    ConfigRecord, Dedupe, NewSchema, Placement, Rejection, SchemaRecord, SchemaRef, Scope, Store,
    StoreError, StoredVersion,
};
use serde_json::{Map, Value};
use sha2::Digest;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::future::Future;
use std::pin::Pin;
use std::str::FromStr;
use std::sync::{Arc, RwLock};

pub use answers::Answer;
use answers::{Answers, RequestKey, Route};
use cache::IdCache;
pub use judged::WouldRegister;
use judged::{Attempt, Judged, SubjectTurns, retry_pause, same_versions};

pub use covenant_store::{Audit, AuditContext};
pub use covenant_store::{SchemaRecord as Schema, SchemaRef as Ref, StoredVersion as Version};

/// How deep references may nest before the chain is judged circular or abusive.
const MAX_REFERENCE_DEPTH: usize = 32;
/// How often a registration is judged again when a concurrent write changed the subject (or
/// its config or mode) between the snapshot it was judged on and the commit.
const REGISTER_ATTEMPTS: usize = 12;

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

/// Registry modes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    ReadWrite,
    ReadOnly,
    ReadOnlyOverride,
    Import,
    Forward,
}

impl Mode {
    pub fn as_str(self) -> &'static str {
        match self {
            Mode::ReadWrite => "READWRITE",
            Mode::ReadOnly => "READONLY",
            Mode::ReadOnlyOverride => "READONLY_OVERRIDE",
            Mode::Import => "IMPORT",
            Mode::Forward => "FORWARD",
        }
    }

    pub fn parse(text: &str) -> RegistryResult<Mode> {
        match text.trim().to_ascii_uppercase().as_str() {
            "READWRITE" => Ok(Mode::ReadWrite),
            "READONLY" => Ok(Mode::ReadOnly),
            "READONLY_OVERRIDE" => Ok(Mode::ReadOnlyOverride),
            "IMPORT" => Ok(Mode::Import),
            "FORWARD" => Ok(Mode::Forward),
            _ => Err(RegistryError::InvalidMode),
        }
    }

    fn is_read_only(self) -> bool {
        matches!(self, Mode::ReadOnly | Mode::ReadOnlyOverride)
    }

    fn is_import(self) -> bool {
        matches!(self, Mode::Import | Mode::Forward)
    }
}

/// A config as read: the effective level plus the scope's other settings.
#[derive(Debug, Clone, PartialEq)]
pub struct ConfigView {
    pub level: Level,
    pub extra: Map<String, Value>,
}

/// A partial config update: absent keys keep their value, `Some(Value::Null)` clears one.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ConfigUpdate {
    pub compatibility: Option<Value>,
    pub extra: Map<String, Value>,
}

/// Options of a registration call.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct RegisterOptions<'a> {
    pub normalize: bool,
    /// Skip the compatibility check (`force=true`).
    pub force: bool,
    /// Who registers; the store records it in the registration's transaction.
    pub audit: Audit<'a>,
}

/// Whether a registration round writes what it judged ([`Registry::judge_registration`]
/// judges only).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Commit {
    Yes,
    No,
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

/// What the id caches hold, for metrics and tests of their bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CacheUsage {
    pub records: usize,
    pub parsed: usize,
    /// Cached lookup and registration answers.
    pub answers: usize,
    pub capacity: usize,
    /// Estimated bytes of the record and parsed-schema caches (see `cache.rs`).
    pub records_bytes: usize,
    pub parsed_bytes: usize,
}

/// The registry. Cheap to share behind an `Arc`.
pub struct Registry {
    store: Arc<dyn Store>,
    default_level: Level,
    by_id: IdCache<SchemaRecord>,
    parsed: IdCache<ParsedSchema>,
    /// Lookup and idempotent registration answers by request content ([`answers`]).
    answers: Answers,
    removal_check: RwLock<Option<Arc<dyn RemovalCheck>>>,
    approval_source: RwLock<Option<Arc<dyn ApprovalSource>>>,
    samples: Option<Arc<dyn covenant_store::SampleStore>>,
    usage: RwLock<Option<Arc<dyn UsageEvidence>>>,
    limits: ReplayLimits,
    registering: SubjectTurns,
    check_budget: CheckBudget,
    /// The bound across checks: slots, memory and the cancel flags of running checks.
    admission: Arc<admission::Admission>,
    /// Data profiles over time; without a store, profile routes fail.
    profiles: Option<Arc<dyn covenant_store::ProfileStore>>,
    /// The DEK Registry's key store; without one, its routes answer that it is not enabled.
    deks: Option<Arc<deks::DekRegistry>>,
    schema_limits: Limits,
}

/// Whether a guarded delete found every version it was asked to delete.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Deleted {
    Done,
    /// One was permanently deleted concurrently; nothing was changed.
    Vanished,
}

#[derive(Debug)]
enum GuardRefusal {
    Domain(RegistryError),
    /// A version appeared whose parsed schema was not prepared; prepare again.
    Retry,
}

impl std::fmt::Display for GuardRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            GuardRefusal::Domain(e) => write!(f, "{e}"),
            GuardRefusal::Retry => f.write_str("subject changed during registration"),
        }
    }
}

impl std::error::Error for GuardRefusal {}

/// The longest subject name accepted, in characters. Confluent sets no bound; one keeps names
/// usable as URL path segments and index keys, and fits Kafka's 249-character topic names with
/// a `-value` suffix or a fully qualified record name (`TopicRecordNameStrategy`) to spare.
pub const MAX_SUBJECT_CHARS: usize = 1024;

/// What a subject name addresses: config and mode may also name a context (`:.ctx:`) or the
/// global context (`:.__GLOBAL:`), which hold no schemas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SubjectUse {
    ConfigOrMode,
    Schemas,
}

/// Confluent's subject validation (no ISO control characters, not `__GLOBAL` or `__EMPTY`, the
/// global context only for config and mode) plus what Covenant adds so that every stored name
/// can be addressed again: not empty, not a URL dot segment (`.`, `..`), which clients and
/// proxies rewrite away, and at most [`MAX_SUBJECT_CHARS`] characters.
pub fn validate_subject(subject: &str, using: SubjectUse) -> RegistryResult<()> {
    let (context, name) = covenant_store::context::split(subject);
    let config_or_mode = using == SubjectUse::ConfigOrMode;
    let qualified = subject.starts_with(":.");
    let invalid = subject.is_empty()
        || subject.chars().any(char::is_control)
        || subject.chars().count() > MAX_SUBJECT_CHARS
        || matches!(name, "__GLOBAL" | "__EMPTY" | "." | "..")
        || (name.is_empty() && !(config_or_mode && qualified))
        || (qualified && covenant_store::context::normalize_context(context).is_none())
        || context == "*"
        || (context == covenant_store::context::GLOBAL_CONTEXT && !config_or_mode);
    if invalid {
        return Err(RegistryError::InvalidSubject(subject.to_string()));
    }
    Ok(())
}

/// The last version of each subject in a listing ordered by subject, then version.
fn latest_per_subject(all: Vec<StoredVersion>) -> Vec<StoredVersion> {
    let mut latest: Vec<StoredVersion> = Vec::new();
    for v in all {
        match latest.last_mut() {
            Some(last) if last.subject == v.subject => *last = v,
            _ => latest.push(v),
        }
    }
    latest
}

/// Whether a stored schema is the candidate (whose key is `key`). Records stored before the
/// identity last changed carry an older key, so theirs is derived again from their text.
fn same_identity(stored: &covenant_store::SchemaRecord, key: &str) -> bool {
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
fn identity_key(
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
struct DigestWriter(sha2::Sha256);

impl std::io::Write for DigestWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        sha2::Digest::update(&mut self.0, bytes);
        Ok(bytes.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

fn lower_hex(bytes: &[u8]) -> String {
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
/// For Avro it also gives the JSON the stored text was written from, so that the content key's
/// identity is derived from it without parsing the text again.
fn stored_text(
    schema_type: SchemaType,
    raw: &str,
    parsed: &ParsedSchema,
    normalize: bool,
) -> (String, Option<Value>) {
    if normalize {
        return (parsed.normalized(), None);
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
                    let text = match schema_type {
                        SchemaType::Avro => covenant_avro::identity_of(&value),
                        _ => value.to_string(),
                    };
                    (text, (schema_type == SchemaType::Avro).then_some(value))
                }
                Err(_) => (raw.trim().to_string(), None),
            }
        }
        // Base64 descriptor input is stored as .proto text, as Confluent's canonical string.
        SchemaType::Protobuf => match parsed {
            ParsedSchema::Protobuf(p) => (p.text().trim().to_string(), None),
            _ => (raw.trim().to_string(), None),
        },
    }
}

fn is_avro_primitive(t: &str) -> bool {
    matches!(
        t,
        "null" | "boolean" | "int" | "long" | "float" | "double" | "bytes" | "string"
    )
}

fn parse_type(text: Option<&str>) -> RegistryResult<SchemaType> {
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

fn validate_rule_set(rule_set: &Option<Value>) -> RegistryResult<()> {
    let Some(Value::Object(set)) = rule_set else {
        return match rule_set {
            None | Some(Value::Null) => Ok(()),
            Some(_) => Err(RegistryError::InvalidRuleSet(
                "ruleSet must be an object".into(),
            )),
        };
    };
    let mut names = std::collections::HashSet::new();
    for (list, modes) in [
        ("domainRules", &["WRITE", "READ", "WRITEREAD"][..]),
        ("migrationRules", &["UPGRADE", "DOWNGRADE", "UPDOWN"][..]),
        ("encodingRules", &["WRITE", "READ", "WRITEREAD"][..]),
    ] {
        let Some(rules) = set.get(list) else { continue };
        let Value::Array(rules) = rules else {
            return Err(RegistryError::InvalidRuleSet(format!(
                "{list} must be a list"
            )));
        };
        for rule in rules {
            let name = rule.get("name").and_then(Value::as_str).unwrap_or("");
            if name.is_empty() {
                return Err(RegistryError::InvalidRuleSet("Missing rule name".into()));
            }
            if !names.insert(name.to_string()) {
                return Err(RegistryError::InvalidRuleSet(format!(
                    "Found rule with duplicate name '{name}'"
                )));
            }
            if rule
                .get("type")
                .and_then(Value::as_str)
                .unwrap_or("")
                .is_empty()
            {
                return Err(RegistryError::InvalidRuleSet("Missing rule type".into()));
            }
            if let Some(mode) = rule.get("mode").and_then(Value::as_str)
                && !modes.contains(&mode.to_ascii_uppercase().as_str())
            {
                return Err(RegistryError::InvalidRuleSet(if list == "migrationRules" {
                    "Migration rules can only be UPGRADE, DOWNGRADE, UPDOWN".into()
                } else {
                    "Domain rules can only be WRITE, READ, WRITEREAD".into()
                }));
            }
        }
    }
    Ok(())
}

fn scope_cache_key(scope: Scope<'_>) -> Option<String> {
    match scope {
        Scope::Global => None,
        Scope::Subject(s) => Some(s.to_string()),
    }
}

/// The pairwise direction of a level without its transitive scope.
fn single_step(level: Level) -> Level {
    match level {
        Level::BackwardTransitive => Level::Backward,
        Level::ForwardTransitive => Level::Forward,
        Level::FullTransitive => Level::Full,
        other => other,
    }
}

fn check_options(extra: &Map<String, Value>) -> CheckOptions {
    let mut options = CheckOptions::default();
    if let Some(s) = extra
        .get("protobufStrictness")
        .and_then(Value::as_str)
        .and_then(ProtobufStrictness::parse)
    {
        options.protobuf_strictness = s;
    }
    if extra
        .get("compatibilityPolicy")
        .and_then(Value::as_str)
        .is_some_and(|p| p.eq_ignore_ascii_case("LENIENT"))
    {
        options.json_policy = JsonPolicy::Lenient;
    }
    options
}

fn group_value<'a>(metadata: &'a Option<Value>, group: &str) -> Option<&'a Value> {
    metadata
        .as_ref()
        .and_then(|m| m.get("properties"))
        .and_then(|p| p.get(group))
}

fn record_check_metrics(report: &Report) {
    let verdict = if report.compatible {
        "compatible"
    } else {
        "incompatible"
    };
    metrics::counter!("covenant_compatibility_checks_total", "verdict" => verdict).increment(1);
    for f in &report.findings {
        metrics::counter!("covenant_compatibility_findings_total",
            "rule" => f.rule.clone(), "severity" => f.severity.as_str())
        .increment(1);
    }
}

/// A boxed future, for the object-safe async seams ([`UsageEvidence`]).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

impl Registry {
    pub fn new(store: Arc<dyn Store>) -> Registry {
        Registry {
            store,
            default_level: Level::Backward,
            by_id: IdCache::new(DEFAULT_CACHE_ENTRIES, cache::DEFAULT_RECORD_CACHE_BYTES),
            parsed: IdCache::new(DEFAULT_CACHE_ENTRIES, cache::DEFAULT_PARSED_CACHE_BYTES),
            answers: Answers::new(DEFAULT_CACHE_ENTRIES),
            removal_check: RwLock::new(None),
            approval_source: RwLock::new(None),
            samples: None,
            usage: RwLock::new(None),
            limits: ReplayLimits::default(),
            registering: SubjectTurns::default(),
            check_budget: CheckBudget::default(),
            admission: admission::Admission::new(AdmissionLimits::default()),
            profiles: None,
            deks: None,
            schema_limits: Limits::default(),
        }
    }

    pub fn store(&self) -> &Arc<dyn Store> {
        &self.store
    }

    /// Bounds each id cache (records, parsed schemas) to `entries` ids; 0 caches nothing.
    pub fn with_cache_entries(mut self, entries: usize) -> Registry {
        self.by_id = IdCache::new(entries, cache::DEFAULT_RECORD_CACHE_BYTES);
        self.parsed = IdCache::new(entries, cache::DEFAULT_PARSED_CACHE_BYTES);
        self.answers = Answers::new(entries);
        self
    }

    /// How many ids the record and parsed-schema caches hold now, and their common bound.
    pub fn cache_usage(&self) -> CacheUsage {
        CacheUsage {
            records: self.by_id.len(),
            parsed: self.parsed.len(),
            answers: self.answers.len(),
            capacity: self.by_id.capacity(),
            records_bytes: self.by_id.bytes(),
            parsed_bytes: self.parsed.bytes(),
        }
    }

    fn cached(&self, id: i64) -> Option<Arc<SchemaRecord>> {
        self.by_id.get(id)
    }

    fn remember(&self, record: Arc<SchemaRecord>) {
        let bytes = cache::record_size(&record);
        self.by_id.insert(record.id, record, bytes);
    }

    fn forget_all(&self) {
        self.by_id.clear();
        self.parsed.clear();
        self.answers.clear();
    }

    /// Drops what is cached for schema `id`, or everything with `None`: another node sharing
    /// the store changed it (permanent deletes are the only change that can stale an id).
    pub fn invalidate(&self, id: Option<i64>) {
        match id {
            None => self.forget_all(),
            Some(id) => {
                self.by_id.remove(id);
                self.parsed.remove(id);
            }
        }
    }

    /// Drops the cached answers for `subject` (all of them with `None`): another node
    /// registered under it, or changed settings that requests inherit.
    pub fn forget_answers(&self, subject: Option<&str>) {
        match subject {
            Some(subject) => {
                self.answers.forget_subject(subject);
            }
            None => self.answers.clear(),
        }
    }

    /// The answer a registration of `request` would give when it is cached: an existing
    /// version, returned without touching the store.
    pub fn registered(
        &self,
        subject: &str,
        request: &SchemaRequest,
        normalize: bool,
    ) -> Option<Answer> {
        let key = RequestKey::of(Route::Register { normalize }, subject, request)?;
        self.answers.get(subject, &key)
    }

    /// The answer [`Registry::lookup`] would give when it is cached, without touching the
    /// store.
    pub fn looked_up(
        &self,
        subject: &str,
        request: &SchemaRequest,
        normalize: bool,
        deleted: bool,
    ) -> Option<Answer> {
        let key = RequestKey::of(Route::Lookup { normalize, deleted }, subject, request)?;
        self.answers.get(subject, &key)
    }

    /// Waits until every write committed so far is durable (see [`Store::settled`]).
    pub async fn settled(&self) -> RegistryResult<()> {
        Ok(self.store.settled().await?)
    }

    /// Whether the store answers, for readiness probes.
    pub async fn ready(&self) -> RegistryResult<()> {
        Ok(self.store.ping().await?)
    }

    fn cached_parsed(&self, id: i64) -> Option<Arc<ParsedSchema>> {
        self.parsed.get(id)
    }

    // ----- reads -------------------------------------------------------------------------

    /// The schema registered under `id`, even if every version carrying it is soft-deleted.
    pub async fn schema_by_id(&self, id: i64) -> RegistryResult<Arc<SchemaRecord>> {
        if let Some(r) = self.cached(id) {
            return Ok(r);
        }
        match self.store.schema_by_id(id).await? {
            Some(r) => {
                let r = Arc::new(r);
                self.remember(r.clone());
                Ok(r)
            }
            None => Err(RegistryError::SchemaIdNotFound(id)),
        }
    }

    /// The highest id allocated so far.
    /// The ids whose record has this guid (UUID form or 32 hex digits), lowest first; none
    /// for a text that is not a guid.
    pub async fn ids_by_guid(&self, guid: &str) -> RegistryResult<Vec<i64>> {
        match covenant_store::guid::parse_guid(guid) {
            Some(guid) => Ok(self.store.schema_ids_by_guid(&guid).await?),
            None => Ok(Vec::new()),
        }
    }

    pub async fn max_id(&self) -> RegistryResult<i64> {
        Ok(self.store.max_schema_id().await?)
    }

    /// The schema's text in the requested format.
    pub async fn schema_text(
        &self,
        record: &SchemaRecord,
        format: TextFormat,
    ) -> RegistryResult<String> {
        match (format, record.schema_type.as_str()) {
            (TextFormat::Serialized, "PROTOBUF") => match &*self.parse_record(record).await? {
                ParsedSchema::Protobuf(p) => Ok(p.to_descriptor_base64()),
                _ => Ok(record.schema.clone()),
            },
            (TextFormat::Resolved, "AVRO") if !record.references.is_empty() => {
                match &*self.parse_record(record).await? {
                    ParsedSchema::Avro(a) => Ok(a.resolved_form()),
                    _ => Ok(record.schema.clone()),
                }
            }
            _ => Ok(record.schema.clone()),
        }
    }

    /// Subjects (and their versions) carrying schema `id`.
    pub async fn versions_with_id(
        &self,
        id: i64,
        include_deleted: bool,
    ) -> RegistryResult<Vec<(String, i64)>> {
        let rows = self.store.versions_with_id(id).await?;
        if rows.is_empty() {
            return Err(RegistryError::SchemaNotFound);
        }
        Ok(rows
            .into_iter()
            .filter(|(_, _, deleted)| include_deleted || !deleted)
            .map(|(s, v, _)| (s, v))
            .collect())
    }

    /// Subject names, sorted, selected by `prefix` as [`prefix_matches`] reads it.
    /// `deleted_only` wins over `deleted`.
    pub async fn subjects(
        &self,
        prefix: Option<&str>,
        deleted: bool,
        deleted_only: bool,
    ) -> RegistryResult<Vec<String>> {
        Ok(self
            .store
            .subjects()
            .await?
            .into_iter()
            .filter(|(name, live)| {
                prefix_matches(prefix, name)
                    && if deleted_only {
                        !live
                    } else {
                        deleted || *live
                    }
            })
            .map(|(name, _)| name)
            .collect())
    }

    /// Version numbers of a subject, ascending.
    pub async fn versions(
        &self,
        subject: &str,
        deleted: bool,
        deleted_only: bool,
    ) -> RegistryResult<Vec<i64>> {
        let all = self.store.subject_versions(subject).await?;
        if all.is_empty() || (!deleted && !deleted_only && all.iter().all(|v| v.deleted)) {
            return Err(RegistryError::SubjectNotFound(subject.to_string()));
        }
        Ok(all
            .iter()
            .filter(|v| {
                if deleted_only {
                    v.deleted
                } else {
                    deleted || !v.deleted
                }
            })
            .map(|v| v.version)
            .collect())
    }

    /// One version of a subject.
    pub async fn version(
        &self,
        subject: &str,
        spec: VersionSpec,
        deleted: bool,
    ) -> RegistryResult<StoredVersion> {
        let all = self.store.subject_versions(subject).await?;
        let visible: Vec<StoredVersion> =
            all.into_iter().filter(|v| deleted || !v.deleted).collect();
        if visible.is_empty() {
            return Err(RegistryError::SubjectNotFound(subject.to_string()));
        }
        let found = match spec {
            VersionSpec::Latest => visible.iter().rev().find(|v| !v.deleted).or(visible.last()),
            VersionSpec::Number(n) => visible.iter().find(|v| v.version == n),
        };
        match found {
            Some(v) => {
                self.remember(Arc::new(v.schema.clone()));
                Ok(v.clone())
            }
            None => Err(RegistryError::VersionNotFound(match spec {
                VersionSpec::Latest => "-1".into(),
                VersionSpec::Number(n) => n.to_string(),
            })),
        }
    }

    /// Ids of the schemas that reference a subject version, ascending.
    pub async fn referenced_by(
        &self,
        subject: &str,
        spec: VersionSpec,
        deleted: bool,
    ) -> RegistryResult<Vec<i64>> {
        let v = self.version(subject, spec, deleted).await?;
        let mut ids: Vec<i64> = self
            .store
            .referencing_versions(subject, v.version)
            .await?
            .into_iter()
            .filter(|r| deleted || !r.deleted)
            .map(|r| r.schema.id)
            .collect();
        ids.sort_unstable();
        ids.dedup();
        Ok(ids)
    }

    /// Every subject version (for `GET /schemas`).
    pub async fn list_schemas(
        &self,
        subject_prefix: Option<&str>,
        deleted: bool,
        latest_only: bool,
    ) -> RegistryResult<Vec<StoredVersion>> {
        let all: Vec<StoredVersion> = self
            .store
            .all_versions()
            .await?
            .into_iter()
            .filter(|v| prefix_matches(subject_prefix, &v.subject) && (deleted || !v.deleted))
            .collect();
        Ok(if latest_only {
            latest_per_subject(all)
        } else {
            all
        })
    }

    /// `GET /schemas?aliases=true`: [`Registry::list_schemas`] plus the versions of subjects
    /// that a subject under the prefix is an alias of, each version with the subjects aliasing
    /// its own (as Confluent's `ExtendedSchema` carries them).
    pub async fn list_schemas_with_aliases(
        &self,
        subject_prefix: Option<&str>,
        deleted: bool,
        latest_only: bool,
    ) -> RegistryResult<Vec<(StoredVersion, Vec<String>)>> {
        let mut aliases: BTreeMap<String, Vec<String>> = BTreeMap::new();
        for (scope, config) in self.store.all_configs().await? {
            let Some(subject) = scope.filter(|s| prefix_matches(subject_prefix, s)) else {
                continue;
            };
            if let Some(alias) = config.extra.get("alias").and_then(Value::as_str)
                && !alias.is_empty()
            {
                let target = covenant_store::context::qualify_with_parent(&subject, alias);
                aliases.entry(target).or_default().push(subject);
            }
        }
        let all: Vec<StoredVersion> = self
            .store
            .all_versions()
            .await?
            .into_iter()
            .filter(|v| {
                (prefix_matches(subject_prefix, &v.subject) || aliases.contains_key(&v.subject))
                    && (deleted || !v.deleted)
            })
            .collect();
        let listed = if latest_only {
            latest_per_subject(all)
        } else {
            all
        };
        Ok(listed
            .into_iter()
            .map(|v| {
                let names = aliases.get(&v.subject).cloned().unwrap_or_default();
                (v, names)
            })
            .collect())
    }

    /// Count of distinct schemas by type, for metrics.
    pub async fn schema_counts(&self) -> RegistryResult<Vec<(String, u64)>> {
        Ok(self.store.schema_type_counts().await?)
    }

    // ----- references and parsing ---------------------------------------------------------

    /// Resolves references transitively, dependencies first, each name once. `-1` versions
    /// become the latest version's number in the returned concrete list. An unqualified
    /// reference names a subject of `parent`'s context.
    pub async fn resolve_references(
        &self,
        refs: &[SchemaRef],
        parent: &str,
        allow_deleted: bool,
    ) -> RegistryResult<(Vec<SchemaRef>, Vec<Reference>)> {
        let mut resolved = Vec::new();
        let mut concrete = Vec::new();
        for r in refs {
            let v = self.reference_target(r, parent, allow_deleted).await?;
            concrete.push(SchemaRef {
                name: r.name.clone(),
                subject: r.subject.clone(),
                version: v.version,
            });
            self.collect_reference(r.name.clone(), v, &mut resolved, 0)
                .await?;
        }
        Ok((concrete, resolved))
    }

    async fn reference_target(
        &self,
        r: &SchemaRef,
        parent: &str,
        allow_deleted: bool,
    ) -> RegistryResult<StoredVersion> {
        let spec = if r.version == -1 {
            VersionSpec::Latest
        } else {
            VersionSpec::Number(r.version)
        };
        let subject = covenant_store::context::qualify_with_parent(parent, &r.subject);
        self.version(&subject, spec, allow_deleted)
            .await
            .map_err(|_| {
                RegistryError::InvalidSchema(format!(
                    "No schema reference found for subject \"{}\" and version {}",
                    r.subject, r.version
                ))
            })
    }

    fn collect_reference<'a>(
        &'a self,
        name: String,
        target: StoredVersion,
        out: &'a mut Vec<Reference>,
        depth: usize,
    ) -> BoxFuture<'a, RegistryResult<()>> {
        Box::pin(async move {
            if depth > MAX_REFERENCE_DEPTH {
                return Err(RegistryError::InvalidSchema(format!(
                    "References nest deeper than {MAX_REFERENCE_DEPTH} levels at '{name}'"
                )));
            }
            if out.iter().any(|r| r.name == name) {
                return Ok(());
            }
            for inner in &target.schema.references {
                let v = self.reference_target(inner, &target.subject, true).await?;
                self.collect_reference(inner.name.clone(), v, out, depth + 1)
                    .await?;
            }
            if !out.iter().any(|r| r.name == name) {
                out.push(Reference {
                    name,
                    subject: target.subject.clone(),
                    version: target.version,
                    schema: target.schema.schema.clone(),
                });
            }
            Ok(())
        })
    }

    /// The parsed form of a stored schema, cached by id.
    async fn parse_record(&self, record: &SchemaRecord) -> RegistryResult<Arc<ParsedSchema>> {
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

    /// The first of `versions` that is the Protobuf `candidate` once parsed: a version keyed
    /// from its text before Protobuf was keyed by its printed form, whose text needs its
    /// references to compile (the others are found by [`same_identity`]).
    async fn same_protobuf<'v>(
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

    // ----- config and mode ------------------------------------------------------------

    /// The subject's config merged along its scope chain (see [`contexts`]): the level of the
    /// most specific scope that sets one, the extra settings of all, nearer ones winning.
    async fn effective_config(&self, subject: &str) -> RegistryResult<ConfigView> {
        let mut records = Vec::new();
        for key in contexts::scope_chain(Some(subject)) {
            records.push(self.config_row(contexts::scope(&key)).await?);
        }
        let mut extra = Map::new();
        for record in records.iter().rev().flatten() {
            for (k, v) in &record.extra {
                extra.insert(k.clone(), v.clone());
            }
        }
        let level = records
            .iter()
            .flatten()
            .find_map(|c| c.compatibility.as_deref())
            .and_then(|l| Level::from_str(l).ok())
            .unwrap_or(self.default_level);
        Ok(ConfigView { level, extra })
    }

    /// The config row of `scope`, from memory when this process is the store's only writer
    /// (every change then goes through [`Registry::set_config`] and friends, which forget it).
    async fn config_row(&self, scope: Scope<'_>) -> RegistryResult<Option<ConfigRecord>> {
        if !self.store.only_writer() {
            return Ok(self.store.config(scope).await?);
        }
        let key = scope_cache_key(scope);
        if let Some(row) = self.answers.config(&key) {
            return Ok(row);
        }
        Ok(self.read_rows(scope).await?.0)
    }

    /// The mode row of `scope`, like [`Registry::config_row`].
    async fn mode_row(&self, scope: Scope<'_>) -> RegistryResult<Option<String>> {
        if !self.store.only_writer() {
            return Ok(self.store.mode(scope).await?);
        }
        let key = scope_cache_key(scope);
        if let Some(row) = self.answers.mode(&key) {
            return Ok(row);
        }
        Ok(self.read_rows(scope).await?.1)
    }

    /// Reads the config and mode rows of `scope` into the answers cache (every row the first
    /// time, then only those of a changed scope) and returns that scope's two.
    async fn read_rows(
        &self,
        scope: Scope<'_>,
    ) -> RegistryResult<(Option<ConfigRecord>, Option<String>)> {
        let epoch = self.answers.epoch();
        let key = scope_cache_key(scope);
        if self.answers.rows_loaded() {
            let config = self.store.config(scope).await?;
            let mode = self.store.mode(scope).await?;
            self.answers
                .known_again(epoch, key, config.clone(), mode.clone());
            return Ok((config, mode));
        }
        let configs: HashMap<_, _> = self.store.all_configs().await?.into_iter().collect();
        let modes: HashMap<_, _> = self.store.all_modes().await?.into_iter().collect();
        let own = (configs.get(&key).cloned(), modes.get(&key).cloned());
        self.answers.load_rows(
            epoch,
            answers::Rows {
                configs,
                modes,
                unknown: HashSet::new(),
            },
        );
        Ok(own)
    }

    /// The subject's mode along its scope chain; the default context's global
    /// READONLY_OVERRIDE stops every context.
    async fn effective_mode(&self, subject: &str) -> RegistryResult<Mode> {
        let global = self.mode_row(Scope::Global).await?;
        if let Some(Mode::ReadOnlyOverride) = global.as_deref().and_then(|m| Mode::parse(m).ok()) {
            return Ok(Mode::ReadOnlyOverride);
        }
        for key in contexts::scope_chain(Some(subject)) {
            if let Some(mode) = self.mode_row(contexts::scope(&key)).await? {
                return Mode::parse(&mode);
            }
        }
        Ok(Mode::ReadWrite)
    }

    /// The first config along `subject`'s chain after its own scope, as `defaultToGlobal`
    /// reads it.
    async fn inherited_config(&self, subject: Option<&str>) -> RegistryResult<ConfigView> {
        for key in contexts::scope_chain(subject).iter().skip(1) {
            if let Some(c) = self.config_row(contexts::scope(key)).await? {
                return Ok(self.config_view(c));
            }
        }
        Ok(ConfigView {
            level: self.default_level,
            extra: Map::new(),
        })
    }

    fn config_view(&self, c: ConfigRecord) -> ConfigView {
        ConfigView {
            level: c
                .compatibility
                .as_deref()
                .and_then(|l| Level::from_str(l).ok())
                .unwrap_or(self.default_level),
            extra: c.extra,
        }
    }

    async fn global_mode(&self) -> RegistryResult<Mode> {
        Ok(self
            .store
            .mode(Scope::Global)
            .await?
            .and_then(|m| Mode::parse(&m).ok())
            .unwrap_or(Mode::ReadWrite))
    }

    async fn ensure_writable(&self, scope: Scope<'_>) -> RegistryResult<()> {
        let (mode, name) = match scope {
            Scope::Global => (self.global_mode().await?, None),
            Scope::Subject(s) => (self.effective_mode(s).await?, Some(s)),
        };
        if mode.is_read_only() {
            return Err(RegistryError::OperationNotPermitted(match name {
                Some(s) => format!(
                    "Subject {s} in context {} is in read-only mode",
                    covenant_store::context::context_of(s)
                ),
                None => "The registry is in read-only mode".into(),
            }));
        }
        Ok(())
    }

    /// The subject that reads of `subject` go to: the `alias` of its own config (one step, so
    /// aliases cannot loop), as in Confluent, or `None` when it names no other subject.
    pub async fn alias_target(&self, subject: &str) -> RegistryResult<Option<String>> {
        if let Some(target) = self.answers.alias(subject) {
            return Ok(target);
        }
        let epoch = self.answers.epoch();
        let config = self.store.config(Scope::Subject(subject)).await?;
        let target = config
            .and_then(|c| {
                c.extra
                    .get("alias")
                    .and_then(Value::as_str)
                    .filter(|alias| !alias.is_empty())
                    .map(|alias| covenant_store::context::qualify_with_parent(subject, alias))
            })
            .filter(|target| target != subject);
        self.answers.insert_alias(epoch, subject, target.clone());
        Ok(target)
    }

    /// `GET /config[/{s}]`.
    pub async fn config(
        &self,
        subject: Option<&str>,
        default_to_global: bool,
    ) -> RegistryResult<ConfigView> {
        let scope = scope_for(subject);
        match (self.store.config(scope).await?, scope) {
            (Some(c), _) => Ok(self.config_view(c)),
            (None, Scope::Global) if !default_to_global => Ok(ConfigView {
                level: self.default_level,
                extra: Map::new(),
            }),
            (None, Scope::Subject(s)) if !default_to_global => {
                Err(RegistryError::SubjectConfigNotFound(s.to_string()))
            }
            (None, _) => self.inherited_config(subject).await,
        }
    }

    /// `PUT /config[/{s}]`: a partial update; returns the stored record.
    pub async fn set_config(
        &self,
        subject: Option<&str>,
        update: ConfigUpdate,
        audit: Audit<'_>,
    ) -> RegistryResult<ConfigRecord> {
        if let Some(s) = subject {
            validate_subject(s, SubjectUse::ConfigOrMode)?;
        }
        let scope = scope_for(subject);
        self.ensure_writable(scope).await?;
        let mut record = self.store.config(scope).await?.unwrap_or_default();
        match update.compatibility {
            None => {}
            Some(Value::Null) => record.compatibility = None,
            Some(Value::String(level)) => {
                let level = Level::from_str(&level)
                    .map_err(|_| RegistryError::InvalidCompatibilityLevel)?;
                record.compatibility = Some(level.as_str().to_string());
            }
            Some(_) => return Err(RegistryError::InvalidCompatibilityLevel),
        }
        for key in ["defaultRuleSet", "overrideRuleSet"] {
            if let Some(v) = update.extra.get(key) {
                validate_rule_set(&Some(v.clone()))?;
            }
        }
        evolution::validate_update(&update.extra)?;
        profiles::validate_update(&update.extra)?;
        if let Some(v) = update.extra.get("protobufStrictness")
            && !v.is_null()
            && v.as_str().and_then(ProtobufStrictness::parse).is_none()
        {
            return Err(RegistryError::InvalidSchema(
                "Invalid protobufStrictness. Valid values are confluent, wire and wire_json".into(),
            ));
        }
        for (k, v) in update.extra {
            if v.is_null() {
                record.extra.remove(&k);
            } else {
                record.extra.insert(k, v);
            }
        }
        self.store.set_config(scope, &record, audit).await?;
        self.answers.scope_changed(scope_cache_key(scope));
        Ok(record)
    }

    /// `DELETE /config[/{s}]`: returns the previous config.
    pub async fn delete_config(
        &self,
        subject: Option<&str>,
        audit: Audit<'_>,
    ) -> RegistryResult<ConfigView> {
        let scope = scope_for(subject);
        self.ensure_writable(scope).await?;
        let deleted = self.store.delete_config(scope, audit).await?;
        self.answers.scope_changed(scope_cache_key(scope));
        match (deleted, scope) {
            (Some(old), _) => Ok(self.config_view(old)),
            (None, Scope::Subject(s)) => Err(RegistryError::SubjectNotFound(s.to_string())),
            (None, Scope::Global) => Ok(ConfigView {
                level: self.default_level,
                extra: Map::new(),
            }),
        }
    }

    /// `GET /mode[/{s}]`.
    pub async fn mode(
        &self,
        subject: Option<&str>,
        default_to_global: bool,
    ) -> RegistryResult<Mode> {
        let scope = scope_for(subject);
        match (self.store.mode(scope).await?, scope) {
            (Some(m), _) => Mode::parse(&m),
            (None, Scope::Global) if !default_to_global => Ok(Mode::ReadWrite),
            (None, Scope::Subject(s)) if !default_to_global => {
                Err(RegistryError::SubjectModeNotFound(s.to_string()))
            }
            (None, _) => {
                for key in contexts::scope_chain(subject).iter().skip(1) {
                    if let Some(m) = self.store.mode(contexts::scope(key)).await? {
                        return Mode::parse(&m);
                    }
                }
                Ok(Mode::ReadWrite)
            }
        }
    }

    /// `PUT /mode[/{s}]`. Switching to IMPORT needs an empty scope unless `force`.
    pub async fn set_mode(
        &self,
        subject: Option<&str>,
        mode: &str,
        force: bool,
        audit: Audit<'_>,
    ) -> RegistryResult<Mode> {
        let mode = Mode::parse(mode)?;
        if let Some(s) = subject {
            validate_subject(s, SubjectUse::ConfigOrMode)?;
            if mode == Mode::Forward {
                return Err(RegistryError::ForwardModeOnSubject);
            }
        }
        if mode == Mode::Import && !force {
            let has_subjects = match subject {
                Some(s) => self
                    .store
                    .subject_versions(s)
                    .await?
                    .iter()
                    .any(|v| !v.deleted),
                None => self.store.subjects().await?.iter().any(|(_, live)| *live),
            };
            if has_subjects {
                return Err(RegistryError::OperationNotPermitted(
                    "Cannot import since found existing subjects".into(),
                ));
            }
        }
        let scope = scope_for(subject);
        self.store.set_mode(scope, mode.as_str(), audit).await?;
        self.answers.scope_changed(scope_cache_key(scope));
        Ok(mode)
    }

    /// `DELETE /mode[/{s}]`: returns the previous mode.
    pub async fn delete_mode(
        &self,
        subject: Option<&str>,
        audit: Audit<'_>,
    ) -> RegistryResult<Mode> {
        let scope = scope_for(subject);
        let deleted = self.store.delete_mode(scope, audit).await?;
        self.answers.scope_changed(scope_cache_key(scope));
        match (deleted, scope) {
            (Some(old), _) => Mode::parse(&old),
            (None, Scope::Subject(s)) => Err(RegistryError::SubjectNotFound(s.to_string())),
            (None, Scope::Global) => Ok(Mode::ReadWrite),
        }
    }

    // ----- register, lookup, compatibility ------------------------------------------------

    /// A candidate parsed with its references, its stored text and identity.
    async fn prepare(
        &self,
        subject: &str,
        request: &SchemaRequest,
        normalize: bool,
        allow_deleted_refs: bool,
    ) -> RegistryResult<(ParsedSchema, NewSchema)> {
        let schema_type = parse_type(request.schema_type.as_deref())?;
        let (references, resolved) = self
            .resolve_references(&request.references, subject, allow_deleted_refs)
            .await?;
        let metadata = request.metadata.clone().filter(|m| !m.is_null());
        let rule_set = request.rule_set.clone().filter(|r| !r.is_null());
        let ty = schema_type.as_str();
        // Parsing a large schema takes a while: off the async workers, so that other requests
        // (and the shutdown signal) are served meanwhile.
        let (parsed, text, key) = check_budget::off_workers(|| -> RegistryResult<_> {
            let parsed =
                parse_schema_with(schema_type, &request.schema, &resolved, &self.schema_limits)?;
            let (text, avro_json) = stored_text(schema_type, &request.schema, &parsed, normalize);
            let key = match (&avro_json, &parsed) {
                (Some(json), _) => {
                    let identity = covenant_avro::identity_of(json);
                    identity_key(ty, &identity, &references, &metadata, &rule_set)
                }
                (None, ParsedSchema::Protobuf(p)) => {
                    identity_key(ty, &p.canonical_text(), &references, &metadata, &rule_set)
                }
                (None, _) => content_key(ty, &text, &references, &metadata, &rule_set),
            };
            Ok((parsed, text, key))
        })?;
        Ok((
            parsed,
            NewSchema {
                schema_type: schema_type.as_str().to_string(),
                schema: text,
                references,
                metadata,
                rule_set,
                content_key: key,
            },
        ))
    }

    /// `POST /subjects/{s}/versions`, following Confluent's registration algorithm.
    ///
    /// The candidate is judged outside the store's write lock against a snapshot of the
    /// subject, so a slow check never delays other subjects' writes; the store then commits
    /// only if the subject's versions are still exactly the snapshot, and config and mode were
    /// still the judged ones just before the commit. Otherwise the whole registration is
    /// judged again, a bounded number of times (optimistic concurrency).
    pub async fn register(
        &self,
        subject: &str,
        request: SchemaRequest,
        options: RegisterOptions<'_>,
    ) -> RegistryResult<Registration> {
        // Registrations of one subject on this node take turns: each would invalidate the
        // others' verdicts anyway. Other subjects never wait for this.
        let _turn = self.registering.turn(subject).await;
        let route = Route::Register {
            normalize: options.normalize,
        };
        let key = RequestKey::of(route, subject, &request);
        for attempt in 1..=REGISTER_ATTEMPTS {
            if let Attempt::Done(registration) = self
                .register_attempt(subject, request.clone(), options, key, Commit::Yes)
                .await?
            {
                return Ok(registration);
            }
            tracing::debug!(
                subject,
                attempt,
                "subject changed while judging; judging again"
            );
            tokio::time::sleep(retry_pause(attempt)).await;
        }
        Err(RegistryError::Store(
            "registering schema: the subject kept changing".into(),
        ))
    }

    /// What `POST /subjects/{s}/versions` would do with `request`, judged by the very steps a
    /// registration takes (modes, data contracts, the verdict with approvals, the removal
    /// gate) without writing anything: the same refusal a registration would meet, or what it
    /// would register. Needs only the right to read the subject.
    pub async fn judge_registration(
        &self,
        subject: &str,
        request: SchemaRequest,
        normalize: bool,
    ) -> RegistryResult<WouldRegister> {
        let options = RegisterOptions {
            normalize,
            force: false,
            audit: None,
        };
        for attempt in 1..=REGISTER_ATTEMPTS {
            if let Attempt::Judged(would) = self
                .register_attempt(subject, request.clone(), options, None, Commit::No)
                .await?
            {
                return Ok(would);
            }
            tokio::time::sleep(retry_pause(attempt)).await;
        }
        Err(RegistryError::Store(
            "judging a registration: the subject kept changing".into(),
        ))
    }

    /// One judge-then-commit round of [`Registry::register`] (with [`Commit::No`], of
    /// [`Registry::judge_registration`]: judged, never written).
    async fn register_attempt(
        &self,
        subject: &str,
        mut request: SchemaRequest,
        options: RegisterOptions<'_>,
        key: Option<RequestKey>,
        commit: Commit,
    ) -> RegistryResult<Attempt> {
        validate_subject(subject, SubjectUse::Schemas)?;
        validate_rule_set(&request.rule_set)?;
        let epoch = self.answers.epoch();
        let config = self.effective_config(subject).await?;
        let normalize = options.normalize
            || config
                .extra
                .get("normalize")
                .and_then(Value::as_bool)
                .unwrap_or(false);
        let mode = self.effective_mode(subject).await?;
        let versions = Arc::new(self.store.subject_versions(subject).await?);
        let latest_live = versions.iter().rev().find(|v| !v.deleted);

        if !mode.is_import() {
            if request.schema.trim().is_empty()
                && let Some(latest) = latest_live
            {
                request.schema = latest.schema.schema.clone();
                request.schema_type = Some(latest.schema.schema_type.clone());
                request.references = latest.schema.references.clone();
            }
            if let Some(latest) = latest_live {
                if request.metadata.is_none() {
                    request.metadata = latest.schema.metadata.clone();
                }
                if request.rule_set.is_none() {
                    request.rule_set = latest.schema.rule_set.clone();
                }
            }
            // Data contracts from config: merge(merge(default, specific), override).
            let contract = Contract::from_extra(&config.extra);
            if !contract.is_empty() {
                request.metadata = contract.metadata(request.metadata.take());
                request.rule_set = contract.rule_set(request.rule_set.take());
                validate_rule_set(&request.rule_set)?;
            }
        }
        let (candidate, new_schema) = self.prepare(subject, &request, normalize, false).await?;
        self.check_candidate_samples(&candidate, &request.samples)?;

        let (dedupe, explicit_version) = match request.version {
            None | Some(0) => (Dedupe::AnyLive, None),
            Some(-1) => (Dedupe::LatestOnly, None),
            Some(v) if v > 0 && v <= i64::from(i32::MAX) => (Dedupe::Never, Some(v)),
            Some(v) => return Err(RegistryError::InvalidVersion(v.to_string())),
        };

        // Fast path: an existing live version is returned without mode or compatibility checks.
        let mut existing = match dedupe {
            Dedupe::AnyLive => versions
                .iter()
                .find(|v| !v.deleted && same_identity(&v.schema, &new_schema.content_key)),
            Dedupe::LatestOnly => {
                latest_live.filter(|v| same_identity(&v.schema, &new_schema.content_key))
            }
            Dedupe::Never => None,
        };
        if existing.is_none() {
            let candidates: Vec<&StoredVersion> = match dedupe {
                Dedupe::AnyLive => versions.iter().filter(|v| !v.deleted).collect(),
                Dedupe::LatestOnly => latest_live.into_iter().collect(),
                Dedupe::Never => Vec::new(),
            };
            existing = self.same_protobuf(candidates, &new_schema).await;
        }
        if let Some(v) = existing {
            if commit == Commit::No {
                return Ok(Attempt::Judged(WouldRegister {
                    existing_version: Some(v.version),
                    removes: Vec::new(),
                    approvals: Vec::new(),
                }));
            }
            let schema = Arc::new(v.schema.clone());
            self.remember(schema.clone());
            if let Some(key) = key {
                self.answers
                    .insert(epoch, subject, key, Answer::of(v, schema.clone()));
            }
            return Ok(Attempt::Done(Registration {
                id: v.schema.id,
                version: v.version,
                schema,
                created: false,
                approvals: Vec::new(),
            }));
        }

        if mode.is_read_only() {
            return Err(RegistryError::OperationNotPermitted(format!(
                "Subject {subject} in context {} is in read-only mode",
                covenant_store::context::context_of(subject)
            )));
        }
        if request.id.is_some() && !mode.is_import() {
            return Err(RegistryError::OperationNotPermitted(format!(
                "Subject {subject} in context {} is not in import mode",
                covenant_store::context::context_of(subject)
            )));
        }
        // A subject in IMPORT mode takes only versions with the ids they were given (an
        // exporter's, a migration's): an id drawn here would diverge from the source's.
        if request.id.is_none() && mode.is_import() {
            return Err(RegistryError::OperationNotPermitted(format!(
                "Subject {subject} in context {} is not in read-write mode",
                covenant_store::context::context_of(subject)
            )));
        }
        if let Some(id) = request.id
            && !(1..=i64::from(i32::MAX)).contains(&id)
        {
            return Err(RegistryError::InvalidSchema(format!(
                "Invalid schema id {id}"
            )));
        }

        let run_check = !mode.is_import() && !options.force && config.level != Level::None;
        let placement = Placement {
            id: request.id,
            version: if mode.is_import() {
                explicit_version
            } else {
                None
            },
            dedupe: if mode.is_import() && explicit_version.is_some() {
                Dedupe::Never
            } else {
                dedupe
            },
        };

        let evolution = if run_check {
            let evidence = if versions.is_empty() {
                Evidence::NoHistory
            } else {
                Evidence::Read
            };
            let mut evolution = self
                .evolution_with(
                    subject,
                    &config.extra,
                    new_schema.metadata.as_ref(),
                    evidence,
                )
                .await?;
            evolution.candidate_samples = request.samples.clone();
            // A registration keeps only the errors of its verdict.
            evolution.options.info_findings = InfoFindings::Skipped;
            Some(evolution)
        } else {
            None
        };
        // Accepted risk on record for this exact candidate (see approvals.rs).
        let approvals = if run_check && !versions.is_empty() {
            self.live_approvals(subject, &new_schema).await?
        } else {
            Vec::new()
        };
        // Consumer governance: may the fields this candidate drops go? (see removal.rs)
        let removal = if mode.is_import() {
            None
        } else {
            self.prepare_removal(subject, &versions, &candidate).await?
        };
        let mut prepared: HashMap<i64, Arc<ParsedSchema>> = HashMap::new();
        if run_check || (!mode.is_import() && self.removal_check().is_some()) {
            let mut live = versions.iter().filter(|v| !v.deleted);
            let wanted: Vec<&StoredVersion> = if run_check {
                live.collect()
            } else {
                live.next_back().into_iter().collect()
            };
            for v in wanted {
                prepared.insert(v.schema.id, self.parse_record(&v.schema).await?);
            }
        }
        let judged = Judged {
            subject: subject.to_string(),
            mode,
            level: config.level,
            group: config
                .extra
                .get("compatibilityGroup")
                .and_then(Value::as_str)
                .map(str::to_string),
            explicit_version,
            evolution,
            approvals,
            removal,
            removal_enabled: self.removal_check().is_some(),
            candidate,
            metadata: new_schema.metadata.clone(),
            versions: versions.clone(),
            prepared,
            check_budget: self.check_budget,
        };
        // The expensive part: outside the store's write lock and off the async workers.
        let (dropped, accepted) = match self.off_runtime(move || judged.verdict()).await? {
            Ok(passed) => passed,
            Err(GuardRefusal::Domain(e)) => return Err(e),
            Err(GuardRefusal::Retry) => return Ok(Attempt::Retry),
        };
        if commit == Commit::No {
            return Ok(Attempt::Judged(WouldRegister {
                existing_version: None,
                removes: dropped,
                approvals: accepted,
            }));
        }
        if self.effective_config(subject).await? != config
            || self.effective_mode(subject).await? != mode
        {
            return Ok(Attempt::Retry);
        }
        let unchanged = |now: &[StoredVersion]| -> Result<(), Rejection> {
            if same_versions(now, &versions) {
                Ok(())
            } else {
                Err(Rejection::new(GuardRefusal::Retry))
            }
        };
        let before_commit = self.answers.epoch();
        // The registration's audit entry names the approvals it used.
        let approved_audit = options.audit.filter(|_| !accepted.is_empty()).map(|c| {
            let lines: Vec<String> = accepted.iter().map(AcceptedRisk::describe).collect();
            AuditContext {
                detail: Some(format!("accepted risk: {}", lines.join("; "))),
                ..c.clone()
            }
        });
        let audit = approved_audit.as_ref().or(options.audit);
        let outcome = match self
            .store
            .register(subject, &new_schema, placement, &unchanged, audit)
            .await
        {
            Ok(r) => r,
            Err(StoreError::Rejected(_)) => return Ok(Attempt::Retry),
            Err(StoreError::IdConflict { id }) => {
                return Err(RegistryError::OperationNotPermitted(format!(
                    "Overwrite new schema with id {} in context {} is not permitted.",
                    covenant_store::context::public_id(id),
                    covenant_store::context::context_of(subject)
                )));
            }
            Err(StoreError::NoSuchVersion { subject, version }) => {
                // A referenced version was deleted after the references were resolved.
                return Err(RegistryError::InvalidSchema(format!(
                    "No schema reference found for subject \"{subject}\" and version {version}"
                )));
            }
            Err(StoreError::VersionExists { version, .. }) => {
                return Err(RegistryError::OperationNotPermitted(format!(
                    "Overwrite new schema for subject {subject} version {version} in context {} is not permitted.",
                    covenant_store::context::context_of(subject)
                )));
            }
            Err(e) => return Err(e.into()),
        };
        let schema = Arc::new(SchemaRecord {
            id: outcome.id,
            schema_type: new_schema.schema_type.clone(),
            schema: new_schema.schema.clone(),
            references: new_schema.references.clone(),
            metadata: new_schema.metadata.clone(),
            rule_set: new_schema.rule_set.clone(),
            content_key: new_schema.content_key.clone(),
        });
        // An id shared with an earlier registration answers with that schema as stored.
        let schema = match outcome.schema_created {
            true => schema,
            false => match self.store.schema_by_id(outcome.id).await? {
                Some(stored) => Arc::new(stored),
                None => schema,
            },
        };
        self.remember(schema.clone());
        self.answer_registered(subject, key, before_commit, &outcome, &schema);
        if outcome.created
            && !dropped.is_empty()
            && let Some(check) = self.removal_check()
        {
            check.removed(subject, &dropped, outcome.version).await;
        }
        if outcome.created {
            tracing::info!(
                subject,
                id = outcome.id,
                version = outcome.version,
                "registered schema"
            );
        }
        Ok(Attempt::Done(Registration {
            id: outcome.id,
            version: outcome.version,
            schema,
            created: outcome.created,
            approvals: if outcome.created {
                accepted
            } else {
                Vec::new()
            },
        }))
    }

    /// Forgets the subject's cached answers after a registration wrote a version, then keeps
    /// this one's, unless anything else was invalidated since `before_commit` (see [`answers`]).
    fn answer_registered(
        &self,
        subject: &str,
        key: Option<RequestKey>,
        before_commit: u64,
        outcome: &covenant_store::Registered,
        schema: &Arc<SchemaRecord>,
    ) {
        // A write forgets the subject's answers; a version found in the store changed nothing.
        let (epoch, expected) = if outcome.created {
            (self.answers.forget_subject(subject), before_commit + 1)
        } else {
            (before_commit, before_commit)
        };
        if let Some(key) = key
            && epoch == expected
        {
            // Registration answers carry no time.
            let answer = Answer::new(outcome.version, false, 0, schema.clone());
            self.answers.insert(epoch, subject, key, answer);
        }
    }

    /// `POST /subjects/{s}`: the version of this subject holding the schema.
    pub async fn lookup(
        &self,
        subject: &str,
        request: &SchemaRequest,
        normalize: bool,
        deleted: bool,
    ) -> RegistryResult<StoredVersion> {
        if let Some(answer) = self.looked_up(subject, request, normalize, deleted) {
            return Ok(answer.to_version(subject));
        }
        let key = RequestKey::of(Route::Lookup { normalize, deleted }, subject, request);
        let epoch = self.answers.epoch();
        let versions = self.store.subject_versions(subject).await?;
        let visible: Vec<&StoredVersion> =
            versions.iter().filter(|v| deleted || !v.deleted).collect();
        if visible.is_empty() {
            return Err(RegistryError::SubjectNotFound(subject.to_string()));
        }
        // A request without a schema (`{}`, `"schema": ""`) matches no version.
        if request.schema.trim().is_empty() {
            return Err(RegistryError::SchemaNotFound);
        }
        let config = self.effective_config(subject).await?;
        let normalize = normalize
            || config
                .extra
                .get("normalize")
                .and_then(Value::as_bool)
                .unwrap_or(false);
        let (parsed, candidate) = self.prepare(subject, request, normalize, true).await?;
        let same_text = |v: &&&StoredVersion| {
            v.schema.schema_type == candidate.schema_type
                && v.schema.schema == candidate.schema
                && v.schema.references == candidate.references
        };
        let mut found = visible
            .iter()
            .rev()
            .find(|v| same_identity(&v.schema, &candidate.content_key))
            .or_else(|| visible.iter().rev().find(same_text))
            .copied();
        if found.is_none() {
            found = self
                .same_protobuf(visible.iter().rev().copied().collect(), &candidate)
                .await;
        }
        if let Some(v) = found {
            if let Some(key) = key {
                let schema = Arc::new(v.schema.clone());
                self.answers
                    .insert(epoch, subject, key, Answer::of(v, schema));
            }
            return Ok((*v).clone());
        }
        if normalize {
            let wanted = parsed.normalized();
            for v in visible.iter().rev() {
                if v.schema.schema_type == candidate.schema_type
                    && let Ok(p) = self.parse_record(&v.schema).await
                    && p.normalized() == wanted
                {
                    return Ok((*v).clone());
                }
            }
        }
        Err(RegistryError::SchemaNotFound)
    }

    /// `POST /compatibility/subjects/{s}/versions[/{v}]`. With a version, the candidate is
    /// compared with that one version in the level's direction(s); without, exactly as a
    /// registration would be.
    pub async fn test_compatibility(
        &self,
        subject: &str,
        against: Option<VersionSpec>,
        request: &SchemaRequest,
        normalize: bool,
    ) -> RegistryResult<Report> {
        let config = self.effective_config(subject).await?;
        let versions = self.store.subject_versions(subject).await?;
        let live: Vec<&StoredVersion> = versions.iter().filter(|v| !v.deleted).collect();
        let only = match against {
            Some(VersionSpec::Number(n)) => Some(n),
            Some(VersionSpec::Latest) => live.last().map(|v| v.version),
            None => None,
        };
        let (history, level): (Vec<&StoredVersion>, Level) = match against {
            None => {
                let group = config
                    .extra
                    .get("compatibilityGroup")
                    .and_then(Value::as_str);
                let mine = group.map(|g| group_value(&request.metadata, g).cloned());
                let history = live
                    .iter()
                    .copied()
                    .filter(|v| match (group, &mine) {
                        (Some(g), Some(mine)) => {
                            group_value(&v.schema.metadata, g) == mine.as_ref()
                        }
                        _ => true,
                    })
                    .collect();
                (history, config.level)
            }
            Some(VersionSpec::Latest) => (
                live.last().copied().into_iter().collect(),
                single_step(config.level),
            ),
            Some(VersionSpec::Number(n)) => match live.iter().find(|v| v.version == n) {
                Some(v) => (vec![*v], single_step(config.level)),
                None => return Err(RegistryError::VersionNotFound(n.to_string())),
            },
        };
        let (candidate, _) = self.prepare(subject, request, normalize, true).await?;
        self.check_candidate_samples(&candidate, &request.samples)?;
        let mut parsed = Vec::new();
        for v in &history {
            parsed.push((v.version, self.parse_record(&v.schema).await?));
        }
        let metadata = request
            .metadata
            .as_ref()
            .or_else(|| live.last().and_then(|v| v.schema.metadata.as_ref()));
        let mut evolution = self.evolution(subject, &config.extra, metadata).await?;
        evolution.candidate_samples = request.samples.clone();
        let owned: Vec<(i64, i64, Option<Value>, Arc<ParsedSchema>)> = parsed
            .into_iter()
            .zip(&history)
            .map(|((version, p), v)| (version, v.created_at, v.schema.metadata.clone(), p))
            .collect();
        // Off the async workers, and stopped when the client goes away (see `off_runtime`).
        self.off_runtime(move || {
            let priors: Vec<evolution::Prior<'_>> = owned
                .iter()
                .map(|(version, registered_at, metadata, p)| evolution::Prior {
                    version: *version,
                    registered_at: *registered_at,
                    metadata: metadata.as_ref(),
                    schema: p.as_ref(),
                })
                .collect();
            Registry::judge_and_count(&evolution, level, &candidate, &priors, only)
        })
        .await?
    }

    // ----- deletes -----------------------------------------------------------------------

    /// Deletes versions inside the store's write, refusing with 42206 when a version that
    /// blocks (any for a permanent delete, live ones otherwise; same-subject ones are ignored
    /// when the whole subject goes) references one of them. Checking inside the write means a
    /// concurrent registration cannot add a reference between the check and the delete.
    async fn delete_unreferenced(
        &self,
        subject: &str,
        versions: &[i64],
        permanent: bool,
        ignore_same_subject: bool,
        audit: Audit<'_>,
    ) -> RegistryResult<Deleted> {
        let guard = |referencing: &[StoredVersion]| -> Result<(), Rejection> {
            for &version in versions {
                let blocked = referencing.iter().any(|r| {
                    (permanent || !r.deleted)
                        && !(ignore_same_subject && r.subject == subject)
                        && r.schema
                            .references
                            .iter()
                            .any(|x| x.subject == subject && x.version == version)
                });
                if blocked {
                    return Err(Rejection::new(GuardRefusal::Domain(
                        RegistryError::Referenced(subject.to_string(), version),
                    )));
                }
            }
            Ok(())
        };
        match self
            .store
            .delete_guarded(subject, versions, permanent, &guard, audit)
            .await
        {
            Ok(()) => {
                // A permanent delete takes the subject's config and mode with it.
                self.answers.scope_changed(Some(subject.to_string()));
                Ok(Deleted::Done)
            }
            // A concurrent permanent delete got there first: decide again on what is left.
            Err(StoreError::NoSuchVersion { .. }) => Ok(Deleted::Vanished),
            Err(StoreError::Rejected(rejection)) => {
                match rejection.into_inner().downcast::<GuardRefusal>() {
                    Ok(refusal) => match *refusal {
                        GuardRefusal::Domain(e) => Err(e),
                        GuardRefusal::Retry => Err(RegistryError::Store(
                            "deleting versions: unexpected retry".into(),
                        )),
                    },
                    Err(other) => Err(RegistryError::Store(format!("deleting versions: {other}"))),
                }
            }
            Err(e) => Err(e.into()),
        }
    }

    /// `DELETE /subjects/{s}/versions/{v}`: soft unless `permanent` (which needs a prior soft
    /// delete). Returns the version number.
    ///
    /// Decided on a read of the subject and applied only to versions that still exist; when
    /// a concurrent permanent delete removed one first, the decision is made again, so a race
    /// ends in Confluent's 404 or 422 rather than a store error.
    pub async fn delete_version(
        &self,
        subject: &str,
        spec: VersionSpec,
        permanent: bool,
        audit: Audit<'_>,
    ) -> RegistryResult<i64> {
        for _ in 0..REGISTER_ATTEMPTS {
            if let Some(version) = self
                .delete_version_once(subject, spec, permanent, audit)
                .await?
            {
                return Ok(version);
            }
        }
        Err(RegistryError::Store(
            "deleting a version: the subject kept changing".into(),
        ))
    }

    async fn delete_version_once(
        &self,
        subject: &str,
        spec: VersionSpec,
        permanent: bool,
        audit: Audit<'_>,
    ) -> RegistryResult<Option<i64>> {
        self.ensure_writable(Scope::Subject(subject)).await?;
        let all = self.store.subject_versions(subject).await?;
        // Only a subject without any version, soft-deleted ones included, is missing: a
        // version deleted twice is "soft deleted" even when it was the subject's last one.
        if all.is_empty() {
            return Err(RegistryError::SubjectNotFound(subject.to_string()));
        }
        let target = match spec {
            VersionSpec::Latest if permanent => all.last(),
            VersionSpec::Latest => all.iter().rev().find(|v| !v.deleted),
            VersionSpec::Number(n) => all.iter().find(|v| v.version == n),
        };
        let Some(target) = target else {
            return Err(RegistryError::VersionNotFound(match spec {
                VersionSpec::Latest => "-1".into(),
                VersionSpec::Number(n) => n.to_string(),
            }));
        };
        let version = target.version;
        if permanent {
            if !target.deleted {
                return Err(RegistryError::VersionNotSoftDeleted(
                    subject.to_string(),
                    version,
                ));
            }
            if self
                .delete_unreferenced(subject, &[version], true, false, audit)
                .await?
                == Deleted::Vanished
            {
                return Ok(None);
            }
            self.forget_all();
            self.forget_samples(subject, &[version]).await;
        } else {
            if target.deleted {
                return Err(RegistryError::VersionSoftDeleted(
                    subject.to_string(),
                    version,
                ));
            }
            if self
                .delete_unreferenced(subject, &[version], false, false, audit)
                .await?
                == Deleted::Vanished
            {
                return Ok(None);
            }
        }
        Ok(Some(version))
    }

    /// `DELETE /subjects/{s}`: returns the versions deleted (decided again, like
    /// [`Registry::delete_version`], when a concurrent delete removed one first).
    pub async fn delete_subject(
        &self,
        subject: &str,
        permanent: bool,
        audit: Audit<'_>,
    ) -> RegistryResult<Vec<i64>> {
        for _ in 0..REGISTER_ATTEMPTS {
            if let Some(versions) = self.delete_subject_once(subject, permanent, audit).await? {
                return Ok(versions);
            }
        }
        Err(RegistryError::Store(
            "deleting a subject: the subject kept changing".into(),
        ))
    }

    async fn delete_subject_once(
        &self,
        subject: &str,
        permanent: bool,
        audit: Audit<'_>,
    ) -> RegistryResult<Option<Vec<i64>>> {
        self.ensure_writable(Scope::Subject(subject)).await?;
        let all = self.store.subject_versions(subject).await?;
        if all.is_empty() {
            return Err(RegistryError::SubjectNotFound(subject.to_string()));
        }
        let live: Vec<i64> = all
            .iter()
            .filter(|v| !v.deleted)
            .map(|v| v.version)
            .collect();
        if permanent {
            if !live.is_empty() {
                return Err(RegistryError::SubjectNotSoftDeleted(subject.to_string()));
            }
            let every: Vec<i64> = all.iter().map(|v| v.version).collect();
            if self
                .delete_unreferenced(subject, &every, true, true, audit)
                .await?
                == Deleted::Vanished
            {
                return Ok(None);
            }
            self.forget_all();
            self.forget_samples(subject, &every).await;
            self.forget_profiles(subject).await;
            Ok(Some(every))
        } else {
            if live.is_empty() {
                return Err(RegistryError::SubjectSoftDeleted(subject.to_string()));
            }
            if self
                .delete_unreferenced(subject, &live, false, true, audit)
                .await?
                == Deleted::Vanished
            {
                return Ok(None);
            }
            Ok(Some(live))
        }
    }
}

#[cfg(test)]
mod tests;
