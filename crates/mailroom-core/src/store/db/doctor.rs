//! The queries of `mailroom doctor` (ops/doctor.rs): the checks, on a read-only connection,
//! and the repairs' deletions and index rebuild, in a [`crate::store::DirectWriter`]'s
//! transaction. Each may be limited to one project.

use super::Db;
use super::driver::args;
use crate::error::Result;
use crate::model::time::Timestamp;
use crate::records::{MessageId, ProjectId};

/// A kind of orphaned row: one that names an agent or a message that is gone.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Orphan {
    /// A recipient row whose agent is gone.
    RecipientWithoutAgent,
    /// A recipient row whose message is gone.
    RecipientWithoutMessage,
    /// A message whose sender is gone.
    MessageWithoutSender,
    /// A file reservation whose holder is gone.
    ReservationWithoutAgent,
}

impl Orphan {
    pub const ALL: [Orphan; 4] = [
        Orphan::RecipientWithoutAgent,
        Orphan::RecipientWithoutMessage,
        Orphan::MessageWithoutSender,
        Orphan::ReservationWithoutAgent,
    ];

    /// What the rows are, for reports.
    pub fn label(self) -> &'static str {
        match self {
            Orphan::RecipientWithoutAgent => "recipient row(s) naming an agent that is gone",
            Orphan::RecipientWithoutMessage => "recipient row(s) naming a message that is gone",
            Orphan::MessageWithoutSender => "message(s) naming a sender that is gone",
            Orphan::ReservationWithoutAgent => "file reservation(s) naming a holder that is gone",
        }
    }

    /// The table, and the rows of this kind in it, optionally of one project (`?1`, NULL
    /// for all): a recipient row belongs to its message's project, or, its message gone, to
    /// its agent's. A recipient row whose agent and message are both gone is of the first
    /// kind only.
    fn rows(self) -> (&'static str, &'static str) {
        match self {
            Orphan::RecipientWithoutAgent => (
                "message_recipients",
                "NOT EXISTS (SELECT 1 FROM agents a WHERE a.id = t.agent_id) AND (?1 IS NULL \
                 OR (SELECT m.project_id FROM messages m WHERE m.id = t.message_id) = ?1)",
            ),
            Orphan::RecipientWithoutMessage => (
                "message_recipients",
                "NOT EXISTS (SELECT 1 FROM messages m WHERE m.id = t.message_id) \
                 AND EXISTS (SELECT 1 FROM agents a WHERE a.id = t.agent_id AND \
                 (?1 IS NULL OR a.project_id = ?1))",
            ),
            Orphan::MessageWithoutSender => (
                "messages",
                "NOT EXISTS (SELECT 1 FROM agents a WHERE a.id = t.sender_id) \
                 AND (?1 IS NULL OR t.project_id = ?1)",
            ),
            Orphan::ReservationWithoutAgent => (
                "file_reservations",
                "NOT EXISTS (SELECT 1 FROM agents a WHERE a.id = t.agent_id) \
                 AND (?1 IS NULL OR t.project_id = ?1)",
            ),
        }
    }

    /// How one row is named in a detailed report (SQL text of the row `t`).
    fn describe(self) -> &'static str {
        match self {
            Orphan::RecipientWithoutAgent | Orphan::RecipientWithoutMessage => {
                "'message ' || t.message_id || ', agent ' || t.agent_id"
            }
            Orphan::MessageWithoutSender => {
                "'message ' || t.id || ' (sender ' || t.sender_id || '): ' || t.subject"
            }
            Orphan::ReservationWithoutAgent => {
                "'reservation ' || t.id || ' (holder ' || t.agent_id || '): ' || t.path_pattern"
            }
        }
    }
}

/// What the database's own checks found.
#[derive(Debug, Clone)]
pub struct DoctorCounts {
    /// `PRAGMA quick_check`'s first line (`ok` when sound).
    pub integrity: String,
    /// Orphaned rows of each kind, in [`Orphan::ALL`]'s order.
    pub orphans: [i64; 4],
    pub messages: i64,
    /// Messages in the full-text index, or waiting in `fts_pending` for the writer.
    pub indexed: i64,
    /// Reservations expired but not released.
    pub expired_reservations: i64,
}

