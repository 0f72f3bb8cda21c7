//! The lifecycle of an agent (docs/compat/tools.md §3.5–3.7, HEAD only): deregister_agent,
//! retire_agent, unretire_agent (also by id, the web UI's buttons) and hard_delete_agent.

use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::model::time::Timestamp;
use crate::ops::projects::lifecycle::check_confirmation;
use crate::ops::{Mailroom, resolve};
use crate::records::AgentId;
use crate::store::db::archive_queue::ArchiveKind;
use crate::store::db::lifecycle::AgentDeletion;

/// Result of deregister_agent, retire_agent and unretire_agent.
#[derive(Debug, Clone, Serialize)]
pub struct AgentStatus {
    pub status: &'static str,
    pub agent_name: String,
    pub project_key: String,
}

/// `deleted_counts` of hard_delete_agent.
#[derive(Debug, Clone, Serialize)]
pub struct AgentCounts {
    /// The rows removed, per table.
    #[serde(flatten)]
    pub rows: AgentDeletion,
    pub archive_files_removed: usize,
    pub archive_dirs_removed: usize,
}

/// Result of hard_delete_agent.
#[derive(Debug, Clone, Serialize)]
pub struct AgentDeleted {
    pub status: &'static str,
    pub agent_name: String,
    pub project_key: String,
    pub deleted_counts: AgentCounts,
    pub filesystem_errors: Vec<String>,
}

/// The lifecycle changes of an agent's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AgentChange {
    Deregister,
    Retire,
    Unretire,
}

impl Mailroom {
    /// Deregisters, retires or unretires an agent; the profile in the archive follows.
    pub async fn change_agent(
        &self,
        project_key: String,
        agent_name: String,
        change: AgentChange,
    ) -> Result<AgentStatus> {
        self.admit_archive_work().await?;
        self.store
            .write(move |db| {
                let project = resolve::project(db, &project_key)?;
                let agent = resolve::agent(db, &project, &agent_name, "agent_name")?;
                let now = Timestamp::now();
                let status = match change {
                    AgentChange::Deregister => {
                        let task = deregistered_task(&agent.task_description, now);
                        db.deregister_agent(agent.id, &task)?;
                        "deregistered"
                    }
                    AgentChange::Retire => {
                        db.set_agent_retired(agent.id, Some(now))?;
                        "retired"
                    }
                    AgentChange::Unretire => {
                        db.set_agent_retired(agent.id, None)?;
                        "active"
                    }
                };
                db.enqueue_archive(ArchiveKind::Profile, agent.id)?;
                Ok(AgentStatus { status, agent_name: agent.name, project_key })
            })
            .await
    }

    /// Retires or unretires an agent named by id (the web UI's buttons).
    pub async fn change_agent_by_id(
        &self,
        agent_id: AgentId,
        change: AgentChange,
    ) -> Result<AgentStatus> {
        let (slug, name) = self
            .store
            .read(move |db| {
                let agent = db
                    .agent_by_id(agent_id)?
                    .ok_or_else(|| Error::not_found(format!("agent_id: no agent {agent_id}.")))?;
                let project = db
                    .project_by_id(agent.project_id)?
                    .ok_or_else(|| Error::internal(format!("agent {agent_id} has no project")))?;
                Ok((project.slug, agent.name))
            })
            .await?;
        self.change_agent(slug, name, change).await
    }

    /// Deletes an agent, its mail, reservations and links (one transaction), then its
    /// archive directory.
    pub async fn hard_delete_agent(
        &self,
        project_key: String,
        agent_name: String,
        confirmation: String,
    ) -> Result<AgentDeleted> {
        check_confirmation(&confirmation)?;
        let key = project_key.clone();
        let (slug, name, deleted) = self
            .store
            .write(move |db| {
                let project = resolve::project(db, &key)?;
                let agent = resolve::agent(db, &project, &agent_name, "agent_name")?;
                let deleted = db.hard_delete_agent(project.id, agent.id, &agent.name)?;
                Ok((project.slug, agent.name, deleted))
            })
            .await?;
        let dir = Path::new("projects").join(&slug).join("agents").join(&name);
        let removal = self.remove_archive_dir(dir).await;
        Ok(AgentDeleted {
            status: "hard_deleted",
            agent_name: name,
            project_key,
            deleted_counts: AgentCounts {
                rows: deleted,
                archive_files_removed: removal.archive_files_removed,
                archive_dirs_removed: removal.archive_dirs_removed,
            },
            filesystem_errors: removal.errors,
        })
    }
}

/// The task description of a deregistered agent: a dated marker before the old text.
pub fn deregistered_task(task: &str, now: Timestamp) -> String {
    format!("[DEREGISTERED at {}] {task}", now.to_iso())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deregistered_task_keeps_the_old_text_after_a_dated_marker() {
        let now = Timestamp::from_micros(1_700_000_000_000_000);
        assert_eq!(
            deregistered_task("build the parser", now),
            "[DEREGISTERED at 2023-11-14T22:13:20+00:00] build the parser"
        );
    }
}
