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
    /// Include the archive's recent commits (default true).
    #[serde(default)]
    include_recent_commits: Option<bool>,
    /// How many commits to include (1-50, default 5).
    #[serde(default)]
    commit_limit: Option<i64>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("whois", DESCRIPTION, |state: AppState, args: Args| async move {
        let limit =
            args.include_recent_commits.unwrap_or(true).then(|| args.commit_limit.unwrap_or(5));
        state.core.whois(args.project_key, args.agent_name, limit).await
    })
}
