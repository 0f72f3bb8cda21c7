//! The statement API every query module speaks: run a statement with [`Param`]s and read its
//! rows as [`Cell`]s, whatever database is behind the connection. A query module writes its
//! SQL once; only what one dialect lacks is spelled out per [`Dialect`].
//!
//! Values cross in five shapes (SQLite's storage classes): null, integer, real, text and
//! blob. Booleans are stored as 0/1 integers, timestamps as the reference's text.

use std::borrow::Cow;

use rusqlite::types::{ToSqlOutput, ValueRef};

use super::postgres::{self, PgSession};
use super::{Db, map_err};
use crate::error::{Category, Error, Result};
use crate::model::time::Timestamp;

/// The SQL dialect a statement is written for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Dialect {
    Sqlite,
    Postgres,
}

/// The connection behind a [`Db`].
#[derive(Clone, Copy)]
pub(crate) enum Conn<'c> {
    Sqlite(&'c rusqlite::Connection),
    Postgres(&'c PgSession),
}

/// A value bound to a statement.
#[derive(Debug, Clone, PartialEq)]
pub enum Value<'a> {
    Null,
    Int(i64),
    Real(f64),
    Text(Cow<'a, str>),
    Blob(&'a [u8]),
}

/// Something that binds as one statement parameter.
pub trait Param {
    fn value(&self) -> Value<'_>;
}

/// The parameters of a statement, in order: `args![a, b, c]`.
macro_rules! args {
    ($($arg:expr),* $(,)?) => {
        &[$(&$arg as &dyn $crate::store::db::driver::Param),*][..]
    };
}
pub(crate) use args;

impl Param for Value<'_> {
    fn value(&self) -> Value<'_> {
        match self {
            Value::Text(text) => Value::Text(Cow::Borrowed(text)),
            other => other.clone(),
        }
    }
}

impl<T: Param + ?Sized> Param for &T {
    fn value(&self) -> Value<'_> {
        (**self).value()
    }
}

impl<T: Param> Param for Option<T> {
    fn value(&self) -> Value<'_> {
        self.as_ref().map_or(Value::Null, Param::value)
    }
}

macro_rules! int_param {
    ($($ty:ty),+) => {$(
        impl Param for $ty {
            fn value(&self) -> Value<'_> {
                Value::Int(i64::from(*self))
            }
        }
    )+};
}
int_param!(i64, i32, u32, u16, u8, bool);

impl Param for usize {
    fn value(&self) -> Value<'_> {
        // Counts and limits: nothing here reaches i64::MAX.
        Value::Int(i64::try_from(*self).unwrap_or(i64::MAX))
    }
}

impl Param for u64 {
    fn value(&self) -> Value<'_> {
        Value::Int(i64::try_from(*self).unwrap_or(i64::MAX))
    }
}

impl Param for f64 {
    fn value(&self) -> Value<'_> {
        Value::Real(*self)
    }
}

impl Param for str {
    fn value(&self) -> Value<'_> {
        Value::Text(Cow::Borrowed(self))
    }
}

impl Param for String {
    fn value(&self) -> Value<'_> {
        Value::Text(Cow::Borrowed(self))
    }
}

impl Param for [u8] {
    fn value(&self) -> Value<'_> {
        Value::Blob(self)
    }
}

impl Param for Vec<u8> {
    fn value(&self) -> Value<'_> {
        Value::Blob(self)
    }
}

/// Timestamps bind as the database text of the reference.
impl Param for Timestamp {
    fn value(&self) -> Value<'_> {
        Value::Text(Cow::Owned(self.to_db()))
    }
}

impl rusqlite::ToSql for Value<'_> {
    fn to_sql(&self) -> rusqlite::Result<ToSqlOutput<'_>> {
        Ok(ToSqlOutput::Borrowed(match self {
            Value::Null => ValueRef::Null,
            Value::Int(v) => ValueRef::Integer(*v),
            Value::Real(v) => ValueRef::Real(*v),
            Value::Text(v) => ValueRef::Text(v.as_bytes()),
            Value::Blob(v) => ValueRef::Blob(v),
        }))
    }
}

