//! Rows the use-cases work with, as read from the store.

use serde::{Deserialize, Serialize};

use crate::model::time::Timestamp;

/// A row id of one table, kept apart from the others' by type.
macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(
            Debug, Clone, Copy, Default, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize,
        )]
        #[serde(transparent)]
        pub struct $name(pub i64);

        impl std::str::FromStr for $name {
            type Err = std::num::ParseIntError;

            fn from_str(text: &str) -> Result<Self, Self::Err> {
                text.parse().map(Self)
            }
        }

        impl From<$name> for i64 {
            fn from(id: $name) -> i64 {
                id.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                self.0.fmt(f)
            }
        }
    };
}

id_type!(
    /// A project's id.
    ProjectId
);
id_type!(
    /// An agent's id.
    AgentId
);
id_type!(
    /// A message's id.
    MessageId
);
id_type!(
    /// A file reservation's id.
    ReservationId
);
id_type!(
    /// A product's id.
    ProductId
);
id_type!(
    /// A window identity's id.
    WindowId
);
id_type!(
    /// A contact link's id.
    LinkId
);

/// A project: one row per slug.
#[derive(Debug, Clone, PartialEq)]
pub struct Project {
    pub id: ProjectId,
    pub slug: String,
    pub human_key: String,
    pub created_at: Timestamp,
    pub archived_at: Option<Timestamp>,
}

/// An agent registered in a project.
#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    pub id: AgentId,
    pub project_id: ProjectId,
    pub name: String,
    pub program: String,
    pub model: String,
    pub task_description: String,
    pub inception_ts: Timestamp,
    pub last_active_ts: Timestamp,
    pub attachments_policy: String,
    pub contact_policy: ContactPolicy,
    pub registration_token: Option<String>,
    pub retired_at: Option<Timestamp>,
}

/// A stored message (without recipients): the one row shape every message type derives from.
///
/// `S` holds its text: `String` in a row the caller keeps, `&str` in a row borrowed from a
/// result set (the inbox writes its answer from those without copying a column) or about to
/// be inserted. `Id` is the row id, a [`MessageId`] once stored; a [`NewMessage`] has an
/// `Option<MessageId>`.
#[derive(Debug, Clone, PartialEq)]
pub struct Message<S = String, Id = MessageId> {
    pub id: Id,
    pub project_id: ProjectId,
    pub sender_id: AgentId,
    pub thread_id: Option<S>,
    pub topic: Option<S>,
    pub subject: S,
    pub body_md: S,
    pub importance: Importance<S>,
    pub ack_required: bool,
    pub created_ts: Timestamp,
    pub attachments: Attachments<S>,
}

/// A message about to be stored: `id` is `Some` to keep an archived id, `None` to let the
/// database assign one.
pub type NewMessage<S = String> = Message<S, Option<MessageId>>;

impl<S: AsRef<str>, Id: Copy> Message<S, Id> {
    /// The same message with its text borrowed.
    pub fn borrowed(&self) -> Message<&str, Id> {
        self.map_text(AsRef::as_ref)
    }

    /// The same message with its text copied into owned strings.
    pub fn to_owned_text(&self) -> Message<String, Id> {
        self.map_text(|text| text.as_ref().to_string())
    }

    fn map_text<'s, T>(&'s self, f: impl Fn(&'s S) -> T) -> Message<T, Id> {
        Message {
            id: self.id,
            project_id: self.project_id,
            sender_id: self.sender_id,
            thread_id: self.thread_id.as_ref().map(&f),
            topic: self.topic.as_ref().map(&f),
            subject: f(&self.subject),
            body_md: f(&self.body_md),
            importance: Importance(f(&self.importance.0)),
            ack_required: self.ack_required,
            created_ts: self.created_ts,
            attachments: Attachments(f(&self.attachments.0)),
        }
    }
}

/// A message's importance as stored and sent. The reference keeps whatever text the caller
/// gave (docs/compat/tools.md §4.9), so this is not a closed set: `low`, `normal`, `high` and
/// `urgent` are the documented values, blank input means `normal`, and `high` and `urgent`
/// count as urgent (the urgent filters, the web UI's marks). `S` as in [`Message`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Importance<S = String>(pub S);

impl Importance {
    /// The default, `normal`.
    pub fn normal() -> Self {
        Self("normal".to_string())
    }

    /// `high`, the Human Overseer's.
    pub fn high() -> Self {
        Self("high".to_string())
    }

    /// The caller's text, blank (or none) as `normal`.
    pub fn from_input(text: Option<String>) -> Self {
        text.filter(|t| !t.trim().is_empty()).map_or_else(Self::normal, Self)
    }
}

impl From<&str> for Importance {
    fn from(text: &str) -> Self {
        Self(text.to_string())
    }
}

