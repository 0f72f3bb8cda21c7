//! Queries behind the web UI's fleet-wide views: the newest messages of every project, a
//! project's newest messages, its messages with attachments and who writes to whom.

use std::collections::HashMap;

use super::Db;
use super::driver::{Row, args};
use super::messages::{COLUMNS, LISTED_COLUMNS, LISTED_JOINS, listed};
use crate::error::Result;
use crate::model::time::Timestamp;
use crate::records::{Importance, ListedMessage, MessageId, ProjectId};

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

/// How much of a body the fleet view reads (an excerpt is cut from it).
pub const OPENING_CHARS: i64 = 400;

fn fleet_row(row: &Row<'_>) -> Result<FleetRow> {
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
        created_ts: row.get(9)?,
        recipients: Vec::new(),
    })
}

impl Db<'_> {
    /// The newest `limit` messages of every project (ids follow creation order), of one
    /// importance when given, each with its recipients.
    pub fn fleet_messages(&self, limit: i64, importance: Option<&str>) -> Result<Vec<FleetRow>> {
        let mut messages = self.query_vec(
            "SELECT m.id, p.slug, p.human_key, s.name, m.subject, substr(m.body_md, 1, ?2),
                        m.importance, m.ack_required, m.thread_id, m.created_ts
                 FROM messages m JOIN projects p ON p.id = m.project_id
                 JOIN agents s ON s.id = m.sender_id
                 WHERE (?3 IS NULL OR m.importance = ?3 COLLATE NOCASE)
                 ORDER BY m.id DESC LIMIT ?1",
            args![limit, OPENING_CHARS, importance],
            fleet_row,
        )?;
        let (Some(newest), Some(oldest)) = (messages.first(), messages.last()) else {
            return Ok(messages);
        };
        // The page is the id range [oldest, newest] whole, so one range scan finds every
        // recipient.
        let (low, high) = (oldest.id, newest.id);
        let index: HashMap<MessageId, usize> =
            messages.iter().enumerate().map(|(i, row)| (row.id, i)).collect();
        self.query_each(
            "SELECT r.message_id, a.name FROM message_recipients r
             JOIN agents a ON a.id = r.agent_id
             WHERE r.message_id BETWEEN ?1 AND ?2",
            args![low, high],
            |row| {
                if let Some(&i) = index.get(&row.get::<MessageId>(0)?) {
                    messages[i].recipients.push(row.get(1)?);
                }
                Ok(())
            },
        )?;
        for row in &mut messages {
            row.recipients.sort();
        }
        Ok(messages)
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
             WHERE m.project_id = ?1 AND (?3 = 0 OR m.attachments NOT IN ('', '[]'))
             ORDER BY m.id DESC LIMIT ?2"
        );
        self.query_vec(&sql, args![project_id, limit, with_attachments], |row| listed(row, false))
    }

    /// Who wrote to whom in a project: (sender, recipient, messages), most messages first.
    pub fn message_network(&self, project_id: ProjectId) -> Result<Vec<(String, String, i64)>> {
        self.query_vec(
            "SELECT s.name, a.name, count(*) AS n FROM messages m
                 JOIN agents s ON s.id = m.sender_id
                 JOIN message_recipients r ON r.message_id = m.id
                 JOIN agents a ON a.id = r.agent_id
                 WHERE m.project_id = ?1
                 GROUP BY s.name, a.name ORDER BY n DESC, s.name, a.name",
            args![project_id],
            |row| Ok((row.get(0)?, row.get(1)?, row.get(2)?)),
        )
    }
}
