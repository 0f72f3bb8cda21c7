//! Webhooks (docs/compat/tools.md §4.13): a project, or one agent, registers an endpoint,
//! and every delivery of a message to a recipient it covers is POSTed there, signed by the
//! Standard Webhooks rules (`signing.rs`). A trigger queues each delivery in the transaction
//! that stores the recipient row (migration 0015), so none is lost to a crash; the server's
//! delivery worker takes what is due ([`Mailroom::due_webhook_deliveries`]), posts it
//! (`post.rs`) and records the outcome ([`Mailroom::attempt_webhook_delivery`]), retrying
//! with backoff (`settings.rs`) until a bound. At least once: the `webhook-id` header, kept
//! across retries and restarts, lets a receiver take each delivery once.

mod endpoint;
mod post;
mod settings;
mod signing;

use serde::Serialize;

pub use endpoint::{MAX_URL_BYTES, parse as parse_url};
pub use post::{MESSAGE_DELIVERED, Poster};
pub use settings::WebhookConfig;
pub use signing::Secret;

pub use crate::store::db::webhooks::{AttemptOutcome, DeliveredMessage, DueDelivery, QueueCounts};

use crate::error::{Category, Error, Result};
use crate::model::time::Timestamp;
use crate::ops::{Mailroom, resolve};
use crate::store::Db;
use crate::store::db::webhooks::{DeliveryRow, NewWebhook, WebhookScope, redacted_url};

/// The most webhooks one project may have.
pub const MAX_PER_PROJECT: i64 = 32;
/// Deliveries the deliveries view lists by default, and at most.
pub const DEFAULT_LIST: i64 = 50;
pub const MAX_LIST: i64 = 500;
/// Finished deliveries one sweep step forgets (one write job each).
const FORGET_BATCH: i64 = 5000;
/// Sweep steps one upkeep run takes at most.
const FORGET_STEPS: usize = 20;

/// Result of register_webhook: the only answer that shows the secret (its `Debug` does not).
#[derive(Clone, Serialize)]
pub struct RegisteredWebhook {
    pub id: i64,
    pub project: String,
    /// The agent whose deliveries it receives; `null`: every recipient in the project.
    pub agent: Option<String>,
    pub url: String,
    pub secret: String,
    pub created_ts: Timestamp,
}

impl std::fmt::Debug for RegisteredWebhook {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RegisteredWebhook")
            .field("id", &self.id)
            .field("project", &self.project)
            .field("agent", &self.agent)
            .field("url", &redacted_url(&self.url))
            .field("secret", &"redacted")
            .field("created_ts", &self.created_ts)
            .finish()
    }
}

/// Result of list_webhooks.
#[derive(Debug, Clone, Serialize)]
pub struct WebhookList {
    pub project: String,
    pub webhooks: Vec<WebhookOut>,
}

/// A webhook as listed (never its secret).
#[derive(Debug, Clone, Serialize)]
pub struct WebhookOut {
    pub id: i64,
    pub agent: Option<String>,
    pub url: String,
    pub created_ts: Timestamp,
    /// Deliveries waiting for a first or further attempt.
    pub pending: i64,
    /// Deliveries given up on (kept `WEBHOOK_RETENTION_DAYS`).
    pub failed: i64,
}

/// Result of remove_webhook.
#[derive(Debug, Clone, Serialize)]
pub struct RemovedWebhook {
    pub id: i64,
    pub removed: bool,
}

/// Which deliveries the deliveries view lists.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DeliveryFilter {
    /// Pending and failed (the default): what has not arrived.
    Undelivered,
    Pending,
    Failed,
    Delivered,
    All,
}

impl DeliveryFilter {
    /// The filter a `status` argument names; an error names the field.
    pub fn parse(text: Option<&str>) -> Result<Self> {
        let text = text.map(|t| t.trim().to_ascii_lowercase());
        Ok(match text.as_deref() {
            None | Some("" | "undelivered") => Self::Undelivered,
            Some("pending") => Self::Pending,
            Some("failed") => Self::Failed,
            Some("delivered") => Self::Delivered,
            Some("all") => Self::All,
            Some(other) => {
                return Err(Error::invalid(format!(
                    "status must be undelivered, pending, failed, delivered or all; got {other:?}"
                )));
            }
        })
    }

    fn statuses(self) -> &'static [&'static str] {
        match self {
            Self::Undelivered => &["pending", "failed"],
            Self::Pending => &["pending"],
            Self::Failed => &["failed"],
            Self::Delivered => &["delivered"],
            Self::All => &["pending", "failed", "delivered"],
        }
    }
}

