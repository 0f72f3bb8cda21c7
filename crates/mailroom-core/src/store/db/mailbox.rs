//! Mailbox views on `messages` and `message_recipients`: outboxes and recipient rows with
//! their read/ack state (the MCP resources' mailbox family).

use rusqlite::params;

use super::messages::{COLUMNS, LISTED_COLUMNS, LISTED_JOINS, ReceiptState, listed};
use super::{Db, db_ts, map_err, opt_ts};
use crate::error::Result;
use crate::model::time::Timestamp;
use crate::records::{AgentId, ListedMessage, ProjectId};

/// Filters of a recipient-row listing.
pub struct RecipientQuery {
    pub project_id: ProjectId,
    pub agent_id: AgentId,
    /// Only importance `high` or `urgent`.
    pub urgent_only: bool,
    /// Only rows that still wait for an acknowledgement.
    pub pending_ack_only: bool,
    /// Only messages created at or before this time.
    pub created_until: Option<Timestamp>,
    /// Oldest first instead of newest first.
    pub oldest_first: bool,
    pub limit: i64,
}

impl Db<'_> {
    /// Messages an agent sent in a project, newest first (by id, the creation order).
    pub fn outbox(
        &self,
        project_id: ProjectId,
        sender_id: AgentId,
        since: Option<Timestamp>,
        limit: i64,
    ) -> Result<Vec<ListedMessage>> {
        let sql = format!(
            "SELECT {COLUMNS}, {LISTED_COLUMNS} FROM messages m {LISTED_JOINS}
             WHERE m.project_id = ?1 AND m.sender_id = ?2 AND (?3 IS NULL OR m.created_ts > ?3)
             ORDER BY m.id DESC LIMIT ?4"
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(map_err)?;
        let rows = stmt
            .query_map(params![project_id, sender_id, db_ts(since), limit], |row| {
                listed(row, false)
            })
            .map_err(map_err)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(map_err)
    }

    /// An agent's recipient rows in a project with their read/ack state.
    pub fn recipient_rows(
        &self,
        query: &RecipientQuery,
    ) -> Result<Vec<(ListedMessage, ReceiptState)>> {
        // Two statements rather than a dynamic ORDER BY, so each stays a cached constant.
        let order = if query.oldest_first { "ASC" } else { "DESC" };
        let sql = format!(
            "SELECT {COLUMNS}, {LISTED_COLUMNS}, r.kind, r.read_ts, r.ack_ts
             FROM message_recipients r
             JOIN messages m ON m.id = r.message_id {LISTED_JOINS}
             WHERE r.agent_id = ?1 AND m.project_id = ?2
               AND (?3 = 0 OR m.importance IN ('high', 'urgent'))
               AND (?4 = 0 OR (m.ack_required = 1 AND r.ack_ts IS NULL))
               AND (?5 IS NULL OR m.created_ts <= ?5)
             ORDER BY r.message_id {order} LIMIT ?6"
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(map_err)?;
        let rows = stmt
            .query_map(
                params![
                    query.agent_id,
                    query.project_id,
                    query.urgent_only,
                    query.pending_ack_only,
                    db_ts(query.created_until),
                    query.limit
                ],
                |row| {
                    let receipt =
                        ReceiptState { read_ts: opt_ts(row, 16)?, ack_ts: opt_ts(row, 17)? };
                    Ok((listed(row, true)?, receipt))
                },
            )
            .map_err(map_err)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(map_err)
    }
}
