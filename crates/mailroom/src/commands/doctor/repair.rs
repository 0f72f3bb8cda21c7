//! `mailroom doctor repair [PROJECT] [--dry-run] [--yes] [--backup-dir DIR]`: what `check`
//! finds, fixed after a backup (ops/doctor/repair.rs says which fix is safe and why the
//! confirmed ones may run beside a server).
//!
//! The backup comes first (`<ts>_repair/` with the database, the archive's bundle and a
//! manifest). Then the safe fixes: stale lock files whose owner is gone are removed, and
//! expired reservations are released by the upkeep's own sweep, through the data directory's
//! server when one runs (so its writer and archive do the work), else the data directory
//! opened here. Then each confirmed fix is asked for on a terminal; `--yes` answers yes, and
//! without a terminal they are skipped, saying so. `--dry-run` prints the plan and changes
//! nothing.

use std::io::IsTerminal as _;
use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::Args;
use mailroom_core::DatabaseAt;
use mailroom_core::ops::backups::{self, BACKUPS_DIR, BackupRequest};
use mailroom_core::ops::doctor::{self, Fix, PlannedFix, Scope};
use serde_json::{Value, json};

use super::super::backend::Backend;
use super::super::progress::Progress;
use super::super::target::Common;
use super::super::{file_reservations, output, shared};

/// Flags of `mailroom doctor repair`.
#[derive(Args, Debug)]
pub struct RepairArgs {
    /// Only this project's rows and archive directory (its key or slug)
    project: Option<String>,
    /// Print what would be fixed; change nothing
    #[arg(long)]
    dry_run: bool,
    /// Make the fixes that delete rows or rebuild the index without asking
    #[arg(long, short)]
    yes: bool,
    /// Put the backup in DIR instead of DATA_DIR/backups (`doctor backups` lists only those)
    #[arg(long, value_name = "DIR")]
    backup_dir: Option<PathBuf>,
    #[command(flatten)]
    common: Common,
}

/// What became of one planned fix.
struct Outcome {
    fix: PlannedFix,
    /// `done`, `skipped` (declined, or no terminal to ask on) or `planned` (a dry run).
    status: &'static str,
    detail: String,
}

pub fn run(args: RepairArgs) -> Result<()> {
    let (data_dir, config) = super::data_dir_config(&args.common)?;
    let scope = super::scope(&config, args.project.as_deref())?;
    let diagnosis = doctor::diagnose(&config.database_path, &config.storage_root, scope.as_ref())?;
    let fixes = doctor::plan(&diagnosis);
    let mut backup = None;
    let outcomes = if args.dry_run || fixes.is_empty() {
        let planned = |fix| Outcome { fix, status: "planned", detail: String::new() };
        fixes.into_iter().map(planned).collect()
    } else {
        let parent = args.backup_dir.clone().unwrap_or_else(|| data_dir.join(BACKUPS_DIR));
        let database = DatabaseAt::Sqlite(config.database_path.clone());
        let request = BackupRequest {
            database: &database,
            storage_root: config.archive.enabled.then_some(config.storage_root.as_path()),
            parent: &parent,
            reason: "repair",
            project: scope.as_ref().map(|s| s.slug.as_str()),
        };
        let spinner = Progress::spinner(format!("backing up to {}", parent.display()));
        let (dir, _) =
            backups::create_backup(&request).context("backup failed: nothing repaired")?;
        drop(spinner);
        backup = Some(dir);
        let mut repair =
            Repair { args: &args, config: &config, scope: scope.as_ref(), backend: None };
        let outcomes =
            fixes.into_iter().map(|fix| repair.apply(fix)).collect::<Result<Vec<_>>>()?;
        drop(repair);
        outcomes
    };
    report(&args, backup, &outcomes);
    Ok(())
}

/// The repair under way, with the server (or data directory) it asked, once it needed one.
struct Repair<'a> {
    args: &'a RepairArgs,
    config: &'a mailroom_core::CoreConfig,
    scope: Option<&'a Scope>,
    backend: Option<Backend>,
}

