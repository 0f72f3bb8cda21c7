//! What push notifications read: the messages committed after a watermark, with their
//! project, sender and recipients (`ops/push.rs`).

use rusqlite::params;

use super::{Db, map_err};
use crate::error::Result;
use crate::records::MessageId;

/// One message committed, as the subscriptions match it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Committed {
    pub message_id: MessageId,
    pub project_slug: String,
    /// Its thread, when it has one.
    pub thread_id: Option<String>,
    pub sender: String,
    /// Every recipient (to, cc and bcc).
    pub recipients: Vec<String>,
}

impl Db<'_> {
    /// The highest message id committed; 0 before the first message.
    pub fn last_message_id(&self) -> Result<i64> {
        self.conn
            .prepare_cached("SELECT COALESCE(MAX(id), 0) FROM messages")
            .and_then(|mut stmt| stmt.query_row([], |row| row.get(0)))
            .map_err(map_err)
    }

    /// The messages after `after` (by id, oldest first), at most `limit` of them, each with
    /// its recipients.
    pub fn messages_after(&self, after: i64, limit: i64) -> Result<Vec<Committed>> {
        let mut stmt = self
            .conn
            .prepare_cached(
                "SELECT m.id, p.slug, m.thread_id, s.name, a.name FROM \
                 (SELECT id, project_id, sender_id, thread_id FROM messages WHERE id > ?1 \
                  ORDER BY id LIMIT ?2) m \
                 JOIN projects p ON p.id = m.project_id \
                 JOIN agents s ON s.id = m.sender_id \
                 LEFT JOIN message_recipients r ON r.message_id = m.id \
                 LEFT JOIN agents a ON a.id = r.agent_id \
                 ORDER BY m.id",
            )
            .map_err(map_err)?;
        let rows = stmt
            .query_map(params![after, limit], |row| {
                Ok((
                    row.get::<_, MessageId>(0)?,
                    row.get::<_, String>(1)?,
                    row.get::<_, Option<String>>(2)?,
                    row.get::<_, String>(3)?,
                    row.get::<_, Option<String>>(4)?,
                ))
            })
            .map_err(map_err)?;
        let mut out: Vec<Committed> = Vec::new();
        for row in rows {
            let (message_id, project_slug, thread_id, sender, recipient) = row.map_err(map_err)?;
            if out.last().is_none_or(|last| last.message_id != message_id) {
                let recipients = Vec::new();
                out.push(Committed { message_id, project_slug, thread_id, sender, recipients });
            }
            if let (Some(recipient), Some(last)) = (recipient, out.last_mut()) {
                last.recipients.push(recipient);
            }
        }
        Ok(out)
    }
}
