//! `mailroom agents list`: a project's agents with their unread counts (list_agents).

use anyhow::Result;
use clap::{Args, Subcommand};
use serde_json::json;

use super::output::{self, fields, items};
use super::target::{Common, project};

/// `mailroom agents`.
#[derive(Args, Debug)]
pub struct AgentsArgs {
    #[command(subcommand)]
    command: AgentsCommand,
    #[command(flatten)]
    common: Common,
}

#[derive(Subcommand, Debug)]
enum AgentsCommand {
    /// The project's agents, retired ones marked
    List {
        /// The project: its key (an absolute path) or slug [default: the current directory]
        #[arg(long)]
        project: Option<String>,
    },
}

pub fn run(args: AgentsArgs) -> Result<()> {
    let AgentsCommand::List { project: key } = args.command;
    let listed =
        args.common.backend()?.call_tool("list_agents", json!({"project_key": project(key)?}))?;
    output::print(args.common.json, &listed, |v| {
        let rows = items(&v["agents"])
            .iter()
            .map(|a| {
                let mut row =
                    fields(a, &["name", "program", "model", "unread_count", "last_active_ts"]);
                row.push(if a["retired_at"].is_string() { "retired" } else { "" }.into());
                row
            })
            .collect();
        output::table(&["name", "program", "model", "unread", "last active", ""], rows)
    });
    Ok(())
}
