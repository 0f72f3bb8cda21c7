//! The queries of `doctor check` (ops/doctor.rs), on a read-only connection.

use rusqlite::OptionalExtension as _;

use super::{Db, map_err};
use crate::error::Result;
use crate::model::time::Timestamp;

/// What the database's own checks found.
#[derive(Debug, Clone)]
pub struct DoctorCounts {
    /// `PRAGMA quick_check`'s first line (`ok` when sound).
    pub integrity: String,
    /// Recipient rows, messages and reservations naming an agent or message that is gone.
    pub orphans: i64,
    pub messages: i64,
    /// Messages in the full-text index, or waiting in `fts_pending` for the writer.
    pub indexed: i64,
    /// Reservations expired but not released.
    pub expired_reservations: i64,
}

impl Db<'_> {
    /// Whether the database holds mailroom's tables.
    pub fn has_mail_tables(&self) -> Result<bool> {
        self.conn
            .query_row(
                "SELECT COUNT(*) = 3 FROM sqlite_master WHERE type = 'table' \
                 AND name IN ('projects', 'agents', 'message_recipients')",
                [],
                |r| r.get(0),
            )
            .map_err(map_err)
    }

    pub fn doctor_counts(&self, now: Timestamp) -> Result<DoctorCounts> {
        let one = |sql: &str| -> Result<i64> {
            self.conn.query_row(sql, [], |r| r.get(0)).map_err(map_err)
        };
        let integrity =
            self.conn.query_row("PRAGMA quick_check", [], |r| r.get(0)).map_err(map_err)?;
        let orphans = one("SELECT (SELECT COUNT(*) FROM message_recipients r \
                     WHERE NOT EXISTS (SELECT 1 FROM agents a WHERE a.id = r.agent_id)) \
             + (SELECT COUNT(*) FROM message_recipients r \
                WHERE NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = r.message_id)) \
             + (SELECT COUNT(*) FROM messages m \
                WHERE NOT EXISTS (SELECT 1 FROM agents a WHERE a.id = m.sender_id)) \
             + (SELECT COUNT(*) FROM file_reservations f \
                WHERE NOT EXISTS (SELECT 1 FROM agents a WHERE a.id = f.agent_id))")?;
        let messages = one("SELECT COUNT(*) FROM messages")?;
        let pending: i64 = self
            .conn
            .query_row("SELECT COUNT(*) FROM fts_pending", [], |r| r.get(0))
            .optional()
            .map_err(map_err)?
            .unwrap_or(0);
        let indexed = one("SELECT COUNT(*) FROM fts_messages")? + pending;
        let expired_reservations = self
            .conn
            .query_row(
                "SELECT COUNT(*) FROM file_reservations WHERE released_ts IS NULL AND expires_ts < ?1",
                [now.to_db()],
                |r| r.get(0),
            )
            .map_err(map_err)?;
        Ok(DoctorCounts { integrity, orphans, messages, indexed, expired_reservations })
    }
}
