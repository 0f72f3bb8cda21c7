//! force_release_file_reservation: release another agent's reservation that looks abandoned
//! (holder idle, no recent mail, file or Git activity). Refused with RESERVATION_ACTIVE while
//! the holder looks active; the holder is told by a message.

use mailroom_core::ops::reservations::ForceRelease;
use mailroom_core::records::ReservationId;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Release another agent's file reservation when it is stale (its \
     holder inactive, with no recent mail, file or Git activity). Refused while the holder \
     looks active; the previous holder is notified by message unless notify_previous=false.";

/// Arguments of force_release_file_reservation.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Your agent name.
    agent_name: String,
    /// The reservation to release.
    file_reservation_id: i64,
    /// Tell the previous holder by message (default true).
    #[serde(default)]
    notify_previous: Option<bool>,
    /// A note added to that message.
    #[serde(default)]
    note: Option<String>,
    /// Your registration token (needed only when the server requires authentication).
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new(
        "force_release_file_reservation",
        DESCRIPTION,
        |state: AppState, args: Args| async move {
            state
                .core
                .force_release_file_reservation(ForceRelease {
                    project_key: args.project_key,
                    agent_name: args.agent_name,
                    file_reservation_id: ReservationId(args.file_reservation_id),
                    notify_previous: args.notify_previous.unwrap_or(true),
                    note: args.note.unwrap_or_default(),
                })
                .await
        },
    )
}
