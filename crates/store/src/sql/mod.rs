//! The SQL the side stores (governance, samples, profiles, exporters, DEKs) run, written once
//! for both backends, and the small layer that carries it to SQLite or PostgreSQL.
//!
//! An operation is an `async fn` over a [`Tx`]: it runs its statements with [`Value`]
//! parameters and maps the [`Row`]s it gets back. Statements are written in one portable
//! spelling ([`dialect`]): numbered `?N` placeholders, PostgreSQL's types and functions
//! (`BIGINT`, `BIGSERIAL`, `LEAST`, `GREATEST`), `COLLATE "C"` where PostgreSQL must order
//! text bytewise as SQLite does, and `FOR UPDATE` where a write locks the row it read. Each
//! backend translates that spelling for its engine.
//!
//! What differs beyond spelling is in the backends' [`Tx`] implementations:
//! - SQLite ([`sqlite::Lite`]) runs on a blocking thread inside the store's immediate (or
//!   shared, group-committed) write transaction, which already serializes every write: its
//!   [`Tx::lock`] does nothing. Its futures never wait; [`ready`] drives them in place.
//! - PostgreSQL ([`postgres::Pg`]) awaits tokio-postgres on a pooled connection; concurrent
//!   servers serialize check-then-write operations with transaction-scoped advisory locks
//!   ([`Tx::lock`]) and row locks (`FOR UPDATE`), and explicit ids move the table's sequence
//!   ([`Tx::ids_taken`]).

pub(crate) mod audit;
pub(crate) mod dialect;
pub(crate) mod postgres;
pub(crate) mod sqlite;

use std::borrow::Cow;
use std::future::Future;
use std::task::{Context, Poll, Waker};

/// A failure of the database or of a row's shape; stores report it as their `Backend` error.
#[derive(Debug)]
pub(crate) struct DbError(pub(crate) String);

impl DbError {
    pub(crate) fn new(e: impl std::fmt::Display) -> DbError {
        DbError(e.to_string())
    }
}

impl std::fmt::Display for DbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl From<DbError> for crate::StoreError {
    fn from(e: DbError) -> crate::StoreError {
        crate::StoreError::Backend(e.0)
    }
}

impl From<DbError> for crate::governance::GovernanceError {
    fn from(e: DbError) -> crate::governance::GovernanceError {
        crate::governance::GovernanceError::Backend(e.0)
    }
}

pub(crate) type DbResult<T> = Result<T, DbError>;

/// A statement parameter, or a column of a row read back.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Value<'a> {
    Null,
    Int(i64),
    /// SQLite stores it as 0 or 1, PostgreSQL as `BOOLEAN`.
    Bool(bool),
    Text(Cow<'a, str>),
    Bytes(Cow<'a, [u8]>),
    /// A list of scalars bound as one array parameter (PostgreSQL only, as
    /// `CAST(?n AS TEXT[])` and the like): a statement over a list is one text whatever the
    /// list's length, so it is prepared once per connection (see [`unnest`]).
    List(Vec<Value<'a>>),
}

impl From<i64> for Value<'_> {
    fn from(v: i64) -> Self {
        Value::Int(v)
    }
}

impl From<&i64> for Value<'_> {
    fn from(v: &i64) -> Self {
        Value::Int(*v)
    }
}

impl From<bool> for Value<'_> {
    fn from(v: bool) -> Self {
        Value::Bool(v)
    }
}

impl<'a> From<&'a str> for Value<'a> {
    fn from(v: &'a str) -> Self {
        Value::Text(Cow::Borrowed(v))
    }
}

impl<'a> From<&'a String> for Value<'a> {
    fn from(v: &'a String) -> Self {
        Value::Text(Cow::Borrowed(v))
    }
}

impl From<String> for Value<'_> {
    fn from(v: String) -> Self {
        Value::Text(Cow::Owned(v))
    }
}

