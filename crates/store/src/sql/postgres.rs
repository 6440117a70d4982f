//! [`Tx`] over a tokio-postgres transaction or pooled connection: statements are prepared
//! once per connection (deadpool's statement cache), parameters bind to whatever type the
//! server inferred for them, and columns are read by their declared type.

use super::{DbError, DbResult, Lock, Row, Tx, Value, dialect, value_rows};
use bytes::BytesMut;
use deadpool_postgres::{GenericClient, Object, Transaction};
use std::borrow::Cow;
use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};

/// A transaction (or, for reads, a connection) seen as a [`Tx`].
pub(crate) struct Pg<'c, C>(pub(crate) &'c C);

type SqlResult = Result<IsNull, Box<dyn std::error::Error + Sync + Send>>;

impl ToSql for Value<'_> {
    fn to_sql(&self, ty: &Type, out: &mut BytesMut) -> SqlResult {
        match self {
            Value::Null => Ok(IsNull::Yes),
            Value::Int(v) => match *ty {
                Type::INT2 => i16::try_from(*v)?.to_sql(ty, out),
                Type::INT4 => i32::try_from(*v)?.to_sql(ty, out),
                _ => v.to_sql(ty, out),
            },
            Value::Bool(v) => v.to_sql(ty, out),
            Value::Text(v) => v.as_ref().to_sql(ty, out),
            Value::Bytes(v) => v.as_ref().to_sql(ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        matches!(
            *ty,
            Type::INT2
                | Type::INT4
                | Type::INT8
                | Type::BOOL
                | Type::TEXT
                | Type::VARCHAR
                | Type::BPCHAR
                | Type::NAME
                | Type::UNKNOWN
                | Type::BYTEA
        )
    }

    to_sql_checked!();
}

fn column(row: &tokio_postgres::Row, i: usize) -> DbResult<Value<'static>> {
    fn get<'r, T: tokio_postgres::types::FromSql<'r>>(
        row: &'r tokio_postgres::Row,
        i: usize,
    ) -> DbResult<Option<T>> {
        row.try_get(i).map_err(DbError::new)
    }
    let ty = row.columns()[i].type_();
    let value = match *ty {
        Type::INT8 => get::<i64>(row, i)?.map(Value::Int),
        Type::INT4 => get::<i32>(row, i)?.map(|v| Value::Int(v.into())),
        Type::INT2 => get::<i16>(row, i)?.map(|v| Value::Int(v.into())),
        Type::BOOL => get::<bool>(row, i)?.map(Value::Bool),
        Type::TEXT | Type::VARCHAR | Type::BPCHAR | Type::NAME => {
            get::<String>(row, i)?.map(|v| Value::Text(Cow::Owned(v)))
        }
        Type::BYTEA => get::<Vec<u8>>(row, i)?.map(|v| Value::Bytes(Cow::Owned(v))),
        _ => {
            return Err(DbError(format!(
                "column {i} has type {ty}, which the stores do not read"
            )));
        }
    };
    Ok(value.unwrap_or(Value::Null))
}

fn params<'p>(params: &'p [Value<'_>]) -> Vec<&'p (dyn ToSql + Sync)> {
    params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
}

impl<C: GenericClient> Tx for Pg<'_, C> {
    async fn query(&self, sql: &str, values: &[Value<'_>]) -> DbResult<Vec<Row>> {
        let stmt = self
            .0
            .prepare_cached(&dialect::postgres(sql))
            .await
            .map_err(DbError::new)?;
        let rows = self
            .0
            .query(&stmt, &params(values))
            .await
            .map_err(DbError::new)?;
        rows.iter()
            .map(|r| {
                (0..r.len())
                    .map(|i| column(r, i))
                    .collect::<DbResult<Vec<_>>>()
                    .map(Row)
            })
            .collect()
    }

    async fn execute(&self, sql: &str, values: &[Value<'_>]) -> DbResult<u64> {
        let stmt = self
            .0
            .prepare_cached(&dialect::postgres(sql))
            .await
            .map_err(DbError::new)?;
        self.0
            .execute(&stmt, &params(values))
            .await
            .map_err(DbError::new)
    }

    async fn lock(&self, lock: Lock<'_>) -> DbResult<()> {
        match lock {
            Lock::Key(key) => {
                self.execute("SELECT pg_advisory_xact_lock(?1)", &[Value::Int(key)])
                    .await?
            }
            Lock::Named(space, name) => {
                self.execute(
                    "SELECT pg_advisory_xact_lock(CAST(?1 AS INTEGER), hashtext(?2))",
                    &[Value::Int(space.into()), Value::from(name)],
                )
                .await?
            }
        };
        Ok(())
    }

    /// One statement: its `VALUES` rows are scanned, and each lock taken, in the order given.
    async fn lock_all(&self, space: i32, names: &[&str]) -> DbResult<()> {
        if names.is_empty() {
            return Ok(());
        }
        let sql = format!(
            "SELECT pg_advisory_xact_lock(CAST(?1 AS INTEGER), hashtext(CAST(n AS TEXT))) \
             FROM (VALUES {}) AS names(n)",
            value_rows(names.len(), 1, 2)
        );
        let mut values = vec![Value::Int(space.into())];
        values.extend(names.iter().map(|n| Value::from(*n)));
        self.execute(&sql, &values).await.map(|_| ())
    }

    /// Moves the column's sequence past the highest value held, never back (values are not
    /// reused).
    async fn ids_taken(&self, table: &str, column: &str) -> DbResult<()> {
        let sequence = format!("pg_get_serial_sequence('{table}', '{column}')");
        self.execute(
            &format!(
                "SELECT setval({sequence}, GREATEST((SELECT COALESCE(MAX({column}), 0) \
                 FROM {table}), nextval({sequence})))"
            ),
            &[],
        )
        .await?;
        Ok(())
    }
}

/// Runs `work` in a transaction on `client`, committing when it returns `Ok`; `snapshot`
/// makes it a read-only repeatable-read one, whose statements all see the same moment.
pub(crate) async fn in_transaction<T, E: From<DbError>>(
    client: &mut Object,
    snapshot: bool,
    work: impl AsyncFnOnce(&Pg<'_, Transaction<'_>>) -> Result<T, E>,
) -> Result<T, E> {
    let tx = if snapshot {
        client
            .build_transaction()
            .isolation_level(tokio_postgres::IsolationLevel::RepeatableRead)
            .read_only(true)
            .start()
            .await
    } else {
        client.transaction().await
    }
    .map_err(DbError::new)?;
    let out = work(&Pg(&tx)).await?;
    tx.commit().await.map_err(DbError::new)?;
    Ok(out)
}
