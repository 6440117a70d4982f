//! [`Tx`] over a tokio-postgres transaction or pooled connection: statements are prepared
//! once per connection (deadpool's statement cache), parameters bind to whatever type the
//! server inferred for them, and columns are read by their declared type.

use super::{DbError, DbResult, Lock, Row, Tx, Value, dialect, unnest};
use bytes::BytesMut;
use deadpool_postgres::{GenericClient, Object, Transaction};
use std::borrow::Cow;
use std::sync::atomic::{AtomicBool, Ordering};
use std::task::Poll;
use tokio_postgres::types::{IsNull, Kind, ToSql, Type, to_sql_checked};

/// A transaction (or, for reads, a connection) seen as a [`Tx`].
///
/// Statements issued together (joined futures) are pipelined: each is sent when its future is
/// first polled, without waiting for the answers of those before it, so a group of them costs
/// one round trip. They are sent, and so run, in the order their futures first ran: a
/// statement that must be prepared first holds the others back until it is sent (`sending`).
/// So a lock joined before reads is taken before the reads run.
pub(crate) struct Pg<'c, C> {
    client: &'c C,
    sending: tokio::sync::Mutex<()>,
    /// In a transaction of [`pipelined`], which its work may commit
    /// ([`Tx::commit_with_last`]); whether it did.
    ends_itself: bool,
    committed: AtomicBool,
}

impl<'c, C> Pg<'c, C> {
    pub(crate) fn new(client: &'c C) -> Self {
        Pg {
            client,
            sending: tokio::sync::Mutex::new(()),
            ends_itself: false,
            committed: AtomicBool::new(false),
        }
    }
}

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
            Value::List(items) => list_to_sql(items, ty, out),
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
                | Type::INT8_ARRAY
                | Type::BOOL_ARRAY
                | Type::TEXT_ARRAY
        )
    }

    to_sql_checked!();
}

/// A [`Value::List`] as the array `ty` the statement declares, each item as its member type.
fn list_to_sql(items: &[Value<'_>], ty: &Type, out: &mut BytesMut) -> SqlResult {
    let Kind::Array(member) = ty.kind() else {
        return Err(format!("a list bound to {ty}, which is no array").into());
    };
    /// The items as `T`s (`pick`), nulls as `None`, bound as the array.
    fn bind<'v, T: ToSql>(
        items: &'v [Value<'_>],
        ty: &Type,
        out: &mut BytesMut,
        pick: impl Fn(&'v Value<'_>) -> Option<T>,
    ) -> SqlResult {
        let list = items
            .iter()
            .map(|item| match item {
                Value::Null => Ok(None),
                item => pick(item)
                    .map(Some)
                    .ok_or_else(|| format!("{item:?} in a {ty}")),
            })
            .collect::<Result<Vec<Option<T>>, String>>()?;
        list.to_sql(ty, out)
    }
    match *member {
        Type::INT8 => bind(items, ty, out, |i| match i {
            Value::Int(v) => Some(*v),
            _ => None,
        }),
        Type::BOOL => bind(items, ty, out, |i| match i {
            Value::Bool(v) => Some(*v),
            _ => None,
        }),
        Type::TEXT => bind(items, ty, out, |i| match i {
            Value::Text(v) => Some(v.as_ref()),
            _ => None,
        }),
        _ => Err(format!("lists of {member} are not bound").into()),
    }
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

impl<C: GenericClient> Pg<'_, C> {
    /// Prepares `sql` (once per connection: deadpool's statement cache) and sends it with
    /// `values`, in turn with the other statements of this transaction (see [`Pg`]); the
    /// answer is awaited after the turn is given up.
    async fn send<'a, T, F, Fut>(
        &'a self,
        sql: &str,
        values: &'a [Value<'_>],
        run: F,
    ) -> DbResult<T>
    where
        F: FnOnce(&'a C, tokio_postgres::Statement, Vec<&'a (dyn ToSql + Sync)>) -> Fut,
        Fut: Future<Output = Result<T, tokio_postgres::Error>>,
    {
        let turn = self.sending.lock().await;
        let stmt = self
            .client
            .prepare_cached(&dialect::postgres(sql))
            .await
            .map_err(DbError::new)?;
        let mut answer = std::pin::pin!(run(self.client, stmt, params(values)));
        // tokio-postgres sends a statement when its future is first polled.
        let first = std::future::poll_fn(|cx| Poll::Ready(answer.as_mut().poll(cx))).await;
        drop(turn);
        match first {
            Poll::Ready(answer) => answer,
            Poll::Pending => answer.await,
        }
        .map_err(DbError::new)
    }
}

