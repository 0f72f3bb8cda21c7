//! Queries on `window_identities` and `message_summaries`, and the topic and time-window
//! message listings of fetch_topic and summarize_recent.

use super::Db;
use super::driver::{Row, args};
use crate::error::Result;
use crate::model::time::Timestamp;
use crate::records::{AgentId, ListedMessage, ProjectId, WindowId};

/// A window identity: a terminal window's stable display name in a project.
#[derive(Debug, Clone, PartialEq)]
pub struct WindowIdentity {
    pub id: WindowId,
    pub window_uuid: String,
    pub display_name: String,
    pub created_ts: Timestamp,
    pub last_active_ts: Timestamp,
    pub expires_ts: Option<Timestamp>,
}

fn window(row: &Row<'_>) -> Result<WindowIdentity> {
    Ok(WindowIdentity {
        id: row.get(0)?,
        window_uuid: row.get(1)?,
        display_name: row.get(2)?,
        created_ts: row.get(3)?,
        last_active_ts: row.get(4)?,
        expires_ts: row.get(5)?,
    })
}

const WINDOW_COLUMNS: &str =
    "id, window_uuid, display_name, created_ts, last_active_ts, expires_ts";

/// A stored summary of recent project activity.
#[derive(Debug, Clone, PartialEq)]
pub struct StoredSummary {
    pub id: i64,
    pub summary_text: String,
    pub start_ts: Timestamp,
    pub end_ts: Timestamp,
    pub source_message_count: i64,
    /// The JSON array of thread ids, as stored.
    pub source_thread_ids: String,
    pub llm_model: Option<String>,
    pub cost_usd: Option<f64>,
    pub created_ts: Timestamp,
}

fn summary(row: &Row<'_>) -> Result<StoredSummary> {
    Ok(StoredSummary {
        id: row.get(0)?,
        summary_text: row.get(1)?,
        start_ts: row.get(2)?,
        end_ts: row.get(3)?,
        source_message_count: row.get(4)?,
        source_thread_ids: row.get(5)?,
        llm_model: row.get(6)?,
        cost_usd: row.get(7)?,
        created_ts: row.get(8)?,
    })
}

const SUMMARY_COLUMNS: &str = "id, summary_text, start_ts, end_ts, source_message_count, \
     source_thread_ids, llm_model, cost_usd, created_ts";

/// A summary about to be stored.
pub struct NewSummary<'a> {
    pub project_id: ProjectId,
    pub summary_text: &'a str,
    pub start_ts: Timestamp,
    pub end_ts: Timestamp,
    pub source_message_count: i64,
    pub source_thread_ids: &'a str,
    pub llm_model: Option<&'a str>,
    pub cost_usd: Option<f64>,
    pub created_ts: Timestamp,
}

/// Filters of a topic listing (fetch_topic).
pub struct TopicQuery<'a> {
    pub project_id: ProjectId,
    pub topic: &'a str,
    /// Only messages this agent sent or received (all without one).
    pub viewer: Option<AgentId>,
    pub since: Option<Timestamp>,
    pub limit: i64,
    /// Only messages the viewer received and has not read.
    pub unread_only: bool,
}

