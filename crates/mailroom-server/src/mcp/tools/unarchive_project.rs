//! unarchive_project: clear a project's archived flag.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Clear a project's archived flag (see archive_project).";

/// Arguments of unarchive_project.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Registration token of the acting agent (needed only when the server requires
    /// authentication).
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("unarchive_project", DESCRIPTION, |state: AppState, args: Args| async move {
        state.core.set_project_archived(args.project_key, false).await
    })
}
