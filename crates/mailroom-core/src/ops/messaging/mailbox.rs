//! Read-only views behind the MCP resources (docs/compat/resources.md §3–4): one message,
//! a thread, an agent's inbox / outbox / combined mailbox (acknowledgement views:
//! `ack_views`).

use serde::Serialize;

use crate::archive::format::canonical_message_path;
use crate::archive::history::{FileCommit, last_commits};
use crate::error::{Error, Result};
use crate::model::time::Timestamp;
use crate::ops::Mailroom;
use crate::ops::messaging::InboxFilter;
use crate::ops::output::{AddressedMessage, ListingKind, MessageOut};
use crate::ops::resolve::{self, project_agent};
use crate::records::ListedMessage;
use crate::records::{Agent, MessageId, Project};
use crate::store::Db;
use crate::store::db::messages::InboxQuery;

/// Most messages a thread view returns (the reference's fixed cap).
const THREAD_LIMIT: i64 = 10_000;
/// Default and largest listing sizes.
pub(super) const DEFAULT_LIMIT: i64 = 20;
const MAX_LIMIT: i64 = 1000;

/// A thread: its messages oldest first.
#[derive(Debug, Serialize)]
pub struct ThreadView {
    pub project: String,
    pub thread_id: String,
    pub limit: i64,
    pub truncated: bool,
    pub messages: Vec<AddressedMessage>,
}

/// Which mailbox listing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum MailboxKind {
    /// Received messages (as fetch_inbox), each with commit details.
    Inbox,
    /// Sent messages with their recipients and commit details.
    Outbox,
    /// Received and sent messages interleaved, newest first, with a short commit note.
    Mailbox,
    /// As `Mailbox`, with the commit details.
    MailboxWithCommits,
}

/// Parameters of a mailbox listing.
#[derive(Debug, Clone)]
pub struct MailboxRequest {
    pub project_key: String,
    pub agent_name: String,
    pub kind: MailboxKind,
    /// As fetch_inbox's, but lenient: an unreadable `since_ts` is ignored, as the
    /// reference's resources do.
    pub filter: InboxFilter,
}

/// The archive commit of a message. Inbox rows carry the commit that last wrote the
/// message's canonical file when it is found; otherwise (and in the mailbox and outbox
/// listings, as the conformance fixture records them) `hexsha` is null and the summary says
/// the metadata is unavailable.
#[derive(Debug, Serialize)]
pub struct CommitNote {
    pub hexsha: Option<String>,
    pub summary: String,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub details: Option<CommitDetails>,
}

impl CommitNote {
    fn from_file_commit(commit: &FileCommit) -> Self {
        Self {
            hexsha: Some(commit.hexsha.clone()),
            summary: commit.summary.clone(),
            details: Some(CommitDetails {
                authored_ts: Some(commit.authored_ts),
                insertions: commit.insertions as i64,
                deletions: commit.deletions as i64,
                diff_summary: DiffSummary {
                    hunks: commit.hunks as i64,
                    excerpt: Some(commit.excerpt.clone()),
                },
            }),
        }
    }
}

/// The detail fields of a commit note.
#[derive(Debug, Serialize)]
pub struct CommitDetails {
    pub authored_ts: Option<Timestamp>,
    pub insertions: i64,
    pub deletions: i64,
    pub diff_summary: DiffSummary,
}

/// Size of a commit's diff.
#[derive(Debug, Serialize)]
pub struct DiffSummary {
    pub hunks: i64,
    pub excerpt: Option<Vec<String>>,
}

/// One mailbox row.
#[derive(Debug, Serialize)]
pub struct MailboxItem {
    #[serde(flatten)]
    pub message: MessageOut,
    #[serde(flatten, skip_serializing_if = "Option::is_none")]
    pub recipients: Option<Recipients>,
    pub commit: CommitNote,
}

/// Recipient names by kind.
#[derive(Debug, Serialize)]
pub struct Recipients {
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
}

/// A mailbox listing.
#[derive(Debug, Serialize)]
pub struct MailboxView {
    pub project: String,
    pub agent: String,
    pub count: usize,
    pub messages: Vec<MailboxItem>,
}

