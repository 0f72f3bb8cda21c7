//! Queries on `messages` and `message_recipients`.

use std::collections::HashSet;
use std::sync::LazyLock;

use super::Db;
use super::driver::{Row, args};
use crate::error::Result;
use crate::model::time::Timestamp;
use crate::records::{
    AgentId, Attachments, Importance, ListedMessage, Message, MessageId, NewMessage, ProjectId,
    RecipientKind,
};

pub(super) const COLUMNS: &str = "m.id, m.project_id, m.sender_id, m.thread_id, m.topic, m.subject, \
     m.body_md, m.importance, m.ack_required, m.created_ts, m.attachments";

fn message(row: &Row<'_>) -> Result<Message> {
    message_ref(row).map(|m| m.to_owned_text())
}

/// Reads `COLUMNS` borrowing the text from the row.
fn message_ref<'r>(row: &Row<'r>) -> Result<Message<&'r str>> {
    Ok(Message {
        id: row.get(0)?,
        project_id: row.get(1)?,
        sender_id: row.get(2)?,
        thread_id: row.get(3)?,
        topic: row.get(4)?,
        subject: row.get(5)?,
        body_md: row.get(6)?,
        importance: Importance(row.get(7)?),
        ack_required: row.get(8)?,
        created_ts: row.get(9)?,
        attachments: Attachments(row.get(10)?),
    })
}

/// A message's recipient names by kind.
#[derive(Debug, Default)]
pub struct RecipientLists {
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
}

impl RecipientLists {
    /// The list of one kind.
    pub fn of_kind(&mut self, kind: RecipientKind) -> &mut Vec<String> {
        match kind {
            RecipientKind::To => &mut self.to,
            RecipientKind::Cc => &mut self.cc,
            RecipientKind::Bcc => &mut self.bcc,
        }
    }
}

/// Filters of an inbox listing.
pub struct InboxQuery<'a> {
    pub project_id: ProjectId,
    pub agent_id: AgentId,
    pub limit: i64,
    pub urgent_only: bool,
    pub since: Option<Timestamp>,
    pub topic: Option<&'a str>,
    /// Only messages the agent has not read.
    pub unread_only: bool,
}

/// One recipient row of a message, for its sender's receipts.
#[derive(Debug, Clone)]
pub struct RecipientReceipt {
    pub name: String,
    pub kind: RecipientKind,
    pub read_ts: Option<Timestamp>,
    pub ack_ts: Option<Timestamp>,
}

/// Read and acknowledgement state of one recipient row.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ReceiptState {
    pub read_ts: Option<Timestamp>,
    pub ack_ts: Option<Timestamp>,
}

/// The importances the urgent filters select, as an SQL list (in Rust:
/// `records::Importance::is_urgent`; a store test holds the two to the same rows).
pub(super) const URGENT_IMPORTANCES: &str = "('high', 'urgent')";

pub(super) const LISTED_COLUMNS: &str = "s.name, s.project_id, sp.slug, sp.human_key";
pub(super) const LISTED_JOINS: &str =
    "JOIN agents s ON s.id = m.sender_id JOIN projects sp ON sp.id = s.project_id";

/// An agent's inbox page in one project, newest first (parameters: agent, project, urgent
/// only, since, topic, limit). Built once, not per request: it is the hottest read.
pub(super) static INBOX_SQL: LazyLock<String> = LazyLock::new(|| inbox_sql(""));

/// [`INBOX_SQL`] keeping only unread rows (`unread_only`): a statement of its own, so the
/// plain inbox keeps reading its covering index alone.
pub(super) static UNREAD_INBOX_SQL: LazyLock<String> =
    LazyLock::new(|| inbox_sql("AND r.read_ts IS NULL"));

fn inbox_sql(extra: &str) -> String {
    format!(
        "SELECT {COLUMNS}, {LISTED_COLUMNS}, r.kind FROM message_recipients r
         JOIN messages m ON m.id = r.message_id {LISTED_JOINS}
         WHERE r.agent_id = ?1 AND m.project_id = ?2
           AND (?3 = 0 OR m.importance IN {URGENT_IMPORTANCES})
           AND (?4 IS NULL OR m.created_ts > ?4)
           AND (?5 IS NULL OR m.topic = ?5 COLLATE NOCASE) {extra}
         ORDER BY r.message_id DESC LIMIT ?6"
    )
}

/// An agent's unread messages in a project and the urgent ones among them (parameters:
/// agent, project). Counted from 0011's partial index of unread rows, which SQLite picks by
/// itself: a hint naming it would fail on a database a newer binary has not migrated yet
/// (`check-inbox` reads without migrating).
pub(super) static UNREAD_SQL: LazyLock<String> = LazyLock::new(|| {
    format!(
        "SELECT COUNT(*),
                COALESCE(SUM(CASE WHEN m.importance IN {URGENT_IMPORTANCES} THEN 1 ELSE 0 END), 0)
         FROM message_recipients r JOIN messages m ON m.id = r.message_id
         WHERE r.agent_id = ?1 AND r.read_ts IS NULL AND m.project_id = ?2"
    )
});

