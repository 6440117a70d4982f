//! The audit trail: who changed what, when, from where, and with what outcome.
//!
//! Registry writes take an [`AuditContext`] and record their [`AuditEntry`] inside the same
//! transaction as the change, so an entry exists exactly when its change committed. Governance
//! and sample writes take the finished entry ([`AuditLine`]) and insert it into the same
//! `audit_log` table, in their own write transaction, for the same reason. Only denied
//! attempts, which change nothing, and imported trails are appended on their own with
//! [`crate::Store::record_audit`].

use serde::{Deserialize, Serialize};
use std::borrow::Cow;

/// The outcome of a change that committed.
pub const OUTCOME_OK: &str = "ok";
/// The outcome of an attempt refused before it could change anything.
pub const OUTCOME_DENIED: &str = "denied";

/// Who asked for a write: kept small so it threads through every write call.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditContext {
    /// The actor: an authenticated name, or `anonymous (<user agent>)`.
    pub principal: String,
    /// The peer address of the connection, when known.
    pub source: Option<String>,
    /// The request id echoed to the client as `X-Request-Id`.
    pub request_id: Option<String>,
    /// What the write adds to its entry's detail when its target has none (a registration
    /// names the approvals whose accepted risk it needed).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
}

impl AuditContext {
    /// An entry for `operation` on `target` by this context, committed now.
    pub fn entry(&self, operation: &str, target: AuditTarget) -> AuditEntry {
        AuditEntry {
            seq: 0,
            at: chrono::Utc::now().timestamp_millis(),
            principal: self.principal.clone(),
            source: self.source.clone(),
            operation: operation.to_string(),
            subject: target.subject,
            version: target.version,
            schema_id: target.schema_id,
            config_key: target.config_key,
            outcome: OUTCOME_OK.to_string(),
            request_id: self.request_id.clone(),
            detail: target.detail.or_else(|| self.detail.clone()),
            count: 1,
            last_at: None,
        }
    }
}

/// The entry a governance or sample write appends to `audit_log` inside its own transaction,
/// and only when that transaction commits; `None` records nothing (tests, internal
/// follow-ups of a registry write).
pub type AuditLine<'a> = Option<&'a AuditEntry>;

/// What an operation touched.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditTarget {
    pub subject: Option<String>,
    pub version: Option<i64>,
    pub schema_id: Option<i64>,
    pub config_key: Option<String>,
    pub detail: Option<String>,
}

impl AuditTarget {
    pub fn subject(subject: Option<&str>) -> AuditTarget {
        AuditTarget {
            subject: subject.map(str::to_string),
            ..AuditTarget::default()
        }
    }
}

/// One line of the trail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct AuditEntry {
    /// Position in the trail, assigned by the store (0 before it is stored).
    #[serde(default)]
    pub seq: i64,
    /// Milliseconds since the Unix epoch.
    pub at: i64,
    pub principal: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    pub operation: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<i64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_id: Option<i64>,
    /// The configuration or mode scope a config write touched (`config`, `mode`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub config_key: Option<String>,
    pub outcome: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub request_id: Option<String>,
    /// The new value of a config or mode write, the versions of a multi-version delete; for
    /// a refusal, why and on which route it was refused.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
    /// How many attempts this entry stands for: 1, except for a refusal repeated within
    /// [`crate::audit_denials::DENIAL_WINDOW`], which is stored once and counted (`at` is then
    /// the first attempt, `last_at` the last, and the other fields are the first one's).
    #[serde(default = "one")]
    pub count: i64,
    /// The time of the last attempt a counted entry stands for (milliseconds since the Unix
    /// epoch); absent while `count` is 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_at: Option<i64>,
}

fn one() -> i64 {
    1
}

/// The most a text field of a refusal's entry holds, in bytes: refusals are triggered by
/// anyone, so what they carry from the request (a subject, a user agent) is cut short.
pub const MAX_DENIED_FIELD_BYTES: usize = 256;
/// The most a short text field (principal, source, operation, outcome, request id, config key)
/// of any entry holds, in bytes.
pub const MAX_SHORT_FIELD_BYTES: usize = 256;
/// The most the subject or detail of a committed change holds, in bytes: room for the longest
/// valid subject name.
pub const MAX_LONG_FIELD_BYTES: usize = 4096;

/// Whether `c` could break or disguise a line of the trail when printed: C0 controls
/// (newline, carriage return, escape, ...), DEL, C1 controls, the Unicode line and paragraph
/// separators, and the bidirectional formatting characters that reorder what a terminal shows.
pub fn is_unsafe_char(c: char) -> bool {
    c.is_control()
        || matches!(
            c,
            '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}'
                | '\u{2066}'..='\u{2069}'
        )
}

/// `text` with every [unsafe character](is_unsafe_char) written out as an escape: `\n`, `\r`,
/// `\t`, otherwise `\u{..}` with its code point in hex. Backslashes are left alone, so
/// escaping twice changes nothing: what is stored escaped prints as stored.
pub fn escape_controls(text: &str) -> Cow<'_, str> {
    if !text.chars().any(is_unsafe_char) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        match c {
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            c if is_unsafe_char(c) => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
            c => out.push(c),
        }
    }
    Cow::Owned(out)
}

/// `text` cut to at most `max` bytes on a character boundary, ending in `…` when cut.
pub fn cap_text(text: &str, max: usize) -> Cow<'_, str> {
    if text.len() <= max {
        return Cow::Borrowed(text);
    }
    const MARK: &str = "…";
    let mut end = max.saturating_sub(MARK.len());
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    Cow::Owned(format!("{}{MARK}", &text[..end]))
}

