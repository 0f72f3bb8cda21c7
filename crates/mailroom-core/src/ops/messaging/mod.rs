//! send_message, reply_message, fetch_inbox, mark_message_read, acknowledge_message.
//!
//! This file holds the requests, the results and the entry points; the work is in `send`,
//! `reply` and `inbox`, and both sends store their message through `delivery` (recipients
//! found by `routing`). The other views of mail: `inbox` (also the web UI's inbox pages and
//! read marks), `events` (fetch_inbox_events' log of deliveries, reads and acknowledgements),
//! `mailbox` and `ack_views` (the MCP resources), `overseer` (the Human
//! Overseer's messages), `deletion` (deleted from the web UI).

pub mod ack_views;
pub mod deletion;
mod delivery;
pub mod events;
pub mod idempotency;
pub mod inbox;
pub mod mailbox;
pub mod overseer;
mod receipts;
mod reply;
mod returned;
mod routing;
pub(crate) mod send;

use serde::{Serialize, Serializer};

pub(crate) use self::delivery::{Delivery, deliver};
use self::idempotency::{Answer, RetryKey, acting_agent, once};
use self::inbox::receipt_after;
pub(crate) use self::inbox::{inbox_limit, mark_listed_read, parse_since};
pub use self::receipts::{MessageReceipts, RecipientReceiptOut};
use self::reply::reply_in_tx;
pub use self::reply::reply_subject;
pub use self::returned::{DeliveryError, ReturnedError, total_failure};
use self::send::send_in_tx;
use crate::error::Result;
use crate::model::time::Timestamp;
use crate::ops::Mailroom;
use crate::ops::contacts::policy::{self, Enforcement};
use crate::ops::conventions::Conventions;
use crate::ops::messaging::routing::RECIPIENT_NOT_FOUND;
use crate::ops::output::{AddressedMessage, JsonText, MessageListWriter, MessageOut};
use crate::records::{AgentId, MessageId};

/// Arguments of send_message.
#[derive(Debug, Clone, Default)]
pub struct SendMessage {
    pub project_key: String,
    pub sender_name: String,
    pub to: Vec<String>,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
    pub subject: String,
    pub body_md: String,
    pub importance: Option<String>,
    pub ack_required: bool,
    pub thread_id: Option<String>,
    pub topic: Option<String>,
    pub broadcast: bool,
    pub auto_contact_if_blocked: Option<bool>,
    /// Image files to attach (resolved under the project's archive directory).
    pub attachment_paths: Vec<String>,
    /// Convert images to WebP; `None` means `CONVERT_IMAGES`.
    pub convert_images: Option<bool>,
    /// Agents the caller's MCP session has authenticated as (tool authentication on): a
    /// blocked recipient among them is approved on the spot (docs/compat/tools.md §5.2).
    pub session_agents: Vec<AgentId>,
    /// Whose rules apply: REST skips the recipient-name screen, and its first message under
    /// the `auto` contact policy needs no handshake.
    pub conventions: Conventions,
}

/// One delivery (one per target project).
#[derive(Debug, Clone, Serialize)]
pub struct DeliveryOut {
    pub project: String,
    pub payload: AddressedMessage,
}

/// Result of send_message. When no delivery went through but some failed (say, blocked by
/// file reservations), it serialises as the reference's `{"error": {...}}` alone.
#[derive(Debug, Clone)]
pub struct SendOutcome {
    pub deliveries: Vec<DeliveryOut>,
    pub count: usize,
    pub attachments: Option<Vec<serde_json::Value>>,
    pub verified_sender: bool,
    /// The deliveries that failed, by project.
    pub delivery_errors: Vec<DeliveryError>,
}

impl SendOutcome {
    /// The returned error when every delivery failed.
    pub fn failure(&self) -> Option<ReturnedError> {
        if self.deliveries.is_empty() { total_failure(&self.delivery_errors) } else { None }
    }
}

impl Serialize for SendOutcome {
    fn serialize<S: Serializer>(&self, serializer: S) -> std::result::Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Failed {
            error: ReturnedError,
        }
        #[derive(Serialize)]
        struct Sent<'a> {
            deliveries: &'a [DeliveryOut],
            count: usize,
            #[serde(skip_serializing_if = "Option::is_none")]
            attachments: Option<&'a Vec<serde_json::Value>>,
            verified_sender: bool,
            #[serde(skip_serializing_if = "Option::is_none")]
            delivery_errors: Option<&'a [DeliveryError]>,
        }
        if let Some(error) = self.failure() {
            return Failed { error }.serialize(serializer);
        }
        Sent {
            deliveries: &self.deliveries,
            count: self.count,
            attachments: self.attachments.as_ref(),
            verified_sender: self.verified_sender,
            delivery_errors: (!self.delivery_errors.is_empty())
                .then_some(self.delivery_errors.as_slice()),
        }
        .serialize(serializer)
    }
}

