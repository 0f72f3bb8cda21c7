//! The webhook delivery worker (docs/compat/tools.md §4.13): takes the deliveries that are
//! due from the durable queue (`mailroom_core::ops::webhooks`) and posts them, several at
//! once, until the server stops. It looks again whenever the store reports a write (a send
//! queued deliveries in its transaction), when an attempt ends, and when the next retry
//! falls due. At most `WEBHOOK_CONCURRENCY` requests are in flight, and one webhook holds at
//! most a quarter of them, so a receiver that hangs or fails slows no other webhook; sends
//! never wait for any of it. Each outcome is counted in `/metrics`.
//!
//! An attempt cut short by a stop or a crash was never recorded: its delivery is still
//! pending and is posted again after the restart, with the same `webhook-id`.

use std::collections::HashMap;
use std::time::Duration;

use mailroom_core::Error;
use mailroom_core::model::time::Timestamp;
use mailroom_core::ops::webhooks::{AttemptOutcome, DueDelivery, Poster};
use tokio::task::JoinSet;

use crate::state::AppState;

/// The longest the worker sleeps with nothing due (a write or a finished attempt wakes it
/// sooner).
const IDLE_LOOK: Duration = Duration::from_secs(60);

/// What one finished attempt reports: its delivery and webhook, and how it went.
type Finished = (i64, i64, Result<AttemptOutcome, Error>);

/// Posts due deliveries until the server stops.
pub async fn deliver(state: AppState) {
    let settings = state.core.config().webhooks.clone();
    let poster = match Poster::new(&settings) {
        Ok(poster) => poster,
        Err(e) => {
            tracing::error!(error = %e.message, "webhook deliveries off: no HTTP client");
            return;
        }
    };
    let mut changes = state.core.changes();
    let mut stopping = state.stopping.subscribe();
    // Deliveries in flight, each with its webhook; and each attempt's task, by its id.
    let mut in_flight: HashMap<i64, i64> = HashMap::new();
    let mut tasks: HashMap<tokio::task::Id, i64> = HashMap::new();
    let mut attempts: JoinSet<Finished> = JoinSet::new();
    loop {
        if in_flight.len() < settings.concurrency {
            // The store picks at most each webhook's share, leaving out those in flight and
            // webhooks at their share, so a busy webhook's backlog never fills the page.
            let page = settings.concurrency * 2;
            let pairs: Vec<(i64, i64)> = in_flight.iter().map(|(d, w)| (*d, *w)).collect();
            match state.core.due_webhook_deliveries(page, &pairs, &[]).await {
                Ok(due) => {
                    for delivery in due {
                        if in_flight.len() >= settings.concurrency {
                            break;
                        }
                        let busy = in_flight.values().filter(|w| **w == delivery.webhook_id);
                        if in_flight.contains_key(&delivery.id)
                            || busy.count() >= settings.per_webhook()
                        {
                            continue;
                        }
                        in_flight.insert(delivery.id, delivery.webhook_id);
                        let id = delivery.id;
                        let task = attempts.spawn(attempt(state.clone(), poster.clone(), delivery));
                        tasks.insert(task.id(), id);
                    }
                }
                Err(e) => tracing::warn!(error = %e.message, "webhooks: cannot read the queue"),
            }
        }
        let wait = match state.core.next_webhook_due().await {
            Ok(Some(due)) => until(due).min(IDLE_LOOK),
            _ => IDLE_LOOK,
        };
        tokio::select! {
            changed = changes.changed() => if changed.is_err() { return },
            _ = stopping.changed() => return,
            Some(finished) = attempts.join_next_with_id(), if !attempts.is_empty() => {
                // A task that panicked recorded nothing: its delivery is tried again.
                let task = finished.as_ref().map_or_else(|e| e.id(), |(id, _)| *id);
                if let Some(delivery) = tasks.remove(&task) {
                    in_flight.remove(&delivery);
                }
                if let Ok((_, (delivery, webhook, outcome))) = finished {
                    note(&state, delivery, webhook, outcome);
                }
            }
            () = tokio::time::sleep(wait) => {}
        }
    }
}

/// One attempt of one delivery, on a task of its own.
async fn attempt(state: AppState, poster: Poster, delivery: DueDelivery) -> Finished {
    let outcome = state.core.attempt_webhook_delivery(&poster, &delivery).await;
    (delivery.id, delivery.webhook_id, outcome)
}

/// Counts and logs how an attempt went.
fn note(state: &AppState, delivery: i64, webhook: i64, outcome: Result<AttemptOutcome, Error>) {
    match outcome {
        Ok(outcome) => {
            state.metrics.record_webhook_attempt(&outcome);
            match &outcome {
                AttemptOutcome::Delivered => {}
                AttemptOutcome::Retry { error, .. } => {
                    tracing::info!(webhook, delivery, error = %error, "webhook attempt failed; will retry")
                }
                AttemptOutcome::Failed { error } => {
                    tracing::warn!(webhook, delivery, error = %error, "webhook delivery given up")
                }
            }
        }
        Err(e) => {
            tracing::warn!(webhook, delivery, error = %e.message, "webhook bookkeeping failed")
        }
    }
}

/// How long until `due` (zero when it has passed).
fn until(due: Timestamp) -> Duration {
    let micros = due.as_micros().saturating_sub(Timestamp::now().as_micros());
    Duration::from_micros(u64::try_from(micros).unwrap_or(0))
}
