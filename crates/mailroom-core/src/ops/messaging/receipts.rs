//! message_receipts: a sender's receipts for one message it sent, one per recipient: when the
//! message was delivered to it, read and acknowledged (docs/compat/tools.md §4.11).

use serde::Serialize;

use crate::error::{Error, Result};
use crate::model::time::Timestamp;
use crate::ops::{Mailroom, resolve};
use crate::records::{MessageId, RecipientKind};

/// Result of message_receipts.
#[derive(Debug, Clone, Serialize)]
pub struct MessageReceipts {
    pub message_id: MessageId,
    pub ack_required: bool,
    /// When the message was delivered: its recipient rows commit with it.
    pub delivered_ts: Timestamp,
    pub recipients: Vec<RecipientReceiptOut>,
}

/// One recipient's receipt.
#[derive(Debug, Clone, Serialize)]
pub struct RecipientReceiptOut {
    pub name: String,
    pub kind: RecipientKind,
    pub delivered_ts: Timestamp,
    pub read_ts: Option<Timestamp>,
    pub ack_ts: Option<Timestamp>,
}

impl Mailroom {
    /// The receipts of a message `agent_name` sent in the project; anyone else (a recipient
    /// included: bcc rows are the sender's to see) is told the message is not found.
    pub async fn message_receipts(
        &self,
        project_key: String,
        agent_name: String,
        message_id: MessageId,
    ) -> Result<MessageReceipts> {
        self.store
            .read(move |db| {
                let project = resolve::project(db, &project_key)?;
                let agent = resolve::agent(db, &project, &agent_name, "agent_name")?;
                let message = db
                    .message_by_id(message_id)?
                    .filter(|m| m.project_id == project.id && m.sender_id == agent.id)
                    .ok_or_else(|| {
                        Error::not_found(format!(
                            "Message '{message_id}' not found or not sent by agent '{}'.",
                            agent.name
                        ))
                    })?;
                let delivered_ts = message.created_ts;
                let recipients = db
                    .receipts_of(message_id)?
                    .into_iter()
                    .map(|r| RecipientReceiptOut {
                        name: r.name,
                        kind: r.kind,
                        delivered_ts,
                        read_ts: r.read_ts,
                        ack_ts: r.ack_ts,
                    })
                    .collect();
                Ok(MessageReceipts {
                    message_id,
                    ack_required: message.ack_required,
                    delivered_ts,
                    recipients,
                })
            })
            .await
    }
}
