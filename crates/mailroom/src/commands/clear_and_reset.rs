//! `mailroom clear-and-reset-everything`: the reference's command to start over. It saves the
//! state first (`archive save`, unless `--no-archive`), then deletes the database with its
//! `-wal` and `-shm` files and everything in the archive directory (the directory stays,
//! empty). The data directory's saved states and backups are kept. Asks first unless
//! `--force`; refused while a server runs on the data directory.

use std::path::Path;

use anyhow::{Context, Result, bail};
use clap::Args;
use mailroom_core::database_files;
use serde_json::{Value, json};

use super::archive::save::{self, SaveRequest};
use super::archive::states;
use super::output;
use super::shared;
use super::target::Common;

/// The label of the state saved before the reset.
const LABEL: &str = "before clear-and-reset-everything";

/// Flags of `mailroom clear-and-reset-everything`.
#[derive(Args, Debug)]
pub struct ClearAndResetArgs {
    /// Delete without asking
    #[arg(long)]
    force: bool,
    /// Save the state first, as `archive save` does (the default)
    #[arg(long, overrides_with = "no_archive")]
    archive: bool,
    /// Delete without saving the state first
    #[arg(long, overrides_with = "archive")]
    no_archive: bool,
    #[command(flatten)]
    common: Common,
}

pub fn run(args: ClearAndResetArgs) -> Result<()> {
    let data_dir = shared::data_dir(args.common.data_dir.clone());
    let config = shared::core_config(&data_dir)?;
    shared::refuse_on_postgres(
        &config,
        "clear-and-reset-everything",
        "There, stop the servers, save what you want to keep (`mailroom archive save`), drop \
         and create the database (`dropdb`, `createdb`), and empty STORAGE_ROOT.",
    )?;
    states::check_layout(&data_dir, &config)?;
    let database = &config.database_path;
    let root = &config.storage_root;
    let database_files: Vec<_> =
        database_files::database_files(database).into_iter().filter(|p| p.exists()).collect();
    let archive_files = root.is_dir() && !is_empty_dir(root)?;
    if database_files.is_empty() && !archive_files {
        let none = json!({"saved": null, "database_removed": [], "archive_cleared": null});
        output::print(args.common.json, &none, |_| {
            format!(
                "nothing to clear: no database at {} and no archive at {}\n",
                database.display(),
                root.display()
            )
        });
        return Ok(());
    }
    shared::refuse_while_served(&data_dir, "clearing it")?;
    let save_first = args.archive || !args.no_archive;
    if save_first && !database.is_file() {
        bail!(
            "there is no database at {} to save with the archive; pass --no-archive to delete \
             the archive unsaved",
            database.display()
        );
    }
    let question = format!(
        "Delete the database {} and everything in the archive {}{}?",
        database.display(),
        root.display(),
        if save_first { " (after saving them)" } else { ", unsaved" }
    );
    if !args.force && !shared::confirm(&question)? {
        bail!("not confirmed: nothing deleted");
    }
    let _lock = shared::lock_data_dir(&data_dir)?;
    let _database_lock = shared::lock_database(database, shared::Missing::Skip)?;
    let saved = if save_first {
        let request = SaveRequest { projects: &[], label: Some(LABEL), live: false };
        Some(save::save(&data_dir, &config, &request).context("not cleared: the save failed")?)
    } else {
        None
    };
    database_files::remove_database_files(database)?;
    if root.is_dir() {
        empty_dir(root)?;
    }
    let report = json!({
        "saved": saved.as_ref().map(|s| &s.path),
        "database_removed": database_files,
        "archive_cleared": root.is_dir().then_some(root),
    });
    output::print(args.common.json, &report, |report| describe(report, saved.as_ref()));
    Ok(())
}

fn describe(report: &Value, saved: Option<&save::Saved>) -> String {
    let mut text = saved.map(|s| format!("{}\n", s.describe())).unwrap_or_default();
    for path in output::items(&report["database_removed"]) {
        text.push_str(&format!("deleted {}\n", output::cell(path)));
    }
    if let Some(root) = report["archive_cleared"].as_str() {
        text.push_str(&format!("emptied the archive {root}\n"));
    }
    text
}

fn is_empty_dir(dir: &Path) -> Result<bool> {
    let mut entries =
        std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))?;
    Ok(entries.next().is_none())
}

/// Deletes everything in `dir`, keeping `dir` (it may be a mount point or a link's target).
fn empty_dir(dir: &Path) -> Result<()> {
    for entry in std::fs::read_dir(dir).with_context(|| format!("cannot list {}", dir.display()))? {
        let entry = entry?;
        let path = entry.path();
        let removed = if entry.file_type()?.is_dir() {
            std::fs::remove_dir_all(&path)
        } else {
            std::fs::remove_file(&path)
        };
        removed.with_context(|| format!("cannot delete {}", path.display()))?;
    }
    Ok(())
}