impl Db<'_> {
    /// Whether the database holds mailroom's tables.
    pub fn has_mail_tables(&self) -> Result<bool> {
        self.query_value(
            "SELECT COUNT(*) = 3 FROM sqlite_master WHERE type = 'table' \
             AND name IN ('projects', 'agents', 'message_recipients')",
            args![],
        )
    }

    /// The checks' counts; orphans and expired reservations of `project` only when given
    /// (integrity and the index are the whole database's).
    pub fn doctor_counts(
        &self,
        now: Timestamp,
        project: Option<ProjectId>,
    ) -> Result<DoctorCounts> {
        let one = |sql: &str| -> Result<i64> { self.query_value(sql, args![]) };
        let integrity = self.query_value("PRAGMA quick_check", args![])?;
        let mut orphans = [0; 4];
        for (count, kind) in orphans.iter_mut().zip(Orphan::ALL) {
            *count = self.count_orphans(kind, project)?;
        }
        let messages = one("SELECT COUNT(*) FROM messages")?;
        let pending: i64 =
            self.query_opt("SELECT COUNT(*) FROM fts_pending", args![], |r| r.get(0))?.unwrap_or(0);
        let indexed = one("SELECT COUNT(*) FROM fts_messages")? + pending;
        let expired_reservations = self.query_value(
            &format!("SELECT COUNT(*) FROM file_reservations f WHERE {EXPIRED}"),
            args![project, now],
        )?;
        Ok(DoctorCounts { integrity, orphans, messages, indexed, expired_reservations })
    }

    fn count_orphans(&self, kind: Orphan, project: Option<ProjectId>) -> Result<i64> {
        let (table, rows) = kind.rows();
        let sql = format!("SELECT COUNT(*) FROM {table} t WHERE {rows}");
        self.query_value(&sql, args![project])
    }

    /// Up to `limit` orphaned rows of `kind`, each named in a line.
    pub fn orphan_rows(
        &self,
        kind: Orphan,
        project: Option<ProjectId>,
        limit: i64,
    ) -> Result<Vec<String>> {
        let (table, rows) = kind.rows();
        let sql = format!(
            "SELECT {} FROM {table} t WHERE {rows} ORDER BY t.rowid LIMIT ?2",
            kind.describe()
        );
        self.query_vec(&sql, args![project, limit], |r| r.get(0))
    }

    /// Up to `limit` reservations expired but not released, each named in a line.
    pub fn expired_reservation_rows(
        &self,
        now: Timestamp,
        project: Option<ProjectId>,
        limit: i64,
    ) -> Result<Vec<String>> {
        let sql = format!(
            "SELECT 'reservation ' || f.id || ' ' || f.path_pattern || ' of ' \
             || coalesce(a.name, 'agent ' || f.agent_id) || ' in ' \
             || coalesce(p.slug, 'project ' || f.project_id) || ', expired ' || f.expires_ts \
             FROM file_reservations f LEFT JOIN agents a ON a.id = f.agent_id \
             LEFT JOIN projects p ON p.id = f.project_id \
             WHERE {EXPIRED} ORDER BY f.id LIMIT ?3"
        );
        self.query_vec(&sql, args![project, now, limit], |r| r.get(0))
    }

    /// Deletes the orphaned rows of `kind` (not messages: see
    /// [`Self::orphaned_message_ids`]); how many.
    pub fn delete_orphans(&self, kind: Orphan, project: Option<ProjectId>) -> Result<usize> {
        let (table, rows) = kind.rows();
        let sql = format!(
            "DELETE FROM {table} WHERE rowid IN (SELECT t.rowid FROM {table} t WHERE {rows})"
        );
        self.execute(&sql, args![project])
    }

    /// The messages whose sender is gone, in id order.
    pub fn orphaned_message_ids(&self, project: Option<ProjectId>) -> Result<Vec<MessageId>> {
        let (_, rows) = Orphan::MessageWithoutSender.rows();
        let sql = format!("SELECT t.id FROM messages t WHERE {rows} ORDER BY t.id");
        self.query_vec(&sql, args![project], |r| r.get(0))
    }

    /// Empties the full-text index and indexes every message again (the caller's transaction
    /// ends with the pending messages indexed); how many messages it holds.
    pub fn rebuild_search_index(&self) -> Result<usize> {
        self.execute_batch(
            "INSERT INTO fts_messages (fts_messages) VALUES ('delete-all'); \
             INSERT OR IGNORE INTO fts_pending (message_id) SELECT id FROM messages;",
        )?;
        super::search::index_pending_messages(self)?;
        self.query_value::<i64>("SELECT COUNT(*) FROM fts_messages", args![])
            .map(|n| usize::try_from(n).unwrap_or(0))
    }
}

/// Unreleased reservations of project `?1` (all when NULL) whose expiry passed `?2`.
const EXPIRED: &str =
    "f.released_ts IS NULL AND f.expires_ts < ?2 AND (?1 IS NULL OR f.project_id = ?1)";
