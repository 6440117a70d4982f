//! Schema contexts, as Confluent names them: a qualified subject `:.ctx:orders` lives in the
//! context `.ctx`, an unqualified one in the default context `.`, and every context has its
//! own id space (the first schema of each context gets id 1).
//!
//! Ids are stored as one integer so that every table keyed by a schema id stays as it is: the
//! context's slot in the high 32 bits, the id clients see (a Java `int` on the wire) in the low
//! 32. The default context is slot 0, so its stored ids are the public ones.

/// The default context's name.
pub const DEFAULT_CONTEXT: &str = ".";

/// The context that holds only global config and mode (`:.__GLOBAL:`), never schemas.
pub const GLOBAL_CONTEXT: &str = ".__GLOBAL";

/// Ids a context can hand out: Confluent's ids are a Java `int`.
pub const MAX_PUBLIC_ID: i64 = i32::MAX as i64;

const SLOT_SHIFT: u32 = 32;
const PUBLIC_MASK: i64 = (1 << SLOT_SHIFT) - 1;

/// The id a client sees for a stored id.
pub fn public_id(stored: i64) -> i64 {
    stored & PUBLIC_MASK
}

/// The context slot a stored id belongs to.
pub fn slot_of(stored: i64) -> i64 {
    stored >> SLOT_SHIFT
}

/// The stored id of public id `id` in the context at `slot`.
pub fn stored_id(slot: i64, id: i64) -> i64 {
    (slot << SLOT_SHIFT) | (id & PUBLIC_MASK)
}

/// The stored ids of a slot: `lowest..=highest`.
pub fn slot_range(slot: i64) -> (i64, i64) {
    (stored_id(slot, 1), stored_id(slot, MAX_PUBLIC_ID))
}

/// The context of a subject name (`.` for an unqualified one). `:.ctx` without a second colon
/// is the context itself, as Confluent reads it.
pub fn context_of(subject: &str) -> &str {
    split(subject).0
}

/// The subject's name within its context.
pub fn unqualified(subject: &str) -> &str {
    split(subject).1
}

/// `(context, name)` of a subject; the wildcard `:*:` is its own context `*`.
pub fn split(subject: &str) -> (&str, &str) {
    if let Some(rest) = subject.strip_prefix(":.") {
        return match rest.find(':') {
            Some(ix) => (&subject[1..ix + 2], &rest[ix + 1..]),
            None => (&subject[1..], ""),
        };
    }
    match subject.strip_prefix(":*:") {
        Some(name) => ("*", name),
        None => (DEFAULT_CONTEXT, subject),
    }
}

/// `name` in `context`: unqualified in the default context, `:.ctx:name` elsewhere.
pub fn qualify(context: &str, name: &str) -> String {
    if context == DEFAULT_CONTEXT {
        name.to_string()
    } else {
        format!(":{context}:{name}")
    }
}

/// A subject named from inside `parent` (a reference, an alias): an unqualified name means the
/// parent's context, a qualified one its own.
pub fn qualify_with_parent(parent: &str, subject: &str) -> String {
    let (context, _) = split(subject);
    if context == DEFAULT_CONTEXT && !subject.starts_with(":.") {
        qualify(context_of(parent), subject)
    } else {
        subject.to_string()
    }
}

/// A context name as a path or config key spells it (`ctx`, `.ctx`, `:.ctx:`) in its stored
/// form `.ctx`; `.` and the empty string are the default context. `None` when it cannot name a
/// context (a colon inside, a control character, or too long).
pub fn normalize_context(text: &str) -> Option<String> {
    let text = text.strip_prefix(':').unwrap_or(text);
    let text = text.strip_suffix(':').unwrap_or(text);
    if text.contains(':') || text.chars().any(char::is_control) || text.len() > 255 {
        return None;
    }
    if text.is_empty() || text == DEFAULT_CONTEXT {
        return Some(DEFAULT_CONTEXT.to_string());
    }
    Some(if text.starts_with('.') {
        text.to_string()
    } else {
        format!(".{text}")
    })
}

/// The config and mode key of a whole context: `:.ctx:` (the default context's is the global
/// key, which the caller spells its own way).
pub fn context_key(context: &str) -> String {
    format!(":{context}:")
}

/// Whether `subject` names a context only (`:.ctx:`), as config and mode keys may.
pub fn is_context_only(subject: &str) -> bool {
    subject.starts_with(":.") && unqualified(subject).is_empty()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ids_of_the_default_context_are_stored_as_they_are() {
        assert_eq!(stored_id(0, 42), 42);
        assert_eq!(public_id(42), 42);
        assert_eq!(slot_of(42), 0);
        let other = stored_id(3, 42);
        assert_ne!(other, 42);
        assert_eq!(public_id(other), 42);
        assert_eq!(slot_of(other), 3);
        let (lo, hi) = slot_range(3);
        assert!(lo <= other && other <= hi);
        assert!(slot_range(2).1 < lo);
    }

    #[test]
    fn subjects_split_as_confluent_reads_them() {
        assert_eq!(split(":.ctx:orders"), (".ctx", "orders"));
        assert_eq!(split(":.ctx:"), (".ctx", ""));
        assert_eq!(split(":.ctx"), (".ctx", ""));
        assert_eq!(split("orders"), (".", "orders"));
        assert_eq!(split(":*:orders"), ("*", "orders"));
        assert!(is_context_only(":.ctx:"));
        assert!(!is_context_only(":.ctx:o"));
        assert!(!is_context_only("o"));
    }

    #[test]
    fn references_and_aliases_resolve_in_the_parent_context() {
        assert_eq!(qualify_with_parent(":.a:orders", "money"), ":.a:money");
        assert_eq!(qualify_with_parent(":.a:orders", ":.b:money"), ":.b:money");
        assert_eq!(qualify_with_parent("orders", "money"), "money");
        assert_eq!(qualify_with_parent("orders", ":.b:money"), ":.b:money");
    }

    #[test]
    fn context_names_normalize_like_confluents() {
        for spelled in ["ctx", ".ctx", ":.ctx:", ":.ctx", ".ctx:"] {
            assert_eq!(normalize_context(spelled).as_deref(), Some(".ctx"));
        }
        assert_eq!(normalize_context(".").as_deref(), Some("."));
        assert_eq!(normalize_context("").as_deref(), Some("."));
        assert_eq!(normalize_context("a:b"), None);
    }
}