/// Result of webhook_deliveries.
#[derive(Debug, Clone, Serialize)]
pub struct DeliveriesView {
    pub project: String,
    pub webhook_id: Option<i64>,
    /// Every delivery kept, by status (not only those listed).
    pub counts: QueueCounts,
    pub deliveries: Vec<DeliveryOut>,
}

/// One delivery as listed.
#[derive(Debug, Clone, Serialize)]
pub struct DeliveryOut {
    /// The `webhook-id` header: the receiver's idempotency key.
    pub id: String,
    pub webhook_id: i64,
    pub message_id: i64,
    pub recipient: Option<String>,
    pub status: String,
    pub attempts: i64,
    /// When it is tried next (pending only).
    pub next_attempt_ts: Option<Timestamp>,
    pub last_error: Option<String>,
    pub created_ts: Timestamp,
    /// When it was delivered or given up on.
    pub finished_ts: Option<Timestamp>,
}

impl Serialize for QueueCounts {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        use serde::ser::SerializeStruct as _;
        let mut counts = serializer.serialize_struct("QueueCounts", 3)?;
        counts.serialize_field("pending", &self.pending)?;
        counts.serialize_field("failed", &self.failed)?;
        counts.serialize_field("delivered", &self.delivered)?;
        counts.end()
    }
}

/// How long past its attempt's timeout a claimed delivery stays another server's.
const CLAIM_MARGIN_US: i64 = 5_000_000;

impl Mailroom {
    /// Registers a webhook for every recipient in the project, or for `agent_name`'s
    /// deliveries only, posting to `url` and signing with `secret` (one is generated when
    /// none is given).
    pub async fn register_webhook(
        &self,
        project_key: String,
        url: String,
        agent_name: Option<String>,
        secret: Option<String>,
    ) -> Result<RegisteredWebhook> {
        let url = endpoint::parse(&url, self.config.webhooks.allow_private)?.to_string();
        let secret = match secret.filter(|s| !s.trim().is_empty()) {
            Some(text) => Secret::parse(&text)?,
            None => Secret::generate()?,
        };
        let created_ts = Timestamp::now();
        self.store
            .write(move |db| {
                let (slug, scope, agent) = scope(db, &project_key, agent_name)?;
                if let Some(id) = db.webhook_for(scope, &url)? {
                    return Err(Error::new(
                        Category::Conflict,
                        "WEBHOOK_EXISTS",
                        format!(
                            "webhook {id} already posts {url} for this {}; remove it first to \
                             register it again (with a new secret)",
                            if agent.is_some() { "agent" } else { "project" }
                        ),
                    ));
                }
                if db.webhook_count(scope.project_id)? >= MAX_PER_PROJECT {
                    return Err(Error::new(
                        Category::Conflict,
                        "WEBHOOK_LIMIT",
                        format!(
                            "project '{}' has {MAX_PER_PROJECT} webhooks, the most it may have; \
                             remove one first",
                            slug
                        ),
                    ));
                }
                let new = NewWebhook {
                    project_id: scope.project_id,
                    agent_id: scope.agent_id,
                    url: &url,
                    secret: secret.as_str(),
                    created_ts,
                };
                let id = db.insert_webhook(&new)?;
                Ok(RegisteredWebhook {
                    id,
                    project: slug,
                    agent,
                    url: url.clone(),
                    secret: secret.as_str().to_owned(),
                    created_ts,
                })
            })
            .await
    }

    /// The project-wide webhooks, or with `agent_name` that agent's only, without their
    /// secrets.
    pub async fn list_webhooks(
        &self,
        project_key: String,
        agent_name: Option<String>,
    ) -> Result<WebhookList> {
        self.store
            .read(move |db| {
                let (project, scope, _) = scope(db, &project_key, agent_name)?;
                let webhooks = (db.webhooks_of(scope)?.into_iter())
                    .map(|w| WebhookOut {
                        id: w.id,
                        agent: w.agent,
                        url: w.url,
                        created_ts: w.created_ts,
                        pending: w.pending,
                        failed: w.failed,
                    })
                    .collect();
                Ok(WebhookList { project, webhooks })
            })
            .await
    }

    /// Removes one project-wide webhook (or, with `agent_name`, one of that agent's) with
    /// every delivery it has queued or kept.
    pub async fn remove_webhook(
        &self,
        project_key: String,
        agent_name: Option<String>,
        webhook_id: i64,
    ) -> Result<RemovedWebhook> {
        self.store
            .write(move |db| {
                let (project, scope, _) = scope(db, &project_key, agent_name)?;
                if !db.delete_webhook(scope, webhook_id)? {
                    return Err(not_found(webhook_id, &project));
                }
                Ok(RemovedWebhook { id: webhook_id, removed: true })
            })
            .await
    }

