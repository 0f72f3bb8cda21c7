//! The reference's result shapes (docs/compat/tools.md §1.4), shared by several ops.

use serde::Serialize;
use serde_json::Value;

/// The agent fields every view shares; the archive's `profile.json` is this shape too.
pub use crate::archive::format::AgentBase;
use crate::error::{Error, Result};
use crate::model::time::Timestamp;
use crate::records::{
    Agent, AgentId, Importance, ListedMessage, MessageId, Project, ProjectId, RecipientKind,
};

/// Capabilities every agent advertises (the conformance fixture's agent shape).
pub const DEFAULT_CAPABILITIES: [&str; 4] =
    ["send_message", "fetch_inbox", "file_reservation_paths", "acknowledge_message"];

/// ProjectOut.
#[derive(Debug, Clone, Serialize)]
pub struct ProjectOut {
    pub id: ProjectId,
    pub slug: String,
    pub human_key: String,
    pub created_at: Timestamp,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub archived_at: Option<Timestamp>,
}

impl From<&Project> for ProjectOut {
    fn from(p: &Project) -> Self {
        Self {
            id: p.id,
            slug: p.slug.clone(),
            human_key: p.human_key.clone(),
            created_at: p.created_at,
            archived_at: p.archived_at,
        }
    }
}

/// AgentOut as tools return it: the base fields plus the fixture's `reaper_exempt` and
/// `capabilities`, and the token only where the reference shows it (registration).
#[derive(Debug, Clone, Serialize)]
pub struct AgentOut {
    #[serde(flatten)]
    pub base: AgentBase,
    pub reaper_exempt: bool,
    pub capabilities: [&'static str; 4],
    #[serde(skip_serializing_if = "Option::is_none")]
    pub registration_token: Option<String>,
    /// The server's window identity (`MCP_AGENT_MAIL_WINDOW_ID`), shown by registration.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub window_display_name: Option<String>,
}

impl AgentOut {
    /// The tool view of an agent; `with_token` adds its registration token.
    pub fn new(agent: &Agent, with_token: bool) -> Self {
        Self {
            base: AgentBase::from(agent),
            reaper_exempt: false,
            capabilities: DEFAULT_CAPABILITIES,
            registration_token: if with_token { agent.registration_token.clone() } else { None },
            window_id: None,
            window_display_name: None,
        }
    }
}

/// MessageOut plus the listing fields (`from`, cross-project sender fields, `kind`).
#[derive(Debug, Clone, Serialize)]
pub struct MessageOut {
    pub id: MessageId,
    pub project_id: ProjectId,
    pub sender_id: AgentId,
    pub thread_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    pub subject: String,
    pub importance: Importance,
    pub ack_required: bool,
    pub created_ts: Timestamp,
    pub attachments: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_md: Option<String>,
    /// The sender's name; every view but the acknowledgement views (which name the sender
    /// only in urgent-unread) has it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub foreign_sender: Option<ForeignSender>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<ListingKind>,
}

/// Which side of a mailbox a listed message is on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum ListingKind {
    /// Received: the viewer's recipient kind.
    Received(RecipientKind),
    /// Sent by the viewer (the combined mailbox lists both sides).
    #[serde(serialize_with = "outbox")]
    Outbox,
}

fn outbox<S: serde::Serializer>(serializer: S) -> std::result::Result<S::Ok, S::Error> {
    serializer.serialize_str("outbox")
}

/// A message with its recipients by kind: what its sender sees (bcc included), in a thread,
/// a single-message view or a send's delivery.
#[derive(Debug, Clone, Serialize)]
pub struct AddressedMessage {
    #[serde(flatten)]
    pub message: MessageOut,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
}

/// Where a sender from another project comes from.
#[derive(Debug, Clone, Serialize)]
pub struct ForeignSender {
    pub from_project: String,
    pub from_project_slug: String,
    pub from_address: String,
}