impl Db<'_> {
    /// How many of an agent's messages in a project are unread, and how many of those are
    /// urgent: the rows fetch_inbox lists, less those marked read.
    pub fn unread_mail_counts(
        &self,
        project_id: ProjectId,
        agent_id: AgentId,
    ) -> Result<(i64, i64)> {
        self.query_row(&UNREAD_SQL, args![agent_id, project_id], |row| {
            Ok((row.get(0)?, row.get(1)?))
        })
    }
}

pub(super) fn listed(row: &Row<'_>, kind: bool) -> Result<ListedMessage> {
    listed_ref(row, kind).map(|r| r.to_owned_text())
}

/// Reads `COLUMNS, LISTED_COLUMNS` (and the recipient kind after them when `kind`), borrowing
/// the text from the row: answers written straight from the statement (the inbox) skip a
/// `String` per column and row.
pub(super) fn listed_ref<'r>(row: &Row<'r>, kind: bool) -> Result<ListedMessage<&'r str>> {
    Ok(ListedMessage {
        message: message_ref(row)?,
        sender_name: row.get(11)?,
        sender_project_id: row.get(12)?,
        sender_project_slug: row.get(13)?,
        sender_project_human_key: row.get(14)?,
        kind: if kind { Some(row.get(15)?) } else { None },
    })
}

