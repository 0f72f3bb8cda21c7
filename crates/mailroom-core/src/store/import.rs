//! A database the Python reference wrote, copied row for row into a new mailroom database.
//!
//! The reference's tables are mailroom's (`db/migrations/0001_init.sql` keeps them
//! column-compatible), so every row comes over with its id. What differs is handled here:
//! - older releases lack tables and columns later ones added (window identities, summaries,
//!   `topic`, `registration_token`, `retired_at`, `archived_at`): absent tables are reported,
//!   absent columns take their defaults (all nullable);
//! - the reference writes some timestamps through Python's sqlite3 adapter (`T` separator,
//!   no fraction when it is zero, or a `+00:00` offset): they are rewritten in mailroom's one
//!   form, `YYYY-MM-DD HH:MM:SS.ffffff`, which its queries compare as text;
//! - mailroom's full-text index has a project column: it is built anew from the messages;
//! - tables and columns mailroom does not know are refused when they hold data, unless the
//!   caller accepts leaving them behind.

use std::path::Path;

use rusqlite::{Connection, TransactionBehavior};

use super::db::{self, map_err};
use crate::error::{Category, Error, Result};
use crate::model::time::Timestamp;

/// The reference's tables, parents before the rows that name them.
pub const REFERENCE_TABLES: [&str; 11] = [
    "projects",
    "products",
    "product_project_links",
    "agents",
    "messages",
    "message_recipients",
    "file_reservations",
    "agent_links",
    "window_identities",
    "message_summaries",
    "project_sibling_suggestions",
];

/// Tables without which a database is not the reference's.
const REQUIRED_TABLES: [&str; 4] = ["projects", "agents", "messages", "message_recipients"];

/// What [`import_reference_database`] copied.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct DatabaseImport {
    /// Rows copied per table, in [`REFERENCE_TABLES`] order (absent tables left out).
    pub tables: Vec<(String, u64)>,
    /// The reference's tables its release did not have.
    pub absent_tables: Vec<String>,
    /// Timestamps rewritten in mailroom's form.
    pub timestamps_rewritten: u64,
    /// Tables and columns (`table.column`) mailroom does not know that held data, left behind
    /// (only when the caller allowed it).
    pub left_behind: Vec<String>,
}

/// Builds a new mailroom database at `dest` (which must not exist) holding every row of the
/// reference's database `source`. `source` is attached read-write, so it should be a copy
/// of the reference's file (`VACUUM INTO`), never the file a reference server uses.
/// `on_table` hears each table's name and row count as it is copied.
pub fn import_reference_database(
    source: &Path,
    dest: &Path,
    leave_unknown: bool,
    on_table: &mut dyn FnMut(&str, u64),
) -> Result<DatabaseImport> {
    if dest.exists() {
        return Err(Error::internal(format!("{} exists already", dest.display())));
    }
    let mut conn = super::open_connection(dest, false)?;
    db::migrations::migrate(&mut conn)?;
    let source_text = source
        .to_str()
        .ok_or_else(|| Error::invalid("the reference database's path is not UTF-8"))?;
    conn.execute("ATTACH DATABASE ?1 AS reference", [source_text]).map_err(map_err)?;
    let outcome = copy_all(&mut conn, leave_unknown, on_table);
    // Detached whatever happened, so the connection closes cleanly and the WAL is folded in.
    conn.execute("DETACH DATABASE reference", []).map_err(map_err)?;
    conn.close().map_err(|(_, e)| map_err(e))?;
    outcome
}

