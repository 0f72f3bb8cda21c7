//! The archive queue: archive work recorded with the change it describes (crash safety).

use serde::{Deserialize, Serialize};

use super::Db;
use super::driver::args;
use crate::error::Result;
use crate::model::time::Timestamp;

/// What an archive queue row asks the archive to write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchiveKind {
    /// A message's canonical, outbox and inbox copies and its thread digest entry.
    Message,
    /// An agent's `profile.json`.
    Profile,
    /// A file reservation's two JSON artifacts (renew, release, expiry).
    Reservation,
    /// A file reservation's artifacts on grant: they also name the code repo's branch.
    ReservationGrant,
    /// Files to remove (deleted messages' copies), named by the row's payload
    /// ([`Deletion`]); `ref_id` is the number of messages.
    Deletion,
    /// Written by a newer mailroom: skipped (and kept) by this one.
    Unknown,
}

impl ArchiveKind {
    /// Every kind this mailroom archives.
    const KNOWN: [Self; 5] =
        [Self::Message, Self::Profile, Self::Reservation, Self::ReservationGrant, Self::Deletion];

    fn as_str(self) -> &'static str {
        match self {
            Self::Message => "message",
            Self::Profile => "profile",
            Self::Reservation => "reservation",
            Self::ReservationGrant => "grant",
            Self::Deletion => "delete",
            Self::Unknown => "unknown",
        }
    }

    fn parse(text: &str) -> Self {
        Self::KNOWN.into_iter().find(|kind| kind.as_str() == text).unwrap_or(Self::Unknown)
    }
}

/// What a [`ArchiveKind::Deletion`] row carries: the files to remove (its `ref_id` counts
/// the messages).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Deletion {
    pub paths: Vec<String>,
    /// Who deleted them, for the commit's line (`delete: N message(s) via <via>`); the web UI
    /// when absent (rows queued before it was recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub via: Option<String>,
}

/// One queued piece of archive work.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueuedWork {
    pub id: i64,
    pub kind: ArchiveKind,
    pub ref_id: i64,
}

/// Archive work the writer set aside, with why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SetAside {
    pub work: QueuedWork,
    pub error: String,
}