/// Arguments of reply_message.
#[derive(Debug, Clone, Default)]
pub struct ReplyMessage {
    pub project_key: String,
    pub message_id: MessageId,
    pub sender_name: String,
    pub body_md: String,
    pub to: Option<Vec<String>>,
    pub cc: Vec<String>,
    pub bcc: Vec<String>,
    pub subject_prefix: Option<String>,
}

/// Result of reply_message: the delivered payload flattened, plus delivery bookkeeping.
#[derive(Debug, Clone, Serialize)]
pub struct ReplyOutcome {
    #[serde(flatten)]
    pub payload: Option<AddressedMessage>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub thread_id: Option<String>,
    pub reply_to: MessageId,
    pub deliveries: Vec<DeliveryOut>,
    pub count: usize,
    pub verified_sender: bool,
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub delivery_errors: Vec<DeliveryError>,
    /// The returned error when no delivery went through (see [`total_failure`]).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<ReturnedError>,
}

/// Which of an inbox's messages a read returns, and how: what fetch_inbox and
/// fetch_inbox_product share.
#[derive(Debug, Clone, Default)]
pub struct InboxFilter {
    pub limit: Option<i64>,
    pub urgent_only: bool,
    pub include_bodies: bool,
    pub since_ts: Option<String>,
    /// Only messages the agent has not read.
    pub unread_only: bool,
    /// Mark the returned messages read, in the same write as the read.
    pub mark_read: bool,
}

/// Arguments of fetch_inbox.
#[derive(Debug, Clone, Default)]
pub struct FetchInbox {
    pub project_key: String,
    pub agent_name: String,
    pub filter: InboxFilter,
    pub topic: Option<String>,
}

/// Result of mark_message_read.
#[derive(Debug, Clone, Serialize)]
pub struct ReadReceipt {
    pub message_id: MessageId,
    pub read: bool,
    pub read_at: Option<Timestamp>,
}

/// Result of acknowledge_message.
#[derive(Debug, Clone, Serialize)]
pub struct AckReceipt {
    pub message_id: MessageId,
    pub acknowledged: bool,
    pub acknowledged_at: Option<Timestamp>,
    pub read_at: Option<Timestamp>,
}

impl Mailroom {
    /// Sends a message; the reply goes out once message and recipients are committed.
    pub async fn send_message(&self, req: SendMessage) -> Result<SendOutcome> {
        self.send_message_keyed(req, None).await?.into_own()
    }

    /// [`Self::send_message`] with an optional `idempotency_key`: a retry with the same key
    /// and arguments gets the first answer and stores nothing (docs/compat/tools.md §4.10).
    pub async fn send_message_keyed(
        &self,
        req: SendMessage,
        idempotency_key: Option<String>,
    ) -> Result<Answer<SendOutcome>> {
        let window = self.config.idempotency_window_seconds;
        let retry =
            RetryKey::new("send_message", idempotency_key, || req.retry_arguments(), window)?;
        let enforcement = Enforcement::from_config(&self.config);
        let guard = self.config.reservations_enforcement_enabled;
        let processed = self.store_attachments(&req).await?;
        self.admit_archive_work().await?;
        // Contact requests filed by a blocked send (or one to an unlinked agent of another
        // project) are kept even though the send fails, as in the reference: those outcomes
        // commit and are carried out inside `Ok`. Nothing else is written before they arise.
        // Every other error rolls the whole job back.
        let outcome = self.store.write(move |db| {
            let (project_key, sender_name) = (req.project_key.clone(), req.sender_name.clone());
            let sent = once(
                db,
                retry.as_ref(),
                || acting_agent(db, &project_key, &sender_name, "sender_name"),
                || send_in_tx(db, req, processed, enforcement, guard),
                |outcome| !outcome.deliveries.is_empty(),
            );
            match sent {
                Err(e) if e.kind == policy::CONTACT_REQUIRED || e.kind == RECIPIENT_NOT_FOUND => {
                    Ok(Err(e))
                }
                other => other.map(Ok),
            }
        });
        outcome.await?
    }

    /// Replies to a message, in its thread, by default to its sender.
    pub async fn reply_message(&self, req: ReplyMessage) -> Result<ReplyOutcome> {
        self.reply_message_keyed(req, None).await?.into_own()
    }

