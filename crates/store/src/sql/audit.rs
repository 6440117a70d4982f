//! Appending to the registry's `audit_log` from a side store's write transaction (the table
//! lives in the same database), so an entry exists exactly when its change committed.

use super::{DbResult, Tx, Value, columns_of, unnest, value_rows};
use crate::audit::{AuditEntry, AuditLine};

/// The start of an insert of stored entries, followed by their `VALUES` rows.
const INSERT: &str = "INSERT INTO audit_log(at, principal, source, operation, subject, version, \
     schema_id, config_key, outcome, request_id, detail, count, last_at) VALUES ";

/// Columns [`INSERT`] names.
const COLUMNS: usize = 13;

/// The types of [`INSERT`]'s columns, and names for them, for [`insert_all`]'s lists.
const TYPES: [&str; COLUMNS] = [
    "BIGINT", "TEXT", "TEXT", "TEXT", "TEXT", "BIGINT", "BIGINT", "TEXT", "TEXT", "TEXT", "TEXT",
    "BIGINT", "BIGINT",
];
const NAMES: [&str; COLUMNS] = [
    "at", "pr", "so", "op", "su", "ve", "id", "ck", "ou", "ri", "de", "co", "la",
];

/// The values of `e` (as stored) for [`INSERT`], appended to `out`.
fn push_values<'e>(e: &'e AuditEntry, out: &mut Vec<Value<'e>>) {
    out.extend([
        Value::from(e.at),
        Value::from(&e.principal),
        Value::from(&e.source),
        Value::from(&e.operation),
        Value::from(&e.subject),
        Value::from(e.version),
        Value::from(e.schema_id),
        Value::from(&e.config_key),
        Value::from(&e.outcome),
        Value::from(&e.request_id),
        Value::from(&e.detail),
        Value::from(e.count),
        Value::from(e.last_at),
    ]);
}

/// Inserts `entry` as stored (escaped and cut, see [`AuditEntry::for_storage`]); returns its
/// sequence number.
pub(crate) async fn insert(tx: &impl Tx, entry: &AuditEntry) -> DbResult<i64> {
    let stored = entry.for_storage();
    let mut values = Vec::with_capacity(COLUMNS);
    push_values(&stored, &mut values);
    let sql = format!("{INSERT}{} RETURNING seq", value_rows(1, COLUMNS, 1));
    tx.value(&sql, &values).await
}

/// Inserts `entries` as stored, in order, by one statement of one text whatever their number
/// (a PostgreSQL group's registrations; lists are bound on PostgreSQL only).
pub(crate) async fn insert_all(tx: &impl Tx, entries: &[AuditEntry]) -> DbResult<()> {
    if entries.is_empty() {
        return Ok(());
    }
    let stored: Vec<AuditEntry> = entries.iter().map(AuditEntry::for_storage).collect();
    let mut values = Vec::with_capacity(stored.len() * COLUMNS);
    for e in &stored {
        push_values(e, &mut values);
    }
    let sql = format!(
        "INSERT INTO audit_log(at, principal, source, operation, subject, version, schema_id, \
         config_key, outcome, request_id, detail, count, last_at) SELECT * FROM {}",
        unnest(&TYPES, 1, "e", &NAMES)
    );
    tx.execute(&sql, &columns_of(values, COLUMNS))
        .await
        .map(|_| ())
}

/// Appends `line`, stamped now, inside the caller's transaction.
pub(crate) async fn append(tx: &impl Tx, line: AuditLine<'_>) -> DbResult<()> {
    match line {
        Some(entry) => insert(tx, &entry.stamped_now()).await.map(|_| ()),
        None => Ok(()),
    }
}