impl Mailroom {
    /// One message of a project with its body and recipients; with a viewer, only if the
    /// viewer sent or received it.
    pub async fn message_detail(
        &self,
        project_key: String,
        message_id: MessageId,
        viewer: Option<String>,
    ) -> Result<AddressedMessage> {
        self.store
            .read(move |db| {
                let project = resolve::project(db, &project_key)?;
                let viewer =
                    viewer.map(|v| resolve::agent(db, &project, &v, "agent")).transpose()?;
                let row = db.listed_message(message_id)?.filter(|r| {
                    r.message.project_id == project.id
                        && visible_to(db, r, viewer.as_ref()).unwrap_or(false)
                });
                let Some(row) = row else {
                    return Err(Error::not_found(format!("Message not found: {message_id}")));
                };
                addressed(db, &row, true)
            })
            .await
    }

    /// A thread (messages carrying `thread_id`, plus the root whose id it names), oldest first.
    pub async fn thread_view(
        &self,
        project_key: String,
        thread_id: String,
        include_bodies: bool,
        viewer: Option<String>,
    ) -> Result<ThreadView> {
        self.store
            .read(move |db| {
                let project = resolve::project(db, &project_key)?;
                let viewer =
                    viewer.map(|v| resolve::agent(db, &project, &v, "agent")).transpose()?;
                let rows = db.thread_messages(project.id, thread_id.trim(), THREAD_LIMIT + 1)?;
                let truncated = rows.len() as i64 > THREAD_LIMIT;
                let mut messages = Vec::new();
                for row in rows.iter().take(THREAD_LIMIT as usize) {
                    if visible_to(db, row, viewer.as_ref())? {
                        messages.push(addressed(db, row, include_bodies)?);
                    }
                }
                Ok(ThreadView {
                    project: project.human_key,
                    thread_id,
                    limit: THREAD_LIMIT,
                    truncated,
                    messages,
                })
            })
            .await
    }

    /// An agent's inbox, outbox or combined mailbox, newest first.
    pub async fn mailbox(&self, req: MailboxRequest) -> Result<MailboxView> {
        let limit = clamp_limit(req.filter.limit, DEFAULT_LIMIT);
        let since = req.filter.since_ts.as_deref().and_then(|s| Timestamp::parse_iso(s.trim()));
        let kind = req.kind;
        let (mut view, slug) = self
            .store
            .read(move |db| {
                let (project, agent) = project_agent(db, &req.project_key, &req.agent_name)?;
                let messages = match req.kind {
                    MailboxKind::Inbox => {
                        received(db, &project, &agent, limit, req.filter.urgent_only, since)?
                            .iter()
                            .map(|r| item(r, &agent, req.filter.include_bodies, None, true))
                            .collect()
                    }
                    MailboxKind::Outbox => {
                        sent(db, &project, &agent, limit, since, req.filter.include_bodies)?
                    }
                    MailboxKind::Mailbox | MailboxKind::MailboxWithCommits => {
                        let details = req.kind == MailboxKind::MailboxWithCommits;
                        combined(db, &project, &agent, limit, details)?
                    }
                };
                let view = MailboxView {
                    project: project.human_key,
                    agent: agent.name,
                    count: messages.len(),
                    messages,
                };
                Ok((view, project.slug))
            })
            .await?;
        if kind == MailboxKind::Inbox {
            self.attach_commits(&mut view.messages, &slug).await;
        }
        Ok(view)
    }

    /// The archive commit that last wrote each of `paths` (repo-relative), for those found;
    /// `None` without an archive or when the lookup fails (logged: the callers are
    /// best-effort).
    pub(crate) async fn last_commits_of(
        &self,
        paths: Vec<String>,
    ) -> Option<std::collections::HashMap<String, FileCommit>> {
        let root = self.archive.as_ref()?.root().to_path_buf();
        match tokio::task::spawn_blocking(move || last_commits(&root, &paths)).await {
            Ok(Ok(found)) => Some(found),
            Ok(Err(e)) => {
                tracing::warn!(error = %e.message, "commit lookup failed");
                None
            }
            Err(e) => {
                tracing::warn!(error = %e, "commit lookup failed");
                None
            }
        }
    }

    /// Replaces the commit notes of inbox rows by the archive commit that last wrote each
    /// message's canonical file, where one is found (best-effort: a message the archive has
    /// not committed yet, or a failing lookup, keeps its "unavailable" note).
    async fn attach_commits(&self, items: &mut [MailboxItem], project_slug: &str) {
        let paths: Vec<String> = items
            .iter()
            .map(|i| {
                let m = &i.message;
                canonical_message_path(project_slug, m.created_ts, &m.subject, m.id)
            })
            .collect();
        let Some(found) = self.last_commits_of(paths.clone()).await else { return };
        for (item, path) in items.iter_mut().zip(&paths) {
            if let Some(commit) = found.get(path) {
                item.commit = CommitNote::from_file_commit(commit);
            }
        }
    }
}

