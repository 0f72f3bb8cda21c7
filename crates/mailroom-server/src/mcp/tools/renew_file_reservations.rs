//! renew_file_reservations: extend your active reservations (all, or by id or pattern) while
//! you are still working on the files.

use mailroom_core::ops::reservations::Selection;
use mailroom_core::records::ReservationId;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Extend your active file reservations by extend_seconds (at least 60) \
     from their expiry or now, whichever is later. Filter by file_reservation_ids and/or exact \
     paths; by default all of them.";

/// Arguments of renew_file_reservations.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Your agent name.
    agent_name: String,
    /// Seconds to add (default 1800, at least 60).
    #[serde(default)]
    extend_seconds: Option<i64>,
    /// Only reservations with exactly these patterns.
    #[serde(default)]
    paths: Option<Vec<String>>,
    /// Only reservations with these ids.
    #[serde(default)]
    file_reservation_ids: Option<Vec<i64>>,
    /// Your registration token (needed only when the server requires authentication).
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("renew_file_reservations", DESCRIPTION, |state: AppState, args: Args| async move {
        let ids = args.file_reservation_ids.map(|ids| ids.into_iter().map(ReservationId).collect());
        let selection = Selection { paths: args.paths, ids };
        state
            .core
            .renew_file_reservations(
                args.project_key,
                args.agent_name,
                args.extend_seconds.unwrap_or(1800),
                selection,
            )
            .await
    })
}
