//! list_window_identities: the project's live window identities (terminal windows with a stable agent name).

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "List the project's window identities that have not expired: window UUID, display name, activity and age.";

/// Arguments of list_window_identities.
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
    Tool::new("list_window_identities", DESCRIPTION, |state: AppState, args: Args| async move {
        state.core.list_window_identities(args.project_key).await
    })
}