impl Db<'_> {
    /// Inserts a message row and returns its id. Recipients are added by the caller in the
    /// same transaction.
    pub fn insert_message<S: AsRef<str>>(&self, new: &NewMessage<S>) -> Result<MessageId> {
        let new = new.borrowed();
        self.insert_returning_id(
            "INSERT INTO messages (id, project_id, sender_id, thread_id, topic, subject,
                 body_md, importance, ack_required, created_ts, attachments)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
            args![
                new.id,
                new.project_id,
                new.sender_id,
                new.thread_id,
                new.topic,
                new.subject,
                new.body_md,
                new.importance,
                new.ack_required,
                new.created_ts,
                new.attachments,
            ],
        )
        .map(MessageId)
    }

    /// Adds one recipient row.
    pub fn insert_recipient(
        &self,
        message_id: MessageId,
        agent_id: AgentId,
        kind: RecipientKind,
    ) -> Result<()> {
        self.execute(
            "INSERT INTO message_recipients (message_id, agent_id, kind) VALUES (?1, ?2, ?3)",
            args![message_id, agent_id, kind],
        )
        .map(drop)
    }

    /// The message with this id.
    pub fn message_by_id(&self, id: MessageId) -> Result<Option<Message>> {
        let sql = format!("SELECT {COLUMNS} FROM messages m WHERE m.id = ?1");
        self.query_opt(&sql, args![id], message)
    }

    /// Up to `limit` message ids above `after` with their project's slug, in id order: a
    /// page of every message (archive maintenance).
    pub fn message_ids_with_project_slug(
        &self,
        after: MessageId,
        limit: i64,
    ) -> Result<Vec<(MessageId, String)>> {
        self.query_vec(
            "SELECT m.id, p.slug FROM messages m JOIN projects p ON p.id = m.project_id
             WHERE m.id > ?1 ORDER BY m.id LIMIT ?2",
            args![after, limit],
            |r| Ok((r.get(0)?, r.get(1)?)),
        )
    }

    /// How many messages there are.
    pub fn message_count(&self) -> Result<usize> {
        self.query_value("SELECT count(*) FROM messages", args![])
    }

    /// The newest message of each thread in each month (by project, thread id and the
    /// `YYYY-MM` of `created_ts`): a thread's digest of that month (docs/compat/archive.md §4)
    /// is complete once that message is written into it.
    pub fn last_message_of_each_thread_month(&self) -> Result<HashSet<MessageId>> {
        let mut last = HashSet::new();
        self.query_each(
            "SELECT max(id) FROM messages WHERE thread_id IS NOT NULL
             GROUP BY project_id, thread_id, substr(created_ts, 1, 7)",
            args![],
            |r| {
                last.insert(r.get(0)?);
                Ok(())
            },
        )?;
        Ok(last)
    }

    /// The slug of the project a message belongs to; `None` for no such message.
    pub fn message_project_slug(&self, id: MessageId) -> Result<Option<String>> {
        self.query_opt(
            "SELECT p.slug FROM messages m JOIN projects p ON p.id = m.project_id
             WHERE m.id = ?1",
            args![id],
            |r| r.get(0),
        )
    }

    /// Recipient `(kind, name, agent_id)` triples of a message in insertion order.
    pub fn recipients_of(
        &self,
        message_id: MessageId,
    ) -> Result<Vec<(RecipientKind, String, AgentId)>> {
        self.query_vec(
            "SELECT r.kind, a.name, a.id FROM message_recipients r
             JOIN agents a ON a.id = r.agent_id WHERE r.message_id = ?1 ORDER BY r.rowid",
            args![message_id],
            |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?)),
        )
    }

    /// A message's recipient rows with their read and acknowledgement times, in insertion
    /// order.
    pub fn receipts_of(&self, message_id: MessageId) -> Result<Vec<RecipientReceipt>> {
        self.query_vec(
            "SELECT a.name, r.kind, r.read_ts, r.ack_ts FROM message_recipients r
             JOIN agents a ON a.id = r.agent_id WHERE r.message_id = ?1 ORDER BY r.rowid",
            args![message_id],
            |row| {
                Ok(RecipientReceipt {
                    name: row.get(0)?,
                    kind: row.get(1)?,
                    read_ts: row.get(2)?,
                    ack_ts: row.get(3)?,
                })
            },
        )
    }

    /// [`Self::recipient_lists`] of several messages in one query.
    pub fn recipient_lists_of(
        &self,
        ids: &[MessageId],
    ) -> Result<std::collections::HashMap<MessageId, RecipientLists>> {
        let list =
            format!("[{}]", ids.iter().map(|id| id.0.to_string()).collect::<Vec<_>>().join(","));
        let mut lists: std::collections::HashMap<MessageId, RecipientLists> =
            ids.iter().map(|id| (*id, RecipientLists::default())).collect();
        self.query_each(
            "SELECT r.message_id, r.kind, a.name FROM message_recipients r
             JOIN agents a ON a.id = r.agent_id
             WHERE r.message_id IN (SELECT CAST(value AS BIGINT) FROM json_each(?1))
             ORDER BY r.message_id, r.rowid",
            args![list],
            |r| {
                let kind: RecipientKind = r.get(1)?;
                if let Some(of) = lists.get_mut(&r.get(0)?) {
                    of.of_kind(kind).push(r.get(2)?);
                }
                Ok(())
            },
        )?;
        Ok(lists)
    }

    /// A message's recipient names by kind (`to`, `cc`, `bcc`), each in insertion order.
    pub fn recipient_lists(&self, message_id: MessageId) -> Result<RecipientLists> {
        let mut lists = RecipientLists::default();
        for (kind, name, _) in self.recipients_of(message_id)? {
            lists.of_kind(kind).push(name);
        }
        Ok(lists)
    }

    /// The inbox of an agent in a project, newest first.
    ///
    /// Ordered by message id, which the single writer assigns in creation order (so it is
    /// `created_ts` order), because the `(agent_id, message_id)` index then serves the
    /// `LIMIT` directly instead of sorting a large inbox on every call.
    pub fn inbox(&self, query: &InboxQuery<'_>) -> Result<Vec<ListedMessage>> {
        let mut rows = Vec::new();
        self.inbox_each(query, |row| {
            rows.push(row.to_owned_text());
            Ok(())
        })?;
        Ok(rows)
    }

    /// [`Self::inbox`]'s rows, each handed to `visit` borrowed from the statement.
    pub fn inbox_each(
        &self,
        query: &InboxQuery<'_>,
        mut visit: impl FnMut(&ListedMessage<&str>) -> Result<()>,
    ) -> Result<()> {
        let sql: &str = if query.unread_only { &UNREAD_INBOX_SQL } else { &INBOX_SQL };
        self.query_each(
            sql,
            args![
                query.agent_id,
                query.project_id,
                query.urgent_only,
                query.since,
                query.topic,
                query.limit
            ],
            |row| visit(&listed_ref(row, true)?),
        )
    }

    /// Messages of a thread in a project, oldest first: those carrying `thread_id` plus the
    /// root whose numeric id equals it.
    pub fn thread_messages(
        &self,
        project_id: ProjectId,
        thread_id: &str,
        limit: i64,
    ) -> Result<Vec<ListedMessage>> {
        self.thread_messages_seen_by(project_id, thread_id, None, limit)
    }

    /// As [`Self::thread_messages`], keeping only those `viewer_id` sent or received when a
    /// viewer is given (viewer-scoped summaries under tool authentication).
    pub fn thread_messages_seen_by(
        &self,
        project_id: ProjectId,
        thread_id: &str,
        viewer_id: Option<AgentId>,
        limit: i64,
    ) -> Result<Vec<ListedMessage>> {
        let root_id: Option<i64> = thread_id.parse().ok();
        let sql = format!(
            "SELECT {COLUMNS}, {LISTED_COLUMNS} FROM messages m {LISTED_JOINS}
             WHERE m.project_id = ?1 AND (m.thread_id = ?2 OR m.id = ?3)
               AND (?5 IS NULL OR m.sender_id = ?5 OR EXISTS (SELECT 1 FROM message_recipients r
                    WHERE r.message_id = m.id AND r.agent_id = ?5))
             ORDER BY m.created_ts ASC, m.id ASC LIMIT ?4"
        );
        self.query_vec(&sql, args![project_id, thread_id, root_id, limit, viewer_id], |row| {
            listed(row, false)
        })
    }

    /// One message as a listing row (sender and sender project resolved).
    pub fn listed_message(&self, id: MessageId) -> Result<Option<ListedMessage>> {
        let sql = format!(
            "SELECT {COLUMNS}, {LISTED_COLUMNS} FROM messages m {LISTED_JOINS} WHERE m.id = ?1"
        );
        self.query_opt(&sql, args![id], |row| listed(row, false))
    }

    /// The recipient row of `agent_id` on a message, if any.
    pub fn receipt(
        &self,
        message_id: MessageId,
        agent_id: AgentId,
    ) -> Result<Option<ReceiptState>> {
        self.query_opt(
            "SELECT read_ts, ack_ts FROM message_recipients
             WHERE message_id = ?1 AND agent_id = ?2",
            args![message_id, agent_id],
            |row| Ok(ReceiptState { read_ts: row.get(0)?, ack_ts: row.get(1)? }),
        )
    }

    /// Sets `read_ts` (and `ack_ts` when `acknowledge`) where still unset: first write wins.
    pub fn record_receipt(
        &self,
        message_id: MessageId,
        agent_id: AgentId,
        now: Timestamp,
        acknowledge: bool,
    ) -> Result<()> {
        self.execute(
            "UPDATE message_recipients SET read_ts = COALESCE(read_ts, ?3),
                 ack_ts = CASE WHEN ?4 <> 0 THEN COALESCE(ack_ts, ?3) ELSE ack_ts END
             WHERE message_id = ?1 AND agent_id = ?2",
            args![message_id, agent_id, now, acknowledge],
        )
        .map(drop)
    }

    /// Whether the two agents exchanged any message in the project since `since`.
    pub fn exchanged_since(
        &self,
        project_id: ProjectId,
        a: AgentId,
        b: AgentId,
        since: Timestamp,
    ) -> Result<bool> {
        self.query_value(
            "SELECT EXISTS (SELECT 1 FROM messages m
               JOIN message_recipients r ON r.message_id = m.id
               WHERE m.project_id = ?1 AND m.created_ts > ?4
                 AND ((m.sender_id = ?2 AND r.agent_id = ?3)
                   OR (m.sender_id = ?3 AND r.agent_id = ?2)))",
            args![project_id, a, b, since],
        )
    }

    /// Names of senders and recipients of the (at most 500) thread messages `viewer` can see.
    pub fn thread_participant_names(
        &self,
        project_id: ProjectId,
        thread_id: &str,
        viewer_id: AgentId,
    ) -> Result<Vec<String>> {
        self.query_vec(
            "WITH visible AS (
                   SELECT m.id, m.sender_id FROM messages m
                   WHERE m.project_id = ?1 AND m.thread_id = ?2
                     AND (m.sender_id = ?3 OR EXISTS (SELECT 1 FROM message_recipients r
                          WHERE r.message_id = m.id AND r.agent_id = ?3))
                   ORDER BY m.created_ts LIMIT 500)
                 SELECT a.name FROM visible v JOIN agents a ON a.id = v.sender_id
                 UNION
                 SELECT a.name FROM visible v JOIN message_recipients r ON r.message_id = v.id
                   JOIN agents a ON a.id = r.agent_id",
            args![project_id, thread_id, viewer_id],
            |r| r.get(0),
        )
    }

    /// Whether `author_id` sent `viewer_id` a message in this thread (carrying the thread id,
    /// or being its root), in any project: the cross-project reply allowance.
    pub fn wrote_in_thread_to(
        &self,
        thread_id: &str,
        author_id: AgentId,
        viewer_id: AgentId,
    ) -> Result<bool> {
        let root_id: Option<i64> = thread_id.parse().ok();
        self.query_value(
            "SELECT EXISTS (SELECT 1 FROM messages m
               JOIN message_recipients r ON r.message_id = m.id
               WHERE (m.thread_id = ?1 OR m.id = ?2) AND m.sender_id = ?3 AND r.agent_id = ?4)",
            args![thread_id, root_id, author_id, viewer_id],
        )
    }
}
