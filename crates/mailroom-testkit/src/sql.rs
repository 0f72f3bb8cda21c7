//! SQL against a test server's own database, on either backend: SQLite (the file at
//! `database_path`) or PostgreSQL (the test's database, `postgres.url`). Tests use it for rows
//! no tool may write any more (hostile or aged rows) and to count what a call stored.
//!
//! The SQL text is the same for both databases, so it takes no parameters: values are written
//! into it as literals, integers with `format!` and strings with [`sql_quote`]; times in the
//! store's own form come from [`sql_time`]. Keep to what both dialects accept: no
//! `sqlite_sequence`, `rowid`, `INSERT OR …`, `datetime(…)` or `julianday(…)`; booleans are
//! 0/1 integers on both.

use mailroom_core::model::time::Timestamp;

use crate::TestApp;

/// `text` as an SQL string literal: in single quotes, each single quote doubled.
pub fn sql_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "''"))
}

/// The SQL string literal of the moment `seconds` from now (negative: in the past), in the
/// store's form (`YYYY-MM-DD HH:MM:SS.ffffff`).
pub fn sql_time(seconds: i64) -> String {
    sql_quote(&Timestamp::now().plus_seconds(seconds).to_db())
}

/// Which database a server runs on.
enum Target {
    Sqlite(std::path::PathBuf),
    Postgres(String),
}

impl TestApp {
    fn sql_target(&self) -> Target {
        let config = self.core.config();
        match &config.postgres {
            Some(settings) => Target::Postgres(settings.url.clone()),
            None => Target::Sqlite(config.database_path.clone()),
        }
    }

    /// Runs `sql` (one statement, or several separated by `;`) on this server's database and
    /// returns the rows the last statement changed (0 for one that changes none). Panics,
    /// naming the SQL, when the database refuses it.
    pub async fn execute_sql(&self, sql: &str) -> u64 {
        match self.sql_target() {
            Target::Sqlite(path) => {
                let sql = sql.to_owned();
                tokio::task::spawn_blocking(move || {
                    let db = sqlite(&path);
                    db.execute_batch(&sql).unwrap_or_else(|e| panic!("SQLite refused {sql}: {e}"));
                    db.changes()
                })
                .await
                .expect("the SQLite statement ran")
            }
            Target::Postgres(url) => {
                let messages = postgres(&url, sql).await;
                messages
                    .iter()
                    .filter_map(|message| match message {
                        tokio_postgres::SimpleQueryMessage::CommandComplete(rows) => Some(*rows),
                        _ => None,
                    })
                    .last()
                    .unwrap_or(0)
            }
        }
    }

    /// The first column of the first row `sql` returns, as text; `None` when it is NULL.
    /// Panics when the query returns no row.
    pub async fn query_string(&self, sql: &str) -> Option<String> {
        match self.sql_target() {
            Target::Sqlite(path) => {
                let sql = sql.to_owned();
                tokio::task::spawn_blocking(move || {
                    use rusqlite::types::ValueRef;
                    let read = |row: &rusqlite::Row<'_>| {
                        Ok(match row.get_ref(0)? {
                            ValueRef::Null => None,
                            ValueRef::Integer(i) => Some(i.to_string()),
                            ValueRef::Real(f) => Some(f.to_string()),
                            ValueRef::Text(t) | ValueRef::Blob(t) => {
                                Some(String::from_utf8_lossy(t).into_owned())
                            }
                        })
                    };
                    sqlite(&path)
                        .query_row(&sql, [], read)
                        .unwrap_or_else(|e| panic!("SQLite refused {sql}: {e}"))
                })
                .await
                .expect("the SQLite query ran")
            }
            Target::Postgres(url) => {
                let messages = postgres(&url, sql).await;
                let row = messages
                    .iter()
                    .find_map(|message| match message {
                        tokio_postgres::SimpleQueryMessage::Row(row) => Some(row),
                        _ => None,
                    })
                    .unwrap_or_else(|| panic!("no row from {sql}"));
                row.get(0).map(str::to_owned)
            }
        }
    }

    /// The first column of the first row `sql` returns, as an integer (`COUNT(*)`, an id).
    /// Panics when there is no row, or the value is NULL or not an integer.
    pub async fn query_i64(&self, sql: &str) -> i64 {
        let value = self.query_string(sql).await.unwrap_or_else(|| panic!("NULL from {sql}"));
        value.parse().unwrap_or_else(|e| panic!("{value:?} from {sql} is not an integer: {e}"))
    }
}

/// A connection to the SQLite file of a running server, waiting for its writer as long as a
/// loaded machine may need.
fn sqlite(path: &std::path::Path) -> rusqlite::Connection {
    let db = rusqlite::Connection::open(path)
        .unwrap_or_else(|e| panic!("open the database {}: {e}", path.display()));
    db.busy_timeout(std::time::Duration::from_secs(10)).expect("set the busy timeout");
    db
}

/// Runs `sql` over PostgreSQL's simple query protocol (no parameters, several statements
/// allowed, every value as text) on a connection of its own.
async fn postgres(url: &str, sql: &str) -> Vec<tokio_postgres::SimpleQueryMessage> {
    let (client, connection) = tokio_postgres::connect(url, tokio_postgres::NoTls)
        .await
        .unwrap_or_else(|e| panic!("cannot reach the test database at {url}: {e}"));
    let connection = tokio::spawn(connection);
    let messages = client.simple_query(sql).await.unwrap_or_else(|e| match e.as_db_error() {
        Some(db) => panic!("PostgreSQL refused {sql}: {} ({})", db.message(), db.code().code()),
        None => panic!("PostgreSQL refused {sql}: {e}"),
    });
    drop(client);
    let _ = connection.await;
    messages
}