    /// The deliveries of the project-wide webhooks (or, with `agent_name`, of that agent's;
    /// or of one of them) that `filter` keeps, newest first.
    pub async fn webhook_deliveries(
        &self,
        project_key: String,
        agent_name: Option<String>,
        webhook_id: Option<i64>,
        filter: DeliveryFilter,
        limit: Option<i64>,
    ) -> Result<DeliveriesView> {
        let limit = limit.unwrap_or(DEFAULT_LIST);
        if limit < 1 {
            return Err(Error::invalid(format!("limit must be at least 1 (got {limit})")));
        }
        let limit = limit.min(MAX_LIST);
        self.store
            .read(move |db| {
                let (project, scope, _) = scope(db, &project_key, agent_name)?;
                if let Some(id) = webhook_id
                    && !db.webhooks_of(scope)?.iter().any(|w| w.id == id)
                {
                    return Err(not_found(id, &project));
                }
                let counts = db.webhook_queue_counts(scope, webhook_id)?;
                let rows = db.webhook_deliveries(scope, webhook_id, filter.statuses(), limit)?;
                let deliveries = rows.into_iter().map(delivery_out).collect();
                Ok(DeliveriesView { project, webhook_id, counts, deliveries })
            })
            .await
    }

    /// Pending deliveries due now, soonest first, at most `limit`, and for no webhook more
    /// than its share of requests in flight (`WEBHOOK_CONCURRENCY`'s quarter). `in_flight`
    /// maps each delivery being posted to its webhook; those, and `held_back` ones, are
    /// left out, and so are webhooks already at their share.
    pub async fn due_webhook_deliveries(
        &self,
        limit: usize,
        in_flight: &std::collections::HashMap<i64, i64>,
        held_back: &[i64],
    ) -> Result<Vec<DueDelivery>> {
        let now = Timestamp::now().as_micros();
        let limit = i64::try_from(limit).unwrap_or(i64::MAX);
        let per_webhook = self.config.webhooks.per_webhook();
        let mut skip_deliveries: Vec<i64> = in_flight.keys().copied().collect();
        skip_deliveries.extend_from_slice(held_back);
        let mut counts: std::collections::HashMap<i64, usize> = std::collections::HashMap::new();
        for webhook in in_flight.values() {
            *counts.entry(*webhook).or_default() += 1;
        }
        let full: Vec<i64> =
            counts.into_iter().filter(|(_, n)| *n >= per_webhook).map(|(w, _)| w).collect();
        let per_webhook = i64::try_from(per_webhook).unwrap_or(i64::MAX);
        let due = self
            .store
            .read(move |db| {
                db.due_webhook_deliveries(now, limit, per_webhook, &skip_deliveries, &full)
            })
            .await?;
        if due.is_empty() || !self.shares_database() {
            return Ok(due);
        }
        // Of several servers, each delivery is claimed by the one that posts it, until its
        // attempt must be over: another (a new leader while the old one still posts) finds
        // it not due. Only what this claim won is posted.
        let ids: Vec<i64> = due.iter().map(|d| d.id).collect();
        let until = now
            + i64::try_from(self.config.webhooks.timeout_ms).unwrap_or(0) * 1000
            + CLAIM_MARGIN_US;
        let claimed: std::collections::HashSet<i64> = self
            .store
            .write_unseen(move |db| db.claim_webhook_deliveries(&ids, now, until))
            .await?
            .into_iter()
            .collect();
        Ok(due.into_iter().filter(|d| claimed.contains(&d.id)).collect())
    }

    /// When the next delivery not yet due falls due, if one is pending.
    pub async fn next_webhook_due(&self) -> Result<Option<Timestamp>> {
        let now = Timestamp::now().as_micros();
        let next = self.store.read_short(move |db| db.next_webhook_due(now)).await?;
        Ok(next.map(Timestamp::from_micros))
    }

    /// Deliveries waiting for an attempt, over every webhook (the queue's depth).
    pub async fn webhook_queue_depth(&self) -> Result<i64> {
        self.store.read_short(|db| db.webhook_queue_depth()).await
    }