impl<'a> From<&'a [u8]> for Value<'a> {
    fn from(v: &'a [u8]) -> Self {
        Value::Bytes(Cow::Borrowed(v))
    }
}

impl<'a> From<&'a Vec<u8>> for Value<'a> {
    fn from(v: &'a Vec<u8>) -> Self {
        Value::Bytes(Cow::Borrowed(v))
    }
}

impl<'a, T> From<Option<T>> for Value<'a>
where
    T: Into<Value<'a>>,
{
    fn from(v: Option<T>) -> Self {
        v.map_or(Value::Null, Into::into)
    }
}

impl<'a> From<&'a Option<String>> for Value<'a> {
    fn from(v: &'a Option<String>) -> Self {
        v.as_deref().into()
    }
}

impl From<&Option<i64>> for Value<'_> {
    fn from(v: &Option<i64>) -> Self {
        (*v).into()
    }
}

/// The parameters of a statement: `args![a, b]` is `&[Value::from(a), Value::from(b)]`.
macro_rules! args {
    ($($value:expr),* $(,)?) => {
        &[$($crate::sql::Value::from($value)),*]
    };
}
pub(crate) use args;

/// Implements a store trait once for a backend: each listed method runs the function of the
/// same name in the operations module (the transaction first, then the method's arguments)
/// through the backend's `read`, `read_consistent` or `write`, found on the store itself or
/// on its field `db`. Methods that are not operations follow the list in braces.
macro_rules! store_impl {
    (
        impl $trait:ident for $store:ty, ops $ops:ident, self . $db:ident;
        $( $run:ident fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) -> $ret:ty; )*
        { $($extra:item)* }
    ) => {
        #[async_trait::async_trait]
        impl $trait for $store {
            $(
                async fn $name(&self, $($arg: $ty),*) -> $ret {
                    self.$db.$run(async |tx| $ops::$name(tx, $($arg),*).await).await
                }
            )*
            $($extra)*
        }
    };
    (
        impl $trait:ident for $store:ty, ops $ops:ident, self;
        $( $run:ident fn $name:ident ( $($arg:ident : $ty:ty),* $(,)? ) -> $ret:ty; )*
        { $($extra:item)* }
    ) => {
        #[async_trait::async_trait]
        impl $trait for $store {
            $(
                async fn $name(&self, $($arg: $ty),*) -> $ret {
                    self.$run(async |tx| $ops::$name(tx, $($arg),*).await).await
                }
            )*
            $($extra)*
        }
    };
}
pub(crate) use store_impl;