/// One column of a result row, borrowed from it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Cell<'r> {
    Null,
    Int(i64),
    Real(f64),
    Text(&'r str),
    Blob(&'r [u8]),
}

impl Cell<'_> {
    /// What the cell holds, for errors.
    fn kind(&self) -> &'static str {
        match self {
            Cell::Null => "null",
            Cell::Int(_) => "an integer",
            Cell::Real(_) => "a real",
            Cell::Text(_) => "text",
            Cell::Blob(_) => "a blob",
        }
    }
}

/// A value read from one column: `Err` names what the column held instead.
pub trait Column<'r>: Sized {
    fn from_cell(cell: Cell<'r>) -> std::result::Result<Self, String>;
}

fn unexpected<T>(wanted: &str, cell: Cell<'_>) -> std::result::Result<T, String> {
    Err(format!("expected {wanted}, found {}", cell.kind()))
}

impl<'r> Column<'r> for i64 {
    fn from_cell(cell: Cell<'r>) -> std::result::Result<Self, String> {
        match cell {
            Cell::Int(v) => Ok(v),
            other => unexpected("an integer", other),
        }
    }
}

macro_rules! narrow_int_column {
    ($($ty:ty),+) => {$(
        impl<'r> Column<'r> for $ty {
            fn from_cell(cell: Cell<'r>) -> std::result::Result<Self, String> {
                let wide = i64::from_cell(cell)?;
                <$ty>::try_from(wide).map_err(|_| format!("{wide} is out of range"))
            }
        }
    )+};
}
narrow_int_column!(i32, u32, u64, usize, u16, u8);

impl<'r> Column<'r> for bool {
    fn from_cell(cell: Cell<'r>) -> std::result::Result<Self, String> {
        i64::from_cell(cell).map(|v| v != 0)
    }
}

impl<'r> Column<'r> for f64 {
    fn from_cell(cell: Cell<'r>) -> std::result::Result<Self, String> {
        match cell {
            Cell::Real(v) => Ok(v),
            // SQLite hands back a whole REAL value it stored compactly as an integer.
            #[allow(clippy::cast_precision_loss)]
            Cell::Int(v) => Ok(v as f64),
            other => unexpected("a number", other),
        }
    }
}

impl<'r> Column<'r> for &'r str {
    fn from_cell(cell: Cell<'r>) -> std::result::Result<Self, String> {
        match cell {
            Cell::Text(v) => Ok(v),
            other => unexpected("text", other),
        }
    }
}

impl<'r> Column<'r> for String {
    fn from_cell(cell: Cell<'r>) -> std::result::Result<Self, String> {
        <&str>::from_cell(cell).map(str::to_owned)
    }
}

impl<'r> Column<'r> for Vec<u8> {
    fn from_cell(cell: Cell<'r>) -> std::result::Result<Self, String> {
        match cell {
            Cell::Blob(v) => Ok(v.to_vec()),
            Cell::Text(v) => Ok(v.as_bytes().to_vec()),
            other => unexpected("a blob", other),
        }
    }
}

impl<'r> Column<'r> for Timestamp {
    fn from_cell(cell: Cell<'r>) -> std::result::Result<Self, String> {
        let text = <&str>::from_cell(cell)?;
        Timestamp::parse_db_clamped(text).ok_or_else(|| format!("bad timestamp {text:?}"))
    }
}

impl<'r, T: Column<'r>> Column<'r> for Option<T> {
    fn from_cell(cell: Cell<'r>) -> std::result::Result<Self, String> {
        match cell {
            Cell::Null => Ok(None),
            other => T::from_cell(other).map(Some),
        }
    }
}

/// One row of a result, as a query's reader sees it.
pub struct Row<'r> {
    inner: RowInner<'r>,
}

