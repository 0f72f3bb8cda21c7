//! unretire_agent: bring a retired agent back: it receives messages again.

use mailroom_core::ops::agents::lifecycle::AgentChange;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Unretire an agent so that it receives messages again.";

/// Arguments of unretire_agent.
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
    Tool::new("unretire_agent", DESCRIPTION, |state: AppState, args: Args| async move {
        state.core.change_agent(args.project_key, args.agent_name, AgentChange::Unretire).await
    })
}
