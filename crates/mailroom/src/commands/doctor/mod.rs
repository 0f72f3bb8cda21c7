//! `mailroom doctor check | repair | backups | restore`: the reference's diagnostics
//! (ops/doctor), the repairs made after a backup (`repair.rs`), and the backups' list and
//! restore (`restore.rs`, ops/backups.rs). `check` exits 1 when a check fails (a warning
//! alone exits 0).

mod repair;
mod restore;

use std::path::{Path, PathBuf};

use anyhow::{Result, bail};
use clap::{Args, Subcommand};
use mailroom_core::CoreConfig;
use mailroom_core::ops::backups::{self, BACKUPS_DIR};
use mailroom_core::ops::doctor::{self, Scope};

use super::archive::Verdict;
use super::output::{self, fields};
use super::shared;
use super::target::Common;

/// `mailroom doctor`.
#[derive(Args, Debug)]
pub struct DoctorArgs {
    #[command(subcommand)]
    command: DoctorCommand,
}

impl DoctorArgs {
    /// Whether this is `doctor check`, whose exit code 1 means a failed check.
    pub fn is_check(&self) -> bool {
        matches!(self.command, DoctorCommand::Check { .. })
    }
}

#[derive(Subcommand, Debug)]
enum DoctorCommand {
    /// Stale locks, database integrity, orphaned rows, the full-text index, expired
    /// reservations, the write-ahead log
    Check {
        /// Only this project's rows and archive directory (its key or slug)
        project: Option<String>,
        /// List the offending rows and lock files, not only how many
        #[arg(long, short)]
        verbose: bool,
        #[command(flatten)]
        common: Common,
    },
    /// Back up, then fix what check finds: stale locks and expired reservations at once,
    /// orphaned rows and the full-text index when confirmed
    Repair(repair::RepairArgs),
    /// The backups in DATA_DIR/backups
    Backups {
        #[command(flatten)]
        common: Common,
    },
    /// Put a backup's database (and archive) back, the current ones moved aside; refused
    /// while a server runs
    Restore(restore::RestoreArgs),
}

/// Runs one doctor subcommand; `check`'s verdict is clean when every check passed or only
/// warned.
pub fn run(args: DoctorArgs) -> Result<Verdict> {
    match args.command {
        DoctorCommand::Check { project, verbose, common } => check(project, verbose, &common),
        DoctorCommand::Repair(args) => repair::run(args).map(|()| Verdict::Clean),
        DoctorCommand::Backups { common } => list_backups(&common).map(|()| Verdict::Clean),
        DoctorCommand::Restore(args) => restore::run(args).map(|()| Verdict::Clean),
    }
}

fn check(project: Option<String>, verbose: bool, common: &Common) -> Result<Verdict> {
    let (_, config) = data_dir_config(common)?;
    let scope = scope(&config, project.as_deref())?;
    let checks =
        doctor::check(&config.database_path, &config.storage_root, scope.as_ref(), verbose)?;
    let value = serde_json::to_value(&checks)?;
    output::print(common.json, &value, |v| {
        let mut text = String::new();
        if let Some(scope) = &scope {
            text.push_str(&format!("project {} ({})\n", scope.slug, scope.human_key));
        }
        let rows =
            output::items(v).iter().map(|c| fields(c, &["name", "status", "detail"])).collect();
        text.push_str(&output::table(&["check", "status", "detail"], rows));
        for check in output::items(v) {
            for item in output::items(&check["items"]) {
                text.push_str(&format!(
                    "  {}: {}\n",
                    output::cell(&check["name"]),
                    output::cell(item)
                ));
            }
        }
        text
    });
    let failed = checks.iter().any(|c| c.status == "error");
    Ok(if failed { Verdict::Differences } else { Verdict::Clean })
}

fn list_backups(common: &Common) -> Result<()> {
    let data_dir = shared::data_dir(common.data_dir.clone());
    let listed = backups::list_backups(&data_dir.join(BACKUPS_DIR))?;
    let value = serde_json::to_value(&listed)?;
    output::print(common.json, &value, |v| {
        let rows = output::items(v)
            .iter()
            .map(|b| {
                let mut contents = Vec::new();
                if b["database"] == true {
                    contents.push("database");
                }
                if b["archive"] == true {
                    contents.push("archive");
                }
                let mut row = fields(b, &["created", "reason", "project"]);
                row.push(contents.join("+"));
                row.push(format!("{} KB", b["bytes"].as_u64().unwrap_or(0).div_ceil(1024)));
                row.push(output::cell(&b["path"]));
                row
            })
            .collect();
        output::table(&["created", "reason", "project", "holds", "size", "path"], rows)
    });
    Ok(())
}

/// The data directory and its configuration; a data directory without a mailroom database is
/// an error (nothing is created).
fn data_dir_config(common: &Common) -> Result<(PathBuf, CoreConfig)> {
    let data_dir = shared::data_dir(common.data_dir.clone());
    let config = shared::core_config(&data_dir)?;
    shared::refuse_on_postgres(
        &config,
        "doctor's checks and repairs (integrity, WAL, locks)",
        "There, `mailroom archive verify` compares the archive with the database, and \
         PostgreSQL's own `pg_amcheck` checks its files.",
    )?;
    require_database(&config.database_path)?;
    Ok((data_dir, config))
}

fn require_database(database: &Path) -> Result<()> {
    if !database.is_file() {
        bail!("{} holds no mailroom database", database.display());
    }
    if !doctor::is_mailroom_database(database) {
        bail!("{} is not a mailroom database; not touching it", database.display());
    }
    Ok(())
}

/// The project named on the command line, resolved in the database.
fn scope(config: &CoreConfig, project: Option<&str>) -> Result<Option<Scope>> {
    project.map(|p| Scope::resolve(&config.database_path, p)).transpose().map_err(Into::into)
}