/// A column's value converted to a Rust type, taking it out of its row.
pub(crate) trait FromValue: Sized {
    fn from_value(value: Value<'static>) -> DbResult<Self>;
}

fn shape(wanted: &str, got: &Value<'_>) -> DbError {
    DbError(format!("expected {wanted}, the column holds {got:?}"))
}

impl FromValue for i64 {
    fn from_value(value: Value<'static>) -> DbResult<Self> {
        match value {
            Value::Int(v) => Ok(v),
            other => Err(shape("an integer", &other)),
        }
    }
}

impl FromValue for bool {
    fn from_value(value: Value<'static>) -> DbResult<Self> {
        match value {
            Value::Bool(v) => Ok(v),
            Value::Int(v) => Ok(v != 0),
            other => Err(shape("a boolean", &other)),
        }
    }
}

impl FromValue for String {
    fn from_value(value: Value<'static>) -> DbResult<Self> {
        match value {
            Value::Text(v) => Ok(v.into_owned()),
            other => Err(shape("text", &other)),
        }
    }
}

impl FromValue for Vec<u8> {
    fn from_value(value: Value<'static>) -> DbResult<Self> {
        match value {
            Value::Bytes(v) => Ok(v.into_owned()),
            other => Err(shape("bytes", &other)),
        }
    }
}

impl<T: FromValue> FromValue for Option<T> {
    fn from_value(value: Value<'static>) -> DbResult<Self> {
        match value {
            Value::Null => Ok(None),
            other => T::from_value(other).map(Some),
        }
    }
}

/// One row of a result, its columns in the statement's order. Reading a column takes its
/// value out (no copy), so each column is read once.
#[derive(Debug)]
pub(crate) struct Row(pub(crate) Vec<Value<'static>>);

impl Row {
    /// Column `index` as `T`.
    pub(crate) fn get<T: FromValue>(&mut self, index: usize) -> DbResult<T> {
        match self.0.get_mut(index) {
            Some(value) => T::from_value(std::mem::replace(value, Value::Null)),
            None => Err(DbError(format!("the row has no column {index}"))),
        }
    }
}

/// The placeholders of a multi-row `VALUES` list: `rows` rows of `columns` each, numbered
/// from `first` (`(?3, ?4), (?5, ?6)` for 2, 2, 3). One statement for a group's rows costs the
/// server one parse, plan and lock of the table instead of one per row.
pub(crate) fn value_rows(rows: usize, columns: usize, first: usize) -> String {
    let row = |r: usize| format!("({})", value_list(columns, first + r * columns));
    (0..rows).map(row).collect::<Vec<_>>().join(", ")
}

/// PostgreSQL: the rows of `columns` lists bound from parameter `first` on (each list one
/// column, cast to its type in `types`), as a `FROM` item named `alias(names)`: `unnest(CAST(?2
/// AS TEXT[]), CAST(?3 AS BIGINT[])) AS t(s, v)`. Rows come in the lists' order.
///
/// Why not [`value_rows`]: a statement's text then depends on how many rows it has, and each
/// text is prepared (parsed and planned, a round trip) on each connection the first time it
/// runs there. Groups of registrations of every size made that most of a group's time (1.2 ms
/// a statement, about three a group, in `store_timing` at 32 writers).
pub(crate) fn unnest(types: &[&str], first: usize, alias: &str, names: &[&str]) -> String {
    let lists: Vec<String> = types
        .iter()
        .enumerate()
        .map(|(i, ty)| format!("CAST(?{} AS {ty}[])", first + i))
        .collect();
    format!(
        "unnest({}) AS {alias}({})",
        lists.join(", "),
        names.join(", ")
    )
}

/// `values`, laid out row after row of `columns` each, as one [`Value::List`] per column (for
/// [`unnest`]).
pub(crate) fn columns_of(values: Vec<Value<'_>>, columns: usize) -> Vec<Value<'_>> {
    let mut lists: Vec<Vec<Value<'_>>> = (0..columns)
        .map(|_| Vec::with_capacity(values.len() / columns.max(1)))
        .collect();
    for (i, value) in values.into_iter().enumerate() {
        lists[i % columns].push(value);
    }
    lists.into_iter().map(Value::List).collect()
}

/// `n` placeholders numbered from `first`: `?3, ?4, ?5` for 3, 3.
pub(crate) fn value_list(n: usize, first: usize) -> String {
    (first..first + n)
        .map(|i| format!("?{i}"))
        .collect::<Vec<_>>()
        .join(", ")
}

/// An advisory lock a check-then-write operation takes on PostgreSQL until its transaction
/// ends: one key, or a namespace and a name (hashed by the server).
#[derive(Debug, Clone, Copy)]
pub(crate) enum Lock<'a> {
    Key(i64),
    Named(i32, &'a str),
}

/// A transaction (or, for reads, a connection) statements run in.
pub(crate) trait Tx {
    /// Runs `sql` (portable spelling) and returns every row.
    fn query(&self, sql: &str, params: &[Value<'_>]) -> impl Future<Output = DbResult<Vec<Row>>>;

    /// Runs `sql` (portable spelling) and returns the number of rows it changed.
    fn execute(&self, sql: &str, params: &[Value<'_>]) -> impl Future<Output = DbResult<u64>>;

    /// Holds `lock` until the transaction ends, where concurrent writers need it.
    fn lock(&self, lock: Lock<'_>) -> impl Future<Output = DbResult<()>>;

    /// Holds the lock of each of `names` in namespace `space`, taken in the order given, until
    /// the transaction ends: [`Tx::lock`] for each, one after another, unless the backend can
    /// take them all in one statement.
    fn lock_all(&self, space: i32, names: &[&str]) -> impl Future<Output = DbResult<()>> {
        async move {
            for name in names {
                self.lock(Lock::Named(space, name)).await?;
            }
            Ok(())
        }
    }

    /// Commits now where the transaction lets its work end it (PostgreSQL's
    /// `sql::postgres::pipelined`): joined after the work's last statements, the commit goes
    /// with them. Elsewhere nothing: the transaction commits when its work returns.
    fn commit_with_last(&self) -> impl Future<Output = DbResult<()>> {
        async { Ok(()) }
    }

    /// After rows were inserted into `table` with explicit values of its generated `column`:
    /// makes later generated values pass them.
    fn ids_taken(&self, table: &str, column: &str) -> impl Future<Output = DbResult<()>>;

    /// The first row, if any.
    fn query_opt(
        &self,
        sql: &str,
        params: &[Value<'_>],
    ) -> impl Future<Output = DbResult<Option<Row>>> {
        async move { Ok(self.query(sql, params).await?.into_iter().next()) }
    }

    /// The first row, which must exist.
    fn query_one(&self, sql: &str, params: &[Value<'_>]) -> impl Future<Output = DbResult<Row>> {
        async move {
            self.query_opt(sql, params)
                .await?
                .ok_or_else(|| DbError("the statement returned no row".to_string()))
        }
    }

    /// Column 0 of the first row, if any.
    fn value_opt<T: FromValue>(
        &self,
        sql: &str,
        params: &[Value<'_>],
    ) -> impl Future<Output = DbResult<Option<T>>> {
        async move {
            self.query_opt(sql, params)
                .await?
                .map(|mut r| r.get(0))
                .transpose()
        }
    }

    /// Column 0 of the first row, which must exist.
    fn value<T: FromValue>(
        &self,
        sql: &str,
        params: &[Value<'_>],
    ) -> impl Future<Output = DbResult<T>> {
        async move { self.query_one(sql, params).await?.get(0) }
    }
}

/// Drives a future that never waits: SQLite work, whose [`Tx`] answers at once, run to its end
/// on the blocking thread that holds the connection.
pub(crate) fn ready<F: Future>(work: F) -> F::Output {
    let mut work = std::pin::pin!(work);
    match work.as_mut().poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(out) => out,
        Poll::Pending => unreachable!("SQLite work waited on something other than SQLite"),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn lists_bind_a_column_each_in_one_text_whatever_their_length() {
        assert_eq!(
            unnest(&["TEXT", "BIGINT"], 2, "t", &["s", "v"]),
            "unnest(CAST(?2 AS TEXT[]), CAST(?3 AS BIGINT[])) AS t(s, v)"
        );
        let rows = vec![
            Value::from("a"),
            Value::Int(1),
            Value::from("b"),
            Value::Int(2),
        ];
        assert_eq!(
            columns_of(rows, 2),
            [
                Value::List(vec![Value::from("a"), Value::from("b")]),
                Value::List(vec![Value::Int(1), Value::Int(2)]),
            ]
        );
    }

    use super::{Value, columns_of, unnest, value_list, value_rows};

    #[test]
    fn value_rows_number_each_cell_once_from_the_first() {
        assert_eq!(value_rows(2, 2, 3), "(?3, ?4), (?5, ?6)");
        assert_eq!(value_rows(1, 3, 1), "(?1, ?2, ?3)");
        assert_eq!(value_rows(0, 3, 1), "");
        assert_eq!(value_list(3, 3), "?3, ?4, ?5");
        assert_eq!(value_list(0, 1), "");
    }
}
