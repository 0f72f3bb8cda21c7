//! hard_delete_agent: irreversibly delete an agent with its mail, reservations and links.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Irreversibly delete an agent with the messages it sent, its inbox rows, reservations, contact links and window identities, and remove its archive directory from the work tree (Git history keeps it). Requires confirmation=\"I UNDERSTAND\".";

/// Arguments of hard_delete_agent.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// The agent's name.
    agent_name: String,
    /// Must be exactly "I UNDERSTAND".
    confirmation: String,
    /// Registration token of the acting agent (needed only when the server requires
    /// authentication).
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("hard_delete_agent", DESCRIPTION, |state: AppState, args: Args| async move {
        state.core.hard_delete_agent(args.project_key, args.agent_name, args.confirmation).await
    })
}
