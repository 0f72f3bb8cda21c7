//! An agent's inbox: fetch_inbox's page (inline on the async worker when it is short, else
//! on a blocking thread), the limits and `since_ts` every inbox-like view shares, the read
//! and acknowledgement receipts, and the web UI's inbox pages and read marks.

use serde::Serialize;

use super::FetchInbox;
use crate::error::{Error, Result};
use crate::model::time::Timestamp;
use crate::ops::Mailroom;
use crate::ops::output::{AgentBase, MessageOut, ProjectOut};
use crate::ops::resolve::{self, project_agent};
use crate::records::{AgentId, MessageId, ProjectId};
use crate::store::Db;
use crate::store::db::mailbox::COUNT_CAP;
use crate::store::db::messages::InboxQuery;

/// fetch_inbox never returns more than this many messages.
const MAX_INBOX_LIMIT: i64 = 1000;
/// Largest unfiltered inbox page read inline on the async worker (`Store::read_short`).
const SHORT_INBOX_LIMIT: i64 = 100;

impl Mailroom {
    /// Resolves the inbox's owner and runs `page` on its query.
    pub(super) async fn inbox_page<T, P>(&self, req: FetchInbox, page: P) -> Result<T>
    where
        T: Send + 'static,
        P: Fn(&Db<'_>, &InboxQuery<'_>) -> Result<T> + Clone + Send + 'static,
    {
        let limit = inbox_limit(req.filter.limit)?;
        let since = parse_since(req.filter.since_ts.as_deref())?;
        let topic =
            req.topic.as_deref().map(str::trim).filter(|t| !t.is_empty()).map(str::to_string);
        // An unfiltered page reads just its rows off the agent's recipient index: a short
        // read, run inline. A filter may skip many rows per row kept, so filtered (and long)
        // pages go to a blocking thread.
        let short = limit <= SHORT_INBOX_LIMIT
            && !req.filter.urgent_only
            && !req.filter.unread_only
            && since.is_none()
            && topic.is_none();
        let (urgent_only, unread_only) = (req.filter.urgent_only, req.filter.unread_only);
        let page = move |db: &Db<'_>, project_id: ProjectId, agent_id: AgentId| {
            let query = InboxQuery {
                project_id,
                agent_id,
                limit,
                urgent_only,
                since,
                topic: topic.as_deref(),
                unread_only,
            };
            page(db, &query)
        };
        if req.filter.mark_read {
            // The page and its read marks in one write: a message is marked read exactly
            // when this answer lists it.
            return self
                .store
                .write(move |db| {
                    let project = resolve::project(db, &req.project_key)?;
                    let agent = resolve::agent(db, &project, &req.agent_name, "agent_name")?;
                    page(db, project.id, agent.id)
                })
                .await;
        }
        if short {
            // Inline only while every step is an index lookup: a name that does not resolve
            // takes the blocking road below, where its error compares it with every name.
            let (key, name, page) = (req.project_key.clone(), req.agent_name.clone(), page.clone());
            let found = self
                .store
                .read_short(move |db| {
                    match resolve::project_and_agent_ids_directly(db, &key, &name)? {
                        Some((project_id, agent_id)) => page(db, project_id, agent_id).map(Some),
                        None => Ok(None),
                    }
                })
                .await?;
            if let Some(rows) = found {
                return Ok(rows);
            }
        }
        self.store
            .read(move |db| {
                let project = resolve::project(db, &req.project_key)?;
                let agent = resolve::agent(db, &project, &req.agent_name, "agent_name")?;
                page(db, project.id, agent.id)
            })
            .await
    }
}

/// The inbox size asked for: at least 1, at most 1000, 20 by default.
pub(crate) fn inbox_limit(limit: Option<i64>) -> Result<i64> {
    match limit {
        Some(l) if l < 1 => {
            Err(Error::invalid_kind("INVALID_LIMIT", format!("limit must be at least 1 (got {l})")))
        }
        Some(l) => Ok(l.min(MAX_INBOX_LIMIT)),
        None => Ok(20),
    }
}

pub(crate) fn parse_since(raw: Option<&str>) -> Result<Option<Timestamp>> {
    match raw.map(str::trim).filter(|s| !s.is_empty()) {
        None => Ok(None),
        Some(text) => Timestamp::parse_iso(text).map(Some).ok_or_else(|| {
            Error::invalid_kind("INVALID_TIMESTAMP", format!(
                "since_ts '{text}' is not an ISO-8601 timestamp (e.g. 2025-01-15T10:30:00+00:00)"))
        }),
    }
}

/// Marks read, in the caller's write, the messages of a page asked for with `mark_read`
/// (those the agent received in the project and had not read).
pub(crate) fn mark_listed_read(
    db: &Db<'_>,
    project_id: ProjectId,
    agent_id: AgentId,
    ids: &[MessageId],
) -> Result<()> {
    if ids.is_empty() {
        return Ok(());
    }
    db.mark_read(project_id, agent_id, ids, Timestamp::now()).map(drop)
}

/// Records the receipt when the agent can see the message; `None` when it only sent it.
pub(super) fn receipt_after(
    db: &Db<'_>,
    project_key: &str,
    agent_name: &str,
    message_id: MessageId,
    acknowledge: bool,
) -> Result<Option<crate::store::db::messages::ReceiptState>> {
    let project = resolve::project(db, project_key)?;
    let agent = resolve::agent(db, &project, agent_name, "agent_name")?;
    let visible_message = db.message_by_id(message_id)?.filter(|m| m.project_id == project.id);
    let Some(message) = visible_message else {
        return Err(not_visible(message_id, &agent.name));
    };
    if db.receipt(message_id, agent.id)?.is_none() {
        if message.sender_id == agent.id {
            return Ok(None);
        }
        return Err(not_visible(message_id, &agent.name));
    }
    db.record_receipt(message_id, agent.id, Timestamp::now(), acknowledge)?;
    db.receipt(message_id, agent.id)
}

pub(super) fn not_visible(message_id: MessageId, agent: &str) -> Error {
    Error::not_found(format!("Message '{message_id}' not found or not visible to agent '{agent}'."))
}

/// Largest page of an agent's inbox.
pub const MAX_PAGE_SIZE: i64 = 500;

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
}

/// An agent's unread mail in a project, as `mailroom check-inbox` reports it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct UnreadMail {
    /// The project's slug.
    pub project: String,
    /// The agent's name as stored.
    pub agent: String,
    /// Messages fetch_inbox lists that are not marked read.
    pub unread: i64,
    /// How many of those are urgent (importance `high` or `urgent`).
    pub urgent: i64,
}

/// Counts an agent's unread mail straight from the database `config` names (the SQLite file
/// read-only, or the PostgreSQL database), without a server (as the guard reads
/// reservations): what reminder hooks run after every tool call.
pub fn unread_mail(
    config: &crate::CoreConfig,
    project_key: &str,
    agent_name: &str,
) -> Result<UnreadMail> {
    crate::store::Reader::for_config(config)?.read(|db| {
        let (project, agent) = project_agent(db, project_key, agent_name)?;
        let (unread, urgent) = db.unread_mail_counts(project.id, agent.id)?;
        Ok(UnreadMail { project: project.slug, agent: agent.name, unread, urgent })
    })
}
