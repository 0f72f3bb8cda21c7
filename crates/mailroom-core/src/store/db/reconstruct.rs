//! Inserts that keep the ids an archive recorded, for rebuilding a database from the Git
//! archive (`mailroom archive rebuild --reconstruct-database`).
//!
//! Ids matter there: message files, profiles and agents' memories name messages by id, so a
//! rebuilt database must hand out the same ones. `AUTOINCREMENT` tables move their sequence
//! past every explicit id, so rows created afterwards never reuse one.

use super::Db;
use super::driver::args;
use crate::error::Result;
use crate::model::time::Timestamp;
use crate::records::{AgentId, ProjectId};

/// A project as recovered from the archive.
pub struct RestoredProject<'a> {
    /// The id to keep; `None` lets the database pick one.
    pub id: Option<i64>,
    pub slug: &'a str,
    pub human_key: &'a str,
    pub created_at: Timestamp,
}

/// An agent as recovered from its `profile.json` (or from messages that name it).
pub struct RestoredAgent<'a> {
    /// The id to keep; `None` lets the database pick one.
    pub id: Option<i64>,
    pub project_id: ProjectId,
    pub name: &'a str,
    pub program: &'a str,
    pub model: &'a str,
    pub task_description: &'a str,
    pub inception_ts: Timestamp,
    pub last_active_ts: Timestamp,
    pub attachments_policy: &'a str,
    pub retired_at: Option<Timestamp>,
}

/// A file reservation as recovered from its `file_reservations/id-<id>.json` artifact.
pub struct RestoredReservation<'a> {
    /// The id to keep (the artifact's name and record carry it).
    pub id: i64,
    pub project_id: ProjectId,
    pub agent_id: AgentId,
    pub path_pattern: &'a str,
    pub exclusive: bool,
    pub reason: &'a str,
    pub created_ts: Timestamp,
    pub expires_ts: Timestamp,
    pub released_ts: Option<Timestamp>,
}

impl Db<'_> {
    /// Inserts a project with the given (or a fresh) id; returns the id.
    pub fn insert_restored_project(&self, project: &RestoredProject<'_>) -> Result<ProjectId> {
        self.insert_returning_id(
            "INSERT INTO projects (id, slug, human_key, created_at) VALUES (?1, ?2, ?3, ?4)",
            args![project.id, project.slug, project.human_key, project.created_at],
        )
        .map(ProjectId)
    }

    /// Inserts an agent with the given (or a fresh) id; returns the id. The caller ensures
    /// neither the id nor the name (case-insensitively, per project) is taken. Contact policy
    /// and registration token are not archived: the policy starts at `auto`, and the token is
    /// issued at the next registration.
    pub fn insert_restored_agent(&self, agent: &RestoredAgent<'_>) -> Result<AgentId> {
        self.insert_returning_id(
            "INSERT INTO agents (id, project_id, name, program, model, task_description,
                 inception_ts, last_active_ts, attachments_policy, contact_policy, retired_at)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 'auto', ?10)",
            args![
                agent.id,
                agent.project_id,
                agent.name,
                agent.program,
                agent.model,
                agent.task_description,
                agent.inception_ts,
                agent.last_active_ts,
                agent.attachments_policy,
                agent.retired_at,
            ],
        )
        .map(AgentId)
    }

    /// Inserts a reservation with its archived id.
    pub fn insert_restored_reservation(&self, r: &RestoredReservation<'_>) -> Result<()> {
        self.execute(
            "INSERT INTO file_reservations (id, project_id, agent_id, path_pattern,
                 \"exclusive\", reason, created_ts, expires_ts, released_ts)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            args![
                r.id,
                r.project_id,
                r.agent_id,
                r.path_pattern,
                r.exclusive,
                r.reason,
                r.created_ts,
                r.expires_ts,
                r.released_ts,
            ],
        )?;
        Ok(())
    }
}