impl<S: AsRef<str>> Importance<S> {
    /// The importances the urgent filters select; the store's queries spell the same list
    /// (`store/db/messages.rs`'s `URGENT_IMPORTANCES`, held to this by a store test).
    const URGENT: [&'static str; 2] = ["high", "urgent"];

    /// The stored text.
    pub fn as_str(&self) -> &str {
        self.0.as_ref()
    }

    /// Whether the urgent filters select it: `high` or `urgent`, spelled exactly.
    pub fn is_urgent(&self) -> bool {
        Self::URGENT.contains(&self.as_str())
    }
}

/// A message's attachments as stored: the metadata array's JSON text, `[]` when there are
/// none (kept as text: a listing copies it into its answer without parsing it). `S` as in
/// [`Message`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Attachments<S = String>(pub S);

impl Attachments {
    /// No attachments.
    pub fn none() -> Self {
        Self("[]".to_string())
    }
}

impl<S: AsRef<str>> Attachments<S> {
    /// The stored JSON text.
    pub fn as_json(&self) -> &str {
        self.0.as_ref()
    }

    /// Whether the array is empty (anything else means files in the archive).
    pub fn is_empty(&self) -> bool {
        self.as_json().trim() == "[]"
    }

    /// The array's items (an unreadable array as none).
    pub fn to_list(&self) -> Vec<serde_json::Value> {
        serde_json::from_str(self.as_json()).unwrap_or_default()
    }

    /// The array as a JSON value (an unreadable one as empty).
    pub fn to_value(&self) -> serde_json::Value {
        serde_json::from_str(self.as_json()).unwrap_or(serde_json::Value::Array(Vec::new()))
    }
}

/// A message as a listing shows it: the row, its sender and the sender's project, and (in
/// a recipient's listings) the recipient's kind. `S` as in [`Message`].
#[derive(Debug, Clone, PartialEq)]
pub struct ListedMessage<S = String> {
    pub message: Message<S>,
    pub sender_name: S,
    pub sender_project_id: ProjectId,
    pub sender_project_slug: S,
    pub sender_project_human_key: S,
    /// The viewer's recipient kind in inbox listings.
    pub kind: Option<RecipientKind>,
}

impl<S: AsRef<str>> ListedMessage<S> {
    /// The same listing with its text borrowed.
    pub fn borrowed(&self) -> ListedMessage<&str> {
        ListedMessage {
            message: self.message.borrowed(),
            sender_name: self.sender_name.as_ref(),
            sender_project_id: self.sender_project_id,
            sender_project_slug: self.sender_project_slug.as_ref(),
            sender_project_human_key: self.sender_project_human_key.as_ref(),
            kind: self.kind,
        }
    }

    /// The same listing with its text copied into owned strings.
    pub fn to_owned_text(&self) -> ListedMessage {
        ListedMessage {
            message: self.message.to_owned_text(),
            sender_name: self.sender_name.as_ref().to_string(),
            sender_project_id: self.sender_project_id,
            sender_project_slug: self.sender_project_slug.as_ref().to_string(),
            sender_project_human_key: self.sender_project_human_key.as_ref().to_string(),
            kind: self.kind,
        }
    }

