//! What the server needs to authenticate a tool call (docs/compat/tools.md §1.7): an agent's stored
//! registration token, the tokens of a project's agents, and whether the server's window
//! identity (`MCP_AGENT_MAIL_WINDOW_ID`) vouches for an agent. The session bookkeeping and
//! the decision itself live with the transport; the core only reads.

use crate::error::Result;
use crate::model::time::Timestamp;
use crate::ops::agents::windows::canonical_uuid;
use crate::ops::{Mailroom, resolve};
use crate::records::{AgentId, ProjectId};

/// An agent as authentication sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Credential {
    pub project_id: ProjectId,
    pub agent_id: AgentId,
    pub agent_name: String,
    /// The stored registration token; `None` for agents created before tokens existed.
    pub token: Option<String>,
    /// The server's window identity in this project shows this agent's name.
    pub window_vouches: bool,
}

impl Mailroom {
    /// The credential of `agent_name` in `project_key`, with the lookup errors of every tool
    /// (unknown project or agent: NOT_FOUND with suggestions).
    pub async fn agent_credential(
        &self,
        project_key: String,
        agent_name: String,
        field: &'static str,
    ) -> Result<Credential> {
        let window = self.config.window_id.as_deref().and_then(|w| canonical_uuid(w).ok());
        self.store
            .read(move |db| {
                let project = resolve::project(db, &project_key)?;
                let agent = resolve::agent(db, &project, &agent_name, field)?;
                let window_vouches = match window {
                    Some(uuid) => db
                        .live_window(project.id, &uuid, Timestamp::now())?
                        .is_some_and(|w| w.display_name.eq_ignore_ascii_case(&agent.name)),
                    None => false,
                };
                Ok(Credential {
                    project_id: project.id,
                    agent_id: agent.id,
                    agent_name: agent.name,
                    token: agent.registration_token,
                    window_vouches,
                })
            })
            .await
    }

    /// The project's id and the credentials of its agents (for project-level admin tools).
    pub async fn project_credentials(
        &self,
        project_key: String,
    ) -> Result<(ProjectId, Vec<Credential>)> {
        self.store
            .read(move |db| {
                let project = resolve::project(db, &project_key)?;
                let agents = db
                    .agents_of_project(project.id)?
                    .into_iter()
                    .map(|a| Credential {
                        project_id: project.id,
                        agent_id: a.id,
                        agent_name: a.name,
                        token: a.registration_token,
                        window_vouches: false,
                    })
                    .collect();
                Ok((project.id, agents))
            })
            .await
    }
}

/// The registration token stored for `agent_name` in `project_key` in the database at
/// `database`, read-only beside a server: what the command line sends for an agent when the
/// operator gave none (the reference's CLI, too, takes the token from the local database).
pub fn stored_token(
    database: &std::path::Path,
    project_key: &str,
    agent_name: &str,
) -> Result<Option<String>> {
    crate::store::Reader::open(database)?.read(|db| {
        let project = resolve::project(db, project_key)?;
        Ok(resolve::agent(db, &project, agent_name, "agent_name")?.registration_token)
    })
}

/// A registration token stored for some agent of `project_key` (the oldest agent that has
/// one) in the database at `database`, read-only beside a server: what the command line
/// sends for a project admin tool (docs/compat/tools.md §1.7), where any agent's token
/// proves the caller, when the operator gave none.
pub fn stored_project_token(
    database: &std::path::Path,
    project_key: &str,
) -> Result<Option<String>> {
    crate::store::Reader::open(database)?.read(|db| {
        let project = resolve::project(db, project_key)?;
        let agents = db.agents_of_project(project.id)?;
        Ok(agents.into_iter().find_map(|a| a.registration_token))
    })
}

/// Compares secrets without stopping at the first difference, so timing does not reveal how
/// much of a guessed token was right (only its length).
pub fn constant_time_eq(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn constant_time_comparison_is_still_equality() {
        assert!(constant_time_eq(b"abc", b"abc"));
        assert!(!constant_time_eq(b"abc", b"abd"));
        assert!(!constant_time_eq(b"abc", b"abcd"));
        assert!(constant_time_eq(b"", b""));
    }
}