impl Db<'_> {
    /// Window identities of a project not expired at `now`, oldest first.
    pub fn live_windows(
        &self,
        project_id: ProjectId,
        now: Timestamp,
    ) -> Result<Vec<WindowIdentity>> {
        let sql = format!(
            "SELECT {WINDOW_COLUMNS} FROM window_identities
             WHERE project_id = ?1 AND (expires_ts IS NULL OR expires_ts > ?2) ORDER BY id"
        );
        self.query_vec(&sql, args![project_id, now], window)
    }

    /// The live window identity of this uuid in a project.
    pub fn live_window(
        &self,
        project_id: ProjectId,
        window_uuid: &str,
        now: Timestamp,
    ) -> Result<Option<WindowIdentity>> {
        let sql = format!(
            "SELECT {WINDOW_COLUMNS} FROM window_identities
             WHERE project_id = ?1 AND window_uuid = ?2 COLLATE NOCASE
               AND (expires_ts IS NULL OR expires_ts > ?3)"
        );
        self.query_opt(&sql, args![project_id, window_uuid, now], window)
    }

    /// Renames a window identity and marks it active now.
    pub fn rename_window(&self, id: WindowId, display_name: &str, now: Timestamp) -> Result<()> {
        self.execute(
            "UPDATE window_identities SET display_name = ?2, last_active_ts = ?3 WHERE id = ?1",
            args![id, display_name, now],
        )
        .map(drop)
    }

    /// Marks a window identity used now and moves its expiry.
    pub fn extend_window(&self, id: WindowId, now: Timestamp, expires: Timestamp) -> Result<()> {
        self.execute(
            "UPDATE window_identities SET last_active_ts = ?2, expires_ts = ?3 WHERE id = ?1",
            args![id, now, expires],
        )
        .map(drop)
    }

    /// Ends a window identity now.
    pub fn expire_window(&self, id: WindowId, now: Timestamp) -> Result<()> {
        self.execute("UPDATE window_identities SET expires_ts = ?2 WHERE id = ?1", args![id, now])
            .map(drop)
    }

    /// Records a window identity (registration under `MCP_AGENT_MAIL_WINDOW_ID`), replacing
    /// an expired one of the same window.
    pub fn insert_window(
        &self,
        project_id: ProjectId,
        window_uuid: &str,
        display_name: &str,
        now: Timestamp,
        expires: Option<Timestamp>,
    ) -> Result<i64> {
        self.insert_returning_id(
            "INSERT INTO window_identities
                 (project_id, window_uuid, display_name, created_ts, last_active_ts, expires_ts)
             VALUES (?1, ?2, ?3, ?4, ?4, ?5)
             ON CONFLICT (project_id, window_uuid) DO UPDATE SET display_name = ?3,
                 created_ts = ?4, last_active_ts = ?4, expires_ts = ?5",
            args![project_id, window_uuid, display_name, now, expires],
        )
    }

    /// Messages of a project with this topic (case-insensitive) that the viewer sent or
    /// received (every one without a viewer), newest first.
    pub fn topic_messages(&self, query: &TopicQuery<'_>) -> Result<Vec<ListedMessage>> {
        let sql = format!(
            "SELECT {}, {} FROM messages m {}
             WHERE m.project_id = ?1 AND m.topic = ?2 COLLATE NOCASE
               AND (?3 IS NULL OR m.created_ts > ?3)
               AND (?4 IS NULL OR m.sender_id = ?4 OR EXISTS (SELECT 1 FROM message_recipients r
                    WHERE r.message_id = m.id AND r.agent_id = ?4))
               AND (?6 = 0 OR EXISTS (SELECT 1 FROM message_recipients r
                    WHERE r.message_id = m.id AND r.agent_id = ?4 AND r.read_ts IS NULL))
             ORDER BY m.created_ts DESC, m.id DESC LIMIT ?5",
            super::messages::COLUMNS,
            super::messages::LISTED_COLUMNS,
            super::messages::LISTED_JOINS
        );
        let values = args![
            query.project_id,
            query.topic,
            query.since,
            query.viewer,
            query.limit,
            query.unread_only
        ];
        self.query_vec(&sql, values, |row| super::messages::listed(row, false))
    }

    /// Messages of a project created at or after `since`, oldest first.
    pub fn messages_since(
        &self,
        project_id: ProjectId,
        since: Timestamp,
        limit: i64,
    ) -> Result<Vec<ListedMessage>> {
        let sql = format!(
            "SELECT {}, {} FROM messages m {}
             WHERE m.project_id = ?1 AND m.created_ts >= ?2
             ORDER BY m.created_ts ASC, m.id ASC LIMIT ?3",
            super::messages::COLUMNS,
            super::messages::LISTED_COLUMNS,
            super::messages::LISTED_JOINS
        );
        self.query_vec(&sql, args![project_id, since, limit], |row| {
            super::messages::listed(row, false)
        })
    }

    /// Stores a summary; returns its id.
    pub fn insert_summary(&self, new: &NewSummary<'_>) -> Result<i64> {
        self.insert_returning_id(
            "INSERT INTO message_summaries (project_id, summary_text, start_ts, end_ts,
                 source_message_count, source_thread_ids, llm_model, cost_usd, created_ts)
             VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)",
            args![
                new.project_id,
                new.summary_text,
                new.start_ts,
                new.end_ts,
                new.source_message_count,
                new.source_thread_ids,
                new.llm_model,
                new.cost_usd,
                new.created_ts
            ],
        )
    }

    /// A stored summary whose window starts and ends within `tolerance_seconds` of the
    /// given bounds (the summarize_recent cache), newest first.
    pub fn cached_summary(
        &self,
        project_id: ProjectId,
        start: Timestamp,
        end: Timestamp,
        tolerance_seconds: i64,
    ) -> Result<Option<StoredSummary>> {
        let sql = format!(
            "SELECT {SUMMARY_COLUMNS} FROM message_summaries
             WHERE project_id = ?1 AND start_ts BETWEEN ?2 AND ?3 AND end_ts BETWEEN ?4 AND ?5
             ORDER BY created_ts DESC, id DESC LIMIT 1"
        );
        let values = [
            start.plus_seconds(-tolerance_seconds),
            start.plus_seconds(tolerance_seconds),
            end.plus_seconds(-tolerance_seconds),
            end.plus_seconds(tolerance_seconds),
        ];
        self.query_opt(&sql, args![project_id, values[0], values[1], values[2], values[3]], summary)
    }

    /// Stored summaries of a project ending at or after `since`, newest first.
    pub fn summaries_since(
        &self,
        project_id: ProjectId,
        since: Timestamp,
        limit: i64,
    ) -> Result<Vec<StoredSummary>> {
        let sql = format!(
            "SELECT {SUMMARY_COLUMNS} FROM message_summaries
             WHERE project_id = ?1 AND end_ts >= ?2 ORDER BY created_ts DESC, id DESC LIMIT ?3"
        );
        self.query_vec(&sql, args![project_id, since, limit], summary)
    }
}