fn copy_all(
    conn: &mut Connection,
    leave_unknown: bool,
    on_table: &mut dyn FnMut(&str, u64),
) -> Result<DatabaseImport> {
    let mut report = DatabaseImport::default();
    let source_tables = tables(conn, "reference")?;
    check_source(conn, &source_tables)?;
    let unknown = unknown_data(conn, &source_tables)?;
    if !unknown.is_empty() && !leave_unknown {
        return Err(Error::new(
            Category::Conflict,
            "UNKNOWN_REFERENCE_DATA",
            format!(
                "the reference's database holds data mailroom does not know: {}; pass \
                 --leave-unknown to import the rest without it",
                unknown.join(", ")
            ),
        ));
    }
    report.left_behind = unknown;
    check_agent_names(conn)?;
    register_db_timestamp(conn)?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(map_err)?;
    for table in REFERENCE_TABLES {
        if !source_tables.iter().any(|t| t == table) {
            report.absent_tables.push(table.to_owned());
            continue;
        }
        let mine = columns(&tx, "main", table)?;
        let theirs = columns(&tx, "reference", table)?;
        let shared: Vec<String> = (mine.iter())
            .filter(|c| theirs.iter().any(|t| t.name == c.name))
            .map(|c| format!("\"{}\"", c.name))
            .collect();
        let list = shared.join(", ");
        let rows = tx
            .execute(
                &format!(
                    "INSERT INTO main.\"{table}\" ({list}) SELECT {list} FROM reference.\"{table}\" \
                     ORDER BY rowid"
                ),
                [],
            )
            .map_err(|e| copy_error(table, e))?;
        for column in mine.iter().filter(|c| c.is_timestamp) {
            report.timestamps_rewritten += rewrite_timestamps(&tx, table, &column.name)?;
        }
        let rows = u64::try_from(rows).unwrap_or(u64::MAX);
        report.tables.push((table.to_owned(), rows));
        on_table(table, rows);
    }
    super::db::search::index_pending_messages(&db::Db::new(&tx, false))?;
    // The copied recipient rows logged deliveries as they went in; the mailbox event log
    // starts after the import instead, as it starts at its migration on a database that
    // had mail before it (nothing is backfilled).
    tx.execute("DELETE FROM main.mailbox_events", []).map_err(map_err)?;
    tx.commit().map_err(map_err)?;
    Ok(report)
}

/// Refuses what is not a reference database: one lacking its tables, or mailroom's own.
fn check_source(conn: &Connection, source_tables: &[String]) -> Result<()> {
    let missing: Vec<&str> = (REQUIRED_TABLES.iter().copied())
        .filter(|t| !source_tables.iter().any(|s| s == t))
        .collect();
    if !missing.is_empty() {
        return Err(Error::invalid(format!(
            "not a database of the Python reference: no {} table",
            missing.join(", ")
        )));
    }
    let version: i64 =
        conn.query_row("PRAGMA reference.user_version", [], |r| r.get(0)).map_err(map_err)?;
    if version != 0 || source_tables.iter().any(|t| t == "archive_queue") {
        return Err(Error::invalid(
            "this is a mailroom database already: point mailroom at it (DATABASE_URL, \
             STORAGE_ROOT) instead of importing it",
        ));
    }
    Ok(())
}

/// Tables and columns of the source mailroom has no place for, which hold data.
fn unknown_data(conn: &Connection, source_tables: &[String]) -> Result<Vec<String>> {
    let mut unknown = Vec::new();
    for table in source_tables {
        let internal = table.starts_with("sqlite_")
            || table == "fts_messages"
            || table.starts_with("fts_messages_");
        if internal {
            continue;
        }
        if !REFERENCE_TABLES.contains(&table.as_str()) {
            let rows: i64 = conn
                .query_row(&format!("SELECT COUNT(*) FROM reference.\"{table}\""), [], |r| r.get(0))
                .map_err(map_err)?;
            if rows > 0 {
                unknown.push(format!("table {table} ({rows} rows)"));
            }
            continue;
        }
        let mine = columns(conn, "main", table)?;
        for column in columns(conn, "reference", table)? {
            if mine.iter().any(|c| c.name == column.name) {
                continue;
            }
            let used: i64 = conn
                .query_row(
                    &format!(
                        "SELECT COUNT(*) FROM reference.\"{table}\" WHERE \"{}\" IS NOT NULL",
                        column.name
                    ),
                    [],
                    |r| r.get(0),
                )
                .map_err(map_err)?;
            if used > 0 {
                unknown.push(format!("column {table}.{} ({used} values)", column.name));
            }
        }
    }
    Ok(unknown)
}

/// The reference keeps agent names unique per project only case-sensitively in the
/// database; mailroom's index is case-insensitive. Names that differ only in case are
/// refused by name, before anything is written.
fn check_agent_names(conn: &Connection) -> Result<()> {
    let mut statement = conn
        .prepare(
            "SELECT p.slug, group_concat(a.name, ' and ') FROM reference.agents a \
             JOIN reference.projects p ON p.id = a.project_id \
             GROUP BY a.project_id, lower(a.name) HAVING COUNT(*) > 1",
        )
        .map_err(map_err)?;
    let clashes = statement
        .query_map([], |r| Ok(format!("{} in {}", r.get::<_, String>(1)?, r.get::<_, String>(0)?)))
        .and_then(Iterator::collect::<rusqlite::Result<Vec<String>>>)
        .map_err(map_err)?;
    if clashes.is_empty() {
        return Ok(());
    }
    Err(Error::new(
        Category::Conflict,
        "AGENT_NAME_CLASH",
        format!(
            "agent names that differ only in case (mailroom keeps names unique regardless of \
             case): {}; rename one of each pair in the reference first",
            clashes.join("; ")
        ),
    ))
}

