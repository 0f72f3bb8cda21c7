//! search_messages: full-text search (SQLite FTS5) over subjects and bodies of a project.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Search a project's messages by subject and body (FTS5 syntax: words, \
     \"phrases\", prefix*, AND/OR/NOT), best match first.";

/// Arguments of search_messages.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// The search query.
    query: String,
    /// Most results (default 20).
    #[serde(default)]
    limit: Option<i64>,
    /// Restrict to messages this agent sent or received (when authentication is on).
    #[serde(default)]
    agent_name: Option<String>,
    /// That agent's registration token.
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("search_messages", DESCRIPTION, |state: AppState, args: Args| async move {
        // With authentication on, the dispatcher has proved agent_name (or filled it in from
        // the session), so it is the viewer; without, the search covers the whole project as
        // in the recorded reference.
        let viewer = state.authenticated_viewer(args.agent_name);
        let limit = args.limit.unwrap_or(20);
        state.core.search_messages(args.project_key, args.query, limit, viewer).await
    })
}
