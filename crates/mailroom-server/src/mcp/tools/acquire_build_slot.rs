//! acquire_build_slot: take an advisory lease on a named build slot (e.g. `frontend-build`)
//! before a long build or deploy. Never refused: conflicting holders are returned beside the
//! lease. Registered only when WORKTREES_ENABLED.

use mailroom_core::ops::build_slots::SlotRequest;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Acquire an advisory lease on a build slot for your agent and branch. \
     Exclusive leases conflict with every other active holder, shared ones only with exclusive \
     holders; conflicts are returned, not refused. TTL at least 60 s (default 3600).";

/// Arguments of acquire_build_slot.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Your agent name.
    agent_name: String,
    /// The slot name, e.g. "frontend-build".
    slot: String,
    /// Your branch (default: the branch checked out at the project's path).
    #[serde(default)]
    branch: Option<String>,
    /// Lease lifetime in seconds (default 3600, at least 60).
    #[serde(default)]
    ttl_seconds: Option<i64>,
    /// Exclusive lease (default true).
    #[serde(default)]
    exclusive: Option<bool>,
    /// Your registration token (needed only when the server requires authentication).
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("acquire_build_slot", DESCRIPTION, |state: AppState, args: Args| async move {
        let request = SlotRequest {
            project_key: args.project_key,
            agent_name: args.agent_name,
            slot: args.slot,
            branch: args.branch,
            seconds: args.ttl_seconds.unwrap_or(3600),
            exclusive: args.exclusive.unwrap_or(true),
        };
        state.core.acquire_build_slot(request).await
    })
}