/// Registers `mailroom_db_timestamp(text)`: the text as mailroom stores a timestamp
/// (`YYYY-MM-DD HH:MM:SS.ffffff`, UTC) when it reads as ISO-8601 (a `T`, a missing fraction, an
/// offset of any size, `Z`), else the text unchanged.
fn register_db_timestamp(conn: &Connection) -> Result<()> {
    use rusqlite::functions::FunctionFlags;
    let flags = FunctionFlags::SQLITE_UTF8 | FunctionFlags::SQLITE_DETERMINISTIC;
    conn.create_scalar_function("mailroom_db_timestamp", 1, flags, |ctx| {
        let text: String = ctx.get(0)?;
        Ok(Timestamp::parse_iso(&text).map_or(text, Timestamp::to_db))
    })
    .map_err(map_err)
}

/// Rewrites a timestamp column's text into mailroom's one form; how many values changed.
fn rewrite_timestamps(conn: &Connection, table: &str, column: &str) -> Result<u64> {
    let c = format!("\"{column}\"");
    let changed = conn
        .execute(
            &format!(
                "UPDATE main.\"{table}\" SET {c} = mailroom_db_timestamp({c}) \
                 WHERE typeof({c}) = 'text' AND {c} IS NOT mailroom_db_timestamp({c})"
            ),
            [],
        )
        .map_err(map_err)?;
    Ok(u64::try_from(changed).unwrap_or(0))
}

/// A column as `PRAGMA table_info` describes it.
struct Column {
    name: String,
    is_timestamp: bool,
}

fn columns(conn: &Connection, schema: &str, table: &str) -> Result<Vec<Column>> {
    let mut statement =
        conn.prepare(&format!("PRAGMA {schema}.table_info(\"{table}\")")).map_err(map_err)?;
    statement
        .query_map([], |r| {
            let kind: String = r.get(2)?;
            Ok(Column { name: r.get(1)?, is_timestamp: kind.eq_ignore_ascii_case("DATETIME") })
        })
        .and_then(Iterator::collect)
        .map_err(map_err)
}

fn tables(conn: &Connection, schema: &str) -> Result<Vec<String>> {
    let mut statement = conn
        .prepare(&format!("SELECT name FROM {schema}.sqlite_master WHERE type = 'table'"))
        .map_err(map_err)?;
    statement.query_map([], |r| r.get(0)).and_then(Iterator::collect).map_err(map_err)
}

