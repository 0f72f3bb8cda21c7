//! `mailroom hard-delete-agent PROJECT AGENT` and `mailroom hard-delete-project PROJECT`: the
//! CLI twins of the tools of those names (the reference's commands). Irreversible, so a copy of
//! the database goes to `DATA_DIR/backups/` first (`doctor backups` lists it), and the command goes on only with
//! `--confirm "I UNDERSTAND"` (asked for on a terminal when not given).

use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use mailroom_core::DatabaseAt;
use mailroom_core::ops::backups::{self, BACKUPS_DIR, BackupRequest};
use serde_json::{Value, json};

use super::output;
use super::shared;
use super::target::Common;

/// The words the tools ask for.
const CONFIRMATION: &str = "I UNDERSTAND";

/// `mailroom hard-delete-agent`.
#[derive(Args, Debug)]
pub struct HardDeleteAgentArgs {
    project: String,
    agent: String,
    #[command(flatten)]
    confirm: Confirm,
    #[command(flatten)]
    common: Common,
}

/// `mailroom hard-delete-project`.
#[derive(Args, Debug)]
pub struct HardDeleteProjectArgs {
    project: String,
    #[command(flatten)]
    confirm: Confirm,
    #[command(flatten)]
    common: Common,
}

#[derive(Args, Debug)]
struct Confirm {
    /// "I UNDERSTAND" (asked for on a terminal when missing)
    #[arg(long)]
    confirm: Option<String>,
    /// The acting agent's registration token, when the server asks for one
    #[arg(long, short = 't')]
    token: Option<String>,
}

impl Confirm {
    /// The confirmation text, from the flag or typed at the terminal.
    fn text(&self, what: &str) -> Result<String> {
        if let Some(text) = &self.confirm {
            return Ok(text.clone());
        }
        match shared::ask(&format!("{what} cannot be undone. Type {CONFIRMATION} to go on: "))? {
            Some(line) => Ok(line),
            None => bail!("{what} cannot be undone: give --confirm \"{CONFIRMATION}\""),
        }
    }
}

pub fn run_agent(args: HardDeleteAgentArgs) -> Result<()> {
    let what = format!("Deleting agent {} of {} with all its mail", args.agent, args.project);
    let call = json!({"project_key": args.project, "agent_name": args.agent});
    delete(&args.common, &args.confirm, &what, "hard_delete_agent", call)
}

pub fn run_project(args: HardDeleteProjectArgs) -> Result<()> {
    let what = format!("Deleting project {} with its agents and all their mail", args.project);
    delete(
        &args.common,
        &args.confirm,
        &what,
        "hard_delete_project",
        json!({"project_key": args.project}),
    )
}

/// Confirms, backs the database up, then calls the tool.
fn delete(
    common: &Common,
    confirm: &Confirm,
    what: &str,
    tool: &str,
    mut call: Value,
) -> Result<()> {
    if confirm.text(what)? != CONFIRMATION {
        bail!("not confirmed: nothing deleted (the confirmation is exactly \"{CONFIRMATION}\")");
    }
    call["confirmation"] = json!(CONFIRMATION);
    call["registration_token"] = json!(confirm.token);
    let data_dir = shared::data_dir(common.data_dir.clone());
    let backend = common.backend()?;
    let backup = back_up(&data_dir, tool)?;
    eprintln!("backed up the database to {}", backup.display());
    let deleted = backend.call_tool(tool, call)?;
    output::print(common.json, &deleted, |v| {
        format!("{}\n", serde_json::to_string_pretty(v).unwrap_or_default())
    });
    Ok(())
}

/// A backup of the data directory's database in `DATA_DIR/backups/<time>_<operation>/`
/// (ops/backups.rs, where `doctor backups` lists it).
pub fn back_up(data_dir: &Path, operation: &str) -> Result<PathBuf> {
    let database = DatabaseAt::of(&shared::core_config(data_dir)?);
    let request = BackupRequest {
        database: &database,
        storage_root: None,
        parent: &data_dir.join(BACKUPS_DIR),
        reason: operation,
        project: None,
    };
    let (dir, _) = backups::create_backup(&request)
        .with_context(|| format!("cannot back up {}", database.describe()))?;
    Ok(dir)
}