enum RowInner<'r> {
    Sqlite(&'r rusqlite::Row<'r>),
    Postgres(&'r tokio_postgres::Row),
}

impl<'r> Row<'r> {
    /// The cell at `index` (0-based).
    pub fn cell(&self, index: usize) -> Result<Cell<'r>> {
        match self.inner {
            RowInner::Sqlite(row) => Ok(match row.get_ref(index).map_err(map_err)? {
                ValueRef::Null => Cell::Null,
                ValueRef::Integer(v) => Cell::Int(v),
                ValueRef::Real(v) => Cell::Real(v),
                ValueRef::Text(v) => Cell::Text(
                    std::str::from_utf8(v)
                        .map_err(|e| column_error(index, &format!("text is not UTF-8: {e}")))?,
                ),
                ValueRef::Blob(v) => Cell::Blob(v),
            }),
            RowInner::Postgres(row) => postgres::cell(row, index),
        }
    }

    /// The value of the column at `index`.
    pub fn get<T: Column<'r>>(&self, index: usize) -> Result<T> {
        T::from_cell(self.cell(index)?).map_err(|e| column_error(index, &e))
    }
}

fn column_error(index: usize, message: &str) -> Error {
    Error::new(Category::Internal, "DATABASE_ERROR", format!("column {index}: {message}"))
}

/// The error of a statement that had to return a row and returned none.
fn no_row() -> Error {
    map_err(rusqlite::Error::QueryReturnedNoRows)
}

impl<'c> Db<'c> {
    /// A job's view of a PostgreSQL session.
    pub(crate) fn on_postgres(session: &'c PgSession, archive_enabled: bool) -> Self {
        Self::with(Conn::Postgres(session), archive_enabled)
    }

    /// Rows changed through this connection since it opened (moves with every change).
    pub(crate) fn total_changes(&self) -> u64 {
        match self.conn {
            Conn::Sqlite(conn) => conn.total_changes(),
            Conn::Postgres(session) => session.total_changes(),
        }
    }

    /// Tells the other servers on the PostgreSQL database `payload` (`store/cluster.rs`),
    /// when (and only if) the transaction commits.
    pub(crate) fn notify_others(&self, payload: &str) -> crate::error::Result<()> {
        self.execute("SELECT pg_notify(?1, ?2)", args![super::postgres::CHANNEL, payload]).map(drop)
    }

    /// Whether the connection is gone (PostgreSQL: the server closed it or the network
    /// failed); a SQLite connection never is.
    pub(crate) fn connection_lost(&self) -> bool {
        match self.conn {
            Conn::Sqlite(_) => false,
            Conn::Postgres(session) => session.is_closed(),
        }
    }

    /// Opens the write transaction of a batch. SQLite takes its write lock now (`IMMEDIATE`);
    /// on PostgreSQL every store's writer takes one transaction-scoped advisory lock, so the
    /// batches of several instances run one at a time, as SQLite's do: a job's reads and the
    /// writes it decides on them see no other writer in between.
    pub(crate) fn begin_write(&self) -> Result<()> {
        match self.conn {
            Conn::Sqlite(_) => self.execute("BEGIN IMMEDIATE", args![]).map(drop),
            Conn::Postgres(_) => {
                self.execute("BEGIN", args![])?;
                self.query_row("SELECT pg_advisory_xact_lock(?1)", args![WRITE_LOCK], |_| Ok(()))
            }
        }
    }

