//! archive_project: flag a project archived (it keeps working; outputs show `archived_at`).

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Flag a project as archived. Every tool keeps working on it; project outputs then carry archived_at. Undo with unarchive_project.";

/// Arguments of archive_project.
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
    Tool::new("archive_project", DESCRIPTION, |state: AppState, args: Args| async move {
        state.core.set_project_archived(args.project_key, true).await
    })
}
