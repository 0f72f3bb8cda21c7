//! Queries on `webhooks` and `webhook_deliveries` (migration 0015): the endpoints, and the
//! durable queue a trigger on `message_recipients` fills in the delivering transaction.
//! Times of the queue are microseconds since the Unix epoch.

use super::Db;
use super::driver::args;
use crate::error::Result;
use crate::model::time::Timestamp;
use crate::records::{AgentId, MessageId, ProjectId};

/// A webhook as listed: never its secret.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WebhookRow {
    pub id: i64,
    /// The agent whose deliveries it receives; `None`: every recipient in the project.
    pub agent: Option<String>,
    pub url: String,
    pub created_ts: Timestamp,
    pub pending: i64,
    pub failed: i64,
}

/// Whose webhooks a call acts on: the project-wide ones (`agent_id` `None`) or one agent's
/// only. An agent's webhook (its URL, often a capability URL, and its bcc deliveries) is not
/// shown to other agents, nor a project's through an agent's scope.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WebhookScope {
    pub project_id: ProjectId,
    pub agent_id: Option<AgentId>,
}

/// A webhook about to be stored.
pub struct NewWebhook<'a> {
    pub project_id: ProjectId,
    pub agent_id: Option<AgentId>,
    pub url: &'a str,
    pub secret: &'a str,
    pub created_ts: Timestamp,
}

/// A delivery due now, with what its request is made of. Its `Debug` shows neither the
/// secret nor more of the URL than its origin (a URL may carry a token).
#[derive(Clone, PartialEq, Eq)]
pub struct DueDelivery {
    pub id: i64,
    /// The `webhook-id` header.
    pub event_id: String,
    pub webhook_id: i64,
    pub url: String,
    pub secret: String,
    /// Attempts made before this one.
    pub attempts: i64,
    pub project: String,
    pub recipient: String,
    /// `to`, `cc` or `bcc`.
    pub kind: String,
    /// The message; `None` when it was deleted since it was delivered.
    pub message: Option<DeliveredMessage>,
}

impl std::fmt::Debug for DueDelivery {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DueDelivery")
            .field("id", &self.id)
            .field("event_id", &self.event_id)
            .field("webhook_id", &self.webhook_id)
            .field("url", &redacted_url(&self.url))
            .field("secret", &"redacted")
            .field("attempts", &self.attempts)
            .field("project", &self.project)
            .field("recipient", &self.recipient)
            .field("kind", &self.kind)
            .field("message", &self.message)
            .finish()
    }
}

/// A URL's origin (scheme, host, port) and `/…`: what may be logged of it.
pub fn redacted_url(url: &str) -> String {
    match reqwest::Url::parse(url) {
        Ok(parsed) => format!("{}/…", parsed.origin().ascii_serialization()),
        Err(_) => "(redacted)".to_owned(),
    }
}

/// The summary of a delivered message a webhook's body carries (its `data.message`).
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct DeliveredMessage {
    pub id: MessageId,
    pub thread_id: Option<String>,
    pub subject: String,
    pub sender: String,
    pub importance: String,
    pub ack_required: bool,
    pub created_ts: Timestamp,
}

/// How one attempt ended, as the queue records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AttemptOutcome {
    Delivered,
    /// Try again at this time (microseconds).
    Retry {
        next_attempt_us: i64,
        error: String,
    },
    /// No more attempts.
    Failed {
        error: String,
    },
}

/// One delivery as the deliveries view shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeliveryRow {
    pub event_id: String,
    pub webhook_id: i64,
    pub message_id: MessageId,
    /// The recipient's name (`None` once the agent is gone).
    pub recipient: Option<String>,
    pub status: String,
    pub attempts: i64,
    pub next_attempt_us: i64,
    pub last_error: Option<String>,
    pub created_us: i64,
    pub finished_us: Option<i64>,
}

/// Deliveries of a project (or one webhook) by status.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct QueueCounts {
    pub pending: i64,
    pub failed: i64,
    pub delivered: i64,
}

