//! fetch_inbox_events: what happened to the agent's mailbox since a cursor (deliveries,
//! reads, acknowledgements), oldest first, with a cursor to resume from. For an agent that
//! keeps its place between sessions or reconnects and must miss nothing and see nothing
//! twice; fetch_inbox stays the way to read the mail itself.

use mailroom_core::ops::messaging::events::FetchInboxEvents;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "List what happened to the agent's mailbox since a cursor, oldest \
     first: deliveries (with a short summary of the message), reads and acknowledgements. Keep \
     next_cursor and pass it back to get exactly the events after it, across restarts; no \
     cursor starts from the oldest event kept, \"tail\" from now (limit 100 by default, at \
     most 1000).";

/// Arguments of fetch_inbox_events.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Your agent name.
    agent_name: String,
    /// A next_cursor or tail_cursor from an earlier call, "tail" for only what happens from
    /// now on; leave out to start from the oldest event kept.
    #[serde(default)]
    cursor: Option<String>,
    /// Most events to return (1-1000, default 100).
    #[serde(default)]
    limit: Option<i64>,
    /// Your registration token (needed only when the server requires authentication).
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("fetch_inbox_events", DESCRIPTION, |state: AppState, args: Args| async move {
        let request = FetchInboxEvents {
            project_key: args.project_key,
            agent_name: args.agent_name,
            cursor: args.cursor,
            limit: args.limit,
        };
        state.core.fetch_inbox_events(request).await
    })
}
