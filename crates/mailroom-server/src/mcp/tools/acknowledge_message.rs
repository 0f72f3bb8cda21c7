//! acknowledge_message: Acknowledge a message (also marks it read). Use it when the sender set ack_required.

use mailroom_core::records::MessageId;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str =
    "Acknowledge a message (also marks it read). Use it when the sender set ack_required.";

/// Arguments of acknowledge_message.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Your agent name.
    agent_name: String,
    /// The message to acknowledge.
    message_id: i64,
    /// Makes the call safe to retry: the same key with the same arguments within
    /// IDEMPOTENCY_WINDOW_SECONDS (default a day) returns the first call's result again and
    /// stores nothing; the same key with other arguments is refused. 1-128 bytes.
    #[serde(default)]
    idempotency_key: Option<String>,
    /// Your registration token (needed only when the server requires authentication).
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("acknowledge_message", DESCRIPTION, |state: AppState, args: Args| async move {
        state
            .core
            .acknowledge_message_keyed(
                args.project_key,
                args.agent_name,
                MessageId(args.message_id),
                args.idempotency_key,
            )
            .await
    })
}
