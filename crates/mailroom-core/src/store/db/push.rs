//! What push notifications read: the messages committed after a watermark, with their
//! project, sender and recipients, and a mark of each watched project's file reservations
//! (`ops/push.rs`).

use super::Db;
use super::driver::{Dialect, args};
use crate::error::Result;
use crate::records::MessageId;

/// One message committed, as the subscriptions match it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    pub message_id: MessageId,
    pub project_slug: String,
    /// Its thread, when it has one.
    pub thread_id: Option<String>,
    pub subject: String,
    pub importance: String,
    pub sender: String,
    /// Every recipient (to, cc and bcc).
    pub recipients: Vec<String>,
    /// Those of `recipients` on the `bcc` line (the others are `to` or `cc`).
    pub blind: Vec<String>,
}

/// What a project's file reservations look like at one moment: any reservation made,
/// released, renewed or expired since gives another mark.
#[derive(Debug, Clone, PartialEq)]
pub struct ReservationMark {
    /// Reservations ever made in the project.
    pub made: i64,
    /// The newest one's id.
    pub newest: i64,
    /// Those released.
    pub released: i64,
    /// The sum of every expiry (Julian days): a renewal moves it.
    pub expiries: f64,
    /// Those active (not released, not expired).
    pub active: i64,
}

impl Db<'_> {
    /// The mark of the reservations of the project with `slug` at `now`; `None` when no
    /// project has that slug (any longer).
    pub fn reservation_mark(&self, slug: &str, now: &str) -> Result<Option<ReservationMark>> {
        // The expiries' sum moves when any expiry does (a renewal): SQLite sums their Julian
        // days; PostgreSQL, which cannot read every text SQLite takes as a date, their hashes.
        let sql = match self.dialect() {
            Dialect::Sqlite => {
                "SELECT COUNT(r.id), COALESCE(MAX(r.id), 0), COUNT(r.released_ts), \
                  TOTAL(julianday(r.expires_ts)), \
                  COALESCE(SUM(CASE WHEN r.released_ts IS NULL AND r.expires_ts > ?2 \
                    THEN 1 ELSE 0 END), 0) \
                 FROM projects p LEFT JOIN file_reservations r ON r.project_id = p.id \
                 WHERE p.slug = ?1 GROUP BY p.id"
            }
            Dialect::Postgres => {
                "SELECT COUNT(r.id), COALESCE(MAX(r.id), 0), COUNT(r.released_ts), \
                  CAST(COALESCE(SUM(hashtext(r.expires_ts)), 0) AS DOUBLE PRECISION), \
                  COALESCE(SUM(CASE WHEN r.released_ts IS NULL AND r.expires_ts > ?2 \
                    THEN 1 ELSE 0 END), 0) \
                 FROM projects p LEFT JOIN file_reservations r ON r.project_id = p.id \
                 WHERE p.slug = ?1 GROUP BY p.id"
            }
        };
        self.query_opt(sql, args![slug, now], |row| {
            Ok(ReservationMark {
                made: row.get(0)?,
                newest: row.get(1)?,
                released: row.get(2)?,
                expiries: row.get(3)?,
                active: row.get(4)?,
            })
        })
    }

    /// The highest message id committed; 0 before the first message.
    pub fn last_message_id(&self) -> Result<i64> {
        self.query_value("SELECT COALESCE(MAX(id), 0) FROM messages", args![])
    }

    /// The messages after `after` (by id, oldest first), at most `limit` of them, each with
    /// its recipients.
    pub fn messages_after(&self, after: i64, limit: i64) -> Result<Vec<Committed>> {
        let mut out: Vec<Committed> = Vec::new();
        self.query_each(
            "SELECT m.id, p.slug, m.thread_id, m.subject, m.importance, s.name, a.name, r.kind \
             FROM (SELECT id, project_id, sender_id, thread_id, subject, importance \
              FROM messages WHERE id > ?1 ORDER BY id LIMIT ?2) m \
             JOIN projects p ON p.id = m.project_id \
             JOIN agents s ON s.id = m.sender_id \
             LEFT JOIN message_recipients r ON r.message_id = m.id \
             LEFT JOIN agents a ON a.id = r.agent_id \
             ORDER BY m.id",
            args![after, limit],
            |row| {
                let message = Committed {
                    message_id: row.get(0)?,
                    project_slug: row.get(1)?,
                    thread_id: row.get(2)?,
                    subject: row.get(3)?,
                    importance: row.get(4)?,
                    sender: row.get(5)?,
                    recipients: Vec::new(),
                    blind: Vec::new(),
                };
                let recipient: Option<String> = row.get(6)?;
                let kind: Option<&str> = row.get(7)?;
                if out.last().is_none_or(|last| last.message_id != message.message_id) {
                    out.push(message);
                }
                if let (Some(recipient), Some(last)) = (recipient, out.last_mut()) {
                    if kind == Some("bcc") {
                        last.blind.push(recipient.clone());
                    }
                    last.recipients.push(recipient);
                }
                Ok(())
            },
        )?;
        Ok(out)
    }
}