    /// Runs `job` in one read-only transaction: one consistent snapshot for all its reads.
    pub(crate) fn read_transaction<R>(&self, job: impl FnOnce(&Db<'_>) -> Result<R>) -> Result<R> {
        let begin = match self.conn {
            Conn::Sqlite(_) => "BEGIN",
            Conn::Postgres(_) => "BEGIN ISOLATION LEVEL REPEATABLE READ, READ ONLY",
        };
        self.execute(begin, args![])?;
        match job(self) {
            Ok(outcome) => self.execute("COMMIT", args![]).map(|_| outcome),
            Err(e) => {
                // The job's own error wins over a failed rollback.
                let _ = self.execute("ROLLBACK", args![]);
                Err(e)
            }
        }
    }
}

/// The key of the advisory lock PostgreSQL writers take (`Db::begin_write`): "mailroom" in
/// ASCII.
const WRITE_LOCK: i64 = 0x6d61_696c_726f_6f6d;

impl Db<'_> {
    /// The dialect of the connection.
    pub fn dialect(&self) -> Dialect {
        match self.conn {
            Conn::Sqlite(_) => Dialect::Sqlite,
            Conn::Postgres(_) => Dialect::Postgres,
        }
    }

    /// Runs a statement that returns no rows; how many rows it changed.
    pub(crate) fn execute(&self, sql: &str, args: &[&dyn Param]) -> Result<usize> {
        match self.conn {
            Conn::Sqlite(conn) => conn
                .prepare_cached(sql)
                .and_then(|mut stmt| stmt.execute(sqlite_params(args)))
                .map_err(map_err),
            Conn::Postgres(session) => session.execute(sql, args),
        }
    }

    /// Runs statements with no parameters and no results, one after the other.
    pub(crate) fn execute_batch(&self, sql: &str) -> Result<()> {
        match self.conn {
            Conn::Sqlite(conn) => conn.execute_batch(sql).map_err(map_err),
            Conn::Postgres(session) => session.execute_batch(sql),
        }
    }

    /// Runs an `INSERT` into a table with an `id` key and returns the new row's id.
    pub(crate) fn insert_returning_id(&self, sql: &str, args: &[&dyn Param]) -> Result<i64> {
        match self.conn {
            Conn::Sqlite(conn) => {
                self.execute(sql, args)?;
                Ok(conn.last_insert_rowid())
            }
            Conn::Postgres(session) => {
                let id = self.query_value(&format!("{sql} RETURNING id"), args)?;
                session.note_changes(1);
                Ok(id)
            }
        }
    }

