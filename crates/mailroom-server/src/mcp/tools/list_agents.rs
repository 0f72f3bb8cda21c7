//! list_agents: who is registered in a project, with unread counts (mailroom extension; the
//! same data as the `resource://agents/{project}` resource, for clients without resources).

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "List the agents registered in a project with their profiles and \
     unread message counts.";

/// Arguments of list_agents.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("list_agents", DESCRIPTION, |state: AppState, args: Args| async move {
        state.core.list_agents(args.project_key).await
    })
}
