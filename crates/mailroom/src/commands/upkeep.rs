//! `mailroom upkeep [TASK]`: the server's background upkeep now (retire idle agents, sweep
//! reservations, report overdue acknowledgements; docs/compat/upkeep.md). Through the running
//! server when there is one (its `run_upkeep` tool, which also knows which agents it saw
//! working), else on the data directory directly.

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, ValueEnum};
use mailroom_core::Mailroom;
use mailroom_core::ops::upkeep::{Seen, Task};
use serde_json::{Value, json};

use super::remote::Remote;
use super::shared;

/// Flags of `mailroom upkeep`.
#[derive(Args, Debug)]
pub struct UpkeepArgs {
    /// Which task: retire, reservations, acks, or all
    #[arg(value_enum, default_value_t = Which::All)]
    task: Which,
    /// Directory for the database and the archive [default: ./mailroom-data]
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Print the reports as JSON
    #[arg(long)]
    json: bool,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Which {
    Retire,
    Reservations,
    Acks,
    All,
}

impl Which {
    fn tasks(self) -> Vec<Task> {
        match self {
            Which::Retire => vec![Task::Retire],
            Which::Reservations => vec![Task::Reservations],
            Which::Acks => vec![Task::Acks],
            Which::All => Task::ALL.to_vec(),
        }
    }
}

/// Runs the tasks and prints what they did.
pub fn run(args: UpkeepArgs) -> Result<()> {
    let data_dir = shared::data_dir(args.data_dir.clone());
    let reports = match Remote::find(&data_dir)? {
        Some(server) => {
            let task = format!("{:?}", args.task).to_ascii_lowercase();
            server.call_tool("run_upkeep", json!({"task": task}))?["reports"].take()
        }
        None => offline(&data_dir, &args.task.tasks())?,
    };
    if args.json {
        println!("{}", serde_json::to_string_pretty(&reports)?);
    } else {
        for report in reports.as_array().into_iter().flatten() {
            println!("{}", summary(report));
        }
    }
    Ok(())
}

/// The tasks on the database itself, holding the data directory's lock meanwhile.
fn offline(data_dir: &std::path::Path, tasks: &[Task]) -> Result<Value> {
    let config = shared::core_config(data_dir)?;
    if !config.database_path.is_file() {
        anyhow::bail!("{} holds no mailroom database", config.database_path.display());
    }
    let _lock = shared::lock_data_dir(data_dir)?;
    let _database = shared::lock_database(&config.database_path, shared::Missing::Skip)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async {
        let core = Mailroom::open(config)?;
        let mut reports = Vec::new();
        for &task in tasks {
            // Offline, the database's activity is all there is.
            reports.push(core.run_upkeep(task, &Seen::default()).await?);
        }
        let closing = core.clone();
        tokio::task::spawn_blocking(move || closing.close()).await?;
        Ok(serde_json::to_value(reports)?)
    })
}

/// One line per report.
fn summary(report: &Value) -> String {
    let count = |key: &str| report[key].as_array().map_or(0, Vec::len);
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
            "acks          {} acknowledgement(s) overdue past {} s",
            count("overdue"),
            report["ttl_seconds"]
        ),
        other => format!("{other}: {report}"),
    }
}
