//! The reference's result shapes (spec/tools.md §0.3), shared by several ops.

use serde::Serialize;
use serde_json::Value;

use crate::model::time::Timestamp;
use crate::records::{Agent, Project};
use crate::store::db::messages::ListedMessage;

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

/// The agent fields every view shares.
#[derive(Debug, Clone, Serialize)]
pub struct AgentBase {
    pub id: i64,
    pub name: String,
    pub program: String,
    pub model: String,
    pub task_description: String,
    pub inception_ts: Timestamp,
    pub last_active_ts: Timestamp,
    pub project_id: i64,
    pub attachments_policy: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub retired_at: Option<Timestamp>,
}

impl From<&Agent> for AgentBase {
    fn from(a: &Agent) -> Self {
        Self {
            id: a.id,
            name: a.name.clone(),
            program: a.program.clone(),
            model: a.model.clone(),
            task_description: a.task_description.clone(),
            inception_ts: a.inception_ts,
            last_active_ts: a.last_active_ts,
            project_id: a.project_id,
            attachments_policy: a.attachments_policy.clone(),
            retired_at: a.retired_at,
        }
    }
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
            from_address: format!("project:{}#{}", row.sender_project_slug, row.sender_name),
        })
    }
}

impl MessageOut {
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
            attachments: serde_json::from_str(&m.attachments).unwrap_or(Value::Array(Vec::new())),
            body_md: include_body.then(|| m.body_md.clone()),
            from: row.sender_name.clone(),
            foreign_sender: ForeignSender::for_listing(row),
            kind: row.kind.clone(),
        }
    }
}
