//! `mailroom upkeep [TASK]`: the server's background upkeep now (retire idle agents, sweep
//! reservations, report overdue acknowledgements; docs/compat/upkeep.md): the `run_upkeep`
//! tool of the data directory's running server (which also knows which agents it saw
//! working), else of this process on the data directory (backend.rs).

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use serde_json::{Value, json};

use super::target::Common;

/// Flags of `mailroom upkeep`.
#[derive(Args, Debug)]
pub struct UpkeepArgs {
    /// Which task: retire, reservations, acks, retention, fds, or all
    #[arg(value_enum, default_value_t = Which::All)]
    task: Which,
    #[command(flatten)]
    common: Common,
    /// Retire now even when the server has not yet watched a whole threshold of calls (with no
    /// server running, nobody has: then only the database's activity counts)
    #[arg(long)]
    force: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Which {
    Retire,
    Reservations,
    Acks,
    Retention,
    Fds,
    All,
}

/// Runs the tasks and prints what they did.
pub fn run(args: UpkeepArgs) -> Result<()> {
    let task = args.task.to_possible_value().context("every task has a name")?;
    let mut answer = args
        .common
        .backend()?
        .call_tool("run_upkeep", json!({"task": task.get_name(), "force": args.force}))?;
    let reports = answer["reports"].take();
    super::output::print(args.common.json, &reports, |reports| {
        super::output::items(reports).iter().map(|report| summary(report) + "\n").collect()
    });
    Ok(())
}

/// One line per report.
fn summary(report: &Value) -> String {
    let count = |key: &str| report[key].as_array().map_or(0, Vec::len);
    if let Some(reason) = report["skipped"].as_str() {
        return format!("{:<13} skipped: {reason}", report["task"].as_str().unwrap_or("?"));
    }
    match report["task"].as_str().unwrap_or_default() {
        "retire" => {
            let names: Vec<_> = report["retired"]
                .as_array()
                .into_iter()
                .flatten()
                .map(|r| {
                    format!(
                        "{}/{}",
                        r["project"].as_str().unwrap_or("?"),
                        r["agent"].as_str().unwrap_or("?")
                    )
                })
                .collect();
            let listed =
                if names.is_empty() { String::new() } else { format!(": {}", names.join(", ")) };
            format!(
                "retire        {} agent(s) idle over {} s retired{listed} ({} idle by the database but seen working kept)",
                count("retired"),
                report["threshold_seconds"],
                report["kept_busy"].as_u64().unwrap_or(0)
            )
        }
        "reservations" => format!(
            "reservations  {} released in {} project(s)",
            report["released"].as_u64().unwrap_or(0),
            report["projects"].as_u64().unwrap_or(0)
        ),
        "acks" => format!(
            "acks          {} acknowledgement(s) overdue past {} s{}",
            count("overdue"),
            report["ttl_seconds"],
            match (count("escalated"), count("escalation_errors")) {
                (0, 0) => String::new(),
                (done, 0) => format!(", {done} escalated"),
                (done, failed) => format!(", {done} escalated, {failed} failed"),
            }
        ),
        "retention" => {
            let projects = report["projects"].as_array().map_or(&[][..], Vec::as_slice);
            let old: u64 = projects.iter().filter_map(|p| p["old_messages"].as_u64()).sum();
            let over: usize =
                projects.iter().filter_map(|p| p["over_quota"].as_array()).map(Vec::len).sum();
            format!(
                "retention     {old} message file(s) older than {} days in {} project(s); {over} over quota",
                report["max_age_days"],
                projects.len()
            )
        }
        "fds" => format!(
            "fds           {} open of {}",
            report["open"],
            report["limit"].as_u64().map_or("unlimited".to_string(), |l| l.to_string())
        ),
        other => format!("{other}: {report}"),
    }
}
