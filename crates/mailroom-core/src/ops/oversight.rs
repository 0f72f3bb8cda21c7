//! What the web UI shows the people who oversee the fleet: every project's newest mail, a
//! project at a glance, an agent's inbox a page at a time.

use serde::Serialize;

use super::Mailroom;
use super::identity::{ListedAgent, agents_with_unread};
use super::lifecycle::{AgentChange, AgentStatus, ProjectStatus};
use super::mailbox::project_agent;
use super::output::{AgentBase, MessageOut, ProjectOut};
use super::resolve;
use crate::archive::format::canonical_message_path;
use crate::error::{Error, Result};
use crate::model::time::Timestamp;
use crate::records::{AgentId, MessageId, ProjectId};
use crate::store::db::oversight::{COUNT_CAP, FleetRow};

/// Longest excerpt of a body in a listing, in characters.
pub const EXCERPT_CHARS: usize = 150;
/// Most messages a fleet listing returns.
pub const MAX_FLEET_MESSAGES: i64 = 1000;
/// Messages a project overview shows.
const OVERVIEW_MESSAGES: i64 = 50;
/// Largest page of an agent's inbox.
pub const MAX_PAGE_SIZE: i64 = 500;

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
    pub importance: String,
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

/// A message of an agent's inbox page.
#[derive(Debug, Clone, Serialize)]
pub struct InboxEntry {
    #[serde(flatten)]
    pub message: MessageOut,
    pub read: bool,
}

/// A page of an agent's inbox, newest first.
#[derive(Debug, Clone, Serialize)]
pub struct InboxPage {
    pub project: ProjectOut,
    pub agent: AgentBase,
    /// 1-based.
    pub page: i64,
    pub page_size: i64,
    /// Messages in the whole inbox, counted up to `COUNT_CAP` (more is `COUNT_CAP + 1`).
    pub total: i64,
    pub messages: Vec<InboxEntry>,
}

impl InboxPage {
    /// The number of pages the inbox fills (at least one); with more messages than were
    /// counted, at least one page past this one.
    pub fn pages(&self) -> i64 {
        let counted = ((self.total + self.page_size - 1) / self.page_size).max(1);
        if self.total_is_capped() { counted.max(self.page + 1) } else { counted }
    }

    /// Whether the inbox holds more messages than were counted.
    pub fn total_is_capped(&self) -> bool {
        self.total > COUNT_CAP
    }
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

    /// Page `page` (1-based) of an agent's inbox, `page_size` clamped to 1..=[`MAX_PAGE_SIZE`].
    pub async fn agent_inbox_page(
        &self,
        project_key: String,
        agent_name: String,
        page: i64,
        page_size: i64,
    ) -> Result<InboxPage> {
        let page = page.max(1);
        let page_size = page_size.clamp(1, MAX_PAGE_SIZE);
        self.store
            .read(move |db| {
                let (project, agent) = project_agent(db, &project_key, &agent_name)?;
                let offset = (page - 1).saturating_mul(page_size);
                let (rows, total) = db.inbox_page(project.id, agent.id, page_size, offset)?;
                let messages = rows
                    .iter()
                    .map(|row| InboxEntry {
                        message: MessageOut::from_listing(&row.message, true),
                        read: row.read_ts.is_some(),
                    })
                    .collect();
                Ok(InboxPage {
                    project: ProjectOut::from(&project),
                    agent: AgentBase::from(&agent),
                    page,
                    page_size,
                    total,
                    messages,
                })
            })
            .await
    }
}

/// The answer to mark-read and mark-all-read.
#[derive(Debug, Clone, Serialize)]
pub struct MarkedRead {
    pub success: bool,
    pub marked_count: usize,
    /// How many ids were given (mark-read only).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requested_count: Option<usize>,
    pub agent: String,
    pub project: String,
}

/// Most ids one mark-read or delete names.
pub const MAX_IDS: usize = 500;

/// Refuses an empty list of message ids, or one longer than [`MAX_IDS`].
pub(crate) fn check_ids(ids: &[MessageId]) -> Result<()> {
    if ids.is_empty() || ids.len() > MAX_IDS {
        return Err(Error::invalid(format!(
            "message_ids: name between 1 and {MAX_IDS} messages (got {}).",
            ids.len()
        )));
    }
    Ok(())
}

impl Mailroom {
    /// Retires or unretires an agent named by id (the web UI's buttons).
    pub async fn change_agent_by_id(
        &self,
        agent_id: AgentId,
        change: AgentChange,
    ) -> Result<AgentStatus> {
        let (slug, name) = self
            .store
            .read(move |db| {
                let agent = db
                    .agent_by_id(agent_id)?
                    .ok_or_else(|| Error::not_found(format!("agent_id: no agent {agent_id}.")))?;
                let project = db
                    .project_by_id(agent.project_id)?
                    .ok_or_else(|| Error::internal(format!("agent {agent_id} has no project")))?;
                Ok((project.slug, agent.name))
            })
            .await?;
        self.change_agent(slug, name, change).await
    }

    /// Archives a project named by id, or makes it active again.
    pub async fn set_project_archived_by_id(
        &self,
        project_id: ProjectId,
        archived: bool,
    ) -> Result<ProjectStatus> {
        let slug = self
            .store
            .read(move |db| {
                db.project_by_id(project_id)?.map(|p| p.slug).ok_or_else(|| {
                    Error::not_found(format!("project_id: no project {project_id}."))
                })
            })
            .await?;
        self.set_project_archived(slug, archived).await
    }

    /// Marks read, for an agent, those of `ids` it received in the project (`None`: all of
    /// them). Read times already set stay.
    pub async fn mark_read_from_ui(
        &self,
        project_key: String,
        agent_name: String,
        ids: Option<Vec<MessageId>>,
    ) -> Result<MarkedRead> {
        if let Some(ids) = &ids {
            check_ids(ids)?;
        }
        self.store
            .write(move |db| {
                let (project, agent) = project_agent(db, &project_key, &agent_name)?;
                let now = Timestamp::now();
                let marked_count = match &ids {
                    Some(ids) => db.mark_read(project.id, agent.id, ids, now)?,
                    None => db.mark_all_read(project.id, agent.id, now)?,
                };
                Ok(MarkedRead {
                    success: true,
                    marked_count,
                    requested_count: ids.as_ref().map(Vec::len),
                    agent: agent.name,
                    project: project.slug,
                })
            })
            .await
    }

    /// The archive commit that last wrote a message's canonical file, when the archive is on
    /// and has committed it (best-effort: a failing lookup is logged and answers `None`).
    pub async fn message_commit(&self, project_slug: &str, message: &MessageOut) -> Option<String> {
        let path =
            canonical_message_path(project_slug, message.created_ts, &message.subject, message.id);
        let mut found = self.last_commits_of(vec![path.clone()]).await?;
        found.remove(&path).map(|commit| commit.hexsha)
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