    /// [`Self::reply_message`] with an optional `idempotency_key`, as
    /// [`Self::send_message_keyed`].
    pub async fn reply_message_keyed(
        &self,
        req: ReplyMessage,
        idempotency_key: Option<String>,
    ) -> Result<Answer<ReplyOutcome>> {
        let window = self.config.idempotency_window_seconds;
        let retry =
            RetryKey::new("reply_message", idempotency_key, || req.retry_arguments(), window)?;
        let enforcement = Enforcement::from_config(&self.config);
        let guard = self.config.reservations_enforcement_enabled;
        self.admit_archive_work().await?;
        self.store
            .write(move |db| {
                let (project_key, sender_name) = (req.project_key.clone(), req.sender_name.clone());
                once(
                    db,
                    retry.as_ref(),
                    || acting_agent(db, &project_key, &sender_name, "sender_name"),
                    || reply_in_tx(db, req, enforcement, guard),
                    |outcome| !outcome.deliveries.is_empty(),
                )
            })
            .await
    }

    /// The agent's inbox, newest first. Marks nothing read unless `mark_read` asks.
    pub async fn fetch_inbox(&self, req: FetchInbox) -> Result<Vec<MessageOut>> {
        let (include_bodies, mark_read) = (req.filter.include_bodies, req.filter.mark_read);
        self.inbox_page(req, move |db, query| {
            let rows = db.inbox(query)?;
            if mark_read {
                let ids: Vec<MessageId> = rows.iter().map(|r| r.message.id).collect();
                mark_listed_read(db, query.project_id, query.agent_id, &ids)?;
            }
            Ok(rows.iter().map(|r| MessageOut::from_listing(r, include_bodies)).collect())
        })
        .await
    }

    /// [`Self::fetch_inbox`]'s result as its JSON text, written straight from the rows.
    pub async fn fetch_inbox_json(&self, req: FetchInbox) -> Result<JsonText> {
        let (include_bodies, mark_read) = (req.filter.include_bodies, req.filter.mark_read);
        self.inbox_page(req, move |db, query| {
            let mut list = MessageListWriter::new(include_bodies);
            let mut ids = Vec::new();
            db.inbox_each(query, |row| {
                if mark_read {
                    ids.push(row.message.id);
                }
                list.push(row)
            })?;
            mark_listed_read(db, query.project_id, query.agent_id, &ids)?;
            list.finish()
        })
        .await
    }

    /// Marks a message read for the agent (first write wins).
    pub async fn mark_message_read(
        &self,
        project_key: String,
        agent_name: String,
        message_id: MessageId,
    ) -> Result<ReadReceipt> {
        self.store
            .write(move |db| {
                let Some(state) = receipt_after(db, &project_key, &agent_name, message_id, false)?
                else {
                    return Ok(ReadReceipt { message_id, read: false, read_at: None });
                };
                Ok(ReadReceipt {
                    message_id,
                    read: state.read_ts.is_some(),
                    read_at: state.read_ts,
                })
            })
            .await
    }

    /// Acknowledges a message for the agent (also marks it read); first write wins.
    pub async fn acknowledge_message(
        &self,
        project_key: String,
        agent_name: String,
        message_id: MessageId,
    ) -> Result<AckReceipt> {
        self.acknowledge_message_keyed(project_key, agent_name, message_id, None).await?.into_own()
    }

    /// [`Self::acknowledge_message`] with an optional `idempotency_key`, as
    /// [`Self::send_message_keyed`]: the retry gets the first receipt again.
    pub async fn acknowledge_message_keyed(
        &self,
        project_key: String,
        agent_name: String,
        message_id: MessageId,
        idempotency_key: Option<String>,
    ) -> Result<Answer<AckReceipt>> {
        let window = self.config.idempotency_window_seconds;
        let arguments = || serde_json::json!({ "message_id": message_id });
        let retry = RetryKey::new("acknowledge_message", idempotency_key, arguments, window)?;
        self.store
            .write(move |db| {
                let acknowledge = || {
                    let state = receipt_after(db, &project_key, &agent_name, message_id, true)?;
                    Ok(AckReceipt {
                        message_id,
                        acknowledged: state.is_some_and(|s| s.ack_ts.is_some()),
                        acknowledged_at: state.and_then(|s| s.ack_ts),
                        read_at: state.and_then(|s| s.read_ts),
                    })
                };
                let scope = || acting_agent(db, &project_key, &agent_name, "agent_name");
                once(db, retry.as_ref(), scope, acknowledge, |_| true)
            })
            .await
    }
}

#[cfg(test)]
mod tests;
