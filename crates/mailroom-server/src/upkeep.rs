//! The background upkeep's schedules (docs/compat/upkeep.md): each enabled task of
//! `mailroom_core::ops::upkeep` runs every interval on a task of its own, off the request
//! path, logging what it did; [`run`] runs one now (the `run_upkeep` tool).

use std::time::{Duration, Instant};

use mailroom_core::Error;
use mailroom_core::model::time::Timestamp;
use mailroom_core::ops::upkeep::{Task, UpkeepReport};

use crate::state::AppState;

/// Starts the schedule of every enabled task; each ends when `stopping` turns true.
pub fn start(state: &AppState) {
    let settings = state.core.config().upkeep.clone();
    for task in Task::ALL {
        let Some(interval) = settings.schedule(task) else { continue };
        let state = state.clone();
        let stop = crate::state::until_stopping(state.stopping.subscribe());
        tokio::spawn(async move {
            tokio::pin!(stop);
            loop {
                tokio::select! {
                    () = &mut stop => return,
                    () = tokio::time::sleep(Duration::from_secs(interval)) => {}
                }
                if task == Task::Retire && !seen_a_whole_threshold(&state) {
                    // Calls made before the server started are unknown to it: an agent that
                    // only reads could look idle. Retire once a whole threshold was watched.
                    continue;
                }
                // Failures are logged by `run`; the schedule goes on.
                let _ = run(&state, task).await;
            }
        });
    }
}

/// Whether the server has been up for a whole retirement threshold.
fn seen_a_whole_threshold(state: &AppState) -> bool {
    let threshold = state.core.config().upkeep.retire_threshold_seconds;
    state.started.elapsed() >= Duration::from_secs(u64::try_from(threshold).unwrap_or(0))
}

/// Runs one task now and logs what it did.
pub async fn run(state: &AppState, task: Task) -> Result<UpkeepReport, Error> {
    let started = Instant::now();
    let threshold = state.core.config().upkeep.retire_threshold_seconds;
    let seen = state.instruments.seen_since(Timestamp::now().plus_seconds(-threshold));
    let outcome = state.core.run_upkeep(task, &seen).await;
    let elapsed_ms = started.elapsed().as_millis();
    match &outcome {
        // The descriptor check runs every 30 s: its runs go to the debug log (it warns itself).
        Ok(report) if task == Task::Fds => {
            tracing::debug!(task = task.name(), count = report.count(), elapsed_ms, "upkeep ran");
        }
        Ok(report) => {
            tracing::info!(task = task.name(), count = report.count(), elapsed_ms, "upkeep ran");
        }
        Err(e) => {
            tracing::warn!(task = task.name(), error = %e.message, elapsed_ms, "upkeep failed")
        }
    }
    outcome
}
