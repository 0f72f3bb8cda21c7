//! SQL, and nothing but SQL: schema migrations and one query module per family.
//!
//! Every statement goes through `prepare_cached`, so each is compiled once per connection.

pub mod adopt;
pub mod agents;
pub mod archive_queue;
pub mod contacts;
pub mod doctor;
pub mod fleet;
pub mod idempotency;
pub mod lifecycle;
pub mod mailbox;
pub mod mailbox_events;
pub mod messages;
pub mod migrations;
pub mod products;
pub mod projects;
pub mod push;
pub mod reconstruct;
pub mod reservations;
pub mod search;
pub mod siblings;
pub mod upkeep;
pub mod webhooks;
pub mod windows;

use std::cell::Cell;

use rusqlite::{Connection, Row};

use crate::error::{Category, Error};
use crate::model::time::Timestamp;

/// A connection inside a transaction (writer) or a read-only connection (reader).
pub struct Db<'c> {
    conn: &'c Connection,
    /// Whether changes queue archive work (`enqueue_archive`); off when there is no archive.
    archive_enabled: bool,
    /// Archive rows queued by this job, so the writer knows to wake the archive after commit.
    archive_enqueued: Cell<usize>,
}

impl<'c> Db<'c> {
    pub(crate) fn new(conn: &'c Connection, archive_enabled: bool) -> Self {
        Self { conn, archive_enabled, archive_enqueued: Cell::new(0) }
    }

    /// Whether changes queue archive work (the archive is on).
    pub fn archive_enabled(&self) -> bool {
        self.archive_enabled
    }

    /// Archive rows this job queued.
    pub(crate) fn archive_enqueued(&self) -> usize {
        self.archive_enqueued.get()
    }

    /// Proves the database answers: reads the file header and a real table, so a missing,
    /// corrupt or unreadable file fails here (`SELECT 1` alone touches no file).
    pub fn ping(&self) -> crate::error::Result<()> {
        self.conn
            .query_row(
                "SELECT (SELECT count(*) FROM sqlite_master), (SELECT id FROM projects LIMIT 1)",
                [],
                |_| Ok(()),
            )
            .map_err(map_err)
    }
}

/// Converts a driver error at the store boundary: busy/locked becomes retryable, a full disk
/// or a read-only database a storage error, the rest internal (details are logged by the
/// transport, never returned).
pub fn map_err(e: rusqlite::Error) -> Error {
    use rusqlite::ErrorCode;
    match e.sqlite_error_code() {
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked) => {
            Error::new(Category::Retryable, "RESOURCE_BUSY", format!("Database is busy: {e}"))
        }
        Some(ErrorCode::DiskFull) => {
            tracing::error!(error = %e, "the database's disk is full");
            Error::storage_full("the database")
        }
        Some(ErrorCode::ReadOnly) => {
            tracing::error!(error = %e, "the database is read-only");
            Error::storage_read_only("the database")
        }
        _ => Error::new(Category::Internal, "DATABASE_ERROR", format!("database error: {e}")),
    }
}

/// Whether the database has a table called `name` (what migrations and optional tables ask).
pub(crate) fn has_table(conn: &rusqlite::Connection, name: &str) -> crate::error::Result<bool> {
    conn.prepare_cached("SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?1")
        .and_then(|mut stmt| stmt.query_row([name], |r| r.get(0)))
        .map_err(map_err)
}

/// Reads a timestamp column written in either of the reference's text forms.
pub(crate) fn ts(row: &Row<'_>, index: usize) -> rusqlite::Result<Timestamp> {
    opt_ts(row, index)?.ok_or(rusqlite::Error::InvalidColumnType(
        index,
        "timestamp".to_string(),
        rusqlite::types::Type::Null,
    ))
}

/// Reads a nullable timestamp column (borrowed: no copy of the text).
pub(crate) fn opt_ts(row: &Row<'_>, index: usize) -> rusqlite::Result<Option<Timestamp>> {
    let text = row.get_ref(index)?.as_str_or_null().map_err(|e| {
        rusqlite::Error::FromSqlConversionFailure(index, rusqlite::types::Type::Text, Box::new(e))
    })?;
    text.map(|t| parse_ts(index, t)).transpose()
}

