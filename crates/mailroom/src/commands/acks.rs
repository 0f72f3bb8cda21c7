//! `mailroom list-acks` and `mailroom acks pending | remind | overdue PROJECT AGENT`: the
//! acknowledgements an agent still owes, through the acknowledgement views (resources.md §5),
//! as the reference's commands.

use anyhow::Result;
use clap::{Args, Subcommand};
use serde_json::Value;

use super::backend::Backend;
use super::mail::encode;
use super::output::{self, fields, items};
use super::target::{AsAgent, Common};

/// `mailroom list-acks`.
#[derive(Args, Debug)]
pub struct ListAcksArgs {
    #[command(flatten)]
    who: AsAgent,
    /// At most this many
    #[arg(long, default_value_t = 50)]
    limit: u32,
    #[command(flatten)]
    common: Common,
}

/// `mailroom acks`.
#[derive(Args, Debug)]
pub struct AcksArgs {
    #[command(subcommand)]
    command: AcksCommand,
    #[command(flatten)]
    common: Common,
}

#[derive(Subcommand, Debug)]
enum AcksCommand {
    /// Acknowledgements not given yet, oldest first
    Pending {
        project: String,
        agent: String,
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// Those pending for at least --min-age-minutes
    Remind {
        project: String,
        agent: String,
        #[arg(long, alias = "min_age_minutes", default_value_t = 30)]
        min_age_minutes: u32,
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
    /// Those pending for at least --ttl-minutes
    Overdue {
        project: String,
        agent: String,
        #[arg(long, alias = "ttl_minutes", default_value_t = 60)]
        ttl_minutes: u32,
        #[arg(long, default_value_t = 50)]
        limit: u32,
    },
}

pub fn run_list(args: ListAcksArgs) -> Result<()> {
    let (project, agent) = (args.who.project()?, args.who.agent()?);
    let view = read(
        &args.common.backend()?,
        "ack-required",
        &agent,
        &project,
        &format!("limit={}", args.limit),
    )?;
    output::print(args.common.json, &view, table);
    Ok(())
}

pub fn run(args: AcksArgs) -> Result<()> {
    let backend = args.common.backend()?;
    let view = match args.command {
        AcksCommand::Pending { project, agent, limit } => {
            read(&backend, "ack-required", &agent, &project, &format!("limit={limit}"))?
        }
        AcksCommand::Remind { project, agent, min_age_minutes, limit } => {
            let query = format!("ttl_seconds={}&limit={limit}", u64::from(min_age_minutes) * 60);
            read(&backend, "acks-stale", &agent, &project, &query)?
        }
        AcksCommand::Overdue { project, agent, ttl_minutes, limit } => read(
            &backend,
            "ack-overdue",
            &agent,
            &project,
            &format!("ttl_minutes={ttl_minutes}&limit={limit}"),
        )?,
    };
    output::print(args.common.json, &view, table);
    Ok(())
}

fn read(backend: &Backend, view: &str, agent: &str, project: &str, query: &str) -> Result<Value> {
    let uri =
        format!("resource://views/{view}/{}?project={}&{query}", encode(agent), encode(project));
    backend.read_resource(&uri)
}

fn table(view: &Value) -> String {
    let rows = items(&view["messages"])
        .iter()
        .map(|m| fields(m, &["id", "created_ts", "importance", "subject"]))
        .collect();
    output::table(&["id", "sent", "importance", "subject"], rows)
}
