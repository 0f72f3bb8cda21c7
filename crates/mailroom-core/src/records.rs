//! Rows the use-cases work with, as read from the store.

use crate::model::time::Timestamp;

/// A project: one row per slug.
#[derive(Debug, Clone, PartialEq)]
pub struct Project {
    pub id: i64,
    pub slug: String,
    pub human_key: String,
    pub created_at: Timestamp,
    pub archived_at: Option<Timestamp>,
}

/// An agent registered in a project.
#[derive(Debug, Clone, PartialEq)]
pub struct Agent {
    pub id: i64,
    pub project_id: i64,
    pub name: String,
    pub program: String,
    pub model: String,
    pub task_description: String,
    pub inception_ts: Timestamp,
    pub last_active_ts: Timestamp,
    pub attachments_policy: String,
    pub contact_policy: String,
    pub registration_token: Option<String>,
    pub retired_at: Option<Timestamp>,
}

/// A stored message (without recipients).
#[derive(Debug, Clone, PartialEq)]
pub struct Message {
    pub id: i64,
    pub project_id: i64,
    pub sender_id: i64,
    pub thread_id: Option<String>,
    pub topic: Option<String>,
    pub subject: String,
    pub body_md: String,
    pub importance: String,
    pub ack_required: bool,
    pub created_ts: Timestamp,
    /// The attachments JSON array as stored.
    pub attachments: String,
}

/// A directed contact link A→B.
#[derive(Debug, Clone, PartialEq)]
pub struct ContactLink {
    pub id: i64,
    pub a_project_id: i64,
    pub a_agent_id: i64,
    pub b_project_id: i64,
    pub b_agent_id: i64,
    pub status: String,
    pub reason: String,
    pub created_ts: Timestamp,
    pub updated_ts: Timestamp,
    pub expires_ts: Option<Timestamp>,
}

impl ContactLink {
    /// Whether the link is approved and not expired at `now`.
    pub fn is_active_approved(&self, now: Timestamp) -> bool {
        self.status == "approved" && self.expires_ts.is_none_or(|e| e > now)
    }

    /// Whether the link is pending and not expired at `now`.
    pub fn is_active_pending(&self, now: Timestamp) -> bool {
        self.status == "pending" && self.expires_ts.is_none_or(|e| e > now)
    }
}

/// A product: a named group of projects (the product bus).
#[derive(Debug, Clone, PartialEq)]
pub struct Product {
    pub id: i64,
    pub product_uid: String,
    pub name: String,
    pub created_at: Timestamp,
}
