//! message_receipts: the sender's delivery receipts for one message it sent (mailroom
//! extension): per recipient, when it was delivered, read and acknowledged. Use it to see who
//! has not yet read or acknowledged a message instead of asking again.

use mailroom_core::records::MessageId;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Delivery receipts of a message you sent: per recipient (to, cc, bcc), \
     when it was delivered, read and acknowledged.";

/// Arguments of message_receipts.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Your agent name (the message's sender).
    agent_name: String,
    /// A message you sent (each delivery of a send has its own id).
    message_id: i64,
    /// Your registration token (needed only when the server requires authentication).
    #[serde(default, rename = "registration_token")]
    _registration_token: Option<String>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("message_receipts", DESCRIPTION, |state: AppState, args: Args| async move {
        state
            .core
            .message_receipts(args.project_key, args.agent_name, MessageId(args.message_id))
            .await
    })
}
