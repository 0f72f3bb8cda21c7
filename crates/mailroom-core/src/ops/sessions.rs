//! MCP sessions in the database, for servers that share one (PostgreSQL): a session opened on
//! one server is accepted by the others (docs/scale-out.md). A server alone on its database
//! keeps its sessions in memory: there each of these does nothing (and finds nothing).

use crate::error::Result;
use crate::model::time::Timestamp;

use super::Mailroom;

/// Sessions unseen this long are forgotten when the next one is recorded.
const STALE_AFTER_SECONDS: i64 = 7 * 24 * 3600;

/// At most this many sessions stay recorded (those seen last); the rest are trimmed at about
/// one recording in [`TRIM_ONE_IN`], so a flood of `initialize` calls cannot grow the table
/// without bound and no recording pays for a scan.
const MAX_RECORDED: i64 = 100_000;
const TRIM_ONE_IN: u64 = 32;

impl Mailroom {
    /// Records session `id`, opened with `protocol_version`.
    pub async fn record_mcp_session(&self, id: &str, protocol_version: &str) -> Result<()> {
        if !self.shares_database() {
            return Ok(());
        }
        let (id, version) = (id.to_string(), protocol_version.to_string());
        let now = Timestamp::now();
        let stale_before = now.plus_seconds(-STALE_AFTER_SECONDS);
        let keep = getrandom::u64().is_ok_and(|r| r % TRIM_ONE_IN == 0).then_some(MAX_RECORDED);
        self.store
            .write_unseen(move |db| db.record_mcp_session(&id, &version, now, stale_before, keep))
            .await
    }

    /// The protocol version of session `id` when it is recorded (another server opened it).
    pub async fn mcp_session_version(&self, id: &str) -> Result<Option<String>> {
        if !self.shares_database() {
            return Ok(None);
        }
        let id = id.to_string();
        self.store.read_short(move |db| db.mcp_session_version(&id)).await
    }

    /// Notes that session `id` is still in use, so it is not forgotten.
    pub async fn touch_mcp_session(&self, id: &str) -> Result<()> {
        if !self.shares_database() {
            return Ok(());
        }
        let id = id.to_string();
        let now = Timestamp::now();
        self.store.write_unseen(move |db| db.touch_mcp_session(&id, now)).await
    }

    /// The sessions other servers sharing the database end from now on: each is to be
    /// dropped here too.
    pub fn ended_mcp_sessions(&self) -> tokio::sync::broadcast::Receiver<std::sync::Arc<str>> {
        self.store.ended_sessions()
    }

    /// Forgets session `id`, here and on every server sharing the database; whether it was
    /// recorded.
    pub async fn end_mcp_session(&self, id: &str) -> Result<bool> {
        if !self.shares_database() {
            return Ok(false);
        }
        let id = id.to_string();
        self.store.write_unseen(move |db| db.delete_mcp_session(&id)).await
    }
}