impl ForeignSender {
    /// `Some` when the sender's project differs from the message's.
    pub fn for_listing(row: &ListedMessage) -> Option<Self> {
        row.sender_is_foreign().then(|| Self {
            from_project: row.sender_project_human_key.clone(),
            from_project_slug: row.sender_project_slug.clone(),
            from_address: foreign_address(&row.sender_project_slug, &row.sender_name),
        })
    }
}

/// A result already written as compact JSON, members in the order its type's `Serialize`
/// would write them: the transports send it as is.
#[derive(Debug, Clone, PartialEq)]
pub struct JsonText(pub String);

/// A list of messages written as JSON straight from borrowed rows (see
/// [`MessageOut::write_json`]).
pub(crate) struct MessageListWriter {
    out: Vec<u8>,
    include_body: bool,
    rows: usize,
}

impl MessageListWriter {
    pub(crate) fn new(include_body: bool) -> Self {
        Self { out: Vec::with_capacity(4096), include_body, rows: 0 }
    }

    pub(crate) fn push<S: AsRef<str>>(&mut self, row: &ListedMessage<S>) -> Result<()> {
        self.out.push(if self.rows == 0 { b'[' } else { b',' });
        self.rows += 1;
        MessageOut::write_json(row, self.include_body, &mut self.out)
    }

    pub(crate) fn finish(mut self) -> Result<JsonText> {
        if self.rows == 0 {
            self.out.push(b'[');
        }
        self.out.push(b']');
        String::from_utf8(self.out)
            .map(JsonText)
            .map_err(|e| Error::internal(format!("message list is not UTF-8: {e}")))
    }
}

impl MessageOut {
    /// Appends what `serde_json::to_string(&MessageOut::from_listing(..))` writes for this
    /// row, which may borrow its text from the result set, without building an owned listing
    /// or a `MessageOut` (a `String` per column and row, then a copy of each): under an inbox
    /// load those copies and their frees were a fifth of the server's time (BENCHMARKS.md).
    /// A property test holds the two to the same bytes.
    pub fn write_json<S: AsRef<str>>(
        row: &ListedMessage<S>,
        include_body: bool,
        out: &mut Vec<u8>,
    ) -> Result<()> {
        fn key(out: &mut Vec<u8>, first: bool, name: &str) {
            out.extend_from_slice(if first { b"{\"" } else { b",\"" });
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"\":");
        }
        fn value<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) -> Result<()> {
            serde_json::to_writer(out, v)
                .map_err(|e| Error::internal(format!("cannot encode a message: {e}")))
        }
        let m = &row.message;
        key(out, true, "id");
        value(out, &m.id)?;
        key(out, false, "project_id");
        value(out, &m.project_id)?;
        key(out, false, "sender_id");
        value(out, &m.sender_id)?;
        key(out, false, "thread_id");
        value(out, &m.thread_id.as_ref().map(AsRef::as_ref))?;
        if let Some(topic) = &m.topic {
            key(out, false, "topic");
            value(out, topic.as_ref())?;
        }
        key(out, false, "subject");
        value(out, m.subject.as_ref())?;
        key(out, false, "importance");
        value(out, m.importance.as_str())?;
        key(out, false, "ack_required");
        value(out, &m.ack_required)?;
        key(out, false, "created_ts");
        value(out, &m.created_ts)?;
        key(out, false, "attachments");
        if m.attachments.is_empty() {
            out.extend_from_slice(b"[]");
        } else {
            value(out, &m.attachments.to_value())?;
        }
        if include_body {
            key(out, false, "body_md");
            value(out, m.body_md.as_ref())?;
        }
        let sender = row.sender_name.as_ref();
        key(out, false, "from");
        value(out, sender)?;
        if row.sender_is_foreign() {
            let slug = row.sender_project_slug.as_ref();
            key(out, false, "from_project");
            value(out, row.sender_project_human_key.as_ref())?;
            key(out, false, "from_project_slug");
            value(out, slug)?;
            key(out, false, "from_address");
            value(out, &foreign_address(slug, sender))?;
        }
        if let Some(kind) = row.kind {
            key(out, false, "kind");
            value(out, &kind)?;
        }
        out.push(b'}');
        Ok(())
    }

    /// Builds the listing view of a stored message.
    pub fn from_listing(row: &ListedMessage, include_body: bool) -> Self {
        let m = &row.message;
        Self {
            id: m.id,
            project_id: m.project_id,
            sender_id: m.sender_id,
            thread_id: m.thread_id.clone(),
            topic: m.topic.clone(),
            subject: m.subject.clone(),
            importance: m.importance.clone(),
            ack_required: m.ack_required,
            created_ts: m.created_ts,
            attachments: m.attachments.to_value(),
            body_md: include_body.then(|| m.body_md.clone()),
            from: Some(row.sender_name.clone()),
            foreign_sender: ForeignSender::for_listing(row),
            kind: row.kind.map(ListingKind::Received),
        }
    }
}