    /// Makes one attempt of `delivery` with `poster` and records how it went: delivered on
    /// a 2xx, else retried after the backoff, or failed once `WEBHOOK_MAX_ATTEMPTS` are
    /// spent (or at once when its message was deleted since). The record is bookkeeping no
    /// page shows: it does not move the store's change count.
    pub async fn attempt_webhook_delivery(
        &self,
        poster: &Poster,
        delivery: &DueDelivery,
    ) -> Result<AttemptOutcome> {
        let outcome = match &delivery.message {
            None => AttemptOutcome::Failed {
                error: "its message was deleted before it was delivered".to_owned(),
            },
            Some(message) => match poster.post(delivery, message).await {
                Ok(()) => AttemptOutcome::Delivered,
                Err(refusal) => self.after_failure(delivery.attempts, refusal),
            },
        };
        let store = self.store.clone();
        let (id, recorded) = (delivery.id, outcome.clone());
        let now = Timestamp::now().as_micros();
        tokio::task::spawn_blocking(move || {
            store.write_blocking_unseen(move |db| db.record_webhook_attempt(id, &recorded, now))
        })
        .await
        .map_err(|e| Error::internal(format!("webhook bookkeeping: {e}")))??;
        Ok(outcome)
    }

    /// The outcome of a failed attempt after `attempts_before` earlier ones: failed for good
    /// when the attempts are spent or the receiver said it is gone; else retried after the
    /// backoff, jittered (so receivers coming back are not met by every retry at once), or
    /// after the receiver's `Retry-After` when that is longer (within the backoff's maximum).
    fn after_failure(&self, attempts_before: i64, refusal: post::Refusal) -> AttemptOutcome {
        let settings = &self.config.webhooks;
        let failures = u32::try_from(attempts_before + 1).unwrap_or(u32::MAX);
        let post::Refusal { error, retry_after, permanent } = refusal;
        if permanent || failures >= settings.max_attempts {
            return AttemptOutcome::Failed { error };
        }
        let wait = settings.jittered(settings.retry_delay(failures), random_fraction());
        let wait = retry_after.map_or(wait, |asked| wait.max(asked.min(settings.retry_max())));
        let delay = i64::try_from(wait.as_micros()).unwrap_or(i64::MAX);
        let next_attempt_us = Timestamp::now().as_micros().saturating_add(delay);
        AttemptOutcome::Retry { next_attempt_us, error }
    }

    /// Forgets delivered and failed deliveries finished more than `retention_days` ago, at
    /// most `FORGET_BATCH` × `FORGET_STEPS` (100,000) in one run, as the mailbox events'
    /// pruning; how many (the upkeep's reservation sweep).
    pub async fn forget_old_webhook_deliveries(&self, retention_days: i64) -> Result<usize> {
        let cutoff = Timestamp::now().plus_seconds(-retention_days.saturating_mul(86_400));
        self.forget_finished_deliveries(cutoff.as_micros(), FORGET_BATCH, FORGET_STEPS).await
    }

    /// Forgets deliveries finished before `cutoff` (microseconds), `batch` per write job and
    /// at most `steps` jobs, so a long backlog cannot hold the writer; how many.
    async fn forget_finished_deliveries(
        &self,
        cutoff: i64,
        batch: i64,
        steps: usize,
    ) -> Result<usize> {
        let forget = move |db: &Db<'_>, batch| db.forget_finished_webhook_deliveries(cutoff, batch);
        self.store.write_in_steps(batch, steps, forget).await
    }
}

/// The project's slug, the scope a webhook tool acts on (the project-wide webhooks, or the
/// named agent's) and that agent's name as stored.
fn scope(
    db: &Db<'_>,
    project_key: &str,
    agent_name: Option<String>,
) -> Result<(String, WebhookScope, Option<String>)> {
    let project = resolve::project(db, project_key)?;
    let agent = match agent_name.filter(|a| !a.trim().is_empty()) {
        Some(name) => Some(resolve::agent(db, &project, &name, "agent_name")?),
        None => None,
    };
    let scope = WebhookScope { project_id: project.id, agent_id: agent.as_ref().map(|a| a.id) };
    Ok((project.slug, scope, agent.map(|a| a.name)))
}

fn not_found(webhook_id: i64, project: &str) -> Error {
    Error::not_found(format!(
        "Webhook '{webhook_id}' not found in project '{project}'. A project webhook is named \
         without agent_name, an agent's with its agent_name."
    ))
}

fn delivery_out(row: DeliveryRow) -> DeliveryOut {
    DeliveryOut {
        id: row.event_id,
        webhook_id: row.webhook_id,
        message_id: row.message_id.0,
        recipient: row.recipient,
        next_attempt_ts: (row.status == "pending")
            .then_some(Timestamp::from_micros(row.next_attempt_us)),
        status: row.status,
        attempts: row.attempts,
        last_error: row.last_error,
        created_ts: Timestamp::from_micros(row.created_us),
        finished_ts: row.finished_us.map(Timestamp::from_micros),
    }
}

#[cfg(test)]
mod tests;

/// A random number in [0, 1): the backoff's jitter.
fn random_fraction() -> f64 {
    getrandom::u64().map_or(0.5, |random| (random >> 11) as f64 / (1u64 << 53) as f64)
}
