//! file_reservation_paths: reserve files or globs (advisory leases) before editing them, so
//! other agents know. Always granted; overlapping reservations of other agents come back as
//! conflicts beside the grants. Asking again for a pattern you hold refreshes it.

use mailroom_core::ops::reservations::ReservePaths;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Reserve project-relative paths or globs (e.g. 'src/api/*.py') for a \
     while so other agents know you are editing them. Grants are advisory and always given; \
     reservations of other agents that overlap are returned as conflicts.";

/// Arguments of file_reservation_paths.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Your agent name.
    agent_name: String,
    /// Paths or gitignore-style globs relative to the project root.
    paths: Vec<String>,
    /// Lease duration in seconds (default 3600).
    #[serde(default)]
    ttl_seconds: Option<i64>,
    /// Exclusive (default) or shared reservation.
    #[serde(default)]
    exclusive: Option<bool>,
    /// Why you reserve (e.g. a task id).
    #[serde(default)]
    reason: Option<String>,
    /// Your registration token (needed only when the server requires authentication).
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("file_reservation_paths", DESCRIPTION, |state: AppState, args: Args| async move {
        state
            .core
            .file_reservation_paths(ReservePaths {
                project_key: args.project_key,
                agent_name: args.agent_name,
                paths: args.paths,
                ttl_seconds: args.ttl_seconds.unwrap_or(3600),
                exclusive: args.exclusive.unwrap_or(true),
                reason: args.reason.unwrap_or_default(),
            })
            .await
    })
}
