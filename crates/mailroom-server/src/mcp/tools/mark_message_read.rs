//! mark_message_read: Mark a message read for the agent (first read wins; idempotent).

use mailroom_core::records::MessageId;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Mark a message read for the agent (first read wins; idempotent).";

/// Arguments of mark_message_read.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Your agent name.
    agent_name: String,
    /// The message to mark read.
    message_id: i64,
    /// Your registration token (needed only when the server requires authentication).
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("mark_message_read", DESCRIPTION, |state: AppState, args: Args| async move {
        state
            .core
            .mark_message_read(args.project_key, args.agent_name, MessageId(args.message_id))
            .await
    })
}
