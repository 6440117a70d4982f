//! Appending to the registry's `audit_log` from a side store's write transaction (the table
//! lives in the same database), so an entry exists exactly when its change committed.

use super::{DbResult, Tx, args};
use crate::audit::{AuditEntry, AuditLine};

/// Inserts `entry` as stored (escaped and cut, see [`AuditEntry::for_storage`]); returns its
/// sequence number.
pub(crate) async fn insert(tx: &impl Tx, entry: &AuditEntry) -> DbResult<i64> {
    let e = &entry.for_storage();
    tx.value(
        "INSERT INTO audit_log(at, principal, source, operation, subject, version, schema_id, \
         config_key, outcome, request_id, detail, count, last_at) \
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13) RETURNING seq",
        args![
            e.at,
            &e.principal,
            &e.source,
            &e.operation,
            &e.subject,
            e.version,
            e.schema_id,
            &e.config_key,
            &e.outcome,
            &e.request_id,
            &e.detail,
            e.count,
            e.last_at
        ],
    )
    .await
}

/// Appends `line`, stamped now, inside the caller's transaction.
pub(crate) async fn append(tx: &impl Tx, line: AuditLine<'_>) -> DbResult<()> {
    match line {
        Some(entry) => insert(tx, &entry.stamped_now()).await.map(|_| ()),
        None => Ok(()),
    }
}
