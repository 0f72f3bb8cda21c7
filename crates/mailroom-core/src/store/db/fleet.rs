//! Queries behind the web UI's fleet-wide views: the newest messages of every project, and an
//! agent's inbox a page at a time with its read state.

use std::collections::HashMap;

use rusqlite::{Row, params};

use super::messages::{COLUMNS, LISTED_COLUMNS, LISTED_JOINS, listed};
use super::{Db, map_err, opt_ts, ts};
use crate::error::Result;
use crate::model::time::Timestamp;
use crate::records::{AgentId, Importance, ListedMessage, MessageId, ProjectId};

/// A message as the fleet view lists it: its project, sender, opening text and recipients.
#[derive(Debug, Clone, PartialEq)]
pub struct FleetRow {
    pub id: MessageId,
    pub project_slug: String,
    pub project_human_key: String,
    pub sender: String,
    pub subject: String,
    /// The body's first characters (at most [`OPENING_CHARS`]).
    pub opening: String,
    pub importance: Importance,
    pub ack_required: bool,
    pub thread_id: Option<String>,
    pub created_ts: Timestamp,
    /// Recipient names, every kind, sorted.
    pub recipients: Vec<String>,
}

/// Inboxes are counted up to this many messages.
pub const COUNT_CAP: i64 = 10_000;

/// How much of a body the fleet view reads (an excerpt is cut from it).
pub const OPENING_CHARS: i64 = 400;

fn fleet_row(row: &Row<'_>) -> rusqlite::Result<FleetRow> {
    Ok(FleetRow {
        id: row.get(0)?,
        project_slug: row.get(1)?,
        project_human_key: row.get(2)?,
        sender: row.get(3)?,
        subject: row.get(4)?,
        opening: row.get(5)?,
        importance: Importance(row.get(6)?),
        ack_required: row.get(7)?,
        thread_id: row.get(8)?,
        created_ts: ts(row, 9)?,
        recipients: Vec::new(),
    })
}

/// One row of an agent's inbox page: the message, the agent's kind on it and its read time.
#[derive(Debug, Clone)]
pub struct InboxRow {
    pub message: ListedMessage,
    pub read_ts: Option<Timestamp>,
}