    /// Whether the sender belongs to another project than the message.
    pub fn sender_is_foreign(&self) -> bool {
        self.sender_project_id != self.message.project_id
    }
}

/// A closed set stored and sent as lower-case text: `as_str` and `parse` between the two,
/// `ALL` in declaration order, serialised as its text.
macro_rules! text_enum {
    ($(#[$doc:meta])* $name:ident { $($(#[$vdoc:meta])* $variant:ident = $text:literal),+ $(,)? }) => {
        $(#[$doc])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub enum $name {
            $($(#[$vdoc])* $variant),+
        }

        impl $name {
            /// Every value, in declaration order.
            pub const ALL: &'static [Self] = &[$(Self::$variant),+];

            /// The stored and wire spelling.
            pub fn as_str(self) -> &'static str {
                match self {
                    $(Self::$variant => $text),+
                }
            }

            /// Reads a stored spelling.
            pub fn parse(text: &str) -> Option<Self> {
                Self::ALL.iter().copied().find(|value| value.as_str() == text)
            }
        }

        impl Serialize for $name {
            fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(self.as_str())
            }
        }
    };
}

text_enum! {
    /// How a recipient is addressed.
    RecipientKind { To = "to", Cc = "cc", Bcc = "bcc" }
}

text_enum! {
    /// What happened to an agent's mailbox (`mailbox_events`, fetch_inbox_events).
    MailboxEventKind {
        /// A message arrived for the agent (to, cc or bcc).
        Delivered = "delivered",
        /// The agent's read time was set.
        Read = "read",
        /// The agent's acknowledgement time was set.
        Acknowledged = "acknowledged",
    }
}

text_enum! {
    /// The state of a contact link.
    LinkStatus { Pending = "pending", Approved = "approved", Blocked = "blocked" }
}

text_enum! {
    /// How an agent accepts messages from agents it has no approved link with
    /// (docs/compat/tools.md §5.2).
    ContactPolicy {
        /// Anyone may write.
        Open = "open",
        /// Anyone who exchanged mail with the agent recently, or holds an approved link.
        Auto = "auto",
        /// Only holders of an approved link.
        ContactsOnly = "contacts_only",
        /// No one (besides the agent itself).
        BlockAll = "block_all",
    }
}

impl ContactPolicy {
    /// The reference lower-cases the policy and silently turns unknown values into `auto`.
    pub fn normalize(raw: &str) -> Self {
        Self::parse(&raw.trim().to_ascii_lowercase()).unwrap_or(Self::Auto)
    }
}

/// A directed contact link A→B.
#[derive(Debug, Clone, PartialEq)]
pub struct ContactLink {
    pub id: LinkId,
    pub a_project_id: ProjectId,
    pub a_agent_id: AgentId,
    pub b_project_id: ProjectId,
    pub b_agent_id: AgentId,
    pub status: LinkStatus,
    pub reason: String,
    pub created_ts: Timestamp,
    pub updated_ts: Timestamp,
    pub expires_ts: Option<Timestamp>,
}

impl ContactLink {
    /// Whether the link is approved and not expired at `now`.
    pub fn is_active_approved(&self, now: Timestamp) -> bool {
        self.status == LinkStatus::Approved && self.expires_ts.is_none_or(|e| e > now)
    }

    /// Whether the link is pending and not expired at `now`.
    pub fn is_active_pending(&self, now: Timestamp) -> bool {
        self.status == LinkStatus::Pending && self.expires_ts.is_none_or(|e| e > now)
    }
}

/// A product: a named group of projects (the product bus).
#[derive(Debug, Clone, PartialEq)]
pub struct Product {
    pub id: ProductId,
    pub product_uid: String,
    pub name: String,
    pub created_at: Timestamp,
}

/// A file reservation (an advisory lease on a path pattern), with its holder's name.
#[derive(Debug, Clone, PartialEq)]
pub struct Reservation {
    pub id: ReservationId,
    pub project_id: ProjectId,
    pub agent_id: AgentId,
    /// The holder's name (joined from `agents`).
    pub agent_name: String,
    /// The pattern as requested (kept verbatim; normalised only for matching).
    pub path_pattern: String,
    pub exclusive: bool,
    pub reason: String,
    pub created_ts: Timestamp,
    pub expires_ts: Timestamp,
    pub released_ts: Option<Timestamp>,
}

impl Reservation {
    /// Whether the reservation is in force at `now`: not released and not expired.
    pub fn is_active(&self, now: Timestamp) -> bool {
        self.released_ts.is_none() && self.expires_ts > now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn closed_sets_read_back_what_they_write() {
        let texts = |all: &[&'static str]| all.to_vec();
        let kinds: Vec<_> = RecipientKind::ALL.iter().map(|k| k.as_str()).collect();
        assert_eq!(kinds, texts(&["to", "cc", "bcc"]));
        for kind in RecipientKind::ALL {
            assert_eq!(RecipientKind::parse(kind.as_str()), Some(*kind));
            let json = serde_json::to_string(kind).expect("json");
            assert_eq!(json, format!("\"{}\"", kind.as_str()));
        }
        for status in LinkStatus::ALL {
            assert_eq!(LinkStatus::parse(status.as_str()), Some(*status));
        }
        assert_eq!(RecipientKind::parse("TO"), None, "stored spellings are exact");
        assert_eq!(ContactPolicy::normalize(" Block_All "), ContactPolicy::BlockAll);
        assert_eq!(ContactPolicy::normalize("everyone"), ContactPolicy::Auto);
    }

    #[test]
    fn importance_keeps_free_text_and_knows_what_is_urgent() {
        assert_eq!(Importance::from_input(None), Importance::normal());
        assert_eq!(Importance::from_input(Some("  ".into())), Importance::normal());
        assert_eq!(Importance::from_input(Some("Critical!".into())).as_str(), "Critical!");
        let urgent: Vec<_> = ["low", "normal", "high", "urgent", "HIGH", "Urgent ", "whenever"]
            .into_iter()
            .filter(|text| Importance(*text).is_urgent())
            .collect();
        assert_eq!(urgent, ["high", "urgent"]);
        assert_eq!(serde_json::to_string(&Importance::high()).expect("json"), "\"high\"");
    }

    #[test]
    fn attachments_are_empty_only_as_an_empty_array() {
        assert!(Attachments::none().is_empty());
        assert!(Attachments(" [] ").is_empty());
        let one = Attachments(r#"[{"type":"file","path":"a.webp"}]"#);
        assert!(!one.is_empty());
        assert_eq!(one.to_value()[0]["path"], "a.webp");
        assert_eq!(Attachments("not json").to_value(), serde_json::json!([]));
    }
}
