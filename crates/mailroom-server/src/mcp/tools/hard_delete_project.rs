//! hard_delete_project: irreversibly delete a project, its agents and all their mail.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Irreversibly delete a project with its agents, messages, reservations, contact links, window identities and summaries, and remove its directory from the archive work tree (Git history keeps it). Requires confirmation=\"I UNDERSTAND\".";

/// Arguments of hard_delete_project.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Must be exactly "I UNDERSTAND".
    confirmation: String,
    /// Registration token of the acting agent (needed only when the server requires
    /// authentication).
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("hard_delete_project", DESCRIPTION, |state: AppState, args: Args| async move {
        state.core.hard_delete_project(args.project_key, args.confirmation).await
    })
}