impl Db<'_> {
    /// The newest `limit` messages of every project (ids follow creation order), of one
    /// importance when given, each with its recipients.
    pub fn fleet_messages(&self, limit: i64, importance: Option<&str>) -> Result<Vec<FleetRow>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT m.id, p.slug, p.human_key, s.name, m.subject, substr(m.body_md, 1, ?2),
                        m.importance, m.ack_required, m.thread_id, m.created_ts
                 FROM messages m JOIN projects p ON p.id = m.project_id
                 JOIN agents s ON s.id = m.sender_id
                 WHERE ?3 IS NULL OR m.importance = ?3 COLLATE NOCASE
                 ORDER BY m.id DESC LIMIT ?1",
            )
            .map_err(map_err)?;
        let rows = stmt
            .query_map(params![limit, OPENING_CHARS, importance], fleet_row)
            .map_err(map_err)?;
        let mut messages = rows.collect::<rusqlite::Result<Vec<_>>>().map_err(map_err)?;
        let (Some(newest), Some(oldest)) = (messages.first(), messages.last()) else {
            return Ok(messages);
        };
        // The page is the id range [oldest, newest] whole, so one range scan finds every
        // recipient.
        let (low, high) = (oldest.id, newest.id);
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT r.message_id, a.name FROM message_recipients r
                 JOIN agents a ON a.id = r.agent_id
                 WHERE r.message_id BETWEEN ?1 AND ?2",
            )
            .map_err(map_err)?;
        let pairs = stmt
            .query_map(params![low, high], |row| Ok((row.get::<_, MessageId>(0)?, row.get(1)?)))
            .map_err(map_err)?;
        let index: HashMap<MessageId, usize> =
            messages.iter().enumerate().map(|(i, row)| (row.id, i)).collect();
        for pair in pairs {
            let (id, name): (MessageId, String) = pair.map_err(map_err)?;
            if let Some(&i) = index.get(&id) {
                messages[i].recipients.push(name);
            }
        }
        for row in &mut messages {
            row.recipients.sort();
        }
        Ok(messages)
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
        let mut stmt = self.conn.prepare_cached(&sql).map_err(map_err)?;
        let rows = stmt
            .query_map(params![agent_id, project_id, limit, offset], |row| {
                Ok(InboxRow { message: listed(row, true)?, read_ts: opt_ts(row, 16)? })
            })
            .map_err(map_err)?;
        let rows = rows.collect::<rusqlite::Result<Vec<_>>>().map_err(map_err)?;
        // Every recipient row of an agent belongs to a message of the agent's project (a
        // message is stored once per project its recipients are in), so the count reads the
        // inbox index alone.
        // Counted up to a cap: an inbox of 100,000 costs a page view 8 ms to count in full.
        let total = self
            .conn
            .prepare_cached(
                "SELECT count(*) FROM
                   (SELECT 1 FROM message_recipients WHERE agent_id = ?1 LIMIT ?2)",
            )
            .and_then(|mut stmt| stmt.query_row(params![agent_id, COUNT_CAP + 1], |r| r.get(0)))
            .map_err(map_err)?;
        Ok((rows, total))
    }

    /// The newest messages of a project.
    pub fn project_messages(
        &self,
        project_id: ProjectId,
        limit: i64,
    ) -> Result<Vec<ListedMessage>> {
        self.newest_of_project(project_id, limit, false)
    }

    /// The newest messages of a project that carry attachments.
    pub fn attachment_messages(
        &self,
        project_id: ProjectId,
        limit: i64,
    ) -> Result<Vec<ListedMessage>> {
        self.newest_of_project(project_id, limit, true)
    }

    fn newest_of_project(
        &self,
        project_id: ProjectId,
        limit: i64,
        with_attachments: bool,
    ) -> Result<Vec<ListedMessage>> {
        let sql = format!(
            "SELECT {COLUMNS}, {LISTED_COLUMNS} FROM messages m {LISTED_JOINS}
             WHERE m.project_id = ?1 AND (NOT ?3 OR m.attachments NOT IN ('', '[]'))
             ORDER BY m.id DESC LIMIT ?2"
        );
        let mut stmt = self.conn.prepare_cached(&sql).map_err(map_err)?;
        let rows = stmt
            .query_map(params![project_id, limit, with_attachments], |row| listed(row, false))
            .map_err(map_err)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(map_err)
    }

    /// Who wrote to whom in a project: (sender, recipient, messages), most messages first.
    pub fn message_network(&self, project_id: ProjectId) -> Result<Vec<(String, String, i64)>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT s.name, a.name, count(*) AS n FROM messages m
                 JOIN agents s ON s.id = m.sender_id
                 JOIN message_recipients r ON r.message_id = m.id
                 JOIN agents a ON a.id = r.agent_id
                 WHERE m.project_id = ?1
                 GROUP BY s.name, a.name ORDER BY n DESC, s.name, a.name",
            )
            .map_err(map_err)?;
        let rows = stmt
            .query_map([project_id], |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)))
            .map_err(map_err)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(map_err)
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
        self.conn
            .prepare_cached(
                "UPDATE message_recipients SET read_ts = ?4
                 WHERE agent_id = ?2 AND read_ts IS NULL
                   AND message_id IN (SELECT value FROM json_each(?3))
                   AND message_id IN (SELECT id FROM messages WHERE project_id = ?1)",
            )
            .and_then(|mut stmt| stmt.execute(params![project_id, agent_id, ids, now.to_db()]))
            .map_err(map_err)
    }

    /// Deletes a message and its recipient rows (the full-text index follows by trigger).
    pub fn delete_message(&self, id: MessageId) -> Result<()> {
        for sql in [
            "DELETE FROM message_recipients WHERE message_id = ?1",
            "DELETE FROM messages WHERE id = ?1",
        ] {
            self.conn
                .prepare_cached(sql)
                .and_then(|mut stmt| stmt.execute([id]))
                .map_err(map_err)?;
        }
        Ok(())
    }

    /// Marks read every message `agent_id` received in the project; returns how many.
    pub fn mark_all_read(
        &self,
        project_id: ProjectId,
        agent_id: AgentId,
        now: Timestamp,
    ) -> Result<usize> {
        self.conn
            .prepare_cached(
                "UPDATE message_recipients SET read_ts = ?3
                 WHERE agent_id = ?2 AND read_ts IS NULL
                   AND message_id IN (SELECT id FROM messages WHERE project_id = ?1)",
            )
            .and_then(|mut stmt| stmt.execute(params![project_id, agent_id, now.to_db()]))
            .map_err(map_err)
    }
}
