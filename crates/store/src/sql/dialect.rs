//! The portable spelling of statements and DDL, and its translation for each engine.
//!
//! Statements are written once, as PostgreSQL reads them except for placeholders, which are
//! SQLite's numbered `?N`. PostgreSQL gets `$N` instead; SQLite gets its own names for the
//! few types and functions that differ, and loses what it has no use for:
//!
//! | portable                 | SQLite                              |
//! |--------------------------|-------------------------------------|
//! | `BIGSERIAL PRIMARY KEY`  | `INTEGER PRIMARY KEY AUTOINCREMENT` |
//! | `BIGINT`, `BOOLEAN`      | `INTEGER`                           |
//! | `BYTEA`                  | `BLOB`                              |
//! | `LEAST(`, `GREATEST(`    | `MIN(`, `MAX(` (the scalar forms)   |
//! | ` COLLATE "C"`           | nothing: SQLite compares bytes      |
//! | ` FOR UPDATE`            | nothing: its writer holds the file  |
//! | `CREATE SEQUENCE schema_ids …;` | nothing: ids come from the rowid |
//! | ` USING hash`            | nothing: its btree takes long keys  |
//!
//! The table is data: adding a difference is adding a row.

use std::borrow::Cow;

/// Portable spelling → SQLite's, applied in order.
const SQLITE: &[(&str, &str)] = &[
    ("CREATE SEQUENCE schema_ids AS BIGINT MINVALUE 1;", ""),
    ("BIGSERIAL PRIMARY KEY", "INTEGER PRIMARY KEY AUTOINCREMENT"),
    ("BIGINT", "INTEGER"),
    ("BOOLEAN", "INTEGER"),
    ("BYTEA", "BLOB"),
    ("LEAST(", "MIN("),
    ("GREATEST(", "MAX("),
    (" COLLATE \"C\"", ""),
    (" FOR UPDATE", ""),
    (" USING hash", ""),
];

/// `sql` as SQLite reads it.
pub(crate) fn sqlite(sql: &str) -> Cow<'_, str> {
    let mut out = Cow::Borrowed(sql);
    for (portable, own) in SQLITE {
        if out.contains(portable) {
            out = Cow::Owned(out.replace(portable, own));
        }
    }
    out
}

/// `sql` as PostgreSQL reads it: `?N` placeholders become `$N`.
pub(crate) fn postgres(sql: &str) -> Cow<'_, str> {
    if !sql.contains('?') {
        return Cow::Borrowed(sql);
    }
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    while let Some(c) = chars.next() {
        if c == '?' && chars.peek().is_some_and(char::is_ascii_digit) {
            out.push('$');
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A store's migrations translated by `dialect`, owned.
pub(crate) fn migrations(
    portable: &[(i64, &str)],
    dialect: fn(&str) -> Cow<'_, str>,
) -> Vec<(i64, String)> {
    portable
        .iter()
        .map(|(n, sql)| (*n, dialect(sql).into_owned()))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_numbered_with_dollars_for_postgres() {
        assert_eq!(
            postgres("SELECT a FROM t WHERE b = ?1 AND c = ?12"),
            "SELECT a FROM t WHERE b = $1 AND c = $12"
        );
        assert_eq!(postgres("SELECT 1"), "SELECT 1");
    }

    #[test]
    fn sqlite_gets_its_own_types_and_functions() {
        assert_eq!(
            sqlite(
                "CREATE TABLE t (id BIGSERIAL PRIMARY KEY, s TEXT COLLATE \"C\" NOT NULL, n BIGINT, b BOOLEAN, p BYTEA)"
            ),
            "CREATE TABLE t (id INTEGER PRIMARY KEY AUTOINCREMENT, s TEXT NOT NULL, n INTEGER, b INTEGER, p BLOB)"
        );
        assert_eq!(
            sqlite(
                "CREATE SEQUENCE schema_ids AS BIGINT MINVALUE 1;\nCREATE INDEX k ON t USING hash (k);"
            ),
            "\nCREATE INDEX k ON t (k);"
        );
        assert_eq!(
            sqlite("SELECT LEAST(a, ?1), GREATEST(b, ?2) FROM t WHERE id = ?3 FOR UPDATE"),
            "SELECT MIN(a, ?1), MAX(b, ?2) FROM t WHERE id = ?3"
        );
    }

    #[test]
    fn registry_ids_stay_sqlite_rowids() {
        let first = sqlite(crate::registry_sql::MIGRATIONS[0].1);
        assert!(first.contains("id INTEGER PRIMARY KEY,"), "{first}");
        assert!(
            !first.contains("SEQUENCE") && !first.contains("hash"),
            "{first}"
        );
    }
}
