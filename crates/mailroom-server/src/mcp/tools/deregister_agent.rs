//! deregister_agent: stop an agent receiving mail (policy block_all) and mark its task deregistered.

use mailroom_core::ops::agents::lifecycle::AgentChange;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Deregister an agent: its contact policy becomes block_all (no new mail reaches it) and its task description is marked [DEREGISTERED at <time>].";

/// Arguments of deregister_agent.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// The agent's name.
    agent_name: String,
    /// Registration token of the acting agent (needed only when the server requires
    /// authentication).
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("deregister_agent", DESCRIPTION, |state: AppState, args: Args| async move {
        state.core.change_agent(args.project_key, args.agent_name, AgentChange::Deregister).await
    })
}
