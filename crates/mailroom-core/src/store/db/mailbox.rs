//! Mailbox views on `messages` and `message_recipients`: outboxes and recipient rows with
//! their read/ack state (the MCP resources' mailbox family), the web UI's inbox pages, read
//! marks and deletions.

use super::Db;
use super::driver::args;
use super::messages::{
    COLUMNS, LISTED_COLUMNS, LISTED_JOINS, ReceiptState, URGENT_IMPORTANCES, listed,
};
use crate::error::Result;
use crate::model::time::Timestamp;
use crate::records::{AgentId, ListedMessage, MessageId, ProjectId};

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

/// Inboxes are counted up to this many messages.
pub const COUNT_CAP: i64 = 10_000;

/// One row of an agent's inbox page: the message, the agent's kind on it and its read time.
#[derive(Debug, Clone)]
pub struct InboxRow {
    pub message: ListedMessage,
    pub read_ts: Option<Timestamp>,
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
        self.query_vec(&sql, args![project_id, sender_id, since, limit], |row| listed(row, false))
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
               AND (?3 = 0 OR m.importance IN {URGENT_IMPORTANCES})
               AND (?4 = 0 OR (m.ack_required = 1 AND r.ack_ts IS NULL))
               AND (?5 IS NULL OR m.created_ts <= ?5)
             ORDER BY r.message_id {order} LIMIT ?6"
        );
        self.query_vec(
            &sql,
            args![
                query.agent_id,
                query.project_id,
                query.urgent_only,
                query.pending_ack_only,
                query.created_until,
                query.limit
            ],
            |row| {
                let receipt = ReceiptState { read_ts: row.get(16)?, ack_ts: row.get(17)? };
                Ok((listed(row, true)?, receipt))
            },
        )
    }

    /// A page of an agent's inbox in a project, newest first, and how many messages the inbox
    /// holds in all, counted up to [`COUNT_CAP`] (`COUNT_CAP + 1` means more).
    pub fn inbox_page(
        &self,
        project_id: ProjectId,
        agent_id: AgentId,
        limit: i64,
        offset: i64,
    ) -> Result<(Vec<InboxRow>, i64)> {
        let sql = format!(
            "SELECT {COLUMNS}, {LISTED_COLUMNS}, r.kind, r.read_ts FROM message_recipients r
             JOIN messages m ON m.id = r.message_id {LISTED_JOINS}
             WHERE r.agent_id = ?1 AND m.project_id = ?2
             ORDER BY r.message_id DESC LIMIT ?3 OFFSET ?4"
        );
        let rows = self.query_vec(&sql, args![agent_id, project_id, limit, offset], |row| {
            Ok(InboxRow { message: listed(row, true)?, read_ts: row.get(16)? })
        })?;
        // Every recipient row of an agent belongs to a message of the agent's project (a
        // message is stored once per project its recipients are in), so the count reads the
        // inbox index alone.
        // Counted up to a cap: an inbox of 100,000 costs a page view 8 ms to count in full.
        let total = self.query_value(
            "SELECT count(*) FROM
               (SELECT 1 FROM message_recipients WHERE agent_id = ?1 LIMIT ?2) capped",
            args![agent_id, COUNT_CAP + 1],
        )?;
        Ok((rows, total))
    }

    /// Marks read, for `agent_id`, those of `ids` it received in the project and had not read;
    /// returns how many it marked.
    pub fn mark_read(
        &self,
        project_id: ProjectId,
        agent_id: AgentId,
        ids: &[MessageId],
        now: Timestamp,
    ) -> Result<usize> {
        let ids =
            format!("[{}]", ids.iter().map(|id| id.0.to_string()).collect::<Vec<_>>().join(","));
        self.execute(
            "UPDATE message_recipients SET read_ts = ?4
             WHERE agent_id = ?2 AND read_ts IS NULL
               AND message_id IN (SELECT CAST(value AS BIGINT) FROM json_each(?3))
               AND message_id IN (SELECT id FROM messages WHERE project_id = ?1)",
            args![project_id, agent_id, ids, now],
        )
    }

    /// Marks read every message `agent_id` received in the project; returns how many.
    pub fn mark_all_read(
        &self,
        project_id: ProjectId,
        agent_id: AgentId,
        now: Timestamp,
    ) -> Result<usize> {
        self.execute(
            "UPDATE message_recipients SET read_ts = ?3
             WHERE agent_id = ?2 AND read_ts IS NULL
               AND message_id IN (SELECT id FROM messages WHERE project_id = ?1)",
            args![project_id, agent_id, now],
        )
    }

    /// Deletes a message and its recipient rows (the full-text index follows by trigger).
    pub fn delete_message(&self, id: MessageId) -> Result<()> {
        for sql in [
            "DELETE FROM message_recipients WHERE message_id = ?1",
            "DELETE FROM messages WHERE id = ?1",
        ] {
            self.execute(sql, args![id])?;
        }
        Ok(())
    }
}