/// A failed copy, named by its table (a constraint the reference did not hold, say).
fn copy_error(table: &str, e: rusqlite::Error) -> Error {
    Error::new(
        Category::Conflict,
        "IMPORT_FAILED",
        format!("cannot copy the reference's {table}: {e}"),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A database shaped like an early release of the reference: fewer tables and columns,
    /// timestamps as Python's sqlite3 adapter writes them, and a table mailroom lacks.
    fn early_reference(path: &Path, extra: &str) {
        let conn = Connection::open(path).expect("open");
        conn.execute_batch(&format!(
            "CREATE TABLE projects (id INTEGER NOT NULL PRIMARY KEY, slug VARCHAR(255) NOT NULL,
                 human_key VARCHAR(255) NOT NULL, created_at DATETIME NOT NULL);
             CREATE TABLE agents (id INTEGER NOT NULL PRIMARY KEY, project_id INTEGER NOT NULL,
                 name VARCHAR(128) NOT NULL, program VARCHAR(128) NOT NULL,
                 model VARCHAR(128) NOT NULL, task_description VARCHAR(2048) NOT NULL,
                 inception_ts DATETIME NOT NULL, last_active_ts DATETIME NOT NULL,
                 attachments_policy VARCHAR(16) NOT NULL, contact_policy VARCHAR(16) NOT NULL);
             CREATE TABLE messages (id INTEGER NOT NULL PRIMARY KEY, project_id INTEGER NOT NULL,
                 sender_id INTEGER NOT NULL, thread_id VARCHAR(128), subject VARCHAR(512) NOT NULL,
                 body_md VARCHAR NOT NULL, importance VARCHAR(16) NOT NULL,
                 ack_required BOOLEAN NOT NULL, created_ts DATETIME NOT NULL,
                 attachments JSON DEFAULT '[]' NOT NULL);
             CREATE TABLE message_recipients (message_id INTEGER NOT NULL,
                 agent_id INTEGER NOT NULL, kind VARCHAR(8) NOT NULL, read_ts DATETIME,
                 ack_ts DATETIME, PRIMARY KEY (message_id, agent_id));
             INSERT INTO projects VALUES (3, 'work-early', '/work/early', '2025-10-01 08:00:00.000000');
             INSERT INTO agents VALUES (7, 3, 'BlueLake', 'claude-code', 'opus', '',
                 '2025-10-01T08:00:01.250000', '2025-10-01T08:00:02', 'auto', 'auto');
             INSERT INTO messages VALUES (41, 3, 7, NULL, 'hello', 'unique-word body', 'normal', 1,
                 '2025-10-01 09:00:00.000000', '[]');
             INSERT INTO message_recipients VALUES (41, 7, 'to', '2025-10-01T09:30:00+00:00',
                 '2025-10-01T11:45:00.5+02:00');
             {extra}"
        ))
        .expect("schema");
    }

    fn import(extra: &str, leave_unknown: bool) -> (tempfile::TempDir, Result<DatabaseImport>) {
        let dir = tempfile::tempdir().expect("temp dir");
        let source = dir.path().join("reference.sqlite3");
        early_reference(&source, extra);
        let dest = dir.path().join("mailroom.sqlite3");
        let outcome = import_reference_database(&source, &dest, leave_unknown, &mut |_, _| {});
        (dir, outcome)
    }

    #[test]
    fn an_early_release_comes_over_with_its_timestamps_in_one_form() {
        let (dir, outcome) = import("", false);
        let report = outcome.expect("imported");
        assert!(report.absent_tables.contains(&"window_identities".to_owned()));
        assert_eq!(report.timestamps_rewritten, 4, "T forms, a missing fraction, offsets");
        let conn = Connection::open(dir.path().join("mailroom.sqlite3")).expect("open");
        let texts: (String, String, String, String) = conn
            .query_row(
                "SELECT a.inception_ts, a.last_active_ts, r.read_ts, r.ack_ts FROM agents a \
                 JOIN message_recipients r ON r.agent_id = a.id",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .expect("row");
        assert_eq!(
            texts,
            (
                "2025-10-01 08:00:01.250000".to_owned(),
                "2025-10-01 08:00:02.000000".to_owned(),
                "2025-10-01 09:30:00.000000".to_owned(),
                "2025-10-01 09:45:00.500000".to_owned()
            ),
            "every form, a +02:00 offset too, is stored as UTC text"
        );
        let found: i64 = conn
            .query_row(
                "SELECT rowid FROM fts_messages WHERE fts_messages MATCH 'unique' \
                 AND project_scope MATCH 'p3'",
                [],
                |r| r.get(0),
            )
            .expect("indexed with its project");
        assert_eq!(found, 41);
        let token: Option<String> = conn
            .query_row("SELECT registration_token FROM agents WHERE id = 7", [], |r| r.get(0))
            .expect("agent");
        assert_eq!(token, None, "a column the release lacked starts empty");
    }

    #[test]
    fn unknown_data_is_refused_unless_left_behind() {
        let extra = "CREATE TABLE alembic_version (version_num TEXT);
                     INSERT INTO alembic_version VALUES ('abc');
                     ALTER TABLE projects ADD COLUMN colour TEXT;
                     UPDATE projects SET colour = 'blue';
                     CREATE TABLE empty_extra (x TEXT);";
        let (dir, refused) = import(extra, false);
        let err = refused.expect_err("refused").to_string();
        assert!(err.contains("table alembic_version (1 rows)"), "{err}");
        assert!(err.contains("column projects.colour (1 values)"), "{err}");
        assert!(!err.contains("empty_extra"), "an empty table loses nothing: {err}");
        assert!(!dir.path().join("mailroom.sqlite3-wal").exists());
        let (_dir, left) = import(extra, true);
        assert_eq!(left.expect("imported").left_behind.len(), 2);
    }

    #[test]
    fn names_that_differ_only_in_case_are_refused_by_name() {
        let extra = "INSERT INTO agents VALUES (8, 3, 'bluelake', 'codex', 'gpt', '',
                         '2025-10-01 08:00:00.000000', '2025-10-01 08:00:00.000000', 'auto', 'auto');";
        let (_dir, refused) = import(extra, false);
        let err = refused.expect_err("refused").to_string();
        assert!(err.contains("BlueLake and bluelake in work-early"), "{err}");
    }

    #[test]
    fn a_mailroom_database_is_refused() {
        let dir = tempfile::tempdir().expect("temp dir");
        let ours = dir.path().join("ours.sqlite3");
        crate::store::create_database(&ours, |_| Ok(())).expect("create");
        let dest = dir.path().join("dest.sqlite3");
        let err = import_reference_database(&ours, &dest, false, &mut |_, _| {})
            .expect_err("refused")
            .to_string();
        assert!(err.contains("mailroom database already"), "{err}");
    }
}
