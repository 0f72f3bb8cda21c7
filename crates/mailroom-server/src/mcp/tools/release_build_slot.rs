//! release_build_slot: end your build-slot lease now (its file is kept, marked released).
//! Registered only when WORKTREES_ENABLED.

use mailroom_core::ops::build_slots::SlotRequest;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Release your active lease on a build slot so others may take it.";

/// Arguments of release_build_slot.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Your agent name.
    agent_name: String,
    /// The slot name.
    slot: String,
    /// Your branch (default: the branch checked out at the project's path).
    #[serde(default)]
    branch: Option<String>,
    /// Your registration token (needed only when the server requires authentication).
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("release_build_slot", DESCRIPTION, |state: AppState, args: Args| async move {
        let request = SlotRequest {
            project_key: args.project_key,
            agent_name: args.agent_name,
            slot: args.slot,
            branch: args.branch,
            seconds: 0,
            exclusive: true,
        };
        state.core.release_build_slot(request).await
    })
}