/// How a sender of another project is addressed.
fn foreign_address(slug: &str, name: &str) -> String {
    format!("project:{slug}#{name}")
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::records::{Attachments, Message};

    /// Text with quotes, backslashes, control characters and non-ASCII letters.
    fn text() -> impl Strategy<Value = String> {
        "[a-z \"\\\\\n\t\u{1}\u{7f}é🚀]{0,12}"
    }

    fn kind() -> impl Strategy<Value = RecipientKind> {
        prop::sample::select(RecipientKind::ALL.to_vec())
    }

    fn listed() -> impl Strategy<Value = ListedMessage> {
        let attachments = prop_oneof![
            Just("[]".to_string()),
            Just("[ ]".to_string()),
            Just(r#"[{"type":"file","path":"a.webp","bytes":3,"b":{"z":1,"a":[]}}]"#.to_string()),
            Just("not json".to_string()),
        ];
        (
            (
                any::<i64>(),
                1..4i64,
                any::<i64>(),
                prop::option::of(text()),
                prop::option::of(text()),
            ),
            (text(), text(), text(), any::<bool>(), -10i64.pow(12)..10i64.pow(17)),
            (attachments, text(), 1..4i64, text(), text(), prop::option::of(kind())),
        )
            .prop_map(|(head, middle, tail)| {
                let (id, project_id, sender_id, thread_id, topic) = head;
                let (subject, body_md, importance, ack_required, micros) = middle;
                let (attachments, sender_name, sender_project_id, slug, human_key, kind) = tail;
                ListedMessage {
                    message: Message {
                        id: MessageId(id),
                        project_id: ProjectId(project_id),
                        sender_id: AgentId(sender_id),
                        thread_id,
                        topic,
                        subject,
                        body_md,
                        importance: Importance(importance),
                        ack_required,
                        created_ts: Timestamp::from_micros(micros),
                        attachments: Attachments(attachments),
                    },
                    sender_name,
                    sender_project_id: ProjectId(sender_project_id),
                    sender_project_slug: slug,
                    sender_project_human_key: human_key,
                    kind,
                }
            })
    }

    proptest! {
        /// The message list written by hand is, byte for byte, the JSON serde writes for the
        /// `MessageOut`s, whether the rows own their text or borrow it.
        #[test]
        fn written_rows_match_the_serialised_messages(
            rows in prop::collection::vec(listed(), 0..4),
            include_body in any::<bool>(),
        ) {
            let mut owned = MessageListWriter::new(include_body);
            let mut borrowed = MessageListWriter::new(include_body);
            for row in &rows {
                owned.push(row).expect("written");
                borrowed.push(&row.borrowed()).expect("written");
            }
            let written = owned.finish().expect("finished").0;
            prop_assert_eq!(&written, &borrowed.finish().expect("finished").0);
            let outs: Vec<MessageOut> =
                rows.iter().map(|r| MessageOut::from_listing(r, include_body)).collect();
            prop_assert_eq!(written, serde_json::to_string(&outs).expect("serialised"));
        }
    }
}
