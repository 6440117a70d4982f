//! Subject names: which ones the registry accepts, and for what.

use crate::{RegistryError, RegistryResult};

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
