//! Builders for the messaging tools: send, reply, the inbox, read and acknowledgement
//! receipts, search.

use serde_json::json;

use super::tool_call;

tool_call! {
    /// A `send_message` call from one agent to one recipient (`arg("to", …)` names more), with
    /// the body `body` until [`Self::body`] sets another.
    SendCall => "send_message";
    /// The Markdown body (`body_md`).
    body(body_md: &str);
    /// The thread the message joins (`thread_id`).
    thread(thread_id: &str);
    /// The importance (free text; `high` and `urgent` count as urgent).
    importance(importance: &str);
    /// Whether the recipients are asked to acknowledge it.
    ack_required(ack_required: bool);
    /// The carbon-copy recipients (`&[]` sends an empty list).
    cc(cc: &[&str]);
    /// Files or images to attach (`attachment_paths`, relative to the project's archive).
    attachments(attachment_paths: &[&str]);
    /// The topic the message is filed under.
    topic(topic: &str);
    /// The sender's registration token, when tool authentication is on.
    sender_token(sender_token: &str);
    /// The key that makes a retry of this call safe (`idempotency_key`).
    idempotency_key(idempotency_key: &str);
}

impl SendCall {
    /// `sender_name`'s message to `to` in `project_key` (a slug or a human key), with
    /// `subject` and the body `body`.
    pub fn new(project_key: &str, sender_name: &str, to: &str, subject: &str) -> Self {
        let arguments = json!({"project_key": project_key, "sender_name": sender_name,
            "to": [to], "subject": subject, "body_md": "body"});
        Self { arguments }
    }
}

tool_call! {
    /// A `reply_message` call: an answer to a message, in its thread, with the body `body`
    /// until [`Self::body`] sets another.
    ReplyCall => "reply_message";
    /// `sender_name`'s reply to the message `message_id` in `project_key`.
    new(project_key: &str, sender_name: &str, message_id: impl Into<serde_json::Value>)
        with body_md = "body";
    /// The Markdown body (`body_md`).
    body(body_md: &str);
    /// The key that makes a retry of this call safe (`idempotency_key`).
    idempotency_key(idempotency_key: &str);
}

tool_call! {
    /// A `fetch_inbox` call: an agent's inbox, newest first.
    InboxCall => "fetch_inbox";
    /// The inbox of `agent_name` in `project_key`.
    new(project_key: &str, agent_name: &str);
    /// Whether the messages carry their bodies.
    include_bodies(include_bodies: bool);
    /// At most this many messages.
    limit(limit: i64);
    /// Only the messages the agent has not read.
    unread_only(unread_only: bool);
    /// Marks the returned messages read.
    mark_read(mark_read: bool);
    /// The agent's registration token, when tool authentication is on.
    token(registration_token: &str);
}

tool_call! {
    /// A `fetch_inbox_events` call: what happened to an agent's mailbox since a cursor,
    /// oldest first.
    EventsCall => "fetch_inbox_events";
    /// The events of `agent_name` in `project_key`, from the oldest kept.
    new(project_key: &str, agent_name: &str);
    /// Resume after this cursor (`"tail"`: only what happens from now on).
    cursor(cursor: &str);
    /// At most this many events.
    limit(limit: i64);
}

tool_call! {
    /// A `mark_message_read` call: the recipient's read receipt.
    ReadCall => "mark_message_read";
    /// `agent_name` in `project_key` has read the message `message_id`.
    new(project_key: &str, agent_name: &str, message_id: impl Into<serde_json::Value>);
}

tool_call! {
    /// An `acknowledge_message` call: the recipient's acknowledgement (which marks it read too).
    AckCall => "acknowledge_message";
    /// `agent_name` in `project_key` acknowledges the message `message_id`.
    new(project_key: &str, agent_name: &str, message_id: impl Into<serde_json::Value>);
    /// The key that makes a retry of this call safe (`idempotency_key`).
    idempotency_key(idempotency_key: &str);
}

tool_call! {
    /// A `search_messages` call: full-text search in one project.
    SearchCall => "search_messages";
    /// Searches `project_key` for `query`.
    new(project_key: &str, query: &str);
    /// The viewer (`agent_name`): with tool authentication on, the search covers only what it
    /// took part in.
    agent(agent_name: &str);
}
