//! list_webhooks: the project-wide webhooks, or one agent's (mailroom extension), each with the agent it is for
//! and how many of its deliveries wait or were given up on. Secrets are never listed.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "List the project-wide webhooks, or with agent_name that agent's: id, \
     url, the agent it is for (null: every recipient), and its pending and failed deliveries. \
     Secrets are not shown.";

/// Arguments of list_webhooks.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Act on this agent's webhooks only (it must prove itself when authentication is on);
    /// leave out for the project-wide webhooks.
    #[serde(default)]
    agent_name: Option<String>,
    /// A registration token of an agent of the project (needed only when the server requires
    /// authentication).
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("list_webhooks", DESCRIPTION, |state: AppState, args: Args| async move {
        state.core.list_webhooks(args.project_key, args.agent_name).await
    })
}
