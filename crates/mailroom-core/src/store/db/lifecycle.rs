//! Queries of the lifecycle tools: project archiving, agent retirement, hard deletes, purges.

use super::Db;
use super::driver::args;
use crate::error::Result;
use crate::model::time::Timestamp;
use crate::records::{AgentId, ProjectId};

/// Rows removed by a project hard delete, per table (hard_delete_project,
/// docs/compat/tools.md §2.6), in the order its `deleted_counts` lists them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct ProjectDeletion {
    pub agents: usize,
    pub messages: usize,
    pub message_recipients: usize,
    pub file_reservations: usize,
    pub agent_links: usize,
    pub window_identities: usize,
    pub message_summaries: usize,
    pub sibling_suggestions: usize,
    pub product_links: usize,
    pub project: usize,
}

/// Rows removed by an agent hard delete, per table (hard_delete_agent,
/// docs/compat/tools.md §3.7), in the order its `deleted_counts` lists them.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize)]
pub struct AgentDeletion {
    pub message_recipients: usize,
    pub sent_message_recipients: usize,
    pub messages_sent: usize,
    pub file_reservations: usize,
    pub agent_links: usize,
    pub window_identities: usize,
    pub agent: usize,
}

/// Messages sent by the agents of a project, wherever they were delivered: a cross-project
/// message lives in the target project but names its sender here, so it goes with it
/// (otherwise it would point at a deleted agent).
const PROJECT_MESSAGES: &str = "SELECT id FROM messages WHERE project_id = ?1
     OR sender_id IN (SELECT id FROM agents WHERE project_id = ?1)";
const PROJECT_AGENTS: &str = "SELECT id FROM agents WHERE project_id = ?1";

impl Db<'_> {
    /// Sets (`Some`) or clears (`None`) a project's `archived_at`.
    pub fn set_project_archived(&self, project_id: ProjectId, at: Option<Timestamp>) -> Result<()> {
        self.execute("UPDATE projects SET archived_at = ?2 WHERE id = ?1", args![project_id, at])
            .map(drop)
    }

    /// Sets (`Some`) or clears (`None`) an agent's `retired_at`.
    pub fn set_agent_retired(&self, agent_id: AgentId, at: Option<Timestamp>) -> Result<()> {
        self.execute("UPDATE agents SET retired_at = ?2 WHERE id = ?1", args![agent_id, at])
            .map(drop)
    }

    /// Deregistration: blocks all incoming mail and rewrites the task description.
    pub fn deregister_agent(&self, agent_id: AgentId, task_description: &str) -> Result<()> {
        self.execute(
            "UPDATE agents SET contact_policy = 'block_all', task_description = ?2 WHERE id = ?1",
            args![agent_id, task_description],
        )
        .map(drop)
    }

    /// Deletes every row of a project, dependants first, in the caller's transaction.
    pub fn hard_delete_project(&self, project_id: ProjectId) -> Result<ProjectDeletion> {
        let id = args![project_id];
        let message_recipients = self.execute(
            &format!("DELETE FROM message_recipients WHERE message_id IN ({PROJECT_MESSAGES})"),
            id,
        )?;
        let messages =
            self.execute(&format!("DELETE FROM messages WHERE id IN ({PROJECT_MESSAGES})"), id)?;
        // Its agents' mailbox events go too: agent ids may be given out again.
        self.execute("DELETE FROM mailbox_events WHERE project_id = ?1", id)?;
        self.delete_project_webhooks(project_id)?;
        let file_reservations =
            self.execute("DELETE FROM file_reservations WHERE project_id = ?1", id)?;
        let agent_links = self.execute(
            &format!(
                "DELETE FROM agent_links WHERE a_project_id = ?1 OR b_project_id = ?1
                 OR a_agent_id IN ({PROJECT_AGENTS}) OR b_agent_id IN ({PROJECT_AGENTS})"
            ),
            id,
        )?;
        let window_identities =
            self.execute("DELETE FROM window_identities WHERE project_id = ?1", id)?;
        let message_summaries =
            self.execute("DELETE FROM message_summaries WHERE project_id = ?1", id)?;
        let sibling_suggestions = self.execute(
            "DELETE FROM project_sibling_suggestions WHERE project_a_id = ?1 OR project_b_id = ?1",
            id,
        )?;
        let product_links =
            self.execute("DELETE FROM product_project_links WHERE project_id = ?1", id)?;
        // The kept answers of keyed writes hold message texts: they go with their project.
        self.execute("DELETE FROM idempotency_keys WHERE project_id = ?1", id)?;
        let agents = self.execute("DELETE FROM agents WHERE project_id = ?1", id)?;
        let project = self.execute("DELETE FROM projects WHERE id = ?1", id)?;
        Ok(ProjectDeletion {
            message_recipients,
            messages,
            file_reservations,
            agent_links,
            window_identities,
            message_summaries,
            sibling_suggestions,
            product_links,
            agents,
            project,
        })
    }

    /// Deletes an agent, its mail (received rows, sent messages), reservations, links and
    /// the window identities showing its name, in the caller's transaction.
    pub fn hard_delete_agent(
        &self,
        project_id: ProjectId,
        agent_id: AgentId,
        name: &str,
    ) -> Result<AgentDeletion> {
        let id = args![agent_id];
        let message_recipients =
            self.execute("DELETE FROM message_recipients WHERE agent_id = ?1", id)?;
        let sent_message_recipients = self.execute(
            "DELETE FROM message_recipients
             WHERE message_id IN (SELECT id FROM messages WHERE sender_id = ?1)",
            id,
        )?;
        let messages_sent = self.execute("DELETE FROM messages WHERE sender_id = ?1", id)?;
        self.delete_agent_mailbox_events(agent_id)?;
        self.delete_agent_webhooks(agent_id)?;
        let file_reservations =
            self.execute("DELETE FROM file_reservations WHERE agent_id = ?1", id)?;
        let agent_links =
            self.execute("DELETE FROM agent_links WHERE a_agent_id = ?1 OR b_agent_id = ?1", id)?;
        let window_identities = self.execute(
            "DELETE FROM window_identities WHERE project_id = ?1 AND display_name = ?2",
            args![project_id, name],
        )?;
        self.execute("DELETE FROM idempotency_keys WHERE agent_id = ?1", id)?;
        let agent = self.execute("DELETE FROM agents WHERE id = ?1", id)?;
        Ok(AgentDeletion {
            message_recipients,
            sent_message_recipients,
            messages_sent,
            file_reservations,
            agent_links,
            window_identities,
            agent,
        })
    }

    /// Number of messages of a project created before `cutoff`.
    pub fn count_messages_before(&self, project_id: ProjectId, cutoff: Timestamp) -> Result<usize> {
        self.query_value(
            "SELECT count(*) FROM messages WHERE project_id = ?1 AND created_ts < ?2",
            args![project_id, cutoff],
        )
    }

    /// Deletes the messages of a project created before `cutoff` and their recipient rows;
    /// returns the number of messages deleted.
    pub fn purge_messages_before(&self, project_id: ProjectId, cutoff: Timestamp) -> Result<usize> {
        let values = args![project_id, cutoff];
        self.execute(
            "DELETE FROM message_recipients WHERE message_id IN
                 (SELECT id FROM messages WHERE project_id = ?1 AND created_ts < ?2)",
            values,
        )?;
        self.execute("DELETE FROM messages WHERE project_id = ?1 AND created_ts < ?2", values)
    }
}
