//! The audit trail: who changed what, when, from where, and with what outcome.
//!
//! Registry writes take an [`AuditContext`] and record their [`AuditEntry`] inside the same
//! transaction as the change, so an entry exists exactly when its change committed. Governance
//! and sample writes take the finished entry ([`AuditLine`]) and insert it into the same
//! `audit_log` table, in their own write transaction, for the same reason. Only denied
//! attempts, which change nothing, and imported trails are appended on their own with
//! [`crate::Store::record_audit`].

use serde::{Deserialize, Serialize};

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
            detail: target.detail,
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
    /// The new value of a config or mode write, the versions of a multi-version delete.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub detail: Option<String>,
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
     schema_id, config_key, outcome, request_id, detail";

/// The filter both backends apply; parameters 1..=6 are principal, subject, operation, outcome,
/// since, until (each NULL for "any"), 7 the cursor and 8 the limit.
pub(crate) const AUDIT_FILTER: &str = "WHERE (%1 IS NULL OR principal = %1) \
     AND (%2 IS NULL OR subject = %2) AND (%3 IS NULL OR operation = %3) \
     AND (%4 IS NULL OR outcome = %4) AND (%5 IS NULL OR at >= %5) \
     AND (%6 IS NULL OR at < %6) AND seq > %7 ORDER BY seq LIMIT %8";

/// [`AUDIT_FILTER`] with the backend's parameter marker (`?` or `$`).
/// PostgreSQL gets explicit casts so that a parameter first met in `IS NULL` has a type.
pub(crate) fn audit_filter(marker: char) -> String {
    let mut sql = AUDIT_FILTER.to_string();
    for n in 1..=8 {
        let cast = match (marker, n) {
            ('$', 1..=4) => "::TEXT",
            ('$', _) => "::BIGINT",
            _ => "",
        };
        sql = sql.replace(&format!("%{n}"), &format!("{marker}{n}{cast}"));
    }
    sql
}
