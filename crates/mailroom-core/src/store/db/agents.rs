//! Queries on `agents`.

use rusqlite::{OptionalExtension, Row, params};

use super::{Db, map_err, opt_ts, ts};
use crate::error::Result;
use crate::model::time::Timestamp;
use crate::records::{Agent, AgentId, ContactPolicy, ProjectId};

const COLUMNS: &str = "id, project_id, name, program, model, task_description, inception_ts, \
     last_active_ts, attachments_policy, contact_policy, registration_token, retired_at";

fn agent(row: &Row<'_>) -> rusqlite::Result<Agent> {
    Ok(Agent {
        id: row.get(0)?,
        project_id: row.get(1)?,
        name: row.get(2)?,
        program: row.get(3)?,
        model: row.get(4)?,
        task_description: row.get(5)?,
        inception_ts: ts(row, 6)?,
        last_active_ts: ts(row, 7)?,
        attachments_policy: row.get(8)?,
        contact_policy: row.get(9)?,
        registration_token: row.get(10)?,
        retired_at: opt_ts(row, 11)?,
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
        read: fn(&Row<'_>) -> rusqlite::Result<T>,
        project_id: ProjectId,
        name: &str,
    ) -> Result<Option<T>> {
        let sql = format!(
            "SELECT {columns} FROM agents WHERE project_id = ?1 AND name = ?2 COLLATE NOCASE"
        );
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut stmt| stmt.query_row(params![project_id, name], read).optional())
            .map_err(map_err)
    }

    /// The agent with this id.
    pub fn agent_by_id(&self, id: AgentId) -> Result<Option<Agent>> {
        let sql = format!("SELECT {COLUMNS} FROM agents WHERE id = ?1");
        self.conn
            .prepare_cached(&sql)
            .and_then(|mut stmt| stmt.query_row([id], agent).optional())
            .map_err(map_err)
    }

    /// All agents of a project in id order.
    pub fn agents_of_project(&self, project_id: ProjectId) -> Result<Vec<Agent>> {
        let sql = format!("SELECT {COLUMNS} FROM agents WHERE project_id = ?1 ORDER BY id");
        let mut stmt = self.conn.prepare_cached(&sql).map_err(map_err)?;
        let rows = stmt.query_map([project_id], agent).map_err(map_err)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(map_err)
    }

    /// Every agent id in id order (archive maintenance walks them all).
    pub fn agent_ids(&self) -> Result<Vec<AgentId>> {
        let mut stmt =
            self.conn.prepare_cached("SELECT id FROM agents ORDER BY id").map_err(map_err)?;
        let rows = stmt.query_map([], |r| r.get(0)).map_err(map_err)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(map_err)
    }

    /// Unread recipient rows per agent of a project (across all projects, as the reference).
    pub fn unread_counts(&self, project_id: ProjectId) -> Result<Vec<(AgentId, i64)>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT a.id, COUNT(r.message_id) FROM agents a
                 LEFT JOIN message_recipients r ON r.agent_id = a.id AND r.read_ts IS NULL
                 WHERE a.project_id = ?1 GROUP BY a.id",
            )
            .map_err(map_err)?;
        let rows = stmt.query_map([project_id], |r| Ok((r.get(0)?, r.get(1)?))).map_err(map_err)?;
        rows.collect::<rusqlite::Result<Vec<_>>>().map_err(map_err)
    }

    /// Inserts a new agent; `None` when the name is taken (case-insensitively) in the project.
    pub fn insert_agent(&self, new: &NewAgent<'_>) -> Result<Option<Agent>> {
        let inserted = self
            .conn
            .prepare_cached(
                "INSERT INTO agents (project_id, name, program, model, task_description,
                     inception_ts, last_active_ts, attachments_policy, contact_policy,
                     registration_token)
                 VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?6, ?7, 'auto', ?8)
                 ON CONFLICT DO NOTHING",
            )
            .and_then(|mut stmt| {
                stmt.execute(params![
                    new.project_id,
                    new.name,
                    new.program,
                    new.model,
                    new.task_description,
                    new.now.to_db(),
                    new.attachments_policy,
                    new.registration_token,
                ])
            })
            .map_err(map_err)?;
        if inserted == 0 {
            return Ok(None);
        }
        self.agent_by_id(AgentId(self.conn.last_insert_rowid()))
    }

    /// Re-registration: refreshes program, model, task and activity, and gives a token to an
    /// agent created before tokens existed; returns the new row.
    pub fn update_agent_registration(&self, id: AgentId, update: &NewAgent<'_>) -> Result<Agent> {
        self.conn
            .prepare_cached(
                "UPDATE agents SET program = ?2, model = ?3, task_description = ?4,
                     attachments_policy = ?5, last_active_ts = ?6,
                     registration_token = COALESCE(registration_token, ?7)
                 WHERE id = ?1",
            )
            .and_then(|mut stmt| {
                stmt.execute(params![
                    id,
                    update.program,
                    update.model,
                    update.task_description,
                    update.attachments_policy,
                    update.now.to_db(),
                    update.registration_token,
                ])
            })
            .map_err(map_err)?;
        self.agent_by_id(id)?.ok_or_else(|| crate::error::Error::internal("agent vanished"))
    }

    /// Marks the agent active now (it sent a message).
    pub fn touch_agent(&self, id: AgentId, now: Timestamp) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE agents SET last_active_ts = ?2 WHERE id = ?1")
            .and_then(|mut stmt| stmt.execute(params![id, now.to_db()]))
            .map(drop)
            .map_err(map_err)
    }

    /// Sets the agent's contact policy.
    pub fn set_contact_policy(&self, id: AgentId, policy: ContactPolicy) -> Result<()> {
        self.conn
            .prepare_cached("UPDATE agents SET contact_policy = ?2 WHERE id = ?1")
            .and_then(|mut stmt| stmt.execute(params![id, policy]))
            .map(drop)
            .map_err(map_err)
    }
}