pub(super) fn clamp_limit(limit: Option<i64>, default: i64) -> i64 {
    limit.filter(|l| *l >= 1).unwrap_or(default).min(MAX_LIMIT)
}

/// Whether `viewer` (when given) sent or received the message.
fn visible_to(db: &Db<'_>, row: &ListedMessage, viewer: Option<&Agent>) -> Result<bool> {
    let Some(viewer) = viewer else { return Ok(true) };
    Ok(row.message.sender_id == viewer.id || db.receipt(row.message.id, viewer.id)?.is_some())
}

fn recipients(db: &Db<'_>, message_id: MessageId) -> Result<Recipients> {
    let lists = db.recipient_lists(message_id)?;
    Ok(Recipients { to: lists.to, cc: lists.cc, bcc: lists.bcc })
}

fn addressed(db: &Db<'_>, row: &ListedMessage, body: bool) -> Result<AddressedMessage> {
    let Recipients { to, cc, bcc } = recipients(db, row.message.id)?;
    let mut message = MessageOut::from_listing(row, body);
    message.kind = None;
    Ok(AddressedMessage { message, to, cc, bcc })
}

fn received(
    db: &Db<'_>,
    project: &Project,
    agent: &Agent,
    limit: i64,
    urgent_only: bool,
    since: Option<Timestamp>,
) -> Result<Vec<ListedMessage>> {
    db.inbox(&InboxQuery {
        project_id: project.id,
        agent_id: agent.id,
        limit,
        urgent_only,
        since,
        topic: None,
        unread_only: false,
    })
}

fn sent(
    db: &Db<'_>,
    project: &Project,
    agent: &Agent,
    limit: i64,
    since: Option<Timestamp>,
    bodies: bool,
) -> Result<Vec<MailboxItem>> {
    db.outbox(project.id, agent.id, since, limit)?
        .iter()
        .map(|row| {
            let recipients = recipients(db, row.message.id)?;
            let mut message = MessageOut::from_listing(row, bodies);
            message.kind = None;
            let commit =
                commit_note("sent", &row.sender_name, &recipients.to, &row.message.subject, true);
            Ok(MailboxItem { message, recipients: Some(recipients), commit })
        })
        .collect()
}

/// Received and sent messages interleaved, newest first (ids follow creation order).
fn combined(
    db: &Db<'_>,
    project: &Project,
    agent: &Agent,
    limit: i64,
    details: bool,
) -> Result<Vec<MailboxItem>> {
    let mut rows: Vec<(ListedMessage, bool)> = received(db, project, agent, limit, false, None)?
        .into_iter()
        .map(|r| (r, false))
        .chain(db.outbox(project.id, agent.id, None, limit)?.into_iter().map(|r| (r, true)))
        .collect();
    rows.sort_by_key(|(r, _)| std::cmp::Reverse(r.message.id));
    rows.truncate(limit as usize);
    rows.iter()
        .map(|(row, outgoing)| {
            if !outgoing {
                return Ok(item(row, agent, false, None, details));
            }
            let to = recipients(db, row.message.id)?.to;
            let mut message = MessageOut::from_listing(row, false);
            message.kind = Some(ListingKind::Outbox);
            let commit = commit_note("sent", &row.sender_name, &to, &row.message.subject, details);
            Ok(MailboxItem { message, recipients: None, commit })
        })
        .collect()
}

fn item(
    row: &ListedMessage,
    viewer: &Agent,
    bodies: bool,
    recipients: Option<Recipients>,
    details: bool,
) -> MailboxItem {
    let commit = commit_note(
        "received",
        &row.sender_name,
        std::slice::from_ref(&viewer.name),
        &row.message.subject,
        details,
    );
    MailboxItem { message: MessageOut::from_listing(row, bodies), recipients, commit }
}

fn commit_note(
    direction: &str,
    sender: &str,
    recipients: &[String],
    subject: &str,
    details: bool,
) -> CommitNote {
    CommitNote {
        hexsha: None,
        summary: format!(
            "Commit metadata unavailable for {direction} message: {sender} -> {} | {subject}",
            recipients.join(", ")
        ),
        details: details.then_some(CommitDetails {
            authored_ts: None,
            insertions: 0,
            deletions: 0,
            diff_summary: DiffSummary { hunks: 0, excerpt: None },
        }),
    }
}
