//! `mailroom doctor restore PATH [--dry-run] [--yes]`: a backup put back (ops/backups.rs).
//! PATH is a backup folder (its `database.sqlite3`, and `archive.bundle` when it has one) or
//! a database copy. The current database and archive are moved aside, never deleted. Refused
//! while a server runs on the data directory, and the data directory stays locked meanwhile,
//! so none starts halfway.

use std::io::IsTerminal as _;
use std::path::PathBuf;

use anyhow::{Result, bail};
use clap::Args;
use mailroom_core::ops::backups::{self, RestorePlan};

use super::super::progress::Progress;
use super::super::target::Common;
use super::super::{output, shared};

/// Flags of `mailroom doctor restore`.
#[derive(Args, Debug)]
pub struct RestoreArgs {
    /// The backup: a folder `doctor backups` lists, or a database copy
    path: PathBuf,
    /// Print what would be restored; change nothing
    #[arg(long)]
    dry_run: bool,
    /// Restore without asking
    #[arg(long, short)]
    yes: bool,
    #[command(flatten)]
    common: Common,
}

pub fn run(args: RestoreArgs) -> Result<()> {
    let data_dir = shared::data_dir(args.common.data_dir.clone());
    let config = shared::core_config(&data_dir)?;
    shared::refuse_on_postgres(
        &config,
        "doctor restore",
        &shared::restore_on_postgres(backups::DATABASE_FILE),
    )?;
    let plan = backups::plan_restore(&args.path, &config.database_path, &config.storage_root)?;
    let steps = describe(&plan);
    if args.dry_run {
        for step in &steps {
            println!("{step}");
        }
        println!("dry run: nothing changed");
        return Ok(());
    }
    let why = "restore replaces the database and archive it has open";
    shared::refuse_running_server(&data_dir, why)?;
    if !args.yes {
        if !std::io::stdin().is_terminal() {
            bail!("restore replaces the data directory's database and archive: give --yes");
        }
        for step in &steps {
            eprintln!("{step}");
        }
        if !shared::ask_yes("restore?")? {
            bail!("not restored: nothing changed");
        }
    }
    let _lock = shared::lock_data_dir(&data_dir)?;
    let _database_lock = shared::lock_database(&config.database_path, shared::Missing::Skip)?;
    let spinner = Progress::spinner(format!("restoring {}", args.path.display()));
    let restored = backups::restore(&plan)?;
    drop(spinner);
    let value = serde_json::to_value(&restored)?;
    output::print(args.common.json, &value, |_| {
        let mut text = format!("restored {}\n", args.path.display());
        for (what, moved) in
            [("database", &restored.database_moved_to), ("archive", &restored.archive_moved_to)]
        {
            if let Some(moved) = moved {
                text.push_str(&format!("the previous {what} is at {}\n", moved.display()));
            }
        }
        text
    });
    Ok(())
}

/// The plan in words, one step a line.
fn describe(plan: &RestorePlan) -> Vec<String> {
    let mut steps = vec![format!(
        "database: {} replaces {} (moved aside to <database>.pre-restore-<time>)",
        plan.database_from.display(),
        plan.database_to.display()
    )];
    steps.push(match &plan.bundle {
        Some(bundle) => format!(
            "archive: a clone of {} replaces {} (moved aside to <archive>.pre-restore-<time>)",
            bundle.display(),
            plan.archive_to.display()
        ),
        None => {
            format!("archive: none in the backup; {} stays as it is", plan.archive_to.display())
        }
    });
    steps
}
