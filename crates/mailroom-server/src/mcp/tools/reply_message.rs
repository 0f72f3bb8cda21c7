//! reply_message: answer a message in its thread; by default to its sender, with "Re:".

use mailroom_core::ops::messaging::ReplyMessage;
use mailroom_core::records::MessageId;
use schemars::JsonSchema;
use serde::Deserialize;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Reply to a message in its thread. Recipients default to the original \
     sender (or, for your own message, its recipients); importance and ack flag are inherited.";

/// Arguments of reply_message.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Id of the message you answer.
    message_id: i64,
    /// Your agent name.
    sender_name: String,
    /// GitHub-flavoured Markdown body.
    body_md: String,
    /// Override the recipients.
    #[serde(default)]
    to: Option<Vec<String>>,
    /// Carbon-copy recipients.
    #[serde(default)]
    cc: Option<Vec<String>>,
    /// Blind carbon-copy recipients.
    #[serde(default)]
    bcc: Option<Vec<String>>,
    /// Subject prefix (default "Re:"; not repeated).
    #[serde(default)]
    subject_prefix: Option<String>,
    /// Makes the call safe to retry: the same key with the same arguments within
    /// IDEMPOTENCY_WINDOW_SECONDS (default a day) returns the first call's result again and
    /// stores nothing; the same key with other arguments is refused. 1-128 bytes.
    #[serde(default)]
    idempotency_key: Option<String>,
    /// Your registration token (needed only when the server requires authentication).
    #[serde(default, rename = "sender_token")]
    _sender_token: Option<String>,
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("reply_message", DESCRIPTION, |state: AppState, args: Args| async move {
        state
            .core
            .reply_message_keyed(
                ReplyMessage {
                    project_key: args.project_key,
                    message_id: MessageId(args.message_id),
                    sender_name: args.sender_name,
                    body_md: args.body_md,
                    to: args.to,
                    cc: args.cc.unwrap_or_default(),
                    bcc: args.bcc.unwrap_or_default(),
                    subject_prefix: args.subject_prefix,
                },
                args.idempotency_key,
            )
            .await
    })
}
