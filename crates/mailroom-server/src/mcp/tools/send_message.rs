//! send_message: deliver a Markdown message to agents of the project. Contact policy applies:
//! blocked recipients get a contact request automatically and the send fails with
//! CONTACT_REQUIRED until they accept or answer.

use mailroom_core::ops::messaging::SendMessage;
use schemars::JsonSchema;
use serde::Deserialize;

use super::{Caller, Tool};
use crate::state::AppState;

const DESCRIPTION: &str = "Send a Markdown message to one or more agents of the project (to, cc, \
     bcc), optionally in a thread, with importance and an acknowledgement request.";

/// Arguments of send_message.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Project slug or absolute path (human_key).
    project_key: String,
    /// Your agent name.
    sender_name: String,
    /// Recipient agent names.
    to: Vec<String>,
    /// Subject line (cut to 200 characters).
    subject: String,
    /// GitHub-flavoured Markdown body.
    body_md: String,
    /// Carbon-copy recipients.
    #[serde(default)]
    cc: Option<Vec<String>>,
    /// Blind carbon-copy recipients.
    #[serde(default)]
    bcc: Option<Vec<String>>,
    /// Image files to attach, relative to the project's archive directory; stored as WebP.
    #[serde(default)]
    attachment_paths: Option<Vec<String>>,
    /// Convert images to WebP (default: the server's CONVERT_IMAGES setting).
    #[serde(default)]
    convert_images: Option<bool>,
    /// "low", "normal" (default), "high" or "urgent".
    #[serde(default)]
    importance: Option<String>,
    /// Ask recipients to acknowledge_message.
    #[serde(default)]
    ack_required: Option<bool>,
    /// Thread to post in (letters, digits, '.', '_', '-').
    #[serde(default)]
    thread_id: Option<String>,
    /// Send to every active agent of the project (requires an empty `to`).
    #[serde(default)]
    broadcast: Option<bool>,
    /// Optional topic tag (letters, digits, '_', '-').
    #[serde(default)]
    topic: Option<String>,
    /// File contact requests automatically when recipients block you (default: on).
    #[serde(default)]
    auto_contact_if_blocked: Option<bool>,
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
    Tool::with_caller(
        "send_message",
        DESCRIPTION,
        |state: AppState, args: Args, caller: Caller| async move {
            // Only an authenticated session may approve contacts on a recipient's behalf.
            let session_agents = state.session_agents(caller.session.as_deref());
            state
                .core
                .send_message_keyed(
                    SendMessage {
                        project_key: args.project_key,
                        sender_name: args.sender_name,
                        to: args.to,
                        cc: args.cc.unwrap_or_default(),
                        bcc: args.bcc.unwrap_or_default(),
                        subject: args.subject,
                        body_md: args.body_md,
                        importance: args.importance,
                        ack_required: args.ack_required.unwrap_or(false),
                        thread_id: args.thread_id,
                        topic: args.topic,
                        broadcast: args.broadcast.unwrap_or(false),
                        auto_contact_if_blocked: args.auto_contact_if_blocked,
                        attachment_paths: args.attachment_paths.unwrap_or_default(),
                        convert_images: args.convert_images,
                        session_agents,
                        ..SendMessage::default()
                    },
                    args.idempotency_key,
                )
                .await
        },
    )
}
