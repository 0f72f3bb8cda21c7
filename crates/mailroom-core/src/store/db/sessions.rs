//! MCP sessions shared by the servers on one PostgreSQL database (`mcp_sessions`).

use super::Db;
use super::driver::args;
use crate::error::Result;
use crate::model::time::Timestamp;

impl Db<'_> {
    /// Records a session just opened, and forgets those unseen since `stale_before` and,
    /// when `keep` is given, all but the `keep` seen last.
    pub fn record_mcp_session(
        &self,
        id: &str,
        protocol_version: &str,
        now: Timestamp,
        stale_before: Timestamp,
        keep: Option<i64>,
    ) -> Result<()> {
        self.execute("DELETE FROM mcp_sessions WHERE seen_ts < ?1", args![stale_before])?;
        if let Some(keep) = keep {
            self.execute(
                "DELETE FROM mcp_sessions WHERE seen_ts <= (SELECT seen_ts FROM mcp_sessions
                     ORDER BY seen_ts DESC LIMIT 1 OFFSET ?1)",
                args![keep],
            )?;
        }
        self.execute(
            "INSERT INTO mcp_sessions (id, protocol_version, created_ts, seen_ts)
             VALUES (?1, ?2, ?3, ?3)
             ON CONFLICT (id) DO UPDATE SET protocol_version = excluded.protocol_version,
                 seen_ts = excluded.seen_ts",
            args![id, protocol_version, now],
        )?;
        Ok(())
    }

    /// The protocol version of session `id`, if it is recorded.
    pub fn mcp_session_version(&self, id: &str) -> Result<Option<String>> {
        self.query_opt(
            "SELECT protocol_version FROM mcp_sessions WHERE id = ?1",
            args![id],
            |row| row.get(0),
        )
    }

    /// Notes that session `id` was used now.
    pub fn touch_mcp_session(&self, id: &str, now: Timestamp) -> Result<()> {
        self.execute("UPDATE mcp_sessions SET seen_ts = ?2 WHERE id = ?1", args![id, now])?;
        Ok(())
    }

    /// Forgets session `id`, and tells the other servers on the database to drop it when
    /// this commits; whether it was recorded.
    pub fn delete_mcp_session(&self, id: &str) -> Result<bool> {
        let recorded = self.execute("DELETE FROM mcp_sessions WHERE id = ?1", args![id])? > 0;
        // Only a recorded session can have been adopted elsewhere.
        if recorded {
            self.notify_others(&crate::store::cluster::session_ended(id))?;
        }
        Ok(recorded)
    }
}