impl<C: GenericClient> Tx for Pg<'_, C> {
    async fn query(&self, sql: &str, values: &[Value<'_>]) -> DbResult<Vec<Row>> {
        let rows = self
            .send(sql, values, async |client, stmt, params| {
                client.query(&stmt, &params).await
            })
            .await?;
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
        self.send(sql, values, async |client, stmt, params| {
            client.execute(&stmt, &params).await
        })
        .await
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

    /// One statement: the names are scanned, and each lock taken, in the order given.
    async fn lock_all(&self, space: i32, names: &[&str]) -> DbResult<()> {
        if names.is_empty() {
            return Ok(());
        }
        let sql = format!(
            "SELECT pg_advisory_xact_lock(CAST(?1 AS INTEGER), hashtext(n)) FROM {}",
            unnest(&["TEXT"], 2, "names", &["n"])
        );
        let names = names.iter().map(|n| Value::from(*n)).collect();
        let values = [Value::Int(space.into()), Value::List(names)];
        self.execute(&sql, &values).await.map(|_| ())
    }

    /// In a transaction of [`pipelined`]: COMMIT, sent after the statements joined before it
    /// (their round trip is the commit's). Elsewhere the transaction commits when its work
    /// returns.
    async fn commit_with_last(&self) -> DbResult<()> {
        if self.ends_itself {
            self.execute("COMMIT", &[]).await?;
            self.committed.store(true, Ordering::SeqCst);
        }
        Ok(())
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

/// Runs `work` in a transaction on `client`, committing when it returns `Ok`, as
/// [`in_transaction`] does, but without round trips of their own for BEGIN and COMMIT: BEGIN
/// goes with the work's first statements, and COMMIT with its last ones when the work joins
/// [`Tx::commit_with_last`] after them (otherwise it is sent when the work returns). Why: a
/// group of registrations took eight round trips, each waking both processes; it now takes
/// three (benches/RESULTS.md).
///
/// The work's first statements must not write: were BEGIN to fail, they would run outside a
/// transaction (the failure is seen before anything else is sent). When the work fails the
/// transaction is rolled back; a connection left in a state not known (the rollback failed,
/// or the caller left midway) is closed, never returned to the pool.
pub(crate) async fn pipelined<T, E: From<DbError>>(
    client: Object,
    work: impl AsyncFnOnce(&Pg<'_, Object>) -> Result<T, E>,
) -> Result<T, E> {
    let mut held = Held(Some(client));
    let Some(client) = held.0.as_ref() else {
        return Err(DbError("no connection".into()).into());
    };
    let pg = Pg {
        ends_itself: true,
        ..Pg::new(client)
    };
    let begin = async { pg.execute("BEGIN", &[]).await.map_err(E::from) };
    let result = match futures_util::future::try_join(begin, work(&pg)).await {
        Ok((_, out)) if pg.committed.load(Ordering::SeqCst) => Ok(out),
        Ok((_, out)) => pg
            .execute("COMMIT", &[])
            .await
            .map(|_| out)
            .map_err(E::from),
        Err(e) => Err(e),
    };
    if result.is_err() {
        // Whatever state the transaction is in (aborted, ended by a COMMIT that rolled back,
        // still open), this ends it.
        if client.batch_execute("ROLLBACK").await.is_err() {
            return result;
        }
    }
    held.release();
    result
}

/// A pooled connection inside a [`pipelined`] transaction: closed when dropped (PostgreSQL
/// then rolls back what it did), unless released to the pool.
struct Held(Option<Object>);

impl Held {
    fn release(&mut self) {
        self.0.take();
    }
}

impl Drop for Held {
    fn drop(&mut self) {
        if let Some(client) = self.0.take() {
            drop(Object::take(client));
        }
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
    let out = work(&Pg::new(&tx)).await?;
    tx.commit().await.map_err(DbError::new)?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::pg_pool::{PoolOptions, build};
    use std::str::FromStr;
    use std::time::Duration;

    /// A read joined after a lock runs under the lock even when the lock's statement must be
    /// prepared first and the read's is prepared already: without the turns of [`Pg`], the read
    /// would be sent (and run) while the lock's statement is still being prepared.
    #[tokio::test]
    async fn joined_statements_run_in_the_order_they_were_joined() {
        let Ok(url) = std::env::var("COVENANT_TEST_POSTGRES") else {
            println!("COVENANT_TEST_POSTGRES is unset: skipping the statement order test");
            return;
        };
        let config = tokio_postgres::Config::from_str(&url).expect("URL");
        let pool = build(config, PoolOptions::SIDE).expect("pool");
        let table = format!("order_probe_{}", std::process::id());
        let holder = pool.get().await.expect("connection");
        holder
            .batch_execute(&format!("CREATE TABLE {table}(n INTEGER)"))
            .await
            .expect("create");
        let waiter = pool.get().await.expect("connection");
        let pg = Pg::new(&waiter);
        let count = format!("SELECT COUNT(*) FROM {table}");
        let before: i64 = pg
            .query(&count, &[])
            .await
            .expect("count")
            .remove(0)
            .get(0)
            .unwrap();
        assert_eq!(before, 0);

        holder
            .batch_execute(&format!(
                "BEGIN; SELECT pg_advisory_xact_lock(7340033); INSERT INTO {table} VALUES (1)"
            ))
            .await
            .expect("hold the lock");
        let commit = async {
            tokio::time::sleep(Duration::from_millis(300)).await;
            holder.batch_execute("COMMIT").await.expect("commit");
        };
        let lock = pg.execute("SELECT pg_advisory_xact_lock(7340033)", &[]);
        let (_, locked, rows) = tokio::join!(commit, lock, pg.query(&count, &[]));
        locked.expect("lock");
        let after: i64 = rows.expect("count").remove(0).get(0).unwrap();
        assert_eq!(after, 1, "the read ran before the lock was taken");
        holder
            .batch_execute(&format!("DROP TABLE {table}"))
            .await
            .expect("drop");
    }
}
