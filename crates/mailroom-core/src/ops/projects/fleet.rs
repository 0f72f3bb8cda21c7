//! What the web UI shows the people who oversee the fleet: every project's newest mail, a
//! project at a glance, an agent's inbox a page at a time.

use serde::Serialize;

use crate::error::Result;
use crate::model::time::Timestamp;
use crate::ops::Mailroom;
use crate::ops::agents::{ListedAgent, agents_with_unread};
use crate::ops::output::{MessageOut, ProjectOut};
use crate::ops::resolve;
use crate::records::{Importance, MessageId};
use crate::store::db::fleet::FleetRow;

/// Longest excerpt of a body in a listing, in characters.
pub const EXCERPT_CHARS: usize = 150;
/// Most messages a fleet listing returns.
pub const MAX_FLEET_MESSAGES: i64 = 1000;
/// Messages a project overview shows.
const OVERVIEW_MESSAGES: i64 = 50;

/// One message of the fleet-wide listing.
#[derive(Debug, Clone, Serialize)]
pub struct FleetMessage {
    pub id: MessageId,
    pub project_slug: String,
    pub project_human_key: String,
    pub sender: String,
    /// Recipient names of every kind, sorted.
    pub recipients: Vec<String>,
    pub subject: String,
    pub excerpt: String,
    pub importance: Importance,
    pub ack_required: bool,
    pub thread_id: Option<String>,
    pub created_ts: Timestamp,
}

impl From<FleetRow> for FleetMessage {
    fn from(row: FleetRow) -> Self {
        Self {
            id: row.id,
            project_slug: row.project_slug,
            project_human_key: row.project_human_key,
            sender: row.sender,
            recipients: row.recipients,
            subject: row.subject,
            excerpt: excerpt(&row.opening),
            importance: row.importance,
            ack_required: row.ack_required,
            thread_id: row.thread_id,
            created_ts: row.created_ts,
        }
    }
}

/// A project at a glance: its agents and newest messages.
#[derive(Debug, Clone, Serialize)]
pub struct ProjectOverview {
    pub project: ProjectOut,
    pub agents: Vec<ListedAgent>,
    pub messages: Vec<MessageOut>,
}

impl Mailroom {
    /// A project by slug or human key.
    pub async fn project_by_key(&self, project_key: String) -> Result<ProjectOut> {
        self.store
            .read_short(move |db| Ok(ProjectOut::from(&resolve::project(db, &project_key)?)))
            .await
    }

    /// The newest messages of every project, of one importance when given (compared without
    /// case), `limit` clamped to 1..=[`MAX_FLEET_MESSAGES`].
    pub async fn fleet_messages(
        &self,
        limit: i64,
        importance: Option<String>,
    ) -> Result<Vec<FleetMessage>> {
        let limit = limit.clamp(1, MAX_FLEET_MESSAGES);
        let rows =
            self.store.read(move |db| db.fleet_messages(limit, importance.as_deref())).await?;
        Ok(rows.into_iter().map(FleetMessage::from).collect())
    }

    /// A project (by slug or human key) with its agents and newest messages.
    pub async fn project_overview(&self, project_key: String) -> Result<ProjectOverview> {
        self.store
            .read(move |db| {
                let project = resolve::project(db, &project_key)?;
                let agents = agents_with_unread(db, project.id)?;
                let messages = db
                    .project_messages(project.id, OVERVIEW_MESSAGES)?
                    .iter()
                    .map(|row| MessageOut::from_listing(row, true))
                    .collect();
                Ok(ProjectOverview { project: ProjectOut::from(&project), agents, messages })
            })
            .await
    }
}

/// A body's first [`EXCERPT_CHARS`] characters with whitespace runs folded to one space, and
/// an ellipsis when it was cut.
pub fn excerpt(body: &str) -> String {
    let mut words = body.split_whitespace();
    let mut out = String::new();
    let mut chars = 0;
    let mut cut = false;
    for word in words.by_ref() {
        let gap = usize::from(!out.is_empty());
        let length = word.chars().count();
        if chars + gap + length > EXCERPT_CHARS {
            let room = EXCERPT_CHARS.saturating_sub(chars + gap);
            if gap == 1 && room > 0 {
                out.push(' ');
            }
            out.extend(word.chars().take(room));
            cut = true;
            break;
        }
        if gap == 1 {
            out.push(' ');
        }
        out.push_str(word);
        chars += gap + length;
    }
    if cut || words.next().is_some() {
        out.push('…');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn excerpts_fold_whitespace_and_stop_at_the_limit() {
        assert_eq!(excerpt("  a\n\n b\tc "), "a b c");
        assert_eq!(excerpt(""), "");
        let long = "word ".repeat(100);
        let cut = excerpt(&long);
        assert!(cut.ends_with('…'), "{cut}");
        assert!((EXCERPT_CHARS - 5..=EXCERPT_CHARS + 1).contains(&cut.chars().count()), "{cut}");
        assert!(!cut.contains("  ") && cut.starts_with("word word"));
        let wide = "é".repeat(400);
        assert_eq!(excerpt(&wide).chars().count(), EXCERPT_CHARS + 1);
    }
}
