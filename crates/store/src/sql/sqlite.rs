//! [`Tx`] over a rusqlite connection, for work already on a blocking thread inside the
//! store's write (or read) transaction. Every call answers at once; [`super::ready`] drives
//! the operation.

use super::{DbError, DbResult, Lock, Row, Tx, Value, dialect, ready};
use crate::sqlite_conn::blocking;
use crate::{StoreError, StoreResult};
use rusqlite::Connection;
use rusqlite::types::{ToSqlOutput, ValueRef};
use std::borrow::Cow;
use std::path::Path;
use std::sync::{Mutex, MutexGuard};

/// A connection (in a transaction or savepoint the caller opened) seen as a [`Tx`].
pub(crate) struct Lite<'c>(pub(crate) &'c Connection);

impl rusqlite::ToSql for Value<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(match self {
            Value::Null => ToSqlOutput::Borrowed(ValueRef::Null),
            Value::Int(v) => ToSqlOutput::Borrowed(ValueRef::Integer(*v)),
            Value::Bool(v) => ToSqlOutput::Borrowed(ValueRef::Integer(i64::from(*v))),
            Value::Text(v) => ToSqlOutput::Borrowed(ValueRef::Text(v.as_bytes())),
            Value::Bytes(v) => ToSqlOutput::Borrowed(ValueRef::Blob(v)),
            Value::List(_) => {
                return Err(rusqlite::Error::ToSqlConversionFailure(
                    "SQLite binds no lists".into(),
                ));
            }
        })
    }
}

fn column(value: ValueRef<'_>) -> DbResult<Value<'static>> {
    Ok(match value {
        ValueRef::Null => Value::Null,
        ValueRef::Integer(v) => Value::Int(v),
        ValueRef::Text(v) => Value::Text(Cow::Owned(
            std::str::from_utf8(v).map_err(DbError::new)?.to_string(),
        )),
        ValueRef::Blob(v) => Value::Bytes(Cow::Owned(v.to_vec())),
        ValueRef::Real(v) => return Err(DbError(format!("unexpected real number {v}"))),
    })
}

impl Lite<'_> {
    fn rows(&self, sql: &str, params: &[Value<'_>]) -> DbResult<Vec<Row>> {
        let mut stmt = self
            .0
            .prepare_cached(&dialect::sqlite(sql))
            .map_err(DbError::new)?;
        let width = stmt.column_count();
        let mut rows = stmt
            .query(rusqlite::params_from_iter(params))
            .map_err(DbError::new)?;
        let mut out = Vec::new();
        while let Some(row) = rows.next().map_err(DbError::new)? {
            let values = (0..width)
                .map(|i| column(row.get_ref(i).map_err(DbError::new)?))
                .collect::<DbResult<Vec<_>>>()?;
            out.push(Row(values));
        }
        Ok(out)
    }

    fn run(&self, sql: &str, params: &[Value<'_>]) -> DbResult<u64> {
        let changed = self
            .0
            .prepare_cached(&dialect::sqlite(sql))
            .map_err(DbError::new)?
            .execute(rusqlite::params_from_iter(params))
            .map_err(DbError::new)?;
        Ok(changed as u64)
    }
}

impl Tx for Lite<'_> {
    async fn query(&self, sql: &str, params: &[Value<'_>]) -> DbResult<Vec<Row>> {
        self.rows(sql, params)
    }

    async fn execute(&self, sql: &str, params: &[Value<'_>]) -> DbResult<u64> {
        self.run(sql, params)
    }

    /// The store's writer runs one write transaction at a time (an immediate transaction, or
    /// its turn on the shared writer): there is nothing left to lock.
    async fn lock(&self, _lock: Lock<'_>) -> DbResult<()> {
        Ok(())
    }

    /// `AUTOINCREMENT` already moves past explicit ids.
    async fn ids_taken(&self, _table: &str, _column: &str) -> DbResult<()> {
        Ok(())
    }
}

/// The one connection of a side store (samples, profiles, exporters, DEKs) on the registry's
/// file, with its tables migrated.
pub(crate) struct LiteDb {
    conn: Mutex<Connection>,
    /// What the store holds, for messages.
    what: &'static str,
}

impl LiteDb {
    /// Opens `path` and applies `migrations` (portable spelling) under the ledger `ledger`.
    pub(crate) fn open(
        path: &Path,
        ledger: &str,
        migrations: &[(i64, &str)],
        what: &'static str,
    ) -> StoreResult<LiteDb> {
        let mut conn = crate::sqlite_conn::open(path).map_err(DbError::new)?;
        let migrations = dialect::migrations(migrations, dialect::sqlite);
        crate::sqlite_conn::migrate(&mut conn, ledger, &migrations).map_err(DbError::new)?;
        Ok(LiteDb {
            conn: Mutex::new(conn),
            what,
        })
    }

    fn conn(&self) -> StoreResult<MutexGuard<'_, Connection>> {
        self.conn.lock().map_err(|_| {
            StoreError::Backend(format!("the {} store connection was poisoned", self.what))
        })
    }

    pub(crate) async fn read<T>(
        &self,
        work: impl AsyncFnOnce(&Lite<'_>) -> StoreResult<T>,
    ) -> StoreResult<T> {
        blocking(|| ready(work(&Lite(&*self.conn()?))))
    }

    /// Runs `work` in one read transaction: all its statements see the same moment.
    pub(crate) async fn read_consistent<T>(
        &self,
        work: impl AsyncFnOnce(&Lite<'_>) -> StoreResult<T>,
    ) -> StoreResult<T> {
        blocking(|| {
            let conn = self.conn()?;
            let tx = conn.unchecked_transaction().map_err(DbError::new)?;
            let out = ready(work(&Lite(&tx)))?;
            tx.commit().map_err(DbError::new)?;
            Ok(out)
        })
    }

    /// Runs `work` in an immediate transaction that commits when it returns `Ok`.
    pub(crate) async fn write<T>(
        &self,
        work: impl AsyncFnOnce(&Lite<'_>) -> StoreResult<T>,
    ) -> StoreResult<T> {
        crate::sqlite_conn::write_tx(|| self.conn(), |tx| ready(work(&Lite(tx))))
    }
}
