//! retire_agent: retire an agent: it can no longer receive messages until unretired.

use mailroom_core::ops::agents::lifecycle::AgentChange;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Retire an agent: messages to it are refused (AGENT_RETIRED) and broadcasts skip it; it can still send. Undo with unretire_agent.";

/// Arguments of retire_agent.
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
    Tool::new("retire_agent", DESCRIPTION, |state: AppState, args: Args| async move {
        state.core.change_agent(args.project_key, args.agent_name, AgentChange::Retire).await
    })
}
