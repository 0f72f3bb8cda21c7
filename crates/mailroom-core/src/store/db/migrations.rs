//! Append-only schema migrations, tracked with `PRAGMA user_version`.
//!
//! Never edit a shipped migration: add the next one. Each runs in its own transaction.

use rusqlite::Connection;

use super::map_err;
use crate::error::{Error, Result};

/// Migrations in order; index + 1 is the `user_version` after applying it.
const MIGRATIONS: &[&str] = &[
    include_str!("migrations/0001_init.sql"),
    include_str!("migrations/0002_archive_queue.sql"),
    include_str!("migrations/0003_active_reservations_index.sql"),
];

/// Brings the database up to the latest schema.
pub fn migrate(conn: &mut Connection) -> Result<()> {
    let current: usize = conn
        .query_row("PRAGMA user_version", [], |row| row.get::<_, i64>(0))
        .map_err(map_err)?
        .try_into()
        .map_err(|_| Error::internal("negative schema version"))?;
    if current > MIGRATIONS.len() {
        return Err(Error::internal(format!(
            "database schema version {current} is newer than this mailroom ({})",
            MIGRATIONS.len()
        )));
    }
    for (index, sql) in MIGRATIONS.iter().enumerate().skip(current) {
        let tx = conn.transaction().map_err(map_err)?;
        tx.execute_batch(sql).map_err(map_err)?;
        tx.pragma_update(None, "user_version", index as i64 + 1).map_err(map_err)?;
        tx.commit().map_err(map_err)?;
    }
    Ok(())
}
