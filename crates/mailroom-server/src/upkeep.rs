//! The background upkeep's schedules (docs/compat/upkeep.md): each enabled task of
//! `mailroom_core::ops::upkeep` runs every interval on a task of its own, off the request
//! path, logged and counted (`mailroom_upkeep_runs_total`); [`run`] runs one now (the
//! `run_upkeep` tool). A task never runs twice at once. Of several servers sharing a
//! PostgreSQL database, only the archive's leader runs the schedules (but each checks its own
//! file descriptors); `run_upkeep` runs where it is called.

use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use mailroom_core::Error;
use mailroom_core::model::time::Timestamp;
use mailroom_core::ops::upkeep::{Seen, Task};
use serde_json::{Value, json};

use crate::http::metrics::UpkeepOutcome;
use crate::state::AppState;

/// Which tasks are running, one flag per task of [`Task::ALL`].
#[derive(Default)]
pub struct Running([AtomicBool; Task::ALL.len()]);

impl Running {
    fn flag(&self, task: Task) -> &AtomicBool {
        let index = Task::ALL.iter().position(|t| *t == task).unwrap_or(0);
        &self.0[index]
    }
}

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
                // Of several servers on one database, the leader keeps the shared state;
                // each checks its own descriptors.
                if task != Task::Fds && !state.core.leads() {
                    continue;
                }
                // Failures are logged and counted by `run`; the schedule goes on.
                let _ = run(&state, task, false).await;
            }
        });
    }
}

/// The tasks `all` means: those enabled here.
pub fn enabled(state: &AppState) -> Vec<Task> {
    let settings = &state.core.config().upkeep;
    Task::ALL.into_iter().filter(|t| settings.schedule(*t).is_some()).collect()
}

/// Runs one task now; its report, or why it did not run: the task is running already, or (for
/// retirement without `force`) the server has not yet watched a whole threshold of calls, so an
/// agent that only reads could look idle.
pub async fn run(state: &AppState, task: Task, force: bool) -> Result<Value, Error> {
    if task == Task::Retire && !force && !seen_a_whole_threshold(state) {
        let reason =
            "the server has not watched a whole threshold of calls yet (force retires now)";
        return Ok(json!({"task": task.name(), "skipped": reason}));
    }
    let flag = state.upkeep.flag(task);
    if flag.swap(true, Ordering::AcqRel) {
        return Ok(json!({"task": task.name(), "skipped": "already running"}));
    }
    let outcome = run_task(state, task).await;
    flag.store(false, Ordering::Release);
    outcome
}

async fn run_task(state: &AppState, task: Task) -> Result<Value, Error> {
    let started = Instant::now();
    let seen = if task == Task::Retire {
        let threshold = state.core.config().upkeep.retire_threshold_seconds;
        state.instruments.seen_since(Timestamp::now().plus_seconds(-threshold))
    } else {
        Seen::default()
    };
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
    let counted = if outcome.is_ok() { UpkeepOutcome::Ok } else { UpkeepOutcome::Failed };
    state.metrics.record_upkeep_run(task.name(), counted);
    outcome.map(|report| serde_json::to_value(report).unwrap_or(Value::Null))
}

/// Whether the server has been up for a whole retirement threshold.
fn seen_a_whole_threshold(state: &AppState) -> bool {
    let threshold = state.core.config().upkeep.retire_threshold_seconds;
    state.started.elapsed() >= Duration::from_secs(u64::try_from(threshold).unwrap_or(0))
}
