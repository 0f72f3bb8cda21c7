//! The acknowledgement scan: every acknowledgement asked for longer ago than `ACK_TTL_SECONDS`
//! and not given, as the reference logs them (`ack_overdue`).

use serde::Serialize;

use crate::error::Result;
use crate::model::time::Timestamp;
use crate::ops::Mailroom;
use crate::store::db::upkeep::OverdueAck;

/// The most overdue acknowledgements one scan reports (the oldest first).
const SCAN_LIMIT: i64 = 1000;

/// What an acknowledgement scan found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct AckReport {
    pub ttl_seconds: i64,
    pub overdue: Vec<OverdueAck>,
}

impl Mailroom {
    /// Acknowledgements overdue past `ttl_seconds`, each logged as `ack_overdue`.
    pub(super) async fn overdue_acks(&self, ttl_seconds: i64) -> Result<AckReport> {
        let cutoff = Timestamp::now().plus_seconds(-ttl_seconds);
        let overdue = self.store.read(move |db| db.overdue_acks(cutoff, SCAN_LIMIT)).await?;
        for ack in &overdue {
            tracing::warn!(
                event = "ack_overdue",
                project = %ack.project_slug,
                message_id = %ack.message_id,
                recipient = %ack.recipient,
                sender = %ack.sender,
                created_ts = %ack.created_ts.to_iso(),
                "acknowledgement overdue"
            );
        }
        Ok(AckReport { ttl_seconds, overdue })
    }
}
