//! The webhook delivery worker (docs/compat/tools.md §4.13): takes the deliveries that are
//! due from the durable queue (`mailroom_core::ops::webhooks`) and posts them, several at
//! once, until the server stops. It looks again whenever the store reports a write (a send
//! queued deliveries in its transaction), when an attempt ends, and when the next retry
//! falls due. At most `WEBHOOK_CONCURRENCY` requests are in flight, and one webhook holds at
//! most a quarter of them, so a receiver that hangs or fails slows no other webhook; sends
//! never wait for any of it. Each outcome is counted in `/metrics`.
//!
//! An attempt cut short by a stop or a crash was never recorded: its delivery is still
//! pending and is posted again after the restart, with the same `webhook-id`. An attempt
//! whose outcome the store refused to record is pending too: its delivery is held back in
//! memory for `WEBHOOK_RETRY_BASE_MS` before it is posted again, so a store that refuses
//! writes does not turn the worker into a resend loop; the first refusal of a run of them is
//! logged.
//!
//! Of several servers sharing one database, only the archive's leader posts
//! (docs/scale-out.md); the others look each second whether they lead now. Each delivery it
//! takes is claimed in the database until its attempt must be over, so when the lead moves,
//! the new leader leaves alone what the old one still has in flight.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use mailroom_core::Error;
use mailroom_core::model::time::Timestamp;
use mailroom_core::ops::webhooks::{AttemptOutcome, DueDelivery, Poster};
use tokio::task::JoinSet;

use crate::state::AppState;

/// The longest the worker sleeps with nothing due (a write or a finished attempt wakes it
/// sooner).
const IDLE_LOOK: Duration = Duration::from_secs(60);

/// How often a server that does not lead looks whether it leads now.
const FOLLOWER_LOOK: Duration = Duration::from_secs(1);

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
    let mut held = HeldBack::new(settings.retry_delay(1));
    loop {
        held.forget_expired(Instant::now());
        let leads = state.core.leads();
        if leads && in_flight.len() < settings.concurrency {
            // The store picks at most each webhook's share, leaving out those in flight and
            // webhooks at their share, so a busy webhook's backlog never fills the page.
            let page = settings.concurrency * 2;
            match state.core.due_webhook_deliveries(page, &in_flight, &held.ids()).await {
                Ok(due) => {
                    for delivery in due {
                        if in_flight.len() >= settings.concurrency {
                            break;
                        }
                        // The store gives each webhook its whole share, not what its
                        // deliveries in flight leave of it.
                        let busy = in_flight.values().filter(|w| **w == delivery.webhook_id);
                        if busy.count() >= settings.per_webhook() {
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
        let wait = if !leads {
            FOLLOWER_LOOK
        } else {
            match state.core.next_webhook_due().await {
                Ok(Some(due)) => until(due).min(IDLE_LOOK),
                _ => IDLE_LOOK,
            }
        };
        let wait = held.next_release(Instant::now()).map_or(wait, |release| release.min(wait));
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
                    let refused = outcome.is_err();
                    note(&state, delivery, webhook, outcome, held.is_quiet());
                    held.record(delivery, refused, Instant::now());
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

/// Deliveries whose attempt the store refused to record, each held back until a time, and
/// whether the current run of refusals was logged.
struct HeldBack {
    delay: Duration,
    until: HashMap<i64, Instant>,
    refusing: bool,
}

impl HeldBack {
    fn new(delay: Duration) -> Self {
        Self { delay, until: HashMap::new(), refusing: false }
    }

    /// Holds `delivery` back when its record was `refused`; a record that was kept ends the
    /// run of refusals.
    fn record(&mut self, delivery: i64, refused: bool, now: Instant) {
        self.refusing = refused;
        if refused {
            self.until.insert(delivery, now + self.delay);
        }
    }

    /// Whether no refusal was logged in the current run (the next one is logged).
    fn is_quiet(&self) -> bool {
        !self.refusing
    }

    fn forget_expired(&mut self, now: Instant) {
        self.until.retain(|_, until| *until > now);
    }

    fn ids(&self) -> Vec<i64> {
        self.until.keys().copied().collect()
    }

    /// How long until the first held delivery may be posted again.
    fn next_release(&self, now: Instant) -> Option<Duration> {
        self.until.values().min().map(|until| until.saturating_duration_since(now))
    }
}

/// Counts and logs how an attempt went; a refused record is logged only when `log_refusal`.
fn note(
    state: &AppState,
    delivery: i64,
    webhook: i64,
    outcome: Result<AttemptOutcome, Error>,
    log_refusal: bool,
) {
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
        Err(e) if log_refusal => tracing::warn!(
            webhook,
            delivery,
            error = %e.message,
            "webhook bookkeeping failed; deliveries whose outcome is not recorded are held back \
             for WEBHOOK_RETRY_BASE_MS (further failures are not logged until one succeeds)"
        ),
        Err(e) => {
            tracing::debug!(webhook, delivery, error = %e.message, "webhook bookkeeping failed")
        }
    }
}

/// How long until `due` (zero when it has passed).
fn until(due: Timestamp) -> Duration {
    let micros = due.as_micros().saturating_sub(Timestamp::now().as_micros());
    Duration::from_micros(u64::try_from(micros).unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_record_holds_its_delivery_back_for_the_delay() {
        let start = Instant::now();
        let mut held = HeldBack::new(Duration::from_secs(5));
        held.record(7, false, start);
        assert!(held.ids().is_empty() && held.is_quiet());
        held.record(8, true, start);
        assert_eq!(held.ids(), [8]);
        assert!(!held.is_quiet(), "the run of refusals was logged");
        assert_eq!(held.next_release(start), Some(Duration::from_secs(5)));
        held.forget_expired(start + Duration::from_secs(4));
        assert_eq!(held.ids(), [8]);
        held.forget_expired(start + Duration::from_secs(5));
        assert!(held.ids().is_empty());
        held.record(9, false, start);
        assert!(held.is_quiet(), "a kept record ends the run");
    }
}
