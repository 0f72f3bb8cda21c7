//! The reference's result shapes (docs/compat/tools.md §1.4), shared by several ops.

use serde::Serialize;
use serde_json::Value;

/// The agent fields every view shares; the archive's `profile.json` is this shape too.
pub use crate::archive::format::AgentBase;
use crate::error::{Error, Result};
use crate::model::time::Timestamp;
use crate::records::{Agent, Project};
use crate::store::db::messages::{ListedMessage, ListedRef};

/// Capabilities every agent advertises (the conformance fixture's agent shape).
pub const DEFAULT_CAPABILITIES: [&str; 4] =
    ["send_message", "fetch_inbox", "file_reservation_paths", "acknowledge_message"];

/// ProjectOut.
#[derive(Debug, Clone, Serialize)]
pub struct ProjectOut {
    pub id: i64,
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
    pub id: i64,
    pub project_id: i64,
    pub sender_id: i64,
    pub thread_id: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub topic: Option<String>,
    pub subject: String,
    pub importance: String,
    pub ack_required: bool,
    pub created_ts: Timestamp,
    pub attachments: Value,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub body_md: Option<String>,
    pub from: String,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub foreign_sender: Option<ForeignSender>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<String>,
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
        (row.sender_project_id != row.message.project_id).then(|| Self {
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

    pub(crate) fn push(&mut self, row: &ListedRef<'_>) -> Result<()> {
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
    /// row, without building the owned listing or the `MessageOut` (a `String` per column
    /// and row, then a copy of each): under an inbox load those copies and their frees
    /// were a fifth of the server's time. A test holds the two to the same bytes.
    pub fn write_json(row: &ListedRef<'_>, include_body: bool, out: &mut Vec<u8>) -> Result<()> {
        fn key(out: &mut Vec<u8>, first: bool, name: &str) {
            out.extend_from_slice(if first { b"{\"" } else { b",\"" });
            out.extend_from_slice(name.as_bytes());
            out.extend_from_slice(b"\":");
        }
        fn value<T: Serialize + ?Sized>(out: &mut Vec<u8>, v: &T) -> Result<()> {
            serde_json::to_writer(out, v)
                .map_err(|e| Error::internal(format!("cannot encode a message: {e}")))
        }
        key(out, true, "id");
        value(out, &row.id)?;
        key(out, false, "project_id");
        value(out, &row.project_id)?;
        key(out, false, "sender_id");
        value(out, &row.sender_id)?;
        key(out, false, "thread_id");
        value(out, &row.thread_id)?;
        if let Some(topic) = row.topic {
            key(out, false, "topic");
            value(out, topic)?;
        }
        key(out, false, "subject");
        value(out, row.subject)?;
        key(out, false, "importance");
        value(out, row.importance)?;
        key(out, false, "ack_required");
        value(out, &row.ack_required)?;
        key(out, false, "created_ts");
        value(out, &row.created_ts)?;
        key(out, false, "attachments");
        if row.attachments == "[]" {
            out.extend_from_slice(b"[]");
        } else {
            value(out, &attachments_value(row.attachments))?;
        }
        if include_body {
            key(out, false, "body_md");
            value(out, row.body_md)?;
        }
        key(out, false, "from");
        value(out, row.sender_name)?;
        if row.sender_project_id != row.project_id {
            key(out, false, "from_project");
            value(out, row.sender_project_human_key)?;
            key(out, false, "from_project_slug");
            value(out, row.sender_project_slug)?;
            key(out, false, "from_address");
            value(out, &foreign_address(row.sender_project_slug, row.sender_name))?;
        }
        if let Some(kind) = row.kind {
            key(out, false, "kind");
            value(out, kind)?;
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
            attachments: attachments_value(&m.attachments),
            body_md: include_body.then(|| m.body_md.clone()),
            from: row.sender_name.clone(),
            foreign_sender: ForeignSender::for_listing(row),
            kind: row.kind.clone(),
        }
    }
}

/// How a sender of another project is addressed.
fn foreign_address(slug: &str, name: &str) -> String {
    format!("project:{slug}#{name}")
}

/// The stored attachments array as a value (an unreadable one as empty).
fn attachments_value(stored: &str) -> Value {
    serde_json::from_str(stored).unwrap_or(Value::Array(Vec::new()))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::records::Message;

    fn borrowed(m: &ListedMessage) -> ListedRef<'_> {
        ListedRef {
            id: m.message.id,
            project_id: m.message.project_id,
            sender_id: m.message.sender_id,
            thread_id: m.message.thread_id.as_deref(),
            topic: m.message.topic.as_deref(),
            subject: &m.message.subject,
            body_md: &m.message.body_md,
            importance: &m.message.importance,
            ack_required: m.message.ack_required,
            created_ts: m.message.created_ts,
            attachments: &m.message.attachments,
            sender_name: &m.sender_name,
            sender_project_id: m.sender_project_id,
            sender_project_slug: &m.sender_project_slug,
            sender_project_human_key: &m.sender_project_human_key,
            kind: m.kind.as_deref(),
        }
    }

    /// Text with quotes, backslashes, control characters and non-ASCII letters.
    fn text() -> impl Strategy<Value = String> {
        "[a-z \"\\\\\n\t\u{1}\u{7f}é🚀]{0,12}"
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
            (attachments, text(), 1..4i64, text(), text(), prop::option::of(text())),
        )
            .prop_map(|(head, middle, tail)| {
                let (id, project_id, sender_id, thread_id, topic) = head;
                let (subject, body_md, importance, ack_required, micros) = middle;
                let (attachments, sender_name, sender_project_id, slug, human_key, kind) = tail;
                ListedMessage {
                    message: Message {
                        id,
                        project_id,
                        sender_id,
                        thread_id,
                        topic,
                        subject,
                        body_md,
                        importance,
                        ack_required,
                        created_ts: Timestamp::from_micros(micros),
                        attachments,
                    },
                    sender_name,
                    sender_project_id,
                    sender_project_slug: slug,
                    sender_project_human_key: human_key,
                    kind,
                }
            })
    }

    proptest! {
        /// The message list written from borrowed rows is, byte for byte, the JSON of the
        /// owned `MessageOut`s.
        #[test]
        fn written_rows_match_the_serialised_messages(
            rows in prop::collection::vec(listed(), 0..4),
            include_body in any::<bool>(),
        ) {
            let mut list = MessageListWriter::new(include_body);
            for row in &rows {
                list.push(&borrowed(row)).expect("written");
            }
            let written = list.finish().expect("finished").0;
            let outs: Vec<MessageOut> =
                rows.iter().map(|r| MessageOut::from_listing(r, include_body)).collect();
            prop_assert_eq!(written, serde_json::to_string(&outs).expect("serialised"));
        }
    }
}
