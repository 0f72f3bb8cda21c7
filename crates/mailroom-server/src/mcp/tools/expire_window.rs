//! expire_window: end a window identity now.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str =
    "Expire a window identity now; the window gets a fresh identity next time.";

/// Arguments of expire_window.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// The window's UUID (MCP_AGENT_MAIL_WINDOW_ID).
    window_uuid: String,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("expire_window", DESCRIPTION, |state: AppState, args: Args| async move {
        state.core.expire_window(args.project_key, args.window_uuid).await
    })
}
