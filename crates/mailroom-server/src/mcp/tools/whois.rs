//! whois: an agent's profile (program, model, task, activity).

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Show an agent's profile: program, model, task description and \
     activity timestamps, with recent archive commits when requested.";

/// Arguments of whois.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// The agent to describe.
    agent_name: String,
    /// Token of that agent (needed only when the server requires authentication).
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
    /// Include the archive's recent commits.
    #[serde(default, rename = "include_recent_commits")]
    _include_recent_commits: Option<bool>,
    /// How many commits to include (1-50).
    #[serde(default, rename = "commit_limit")]
    _commit_limit: Option<i64>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("whois", DESCRIPTION, |state: AppState, args: Args| async move {
        state.core.whois(args.project_key, args.agent_name).await
    })
}
