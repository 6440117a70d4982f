//! Subjects, versions, ids, config and modes: the registry's domain logic, with Confluent
//! Schema Registry's semantics. No SQL and no HTTP here: persistence goes through
//! [`covenant_store::Store`], formats through [`covenant_schema`].
//!
//! Concurrency: every write goes through the store, which serializes writes per backend
//! (SQLite: one writer connection; PostgreSQL: a per-subject lock). A registration is judged
//! outside that write against a snapshot of the subject, and the store commits it only if the
//! subject still is that snapshot (see [`register`]), so two incompatible versions can never
//! both land. Reads go straight to the store, except schemas by id, which every node serves
//! from memory once read (an id is never rebound to other content; the cache is dropped on
//! permanent deletes, this node's or, through the change feed, another's), and the answers of
//! lookups and idempotent registrations with the settings they inherit ([`answers`]: forgotten
//! by every write that may change them). A registration of a subject this node knows to be new
//! reads nothing before it is judged ([`known_subjects`]); its commit checks what it assumed.
//! The caches are bounded LRU maps
//! ([`DEFAULT_CACHE_ENTRIES`], [`Registry::with_cache_entries`]): the least recently used
//! entries are read from the store again.
//!
//! This file is the map: the [`Registry`], its construction, and one module per concern.

// ----- the registration pipeline ---------------------------------------------------------
/// `POST /subjects/{s}/versions` and its dry run, one module per step (see its docs).
mod register;

// ----- what the registry reads and answers -----------------------------------------------
/// `POST /compatibility/...`: a candidate judged without registering it.
mod compatibility;
/// Soft and permanent deletes, refused while something references what would go.
mod deletes;
/// `POST /subjects/{s}`: the version of a subject holding a schema.
mod lookup;
/// Reads: schemas by id and guid, subjects, versions, referrers, listings.
mod reads;
/// The shapes of requests (schema request, version, options) and of a registration's answer.
mod request;
/// Subject names the registry accepts.
mod subjects;

// ----- schemas ---------------------------------------------------------------------------
/// The stored text and content key a registration deduplicates on.
mod identity;
/// Schema text parsed within the limits; stored schemas parsed once by id.
mod parsing;
/// References resolved transitively from the store.
mod references;

// ----- settings --------------------------------------------------------------------------
/// Config along a subject's scope chain, the config routes, aliases, cached config rows.
mod config;
/// Contexts: scope chains, qualified ids, context listing and deletion.
mod contexts;
/// Data contracts from config (metadata and rule sets) and rule-set validation.
mod contract;
/// Evolution policy: the verdict's settings, presets, samples and rollout plans.
mod evolution;
/// Modes along a subject's scope chain, the mode routes, the read-only check.
mod mode;
/// Data profiles over time and their thresholds.
mod profiles;

// ----- governance seams ------------------------------------------------------------------
/// Accepted risk on record, read just before judging.
mod approvals;
/// The removal gate's seam: may the fields a candidate drops go?
mod removal;

// ----- bounds and memory -----------------------------------------------------------------
/// Admission: slots and memory shared by every check.
mod admission;
/// Answers of lookups and idempotent registrations by request content.
mod answers;
/// Bounded LRU maps keyed by schema id.
mod cache;
/// The bound on one check's judging (`CheckBudget::run`).
mod check_budget;
/// Which subjects exist, kept from the change feed where other nodes write.
mod known_subjects;
/// What the registry keeps in memory and when it forgets it.
mod memory;

// ----- other ------------------------------------------------------------------------------
/// The DEK Registry (client-side field-level encryption keys).
pub mod deks;
/// Registry errors, with Confluent's messages.
mod error;

pub use admission::AdmissionLimits;
pub use answers::Answer;
pub use approvals::{
    AcceptedRisk, ApprovalSource, accept as accept_findings, approval_fingerprint,
};
pub use cache::DEFAULT_CACHE_ENTRIES;
pub use check_budget::CheckBudget;
pub use config::{ConfigUpdate, ConfigView, SubjectRead};
pub use contexts::{prefix_matches, scope_for};
pub use contract::{Contract, merge_metadata, merge_rule_sets};
pub use covenant_policy::RolloutPlan;
pub use covenant_store::{Audit, AuditContext, ProfileRecord, SampleRecord};
pub use covenant_store::{SchemaRecord as Schema, SchemaRef as Ref, StoredVersion as Version};
pub use error::{RegistryError, RegistryResult, finding_text};
pub use evolution::{BoxFuture, FieldRecords, ReplayLimits, UsageEvidence};
pub use identity::content_key;
pub use memory::CacheUsage;
pub use mode::Mode;
pub use parsing::{parse_schema, parse_schema_with, sent_as_descriptor};
pub use profiles::{
    ProfileFindings, THRESHOLDS_KEY, ThresholdOverrides, TrendPoint, parse_instant,
};
pub use register::WouldRegister;
pub use removal::{
    HookFuture, RemovalCheck, RemovalVerdict, field_paths as schema_field_paths_of, removed_fields,
};
pub use request::{
    CandidateSample, RegisterOptions, Registration, SchemaRequest, TextFormat, VersionSpec,
};
pub use subjects::{MAX_SUBJECT_CHARS, SubjectUse, validate_subject};

use answers::Answers;
use cache::IdCache;
use covenant_engine::{Level, Limits};
use covenant_schema::ParsedSchema;
use covenant_store::{SchemaRecord, Store};
use register::SubjectTurns;
use std::sync::{Arc, RwLock};

/// The registry. Cheap to share behind an `Arc`.
pub struct Registry {
    store: Arc<dyn Store>,
    default_level: Level,
    by_id: IdCache<SchemaRecord>,
    parsed: IdCache<ParsedSchema>,
    /// Lookup and idempotent registration answers by request content ([`answers`]).
    answers: Answers,
    /// Where other nodes write: the subjects that exist ([`known_subjects`]).
    known_subjects: Arc<known_subjects::KnownSubjects>,
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

impl Registry {
    pub fn new(store: Arc<dyn Store>) -> Registry {
        Registry {
            store,
            default_level: Level::Backward,
            by_id: IdCache::new(DEFAULT_CACHE_ENTRIES, cache::DEFAULT_RECORD_CACHE_BYTES),
            parsed: IdCache::new(DEFAULT_CACHE_ENTRIES, cache::DEFAULT_PARSED_CACHE_BYTES),
            answers: Answers::new(DEFAULT_CACHE_ENTRIES),
            known_subjects: Arc::new(known_subjects::KnownSubjects::new()),
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
}

#[cfg(test)]
mod tests;
