//! ensure_project: create (or find) the project for a working directory. Call it once per
//! repository before registering agents; `human_key` must be the absolute path.

use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Create the project for an absolute directory path, or return it if it \
     exists (idempotent). The project's slug and human_key identify it in every other tool.";

/// Arguments of ensure_project.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Absolute path of the project's working directory, e.g. "/home/me/backend".
    human_key: String,
    /// Accepted for compatibility; the identity mode comes from server settings.
    #[serde(default, rename = "identity_mode")]
    _identity_mode: Option<String>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("ensure_project", DESCRIPTION, |state: AppState, args: Args| async move {
        state.core.ensure_project(&args.human_key).await
    })
}
