//! Queries on `agents`.

use super::Db;
use super::driver::{Row, args};
use crate::error::Result;
use crate::model::time::Timestamp;
use crate::records::{Agent, AgentId, ContactPolicy, ProjectId};

const COLUMNS: &str = "id, project_id, name, program, model, task_description, inception_ts, \
     last_active_ts, attachments_policy, contact_policy, registration_token, retired_at";

fn agent(row: &Row<'_>) -> Result<Agent> {
    Ok(Agent {
        id: row.get(0)?,
        project_id: row.get(1)?,
        name: row.get(2)?,
        program: row.get(3)?,
        model: row.get(4)?,
        task_description: row.get(5)?,
        inception_ts: row.get(6)?,
        last_active_ts: row.get(7)?,
        attachments_policy: row.get(8)?,
        contact_policy: row.get(9)?,
        registration_token: row.get(10)?,
        retired_at: row.get(11)?,
    })
}

/// Fields of a new agent row.
pub struct NewAgent<'a> {
    pub project_id: ProjectId,
    pub name: &'a str,
    pub program: &'a str,
    pub model: &'a str,
    pub task_description: &'a str,
    pub attachments_policy: &'a str,
    pub registration_token: &'a str,
    pub now: Timestamp,
}

impl Db<'_> {
    /// The agent of this project with this name, compared case-insensitively.
    pub fn agent_by_name(&self, project_id: ProjectId, name: &str) -> Result<Option<Agent>> {
        self.agent_named(COLUMNS, agent, project_id, name)
    }

    /// The id of [`Self::agent_by_name`]'s agent, without reading the rest of its row.
    pub fn agent_id_by_name(&self, project_id: ProjectId, name: &str) -> Result<Option<AgentId>> {
        self.agent_named("id", |row| row.get(0), project_id, name)
    }

    fn agent_named<T>(
        &self,
        columns: &str,
        read: fn(&Row<'_>) -> Result<T>,
        project_id: ProjectId,
        name: &str,
    ) -> Result<Option<T>> {
        let sql = format!(
            "SELECT {columns} FROM agents WHERE project_id = ?1 AND name = ?2 COLLATE NOCASE"
        );
        self.query_opt(&sql, args![project_id, name], read)
    }

    /// The agent with this id.
    pub fn agent_by_id(&self, id: AgentId) -> Result<Option<Agent>> {
        let sql = format!("SELECT {COLUMNS} FROM agents WHERE id = ?1");
        self.query_opt(&sql, args![id], agent)
    }

    /// All agents of a project in id order.
    pub fn agents_of_project(&self, project_id: ProjectId) -> Result<Vec<Agent>> {
        let sql = format!("SELECT {COLUMNS} FROM agents WHERE project_id = ?1 ORDER BY id");
        self.query_vec(&sql, args![project_id], agent)
    }

    /// Every agent id in id order (archive maintenance walks them all).
    pub fn agent_ids(&self) -> Result<Vec<AgentId>> {
        self.query_vec("SELECT id FROM agents ORDER BY id", args![], |r| r.get(0))
    }

    /// Unread recipient rows per agent of a project (across all projects, as the reference).
    pub fn unread_counts(&self, project_id: ProjectId) -> Result<Vec<(AgentId, i64)>> {
        self.query_vec(
            "SELECT a.id, COUNT(r.message_id) FROM agents a
             LEFT JOIN message_recipients r ON r.agent_id = a.id AND r.read_ts IS NULL
             WHERE a.project_id = ?1 GROUP BY a.id",
            args![project_id],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    }

    /// Inserts a new agent; `None` when the name is taken (case-insensitively) in the project.
    pub fn insert_agent(&self, new: &NewAgent<'_>) -> Result<Option<Agent>> {
        let inserted = self.execute(
            "INSERT INTO agents (project_id, name, program, model, task_description,
                 inception_ts, last_active_ts, attachments_policy, contact_policy,
                 registration_token)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7, 'auto', ?8)
             ON CONFLICT DO NOTHING",
            args![
                new.project_id,
                new.name,
                new.program,
                new.model,
                new.task_description,
                new.now,
                new.attachments_policy,
                new.registration_token,
            ],
        )?;
        if inserted == 0 {
            return Ok(None);
        }
        // The row just inserted: the only one of its project with this name, compared as the
        // unique index compares it (an id from the insert is not portable with `DO NOTHING`).
        self.agent_by_name(new.project_id, new.name)
    }

    /// Re-registration: refreshes program, model, task and activity, and gives a token to an
    /// agent created before tokens existed; returns the new row.
    pub fn update_agent_registration(&self, id: AgentId, update: &NewAgent<'_>) -> Result<Agent> {
        self.execute(
            "UPDATE agents SET program = ?2, model = ?3, task_description = ?4,
                 attachments_policy = ?5, last_active_ts = ?6,
                 registration_token = COALESCE(registration_token, ?7)
             WHERE id = ?1",
            args![
                id,
                update.program,
                update.model,
                update.task_description,
                update.attachments_policy,
                update.now,
                update.registration_token,
            ],
        )?;
        self.agent_by_id(id)?.ok_or_else(|| crate::error::Error::internal("agent vanished"))
    }

    /// Marks the agent active now (it sent a message).
    pub fn touch_agent(&self, id: AgentId, now: Timestamp) -> Result<()> {
        self.execute("UPDATE agents SET last_active_ts = ?2 WHERE id = ?1", args![id, now])
            .map(drop)
    }

    /// Sets the agent's contact policy.
    pub fn set_contact_policy(&self, id: AgentId, policy: ContactPolicy) -> Result<()> {
        self.execute("UPDATE agents SET contact_policy = ?2 WHERE id = ?1", args![id, policy])
            .map(drop)
    }
}
