//! The flags that bound one schema and one check, shared by `serve` and the offline
//! commands so that both refuse the same inputs (`covenant_engine::Limits`,
//! `covenant_registry::CheckBudget`).

use covenant_engine::Limits;
use covenant_registry::{AdmissionLimits, CheckBudget};
use std::time::Duration;

/// The budget across checks of `covenant serve` (`covenant_registry::AdmissionLimits`).
#[derive(clap::Args, Clone, Debug)]
pub struct AdmissionArgs {
    /// Checks (registrations, compatibility tests, plans) judged at once; one per core by
    /// default. Further checks wait up to --check-queue-ms, then get a 429 (`42950`).
    #[arg(long, default_value_t = AdmissionLimits::default().max_concurrent, env = "COVENANT_MAX_CONCURRENT_CHECKS", value_parser = clap::builder::RangedU64ValueParser::<usize>::new().range(1..))]
    pub max_concurrent_checks: usize,
    /// Memory, in MiB, the checks running at once may hold together; each reserves its work
    /// budget (--check-max-work units of 64 bytes) from it before it starts.
    #[arg(long, default_value_t = AdmissionLimits::default().memory_mb, env = "COVENANT_CHECK_MEMORY_MB", value_parser = clap::value_parser!(u64).range(1..))]
    pub check_memory_mb: u64,
    /// Milliseconds a check waits for a slot and its memory before it is refused.
    #[arg(long, default_value_t = AdmissionLimits::default().queue.as_millis() as u64, env = "COVENANT_CHECK_QUEUE_MS")]
    pub check_queue_ms: u64,
}

impl AdmissionArgs {
    pub fn limits(&self) -> AdmissionLimits {
        AdmissionLimits {
            max_concurrent: self.max_concurrent_checks,
            memory_mb: self.check_memory_mb,
            queue: Duration::from_millis(self.check_queue_ms),
        }
    }
}

#[derive(clap::Args, Clone, Debug)]
pub struct LimitArgs {
    /// Deepest nesting of types, counting named-type references and `$ref` hops.
    #[arg(long, default_value_t = Limits::default().max_depth, env = "COVENANT_MAX_DEPTH")]
    pub max_depth: usize,
    /// Most named types in one schema with its references.
    #[arg(long, default_value_t = Limits::default().max_named_types, env = "COVENANT_MAX_NAMED_TYPES")]
    pub max_named_types: usize,
    /// Most fields (JSON Schema properties) in one schema.
    #[arg(long, default_value_t = Limits::default().max_fields, env = "COVENANT_MAX_FIELDS")]
    pub max_fields: usize,
    /// Most symbols in one enum.
    #[arg(long, default_value_t = Limits::default().max_enum_symbols, env = "COVENANT_MAX_ENUM_SYMBOLS")]
    pub max_enum_symbols: usize,
    /// Most branches in one union, anyOf, oneOf or allOf.
    #[arg(long, default_value_t = Limits::default().max_branches, env = "COVENANT_MAX_BRANCHES")]
    pub max_branches: usize,
    /// Deepest nesting of braces in Protobuf text (message bodies, option values).
    #[arg(long, default_value_t = Limits::default().max_protobuf_nesting, env = "COVENANT_MAX_PROTOBUF_NESTING")]
    pub max_protobuf_nesting: usize,
    /// Time one compatibility check may spend judging, in milliseconds.
    #[arg(long, default_value_t = CheckBudget::default().time.as_millis() as u64, env = "COVENANT_CHECK_TIME_MS")]
    pub check_time_ms: u64,
    /// Units of work one check may spend (a unit is about 64 bytes held by the check).
    #[arg(long, default_value_t = CheckBudget::default().max_work, env = "COVENANT_CHECK_MAX_WORK")]
    pub check_max_work: u64,
}

impl Default for LimitArgs {
    fn default() -> Self {
        let (limits, budget) = (Limits::default(), CheckBudget::default());
        LimitArgs {
            max_depth: limits.max_depth,
            max_named_types: limits.max_named_types,
            max_fields: limits.max_fields,
            max_enum_symbols: limits.max_enum_symbols,
            max_branches: limits.max_branches,
            max_protobuf_nesting: limits.max_protobuf_nesting,
            check_time_ms: budget.time.as_millis() as u64,
            check_max_work: budget.max_work,
        }
    }
}

impl LimitArgs {
    pub fn limits(&self) -> Limits {
        Limits {
            max_depth: self.max_depth,
            max_named_types: self.max_named_types,
            max_fields: self.max_fields,
            max_enum_symbols: self.max_enum_symbols,
            max_branches: self.max_branches,
            max_protobuf_nesting: self.max_protobuf_nesting,
        }
    }

    pub fn budget(&self) -> CheckBudget {
        CheckBudget {
            time: Duration::from_millis(self.check_time_ms),
            max_work: self.check_max_work,
        }
    }
}