    /// Visits each row of a query in order; stops at the reader's first error.
    pub(crate) fn query_each(
        &self,
        sql: &str,
        args: &[&dyn Param],
        mut visit: impl FnMut(&Row<'_>) -> Result<()>,
    ) -> Result<()> {
        self.query_find(sql, args, |row| visit(row).map(|()| None::<()>)).map(drop)
    }

    /// Visits the rows of a query in order until `find` returns something; that, or `None`
    /// when no row gave anything (the rows after the one found are not read).
    pub(crate) fn query_find<T>(
        &self,
        sql: &str,
        args: &[&dyn Param],
        mut find: impl FnMut(&Row<'_>) -> Result<Option<T>>,
    ) -> Result<Option<T>> {
        match self.conn {
            Conn::Sqlite(conn) => {
                let mut stmt = conn.prepare_cached(sql).map_err(map_err)?;
                let mut rows = stmt.query(sqlite_params(args)).map_err(map_err)?;
                while let Some(row) = rows.next().map_err(map_err)? {
                    if let Some(found) = find(&Row { inner: RowInner::Sqlite(row) })? {
                        return Ok(Some(found));
                    }
                }
                Ok(None)
            }
            Conn::Postgres(session) => {
                session.query_find(sql, args, |row| find(&Row { inner: RowInner::Postgres(row) }))
            }
        }
    }

    /// The rows of a query, each read by `read`.
    pub(crate) fn query_vec<T>(
        &self,
        sql: &str,
        args: &[&dyn Param],
        mut read: impl FnMut(&Row<'_>) -> Result<T>,
    ) -> Result<Vec<T>> {
        let mut out = Vec::new();
        self.query_each(sql, args, |row| {
            out.push(read(row)?);
            Ok(())
        })?;
        Ok(out)
    }

    /// The first row of a query, read by `read`, if there is one.
    pub(crate) fn query_opt<T>(
        &self,
        sql: &str,
        args: &[&dyn Param],
        read: impl FnOnce(&Row<'_>) -> Result<T>,
    ) -> Result<Option<T>> {
        let mut read = Some(read);
        self.query_find(sql, args, |row| read.take().map(|read| read(row)).transpose())
    }

    /// The first row of a query, which must return one.
    pub(crate) fn query_row<T>(
        &self,
        sql: &str,
        args: &[&dyn Param],
        read: impl FnOnce(&Row<'_>) -> Result<T>,
    ) -> Result<T> {
        self.query_opt(sql, args, read)?.ok_or_else(no_row)
    }

    /// The first column of the first row of a query, which must return one.
    pub(crate) fn query_value<T: for<'r> Column<'r>>(
        &self,
        sql: &str,
        args: &[&dyn Param],
    ) -> Result<T> {
        self.query_row(sql, args, |row| row.get(0))
    }
}

fn sqlite_params<'a>(
    args: &'a [&'a dyn Param],
) -> rusqlite::ParamsFromIter<impl Iterator<Item = Value<'a>>> {
    rusqlite::params_from_iter(args.iter().map(|arg| arg.value()))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn db_with(sql: &str) -> rusqlite::Connection {
        let conn = rusqlite::Connection::open_in_memory().expect("open");
        conn.execute_batch(sql).expect("schema");
        conn
    }

    /// Every parameter shape binds and reads back as what was bound.
    #[test]
    fn values_round_trip() {
        let conn = db_with("CREATE TABLE t (i INTEGER, r REAL, s TEXT, b BLOB, n TEXT)");
        let db = Db::new(&conn, false);
        let text = String::from("hello");
        let blob = vec![0_u8, 1, 2];
        let none: Option<i64> = None;
        let changed = db
            .execute(
                "INSERT INTO t VALUES (?1, ?2, ?3, ?4, ?5)",
                args![42_i64, 1.5, text, blob, none],
            )
            .expect("insert");
        assert_eq!(changed, 1);
        let row = db
            .query_row("SELECT i, r, s, b, n, i > 40 FROM t", args![], |row| {
                Ok((
                    row.get::<i64>(0)?,
                    row.get::<f64>(1)?,
                    row.get::<String>(2)?,
                    row.get::<Vec<u8>>(3)?,
                    row.get::<Option<i64>>(4)?,
                    row.get::<bool>(5)?,
                ))
            })
            .expect("read");
        assert_eq!(row, (42, 1.5, "hello".to_string(), vec![0, 1, 2], None, true));
    }

    /// A column of another shape is an error naming the column and both shapes; no row where
    /// one was required is an error too.
    #[test]
    fn mismatches_are_named() {
        let conn = db_with("CREATE TABLE t (s TEXT); INSERT INTO t VALUES ('x');");
        let db = Db::new(&conn, false);
        let error = db.query_value::<i64>("SELECT s FROM t", args![]).expect_err("text");
        assert!(error.message.contains("column 0: expected an integer, found text"), "{error}");
        let none = db.query_opt("SELECT s FROM t WHERE s = ?1", args!["y"], |r| r.get::<String>(0));
        assert_eq!(none.expect("no row is fine"), None);
        assert!(db.query_value::<String>("SELECT s FROM t WHERE s = 'y'", args![]).is_err());
    }

    /// Ids come back from inserts, in the order rows were inserted.
    #[test]
    fn inserts_return_their_ids() {
        let conn = db_with("CREATE TABLE t (id INTEGER PRIMARY KEY, s TEXT)");
        let db = Db::new(&conn, false);
        let first = db.insert_returning_id("INSERT INTO t (s) VALUES (?1)", args!["a"]);
        let second = db.insert_returning_id("INSERT INTO t (s) VALUES (?1)", args!["b"]);
        assert_eq!((first.expect("a"), second.expect("b")), (1, 2));
    }
}
