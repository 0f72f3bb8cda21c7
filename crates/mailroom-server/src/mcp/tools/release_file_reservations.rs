//! release_file_reservations: give back your reservations (all, or by id or pattern) when you
//! are done with the files. Releasing nothing is not an error.

use mailroom_core::ops::reservations::Selection;
use mailroom_core::records::ReservationId;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Release your active file reservations when you are done: all of \
     them, or those matching file_reservation_ids and/or exact paths. Idempotent.";

/// Arguments of release_file_reservations.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Your agent name.
    agent_name: String,
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
    Tool::new("release_file_reservations", DESCRIPTION, |state: AppState, args: Args| async move {
        let ids = args.file_reservation_ids.map(|ids| ids.into_iter().map(ReservationId).collect());
        let selection = Selection { paths: args.paths, ids };
        state.core.release_file_reservations(args.project_key, args.agent_name, selection).await
    })
}
