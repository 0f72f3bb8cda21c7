//! The acknowledgement views behind the MCP resources (docs/compat/resources.md §5): urgent unread
//! messages, messages waiting for an acknowledgement, stale and overdue acknowledgements.

use serde::Serialize;

use crate::error::Result;
use crate::model::time::Timestamp;
use crate::ops::Mailroom;
use crate::ops::messaging::mailbox::{DEFAULT_LIMIT, clamp_limit};
use crate::ops::output::MessageOut;
use crate::ops::resolve::project_agent;
use crate::records::ListedMessage;
use crate::store::Db;
use crate::store::db::mailbox::RecipientQuery;
use crate::store::db::messages::ReceiptState;

/// Which acknowledgement view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AckView {
    /// High/urgent inbox rows (limit applied first) that are still unread.
    UrgentUnread,
    /// Rows waiting for an acknowledgement, oldest first (docs/compat/resources.md §5.2): the
    /// fixture's order (its publisher adjusted this view; the reference's own code lists it
    /// newest first), and the order of the other pending-ack views.
    AckRequired,
    /// Pending acknowledgements at least this many seconds old, oldest first.
    AcksStale { ttl_seconds: i64 },
    /// Pending acknowledgements created at least this many minutes ago, oldest first.
    AckOverdue { ttl_minutes: i64 },
}

/// A row of an acknowledgement view: the message without body or sender project, naming its
/// sender only in urgent-unread; acks-stale adds the read time and the age.
#[derive(Debug, Serialize)]
pub struct AckViewItem {
    #[serde(flatten)]
    pub message: MessageOut,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub read_at: Option<Option<Timestamp>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub age_seconds: Option<i64>,
}

/// An acknowledgement view.
#[derive(Debug, Serialize)]
pub struct AckViewOut {
    pub project: String,
    pub agent: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ttl_seconds: Option<i64>,
    pub count: usize,
    pub messages: Vec<AckViewItem>,
}

impl Mailroom {
    /// One of the acknowledgement views of an agent.
    pub async fn ack_view(
        &self,
        project_key: String,
        agent_name: String,
        view: AckView,
        limit: Option<i64>,
    ) -> Result<AckViewOut> {
        let default_limit =
            if matches!(view, AckView::AckOverdue { .. }) { 50 } else { DEFAULT_LIMIT };
        let limit = clamp_limit(limit, default_limit);
        let now = Timestamp::now();
        self.store
            .read(move |db| {
                let (project, agent) = project_agent(db, &project_key, &agent_name)?;
                let query = RecipientQuery {
                    project_id: project.id,
                    agent_id: agent.id,
                    urgent_only: false,
                    pending_ack_only: true,
                    created_until: None,
                    oldest_first: true,
                    limit,
                };
                let messages: Vec<AckViewItem> = ack_rows(db, query, view, now)?
                    .iter()
                    .map(|(row, receipt)| ack_view_item(row, receipt, view, now))
                    .collect();
                let ttl_seconds = match view {
                    AckView::AcksStale { ttl_seconds } => Some(ttl_seconds),
                    _ => None,
                };
                Ok(AckViewOut {
                    project: project.human_key,
                    agent: agent.name,
                    ttl_seconds,
                    count: messages.len(),
                    messages,
                })
            })
            .await
    }
}

/// The recipient rows of a view: `query` starts as "pending acks, oldest first".
fn ack_rows(
    db: &Db<'_>,
    mut query: RecipientQuery,
    view: AckView,
    now: Timestamp,
) -> Result<Vec<(ListedMessage, ReceiptState)>> {
    match view {
        AckView::UrgentUnread => {
            query.urgent_only = true;
            query.pending_ack_only = false;
            query.oldest_first = false;
            // The limit applies before the unread filter, as in the reference.
            let rows = db.recipient_rows(&query)?;
            Ok(rows.into_iter().filter(|(_, r)| r.read_ts.is_none()).collect())
        }
        AckView::AckRequired => db.recipient_rows(&query),
        AckView::AcksStale { ttl_seconds } => {
            query.created_until = Some(now.plus_seconds(-ttl_seconds.max(0)).max(Timestamp::FIRST));
            db.recipient_rows(&query)
        }
        AckView::AckOverdue { ttl_minutes } => {
            let ttl_seconds = ttl_minutes.max(1).saturating_mul(60);
            query.created_until = Some(now.plus_seconds(-ttl_seconds).max(Timestamp::FIRST));
            db.recipient_rows(&query)
        }
    }
}

/// A row of a view: urgent-unread names the sender; acks-stale adds read time and age.
fn ack_view_item(
    row: &ListedMessage,
    receipt: &ReceiptState,
    view: AckView,
    now: Timestamp,
) -> AckViewItem {
    let stale = matches!(view, AckView::AcksStale { .. });
    let age = (now.as_micros() - row.message.created_ts.as_micros()) / 1_000_000;
    let mut message = MessageOut::from_listing(row, false);
    message.foreign_sender = None;
    if view != AckView::UrgentUnread {
        message.from = None;
    }
    AckViewItem {
        message,
        read_at: stale.then_some(receipt.read_ts),
        age_seconds: stale.then_some(age),
    }
}