impl Repair<'_> {
    fn apply(&mut self, fix: PlannedFix) -> Result<Outcome> {
        let done = |fix, detail| Ok(Outcome { fix, status: "done", detail });
        if fix.fix.needs_confirmation() && !self.args.yes {
            let asked = std::io::stdin().is_terminal();
            if !asked || !shared::ask_yes(&format!("{}?", fix.description))? {
                let why =
                    if asked { "declined" } else { "not asked: stdin is not a terminal (--yes)" };
                return Ok(Outcome { fix, status: "skipped", detail: why.to_string() });
            }
        }
        let (database, root) = (&self.config.database_path, &self.config.storage_root);
        match fix.fix {
            Fix::HealLocks => {
                let removed = doctor::heal_locks(root, self.scope);
                done(fix, format!("removed {} lock file(s)", removed.len()))
            }
            Fix::ReleaseExpired => {
                let before = self.expired()?;
                self.release_expired()?;
                let left = self.expired()?;
                done(fix, format!("released {}; {left} left", before.saturating_sub(left)))
            }
            Fix::DeleteOrphans(kind) => {
                let archive = self.config.archive.enabled;
                let deleted = doctor::delete_orphans(database, archive, kind, self.scope)?;
                done(fix, format!("deleted {deleted}"))
            }
            Fix::RebuildIndex => {
                let indexed = doctor::rebuild_search_index(database)?;
                done(fix, format!("{indexed} messages indexed"))
            }
        }
    }

    /// The upkeep's sweep: of the project, by reading its reservations (which sweeps first),
    /// or of every project, by the run_upkeep tool.
    fn release_expired(&mut self) -> Result<()> {
        if self.backend.is_none() {
            let data_dir = shared::data_dir(self.args.common.data_dir.clone());
            self.backend = Some(Backend::open(&data_dir, false)?);
        }
        let backend = self.backend.as_ref().context("a backend was just opened")?;
        match self.scope {
            Some(scope) => file_reservations::read(backend, &scope.slug, true).map(drop),
            None => backend.call_tool("run_upkeep", json!({"task": "reservations"})).map(drop),
        }
    }

    fn expired(&self) -> Result<i64> {
        let (database, root) = (&self.config.database_path, &self.config.storage_root);
        Ok(doctor::diagnose(database, root, self.scope)?.counts.expired_reservations)
    }
}

fn report(args: &RepairArgs, backup: Option<PathBuf>, outcomes: &[Outcome]) {
    let fixes: Vec<Value> = outcomes
        .iter()
        .map(|o| {
            json!({
                "fix": o.fix.description,
                "confirmed": o.fix.fix.needs_confirmation(),
                "status": o.status,
                "detail": o.detail,
            })
        })
        .collect();
    let value = json!({"dry_run": args.dry_run, "backup": backup, "fixes": fixes});
    output::print(args.common.json, &value, |v| {
        let rows = output::items(&v["fixes"])
            .iter()
            .map(|f| {
                let kind = if f["confirmed"] == true { "asks" } else { "safe" };
                let mut row = vec![kind.to_string()];
                row.extend(output::fields(f, &["status", "fix", "detail"]));
                row
            })
            .collect::<Vec<_>>();
        if rows.is_empty() {
            return "nothing to repair\n".to_string();
        }
        let mut text = output::table(&["", "status", "fix", "detail"], rows);
        if let Some(backup) = v["backup"].as_str() {
            text.push_str(&format!("backed up first to {backup}\n"));
        }
        if args.dry_run {
            text.push_str("dry run: nothing changed\n");
        }
        text
    });
    let unasked = outcomes.iter().filter(|o| o.detail.starts_with("not asked")).count();
    if unasked > 0 {
        eprintln!(
            "{unasked} fix(es) skipped: they need confirmation and stdin is not a terminal; \
             run again with --yes to make them"
        );
    }
}