/// A stored text field: escaped, then capped (so an escape is never cut into something else
/// than a shorter prefix of the escaped text).
fn stored(text: &str, max: usize) -> String {
    cap_text(&escape_controls(text), max).into_owned()
}

impl AuditEntry {
    /// This entry timed now: a write stamps the entry it was handed when it commits, so the
    /// trail's times follow its order rather than when the request was read.
    pub fn stamped_now(&self) -> AuditEntry {
        AuditEntry {
            at: chrono::Utc::now().timestamp_millis(),
            ..self.clone()
        }
    }

    /// This entry as the backends store it: every text field with its
    /// [unsafe characters](is_unsafe_char) escaped, so no entry can forge a line of the trail
    /// or send a terminal escape, and cut to its size limit ([`MAX_DENIED_FIELD_BYTES`] for
    /// a refusal, [`MAX_SHORT_FIELD_BYTES`] and [`MAX_LONG_FIELD_BYTES`] otherwise).
    pub fn for_storage(&self) -> AuditEntry {
        let denied = self.outcome == OUTCOME_DENIED;
        let short = MAX_SHORT_FIELD_BYTES;
        let long = if denied {
            MAX_DENIED_FIELD_BYTES
        } else {
            MAX_LONG_FIELD_BYTES
        };
        let opt = |v: &Option<String>, max| v.as_deref().map(|t| stored(t, max));
        AuditEntry {
            seq: self.seq,
            at: self.at,
            principal: stored(&self.principal, short),
            source: opt(&self.source, short),
            operation: stored(&self.operation, short),
            subject: opt(&self.subject, long),
            version: self.version,
            schema_id: self.schema_id,
            config_key: opt(&self.config_key, short),
            outcome: stored(&self.outcome, short),
            request_id: opt(&self.request_id, short),
            detail: opt(&self.detail, long),
            count: self.count.max(1),
            last_at: self.last_at,
        }
    }
}

/// A page of the trail: entries with `seq > after`, oldest first, at most `limit`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct AuditQuery {
    pub principal: Option<String>,
    pub subject: Option<String>,
    pub operation: Option<String>,
    pub outcome: Option<String>,
    /// Inclusive lower bound on `at`.
    pub since: Option<i64>,
    /// Exclusive upper bound on `at`.
    pub until: Option<i64>,
    pub after: i64,
    pub limit: i64,
}

/// The columns of `audit_log` in the order both backends read them.
pub(crate) const AUDIT_COLUMNS: &str = "seq, at, principal, source, operation, subject, version, \
     schema_id, config_key, outcome, request_id, detail, count, last_at";

/// The filter both backends apply; parameters 1..=6 are principal, subject, operation, outcome,
/// since, until (each NULL for "any"), 7 the cursor and 8 the limit.
pub(crate) const AUDIT_FILTER: &str = "WHERE (%1 IS NULL OR principal = %1) \
     AND (%2 IS NULL OR subject = %2) AND (%3 IS NULL OR operation = %3) \
     AND (%4 IS NULL OR outcome = %4) AND (%5 IS NULL OR at >= %5) \
     AND (%6 IS NULL OR at < %6) AND seq > %7 ORDER BY seq LIMIT %8";

/// [`AUDIT_FILTER`] in the portable spelling ([`crate::sql::dialect`]), each parameter cast
/// so that PostgreSQL knows the type of one first met in `IS NULL`.
pub(crate) fn audit_filter() -> String {
    let mut sql = AUDIT_FILTER.to_string();
    for n in 1..=8 {
        let ty = if n <= 4 { "TEXT" } else { "BIGINT" };
        sql = sql.replace(&format!("%{n}"), &format!("CAST(?{n} AS {ty})"));
    }
    sql
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn line_breaking_and_terminal_characters_are_escaped_once() {
        let forged = "x\n2024-01-01T00:00:00.000Z  ok  register  by admin\r\u{1b}[31m\u{7f}\u{85}\u{9b}\u{2028}\u{2029}\u{202e}\t";
        let once = escape_controls(forged).into_owned();
        assert_eq!(
            once,
            "x\\n2024-01-01T00:00:00.000Z  ok  register  by admin\\r\\u{1b}[31m\\u{7f}\\u{85}\\u{9b}\\u{2028}\\u{2029}\\u{202e}\\t"
        );
        assert!(!once.chars().any(is_unsafe_char));
        assert_eq!(
            escape_controls(&once),
            once,
            "escaping twice changes nothing"
        );
        assert!(matches!(escape_controls("orders-value"), Cow::Borrowed(_)));
    }

    #[test]
    fn stored_fields_are_escaped_and_cut_to_size() {
        let mut entry = AuditContext {
            principal: format!("anonymous ({})", "ü".repeat(400)),
            source: Some("10.0.0.1".into()),
            request_id: Some("r\n1".into()),
            detail: None,
        }
        .entry("Read", AuditTarget::subject(Some(&"s\n".repeat(3000))));
        entry.outcome = OUTCOME_DENIED.into();
        let stored = entry.for_storage();
        assert!(stored.principal.len() <= MAX_SHORT_FIELD_BYTES);
        assert!(stored.principal.ends_with('…'));
        assert_eq!(stored.request_id.as_deref(), Some("r\\n1"));
        let subject = stored.subject.expect("subject");
        assert!(subject.len() <= MAX_DENIED_FIELD_BYTES && subject.starts_with("s\\ns\\n"));
        entry.outcome = OUTCOME_OK.into();
        let ok = entry.for_storage();
        assert!(ok.subject.expect("subject").len() <= MAX_LONG_FIELD_BYTES);
        assert_eq!(ok.count, 1);
    }
}
