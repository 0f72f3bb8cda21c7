//! Queries of the background upkeep (ops/upkeep): idle agents, projects with reservations to
//! sweep, acknowledgements overdue.

use super::Db;
use super::driver::args;
use crate::error::Result;
use crate::model::time::Timestamp;
use crate::records::{AgentId, MessageId};

/// An agent not retired whose last activity the database knows is before a cutoff.
#[derive(Debug, Clone)]
pub struct IdleAgent {
    pub id: AgentId,
    pub name: String,
    pub project_slug: String,
    pub project_key: String,
    pub last_active_ts: Timestamp,
}

/// A recipient who owes an acknowledgement.
#[derive(Debug, Clone, serde::Serialize)]
pub struct OverdueAck {
    pub message_id: MessageId,
    pub project_slug: String,
    pub subject: String,
    pub sender: String,
    pub recipient: String,
    pub created_ts: Timestamp,
}

impl Db<'_> {
    /// Agents not retired whose `last_active_ts` is before `cutoff`.
    pub fn idle_agents(&self, cutoff: Timestamp) -> Result<Vec<IdleAgent>> {
        self.query_vec(
            "SELECT a.id, a.name, p.slug, p.human_key, a.last_active_ts \
             FROM agents a JOIN projects p ON p.id = a.project_id \
             WHERE a.retired_at IS NULL AND a.last_active_ts < ?1 ORDER BY a.id",
            args![cutoff],
            |row| {
                Ok(IdleAgent {
                    id: row.get(0)?,
                    name: row.get(1)?,
                    project_slug: row.get(2)?,
                    project_key: row.get(3)?,
                    last_active_ts: row.get(4)?,
                })
            },
        )
    }

    /// Retires the agent at `now` if it is still unretired and idle since before `cutoff`
    /// (it may have sent meanwhile); whether it was retired.
    pub fn retire_if_idle(&self, id: AgentId, now: Timestamp, cutoff: Timestamp) -> Result<bool> {
        self.execute(
            "UPDATE agents SET retired_at = ?2 \
             WHERE id = ?1 AND retired_at IS NULL AND last_active_ts < ?3",
            args![id, now, cutoff],
        )
        .map(|changed| changed > 0)
    }

    /// The slugs of the projects holding reservations not yet released.
    pub fn projects_with_open_reservations(&self) -> Result<Vec<String>> {
        self.query_vec(
            "SELECT p.slug FROM projects p WHERE EXISTS (SELECT 1 FROM file_reservations r \
             WHERE r.project_id = p.id AND r.released_ts IS NULL) ORDER BY p.id",
            args![],
            |row| row.get(0),
        )
    }

    /// Acknowledgements asked for before `cutoff` and not given, oldest first, at most `limit`.
    pub fn overdue_acks(&self, cutoff: Timestamp, limit: i64) -> Result<Vec<OverdueAck>> {
        self.query_vec(
            "SELECT m.id, p.slug, m.subject, s.name, a.name, m.created_ts \
             FROM messages m \
             JOIN message_recipients r ON r.message_id = m.id \
             JOIN agents a ON a.id = r.agent_id \
             JOIN agents s ON s.id = m.sender_id \
             JOIN projects p ON p.id = m.project_id \
             WHERE m.ack_required = 1 AND r.ack_ts IS NULL AND m.created_ts < ?1 \
             ORDER BY m.created_ts, m.id, a.name LIMIT ?2",
            args![cutoff, limit],
            |row| {
                Ok(OverdueAck {
                    message_id: row.get(0)?,
                    project_slug: row.get(1)?,
                    subject: row.get(2)?,
                    sender: row.get(3)?,
                    recipient: row.get(4)?,
                    created_ts: row.get(5)?,
                })
            },
        )
    }
}
