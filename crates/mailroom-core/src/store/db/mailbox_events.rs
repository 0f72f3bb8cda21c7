//! Queries on `mailbox_events` (migration 0014): the log of what happened to each agent's
//! mailbox, which triggers on `message_recipients` write, and its one-row
//! `mailbox_events_log` (the database's identity, the retention horizon).

use super::driver::args;
use super::messages::{COLUMNS, LISTED_COLUMNS, listed_ref};
use super::{Db, map_err};
use crate::error::Result;
use crate::model::time::Timestamp;
use crate::records::{AgentId, ListedMessage, MailboxEventKind, MessageId, RecipientKind};

/// Where the log stands: the numbers a cursor is checked against.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventLogState {
    /// This database's random identity (set by the migration).
    pub database_id: String,
    /// The newest event id retention removed; events at or before it are gone.
    pub pruned_through: i64,
    /// The newest event id given out (or `pruned_through` when none is left).
    pub newest: i64,
}

/// One event of an agent's mailbox.
#[derive(Debug, Clone)]
pub struct MailboxEvent {
    pub id: i64,
    pub kind: MailboxEventKind,
    pub message_id: MessageId,
    pub ts: Timestamp,
    /// The message as the agent's inbox lists it, for deliveries.
    pub message: Option<ListedMessage>,
}

impl Db<'_> {
    /// The log's identity, horizon and newest id, read together.
    pub fn mailbox_event_log(&self) -> Result<EventLogState> {
        self.query_row(
            "SELECT database_id, pruned_through,
                    coalesce((SELECT max(id) FROM mailbox_events), 0)
             FROM mailbox_events_log WHERE id = 1",
            args![],
            |row| {
                let pruned_through = row.get(1)?;
                Ok(EventLogState {
                    database_id: row.get(0)?,
                    pruned_through,
                    newest: row.get::<i64>(2)?.max(pruned_through),
                })
            },
        )
    }

    /// An agent's events with ids in `after + 1 ..= through`, oldest first, at most `limit`.
    /// Events whose message was deleted since are left out.
    pub fn mailbox_events(
        &self,
        agent_id: AgentId,
        after: i64,
        through: i64,
        limit: i64,
    ) -> Result<Vec<MailboxEvent>> {
        // The listing's columns come first, where `listed_ref` reads them; a sender or project
        // is never missing while its message exists (deletions take the messages first).
        let sql = format!(
            "SELECT {COLUMNS}, {LISTED_COLUMNS}, r.kind, e.id, e.kind, e.message_id, e.ts
             FROM mailbox_events e
             JOIN messages m ON m.id = e.message_id
             JOIN agents s ON s.id = m.sender_id JOIN projects sp ON sp.id = s.project_id
             LEFT JOIN message_recipients r ON r.message_id = e.message_id
                                           AND r.agent_id = e.agent_id
             WHERE e.agent_id = ?1 AND e.id > ?2 AND e.id <= ?3
             ORDER BY e.id LIMIT ?4"
        );
        self.query_vec(&sql, args![agent_id, after, through, limit], |row| {
            let kind: MailboxEventKind = row.get(17)?;
            let message = if kind == MailboxEventKind::Delivered {
                let mut listed = listed_ref(row, false)?.to_owned_text();
                listed.kind = row.get::<Option<RecipientKind>>(15)?;
                Some(listed)
            } else {
                None
            };
            Ok(MailboxEvent {
                id: row.get(16)?,
                kind,
                message_id: row.get(18)?,
                ts: row.get(19)?,
                message,
            })
        })
    }

    /// Removes the oldest events written before `cutoff`, at most `batch` of them, and only
    /// as an unbroken run from the oldest (so the horizon says exactly what is gone);
    /// returns how many it removed.
    pub fn prune_mailbox_events(&self, cutoff: Timestamp, batch: i64) -> Result<usize> {
        // The newest id of the oldest run written before the cutoff: the first event at or
        // after the cutoff stops the run.
        let through: Option<i64> = self
            .query_opt(
                "WITH oldest AS (SELECT id, ts FROM mailbox_events ORDER BY id LIMIT ?2)
                 SELECT max(id) FROM oldest
                 WHERE id < coalesce((SELECT min(id) FROM oldest WHERE ts >= ?1), 9e18)",
                args![cutoff, batch],
                |row| row.get(0),
            )?
            .flatten();
        let Some(through) = through else { return Ok(0) };
        let removed = self.execute("DELETE FROM mailbox_events WHERE id <= ?1", args![through])?;
        self.execute(
            "UPDATE mailbox_events_log
             SET pruned_through = CASE WHEN pruned_through > ?1 THEN pruned_through ELSE ?1 END
             WHERE id = 1",
            args![through],
        )?;
        Ok(removed)
    }

    /// Forgets every event of an agent (its hard deletion: agent ids may be given out again).
    pub fn delete_agent_mailbox_events(&self, agent_id: AgentId) -> Result<usize> {
        self.execute("DELETE FROM mailbox_events WHERE agent_id = ?1", args![agent_id])
    }
}

/// A new random identity in `mailbox_events_log`, when the table exists.
pub(crate) fn renew_identity(conn: &rusqlite::Connection) -> Result<()> {
    if super::has_table(conn, "mailbox_events_log")? {
        conn.execute(
            "UPDATE mailbox_events_log SET database_id = lower(hex(randomblob(8))) WHERE id = 1",
            [],
        )
        .map_err(map_err)?;
    }
    Ok(())
}