fn parse_ts(index: usize, text: &str) -> rusqlite::Result<Timestamp> {
    Timestamp::parse_db_clamped(text).ok_or_else(|| {
        rusqlite::Error::FromSqlConversionFailure(
            index,
            rusqlite::types::Type::Text,
            format!("bad timestamp {text:?}").into(),
        )
    })
}

/// Binds an optional timestamp as its database text.
pub(crate) fn db_ts(value: Option<Timestamp>) -> Option<String> {
    value.map(Timestamp::to_db)
}

/// Text-backed enums (`records`) stored as their text; an unknown stored text is an error
/// naming the value.
macro_rules! text_column {
    ($($name:ty),+) => {$(
        impl rusqlite::ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                Ok(rusqlite::types::ToSqlOutput::from(self.as_str()))
            }
        }

        impl rusqlite::types::FromSql for $name {
            fn column_result(
                value: rusqlite::types::ValueRef<'_>,
            ) -> rusqlite::types::FromSqlResult<Self> {
                let text = value.as_str()?;
                Self::parse(text).ok_or_else(|| {
                    let what = concat!("unknown ", stringify!($name));
                    rusqlite::types::FromSqlError::Other(format!("{what} {text:?}").into())
                })
            }
        }
    )+};
}

text_column!(
    crate::records::RecipientKind,
    crate::records::LinkStatus,
    crate::records::ContactPolicy,
    crate::records::MailboxEventKind
);

/// Id newtypes (`records`) stored as their integer.
macro_rules! id_column {
    ($($name:ty),+) => {$(
        impl rusqlite::ToSql for $name {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                self.0.to_sql()
            }
        }

        impl rusqlite::types::FromSql for $name {
            fn column_result(
                value: rusqlite::types::ValueRef<'_>,
            ) -> rusqlite::types::FromSqlResult<Self> {
                i64::column_result(value).map(Self)
            }
        }
    )+};
}

id_column!(
    crate::records::ProjectId,
    crate::records::AgentId,
    crate::records::MessageId,
    crate::records::ReservationId,
    crate::records::ProductId,
    crate::records::WindowId,
    crate::records::LinkId
);

/// Free-text columns kept in a type (`records::Importance`, `records::Attachments`) bind
/// as their text.
macro_rules! text_newtype_column {
    ($($name:ident),+) => {$(
        impl<S: AsRef<str>> rusqlite::ToSql for crate::records::$name<S> {
            fn to_sql(&self) -> rusqlite::Result<rusqlite::types::ToSqlOutput<'_>> {
                Ok(rusqlite::types::ToSqlOutput::from(self.0.as_ref()))
            }
        }
    )+};
}

text_newtype_column!(Importance, Attachments);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::StorageFault;

    /// SQLite's own refusals: a write to a database opened read-only, and a full disk (a
    /// page limit reached), become the storage errors clients see, not internal ones.
    #[test]
    fn read_only_and_full_databases_are_storage_errors() {
        let dir = tempfile::tempdir().expect("dir");
        let path = dir.path().join("db.sqlite3");
        let conn = rusqlite::Connection::open(&path).expect("open");
        conn.execute_batch("CREATE TABLE t (x BLOB)").expect("table");
        let read_only = rusqlite::Connection::open_with_flags(
            &path,
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY,
        )
        .expect("open read-only");
        let error = map_err(read_only.execute("INSERT INTO t VALUES (1)", []).expect_err("ro"));
        assert_eq!(
            (error.category, error.kind),
            (Category::Storage(StorageFault::ReadOnly), "STORAGE_READ_ONLY")
        );
        assert!(error.message.starts_with("storage read-only: the database"), "{error}");
        // `max_page_count` makes SQLite answer exactly as it does when the disk is full.
        conn.pragma_update(None, "max_page_count", 3).expect("cap");
        let full = conn.execute("INSERT INTO t VALUES (zeroblob(100000))", []).expect_err("full");
        let error = map_err(full);
        assert_eq!(
            (error.category, error.kind),
            (Category::Storage(StorageFault::Full), "STORAGE_FULL")
        );
        assert!(error.message.starts_with("storage full: the database cannot grow"), "{error}");
    }
}
