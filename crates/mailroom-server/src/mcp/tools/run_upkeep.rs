//! run_upkeep: run the background upkeep's tasks now (mailroom extension; what the server's
//! schedules do, docs/compat/upkeep.md), for operators and scripts: retire idle agents, sweep
//! reservations, scan for overdue acknowledgements. Needs no agent's token.

use schemars::JsonSchema;
use serde::Deserialize;

use mailroom_core::Error;
use mailroom_core::ops::upkeep::Task;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Run the server's upkeep now: task \"retire\" (agents idle past \
     AUTO_RETIRE_STALE_AGENTS_THRESHOLD_SECONDS), \"reservations\" (release expired and stale \
     file reservations in every project), \"acks\" (acknowledgements overdue past \
     ACK_TTL_SECONDS), \"retention\" (old message files, inbox sizes, attachment bytes, \
     quotas), \"fds\" (open file descriptors against the limit), or \"all\" (the default: \
     the tasks enabled here). Retirement waits until the server has watched a whole \
     threshold of calls unless force is true. Returns what each did, or why it was skipped.";

/// Arguments of run_upkeep.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// "retire", "reservations", "acks", "retention", "fds", or "all" (default: the tasks
    /// enabled on this server).
    #[serde(default)]
    task: Option<String>,
    /// Retire now even before the server has watched a whole threshold of calls (it may then
    /// retire agents that only read).
    #[serde(default)]
    force: Option<bool>,
}

pub fn tool() -> Tool {
    Tool::new("run_upkeep", DESCRIPTION, |state: AppState, args: Args| async move {
        let tasks = match args.task.as_deref().map(str::trim) {
            None | Some("" | "all") => crate::upkeep::enabled(&state),
            Some(name) => vec![Task::parse(name).ok_or_else(|| {
                Error::invalid(format!(
                    "task: expected \"retire\", \"reservations\", \"acks\", \"retention\", \
                     \"fds\" or \"all\", got {name:?}"
                ))
            })?],
        };
        let mut reports = Vec::new();
        for task in tasks {
            reports.push(crate::upkeep::run(&state, task, args.force.unwrap_or(false)).await?);
        }
        Ok(serde_json::json!({ "reports": reports }))
    })
}
