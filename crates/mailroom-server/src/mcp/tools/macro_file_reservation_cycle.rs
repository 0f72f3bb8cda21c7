//! macro_file_reservation_cycle: reserve paths and, with auto_release, give them back in the
//! same call — for short edits where an agent wants others warned only while it works, or to
//! probe who holds what.

use mailroom_core::ops::macros::ReservationCycle;
use mailroom_core::ops::reservations::ReservePaths;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Reserve paths or globs (as file_reservation_paths) and, when \
     auto_release is true, release exactly those patterns again. Returns the grants and \
     conflicts, and the release (null without auto_release).";

/// Arguments of macro_file_reservation_cycle.
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
    /// Why you reserve (default "macro-file_reservation").
    #[serde(default)]
    reason: Option<String>,
    /// Release the same patterns right after granting them (default false).
    #[serde(default)]
    auto_release: Option<bool>,
    /// Your registration token (needed only when the server requires authentication).
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new(
        "macro_file_reservation_cycle",
        DESCRIPTION,
        |state: AppState, args: Args| async move {
            let steps = state.instruments.nested_calls(&args.project_key, Some(&args.agent_name));
            let request = ReservationCycle {
                reserve: ReservePaths {
                    project_key: args.project_key,
                    agent_name: args.agent_name,
                    paths: args.paths,
                    ttl_seconds: args.ttl_seconds.unwrap_or(3600),
                    exclusive: args.exclusive.unwrap_or(true),
                    reason: args.reason.unwrap_or_else(|| "macro-file_reservation".to_string()),
                },
                auto_release: args.auto_release.unwrap_or(false),
            };
            state.core.macro_file_reservation_cycle(request, &steps).await
        },
    )
}