impl Db<'_> {
    /// How many webhooks the project has.
    pub fn webhook_count(&self, project_id: ProjectId) -> Result<i64> {
        self.query_value("SELECT count(*) FROM webhooks WHERE project_id = ?1", args![project_id])
    }

    /// The id of the project's webhook for this scope and URL, if there is one.
    pub fn webhook_for(&self, scope: WebhookScope, url: &str) -> Result<Option<i64>> {
        let (project, agent) = (scope.project_id, scope.agent_id);
        self.query_opt(
            "SELECT id FROM webhooks WHERE project_id = ?1 AND agent_id IS ?2 AND url = ?3",
            args![project, agent, url],
            |row| row.get(0),
        )
    }

    /// Stores a webhook; its id.
    pub fn insert_webhook(&self, webhook: &NewWebhook<'_>) -> Result<i64> {
        self.insert_returning_id(
            "INSERT INTO webhooks (project_id, agent_id, url, secret, created_ts)
             VALUES (?1, ?2, ?3, ?4, ?5)",
            args![
                webhook.project_id,
                webhook.agent_id,
                webhook.url,
                webhook.secret,
                webhook.created_ts
            ],
        )
    }

    /// The scope's webhooks, oldest first, with their pending and failed deliveries.
    pub fn webhooks_of(&self, scope: WebhookScope) -> Result<Vec<WebhookRow>> {
        self.query_vec(
            "SELECT w.id, a.name, w.url, w.created_ts,
               (SELECT count(*) FROM webhook_deliveries d
                WHERE d.webhook_id = w.id AND d.status = 'pending'),
               (SELECT count(*) FROM webhook_deliveries d
                WHERE d.webhook_id = w.id AND d.status = 'failed')
             FROM webhooks w LEFT JOIN agents a ON a.id = w.agent_id
             WHERE w.project_id = ?1 AND w.agent_id IS ?2 ORDER BY w.id",
            args![scope.project_id, scope.agent_id],
            |row| {
                Ok(WebhookRow {
                    id: row.get(0)?,
                    agent: row.get(1)?,
                    url: row.get(2)?,
                    created_ts: row.get(3)?,
                    pending: row.get(4)?,
                    failed: row.get(5)?,
                })
            },
        )
    }

    /// Deletes one of the scope's webhooks and its deliveries; whether it existed.
    pub fn delete_webhook(&self, scope: WebhookScope, webhook_id: i64) -> Result<bool> {
        let deleted = self.execute(
            "DELETE FROM webhooks WHERE id = ?1 AND project_id = ?2 AND agent_id IS ?3",
            args![webhook_id, scope.project_id, scope.agent_id],
        )?;
        if deleted > 0 {
            self.execute(
                "DELETE FROM webhook_deliveries WHERE webhook_id = ?1",
                args![webhook_id],
            )?;
        }
        Ok(deleted > 0)
    }

    /// A project's webhooks and their deliveries, for its hard deletion.
    pub fn delete_project_webhooks(&self, project_id: ProjectId) -> Result<()> {
        self.run_each(
            &[
                "DELETE FROM webhook_deliveries
                 WHERE webhook_id IN (SELECT id FROM webhooks WHERE project_id = ?1)",
                "DELETE FROM webhooks WHERE project_id = ?1",
            ],
            project_id.0,
        )
    }

    /// An agent's webhooks and every delivery to it, for its hard deletion.
    pub fn delete_agent_webhooks(&self, agent_id: AgentId) -> Result<()> {
        self.run_each(
            &[
                "DELETE FROM webhook_deliveries WHERE agent_id = ?1
                 OR webhook_id IN (SELECT id FROM webhooks WHERE agent_id = ?1)",
                "DELETE FROM webhooks WHERE agent_id = ?1",
            ],
            agent_id.0,
        )
    }

    fn run_each(&self, statements: &[&str], id: i64) -> Result<()> {
        for sql in statements {
            self.execute(sql, args![id])?;
        }
        Ok(())
    }

    /// Pending deliveries due at `now_us`, soonest first, at most `limit` in all and
    /// `per_webhook` of any one webhook, leaving out the deliveries `skip_deliveries` names
    /// (in flight, or held back) and every delivery of the webhooks `skip_webhooks` names (at
    /// their in-flight limit). Picking per webhook in SQL keeps one webhook with many due
    /// rows from filling the page while its own are held up; each webhook's share is one
    /// short range of its index (`0016`), so a long due backlog is never read whole.
    pub fn due_webhook_deliveries(
        &self,
        now_us: i64,
        limit: i64,
        per_webhook: i64,
        skip_deliveries: &[i64],
        skip_webhooks: &[i64],
    ) -> Result<Vec<DueDelivery>> {
        let json = |ids: &[i64]| serde_json::to_string(ids).unwrap_or_else(|_| "[]".to_owned());
        let (deliveries, webhooks) = (json(skip_deliveries), json(skip_webhooks));
        self.query_vec(
            "WITH due AS (
               SELECT d.id, d.next_attempt_us
               FROM webhooks w
               JOIN webhook_deliveries d ON d.id IN (
                 SELECT id FROM webhook_deliveries
                 WHERE webhook_id = w.id AND status = 'pending' AND next_attempt_us <= ?1
                   AND id NOT IN (SELECT CAST(value AS BIGINT) FROM json_each(?4))
                 ORDER BY next_attempt_us, id LIMIT ?3)
               WHERE w.id NOT IN (SELECT CAST(value AS BIGINT) FROM json_each(?5)))
             SELECT d.id, d.event_id, d.webhook_id, w.url, w.secret, d.attempts, p.slug,
                    coalesce(r.name, ''), d.kind,
                    m.id, m.thread_id, m.subject, s.name, m.importance, m.ack_required,
                    m.created_ts
             FROM due
             JOIN webhook_deliveries d ON d.id = due.id
             JOIN webhooks w ON w.id = d.webhook_id
             JOIN projects p ON p.id = w.project_id
             LEFT JOIN agents r ON r.id = d.agent_id
             LEFT JOIN messages m ON m.id = d.message_id
             LEFT JOIN agents s ON s.id = m.sender_id
             ORDER BY due.next_attempt_us, due.id LIMIT ?2",
            args![now_us, limit, per_webhook, deliveries, webhooks],
            |row| {
                let message_id: Option<MessageId> = row.get(9)?;
                let message = match message_id {
                    Some(id) => Some(DeliveredMessage {
                        id,
                        thread_id: row.get(10)?,
                        subject: row.get(11)?,
                        sender: row.get::<Option<String>>(12)?.unwrap_or_default(),
                        importance: row.get(13)?,
                        ack_required: row.get(14)?,
                        created_ts: row.get(15)?,
                    }),
                    None => None,
                };
                Ok(DueDelivery {
                    id: row.get(0)?,
                    event_id: row.get(1)?,
                    webhook_id: row.get(2)?,
                    url: row.get(3)?,
                    secret: row.get(4)?,
                    attempts: row.get(5)?,
                    project: row.get(6)?,
                    recipient: row.get(7)?,
                    kind: row.get(8)?,
                    message,
                })
            },
        )
    }

    /// Claims the deliveries `ids` that are still pending and due at `now_us` until
    /// `until_us` (they are not due before then); the ids claimed.
    pub fn claim_webhook_deliveries(
        &self,
        ids: &[i64],
        now_us: i64,
        until_us: i64,
    ) -> Result<Vec<i64>> {
        let ids = serde_json::to_string(ids).unwrap_or_else(|_| "[]".to_owned());
        self.query_vec(
            "UPDATE webhook_deliveries SET next_attempt_us = ?3
             WHERE id IN (SELECT CAST(value AS BIGINT) FROM json_each(?1))
               AND status = 'pending' AND next_attempt_us <= ?2
             RETURNING id",
            args![ids, now_us, until_us],
            |row| row.get(0),
        )
    }

    /// When the next pending delivery after `after_us` falls due, if any is pending.
    pub fn next_webhook_due(&self, after_us: i64) -> Result<Option<i64>> {
        self.query_value(
            "SELECT min(next_attempt_us) FROM webhook_deliveries
             WHERE status = 'pending' AND next_attempt_us > ?1",
            args![after_us],
        )
    }

    /// Records one attempt of a pending delivery (nothing when it is gone or no longer
    /// pending: its webhook was removed meanwhile).
    pub fn record_webhook_attempt(
        &self,
        delivery_id: i64,
        outcome: &AttemptOutcome,
        now_us: i64,
    ) -> Result<()> {
        let (status, next, error, finished) = match outcome {
            AttemptOutcome::Delivered => ("delivered", None, None, Some(now_us)),
            AttemptOutcome::Retry { next_attempt_us, error } => {
                ("pending", Some(*next_attempt_us), Some(error.as_str()), None)
            }
            AttemptOutcome::Failed { error } => {
                ("failed", None, Some(error.as_str()), Some(now_us))
            }
        };
        self.execute(
            "UPDATE webhook_deliveries
             SET status = ?2, attempts = attempts + 1,
                 next_attempt_us = coalesce(?3, next_attempt_us),
                 last_error = coalesce(?4, last_error), finished_us = ?5
             WHERE id = ?1 AND status = 'pending'",
            args![delivery_id, status, next, error, finished],
        )
        .map(drop)
    }

    /// The scope's deliveries (or one webhook's) whose status is one of `statuses`, newest
    /// first, at most `limit`.
    pub fn webhook_deliveries(
        &self,
        scope: WebhookScope,
        webhook_id: Option<i64>,
        statuses: &[&str],
        limit: i64,
    ) -> Result<Vec<DeliveryRow>> {
        let statuses = serde_json::to_string(statuses).unwrap_or_else(|_| "[]".to_owned());
        let (project_id, agent_id) = (scope.project_id, scope.agent_id);
        self.query_vec(
            "SELECT d.event_id, d.webhook_id, d.message_id, a.name, d.status, d.attempts,
                    d.next_attempt_us, d.last_error, d.created_us, d.finished_us
             FROM webhook_deliveries d
             JOIN webhooks w ON w.id = d.webhook_id
             LEFT JOIN agents a ON a.id = d.agent_id
             WHERE w.project_id = ?1 AND w.agent_id IS ?2
               AND (?3 IS NULL OR d.webhook_id = ?3)
               AND d.status IN (SELECT value FROM json_each(?4))
             ORDER BY d.id DESC LIMIT ?5",
            args![project_id, agent_id, webhook_id, statuses, limit],
            |row| {
                Ok(DeliveryRow {
                    event_id: row.get(0)?,
                    webhook_id: row.get(1)?,
                    message_id: row.get(2)?,
                    recipient: row.get(3)?,
                    status: row.get(4)?,
                    attempts: row.get(5)?,
                    next_attempt_us: row.get(6)?,
                    last_error: row.get(7)?,
                    created_us: row.get(8)?,
                    finished_us: row.get(9)?,
                })
            },
        )
    }

    /// The scope's deliveries (or one webhook's) counted by status.
    pub fn webhook_queue_counts(
        &self,
        scope: WebhookScope,
        webhook_id: Option<i64>,
    ) -> Result<QueueCounts> {
        let mut counts = QueueCounts::default();
        self.query_each(
            "SELECT d.status, count(*) FROM webhook_deliveries d
             JOIN webhooks w ON w.id = d.webhook_id
             WHERE w.project_id = ?1 AND w.agent_id IS ?2
               AND (?3 IS NULL OR d.webhook_id = ?3)
             GROUP BY d.status",
            args![scope.project_id, scope.agent_id, webhook_id],
            |row| {
                let count = row.get::<i64>(1)?;
                match row.get::<&str>(0)? {
                    "pending" => counts.pending = count,
                    "failed" => counts.failed = count,
                    "delivered" => counts.delivered = count,
                    _ => {}
                }
                Ok(())
            },
        )?;
        Ok(counts)
    }

    /// Pending deliveries of every webhook (the queue's depth).
    pub fn webhook_queue_depth(&self) -> Result<i64> {
        self.query_value(
            "SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'",
            args![],
        )
    }

    /// Deletes up to `batch` delivered or failed rows finished before `cutoff_us`; how many.
    pub fn forget_finished_webhook_deliveries(&self, cutoff_us: i64, batch: i64) -> Result<usize> {
        self.execute(
            "DELETE FROM webhook_deliveries WHERE id IN
               (SELECT id FROM webhook_deliveries
                WHERE status <> 'pending' AND finished_us < ?1 LIMIT ?2)",
            args![cutoff_us, batch],
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_due_delivery_debugs_without_its_secret_or_its_urls_path() {
        let delivery = DueDelivery {
            id: 1,
            event_id: "msg_1".to_owned(),
            webhook_id: 2,
            url: "https://hooks.example.com:8443/in/tok-SECRETPATH?key=SECRETQUERY".to_owned(),
            secret: "whsec_SECRETKEY".to_owned(),
            attempts: 0,
            project: "p".to_owned(),
            recipient: "BlueLake".to_owned(),
            kind: "to".to_owned(),
            message: None,
        };
        let text = format!("{delivery:?}");
        for hidden in ["SECRETPATH", "SECRETQUERY", "SECRETKEY"] {
            assert!(!text.contains(hidden), "{hidden} in {text}");
        }
        assert!(text.contains("https://hooks.example.com:8443/…"), "{text}");
    }
}
