//! SQL, and nothing but SQL: schema migrations and one query module per family.
//!
//! Every statement goes through `prepare_cached`, so each is compiled once per connection.

pub mod adopt;
pub mod agents;
pub mod archive_queue;
pub mod contacts;
pub mod doctor;
pub mod driver;
pub mod fleet;
pub mod idempotency;
pub mod lifecycle;
pub mod mailbox;
pub mod mailbox_events;
pub mod messages;
pub mod migrations;
pub mod postgres;
mod postgres_tls;
pub mod products;
pub mod projects;
pub mod push;
pub mod reconstruct;
pub mod reservations;
pub mod search;
pub mod sessions;
pub mod siblings;
pub mod upkeep;
pub mod webhooks;
pub mod windows;

use std::cell::Cell;

use rusqlite::Connection;

use crate::error::{Category, Error};

/// A connection inside a transaction (writer) or a read-only connection (reader).
pub struct Db<'c> {
    conn: driver::Conn<'c>,
    /// Whether changes queue archive work (`enqueue_archive`); off when there is no archive.
    archive_enabled: bool,
    /// Archive rows queued by this job, so the writer knows to wake the archive after commit.
    archive_enqueued: Cell<usize>,
    /// Archive rows this job took off the queue (committed to Git or set aside), so other
    /// servers on the database hear of the archive's progress.
    archive_completed: Cell<usize>,
}

impl<'c> Db<'c> {
    pub(crate) fn new(conn: &'c Connection, archive_enabled: bool) -> Self {
        Self::with(driver::Conn::Sqlite(conn), archive_enabled)
    }

    fn with(conn: driver::Conn<'c>, archive_enabled: bool) -> Self {
        Self {
            conn,
            archive_enabled,
            archive_enqueued: Cell::new(0),
            archive_completed: Cell::new(0),
        }
    }

    /// Whether changes queue archive work (the archive is on).
    pub fn archive_enabled(&self) -> bool {
        self.archive_enabled
    }

    /// Archive rows this job queued.
    pub(crate) fn archive_enqueued(&self) -> usize {
        self.archive_enqueued.get()
    }

    /// Archive rows this job took off the queue.
    pub(crate) fn archive_completed(&self) -> usize {
        self.archive_completed.get()
    }

    /// Whether the database has a table called `name` (what migrations and optional tables
    /// ask).
    pub(crate) fn has_table(&self, name: &str) -> crate::error::Result<bool> {
        let sql = match self.dialect() {
            driver::Dialect::Sqlite => {
                "SELECT COUNT(*) > 0 FROM sqlite_master WHERE type = 'table' AND name = ?1"
            }
            driver::Dialect::Postgres => {
                "SELECT COUNT(*) > 0 FROM information_schema.tables
                 WHERE table_schema = current_schema() AND table_name = ?1"
            }
        };
        self.query_value(sql, driver::args![name])
    }

    /// The PostgreSQL database's size in bytes (`pg_database_size`); SQLite's is its file's.
    pub fn database_size(&self) -> crate::error::Result<u64> {
        self.query_value("SELECT pg_database_size(current_database())", driver::args![])
    }

    /// Proves the database answers: reads the file header and a real table, so a missing,
    /// corrupt or unreadable file fails here (`SELECT 1` alone touches no file).
    pub fn ping(&self) -> crate::error::Result<()> {
        let sql = match self.dialect() {
            driver::Dialect::Sqlite => {
                "SELECT (SELECT count(*) FROM sqlite_master), (SELECT id FROM projects LIMIT 1)"
            }
            driver::Dialect::Postgres => "SELECT (SELECT id FROM projects LIMIT 1)",
        };
        self.query_row(sql, driver::args![], |_| Ok(()))
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
    Db::new(conn, false).has_table(name)
}

/// Text-backed enums (`records`) stored as their text; an unknown stored text is an error
/// naming the value.
macro_rules! text_column {
    ($($name:ty),+) => {$(
        impl driver::Param for $name {
            fn value(&self) -> driver::Value<'_> {
                driver::Value::Text(std::borrow::Cow::Borrowed(self.as_str()))
            }
        }

        impl<'r> driver::Column<'r> for $name {
            fn from_cell(cell: driver::Cell<'r>) -> std::result::Result<Self, String> {
                let text = <&str>::from_cell(cell)?;
                Self::parse(text).ok_or_else(|| {
                    format!(concat!("unknown ", stringify!($name), " {:?}"), text)
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
        impl driver::Param for $name {
            fn value(&self) -> driver::Value<'_> {
                driver::Value::Int(self.0)
            }
        }

        impl<'r> driver::Column<'r> for $name {
            fn from_cell(cell: driver::Cell<'r>) -> std::result::Result<Self, String> {
                i64::from_cell(cell).map(Self)
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
        impl<S: AsRef<str>> driver::Param for crate::records::$name<S> {
            fn value(&self) -> driver::Value<'_> {
                driver::Value::Text(std::borrow::Cow::Borrowed(self.0.as_ref()))
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