impl Db<'_> {
    /// Records archive work in the current transaction; a no-op when the archive is off.
    pub fn enqueue_archive(&self, kind: ArchiveKind, ref_id: impl Into<i64>) -> Result<()> {
        self.enqueue(kind, ref_id.into(), None)
    }

    /// Records a deletion's archive work in the current transaction (a no-op when the
    /// archive is off).
    pub fn enqueue_archive_deletion(&self, messages: i64, deletion: &Deletion) -> Result<()> {
        let payload = serde_json::to_string(deletion)
            .map_err(|e| crate::error::Error::internal(format!("archive deletion: {e}")))?;
        self.enqueue(ArchiveKind::Deletion, messages, Some(&payload))
    }

    fn enqueue(&self, kind: ArchiveKind, ref_id: i64, payload: Option<&str>) -> Result<()> {
        if !self.archive_enabled {
            return Ok(());
        }
        self.execute(
            "INSERT INTO archive_queue (kind, ref_id, enqueued_ts, payload)
             VALUES (?1, ?2, ?3, ?4)",
            args![kind.as_str(), ref_id, Timestamp::now(), payload],
        )?;
        self.archive_enqueued.set(self.archive_enqueued.get() + 1);
        Ok(())
    }

    /// The deletion a queue row carries: `None` when the row is gone or carries none, an
    /// `Err` naming the row when its payload does not parse.
    pub fn archive_deletion(&self, queue_id: i64) -> Result<Option<Result<Deletion, String>>> {
        self.deletion_payload("SELECT payload FROM archive_queue WHERE id = ?1", queue_id)
    }

    /// The deletion a row (by `select`, one of two fixed statements) carries.
    fn deletion_payload(&self, select: &str, id: i64) -> Result<Option<Result<Deletion, String>>> {
        let payload: Option<Option<String>> = self.query_opt(select, args![id], |r| r.get(0))?;
        Ok(payload.flatten().map(|text| {
            serde_json::from_str(&text).map_err(|e| format!("archive work row {id}: {e}"))
        }))
    }

    /// Queued work after `after_id`, oldest first, including rows of an unknown kind
    /// (written by a newer mailroom), which the writer passes over without deleting them.
    pub fn queued_archive_work(&self, after_id: i64, limit: i64) -> Result<Vec<QueuedWork>> {
        let mut work = Vec::new();
        self.query_each(
            "SELECT id, kind, ref_id FROM archive_queue WHERE id > ?1 ORDER BY id LIMIT ?2",
            args![after_id, limit],
            |r| {
                let (id, kind, ref_id) = (r.get::<i64>(0)?, r.get::<&str>(1)?, r.get::<i64>(2)?);
                let parsed = ArchiveKind::parse(kind);
                if parsed == ArchiveKind::Unknown {
                    tracing::warn!(id, kind, "passing over archive work of an unknown kind");
                }
                work.push(QueuedWork { id, kind: parsed, ref_id });
                Ok(())
            },
        )?;
        Ok(work)
    }

    /// Number of queued rows (start-up backlog, health).
    pub fn archive_backlog(&self) -> Result<i64> {
        self.query_value("SELECT count(*) FROM archive_queue", args![])
    }

    /// When the oldest queued row this mailroom archives was queued (rows of a kind only a
    /// newer mailroom knows stay queued and are left out), as stored; `None` when none waits.
    pub fn oldest_queued_archive_ts(&self) -> Result<Option<String>> {
        self.query_find("SELECT kind, enqueued_ts FROM archive_queue ORDER BY id", args![], |row| {
            // The first row of a known kind answers; the rows after it are not read.
            if ArchiveKind::parse(row.get::<&str>(0)?) == ArchiveKind::Unknown {
                return Ok(None);
            }
            row.get::<String>(1).map(Some)
        })
    }

    /// The newest queued row's id (0 when the queue is empty): rows up to it may already be in
    /// the archive (a replay), rows after it are new.
    pub fn last_queued_archive_id(&self) -> Result<i64> {
        self.query_value("SELECT COALESCE(MAX(id), 0) FROM archive_queue", args![])
    }

    /// Forgets the work the archive has committed: every row from `first` to `last` (ids),
    /// except rows of a kind this mailroom does not know, which stay for the one that wrote
    /// them. One range delete instead of a statement per row: the writer thread runs it
    /// between sends.
    pub fn complete_archive_work(&self, first: i64, last: i64) -> Result<()> {
        // The known kinds as a JSON array, bound once: the statement text never changes.
        let known = serde_json::to_string(&ArchiveKind::KNOWN.map(ArchiveKind::as_str))
            .map_err(|e| crate::error::Error::internal(format!("archive kinds: {e}")))?;
        let done = self.execute(
            "DELETE FROM archive_queue WHERE id BETWEEN ?1 AND ?2
             AND kind IN (SELECT value FROM json_each(?3))",
            args![first, last, known],
        )?;
        self.archive_completed.set(self.archive_completed.get() + done);
        Ok(())
    }

    /// Moves queue row `id` to `archive_set_aside` with `error` (the writer could not render
    /// it), so the work behind it goes on.
    pub fn set_aside_archive_row(&self, id: i64, error: &str) -> Result<()> {
        self.execute(
            "INSERT INTO archive_set_aside
                 (id, kind, ref_id, enqueued_ts, payload, error, set_aside_ts)
             SELECT id, kind, ref_id, enqueued_ts, payload, ?2, ?3
             FROM archive_queue WHERE id = ?1
             ON CONFLICT (id) DO UPDATE SET kind = excluded.kind, ref_id = excluded.ref_id,
                 enqueued_ts = excluded.enqueued_ts, payload = excluded.payload,
                 error = excluded.error, set_aside_ts = excluded.set_aside_ts",
            args![id, error, Timestamp::now()],
        )?;
        let done = self.execute("DELETE FROM archive_queue WHERE id = ?1", args![id])?;
        self.archive_completed.set(self.archive_completed.get() + done);
        Ok(())
    }

    /// The work set aside, oldest first (empty for a database without the table, which a
    /// read-only reader of an older database meets).
    pub fn set_aside_archive_work(&self) -> Result<Vec<SetAside>> {
        if !self.has_table("archive_set_aside")? {
            return Ok(Vec::new());
        }
        self.query_vec(
            "SELECT id, kind, ref_id, error FROM archive_set_aside ORDER BY id",
            args![],
            |r| {
                Ok(SetAside {
                    work: QueuedWork {
                        id: r.get(0)?,
                        kind: ArchiveKind::parse(r.get::<&str>(1)?),
                        ref_id: r.get(2)?,
                    },
                    error: r.get(3)?,
                })
            },
        )
    }

    /// The deletion a set-aside row carries, as [`Db::archive_deletion`] reads a queued one's.
    pub fn set_aside_deletion(&self, id: i64) -> Result<Option<Result<Deletion, String>>> {
        self.deletion_payload("SELECT payload FROM archive_set_aside WHERE id = ?1", id)
    }

    /// Moves every set-aside row back into the queue (as new rows, after what is queued) for
    /// one more try; returns how many.
    pub fn requeue_set_aside_archive_work(&self) -> Result<usize> {
        let moved = self.execute(
            "INSERT INTO archive_queue (kind, ref_id, enqueued_ts, payload)
             SELECT kind, ref_id, enqueued_ts, payload FROM archive_set_aside ORDER BY id",
            args![],
        )?;
        self.execute("DELETE FROM archive_set_aside", args![])?;
        Ok(moved)
    }
}

#[cfg(test)]
mod tests {
    use crate::store::Store;

    /// The oldest row waiting is the first one this mailroom archives: a newer mailroom's
    /// row, which stays queued, does not make the archive look ever further behind.
    #[tokio::test]
    async fn the_oldest_waiting_row_is_the_first_of_a_known_kind() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("db.sqlite3");
        let store = Store::open(&path, 1, None).expect("open");
        let oldest = || store.read(|db| db.oldest_queued_archive_ts());
        assert_eq!(oldest().await.expect("read"), None, "an empty queue");
        rusqlite::Connection::open(&path)
            .and_then(|conn| {
                conn.execute_batch(
                    "INSERT INTO archive_queue (kind, ref_id, enqueued_ts) VALUES
                         ('hologram', 1, '2026-01-01 00:00:00.000000'),
                         ('message', 2, '2026-01-02 00:00:00.000000'),
                         ('profile', 3, '2026-01-03 00:00:00.000000');",
                )
            })
            .expect("rows queued");
        let expected = Some("2026-01-02 00:00:00.000000".to_string());
        assert_eq!(oldest().await.expect("read"), expected);
    }
}
