//! rename_window: give a window identity a new adjective+noun display name.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Rename a live window identity; the new display name must be an adjective+noun name such as BlueLake.";

/// Arguments of rename_window.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// The window's UUID (MCP_AGENT_MAIL_WINDOW_ID).
    window_uuid: String,
    /// The new adjective+noun display name.
    new_display_name: String,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("rename_window", DESCRIPTION, |state: AppState, args: Args| async move {
        state.core.rename_window(args.project_key, args.window_uuid, args.new_display_name).await
    })
}
