//! `mailroom import [REFERENCE_DIR] [--in-place]`: a mailbox of the Python reference (its
//! SQLite database and Git archive) becomes mailroom's, with nothing left behind
//! (`mailroom_core::ops::import`). Where the reference keeps its mailbox comes from its own
//! settings: `REFERENCE_DIR/.env` (the directory it ran in), then its defaults; mailroom's
//! destination from `--data-dir` and the process environment, not the working directory's
//! `.env`, which may well be the reference's own.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use mailroom_core::config::database_path_from_url;
use mailroom_core::ops::import::{
    self, Destination, ImportReport, REFERENCE_TABLES, ReferenceMailbox, Step,
};

use super::output;
use super::progress::Progress;
use super::shared::{self, Missing};
use super::target::Common;

/// The reference's default database, relative to the directory it runs in.
const REFERENCE_DATABASE: &str = "storage.sqlite3";
/// The reference's default archive, under the home directory.
const REFERENCE_STORAGE_ROOT: &str = ".mcp_agent_mail_git_mailbox_repo";

/// `mailroom import`.
#[derive(Args, Debug)]
pub struct ImportArgs {
    /// The directory the reference ran in: its `.env` names its database and archive
    /// [default: the current directory]
    #[arg(value_name = "REFERENCE_DIR")]
    reference_dir: Option<PathBuf>,
    /// The reference's database [default: DATABASE_URL of REFERENCE_DIR/.env, else
    /// REFERENCE_DIR/storage.sqlite3]
    #[arg(long, value_name = "PATH")]
    database: Option<PathBuf>,
    /// The reference's Git archive [default: STORAGE_ROOT of REFERENCE_DIR/.env, else
    /// ~/.mcp_agent_mail_git_mailbox_repo]
    #[arg(long, value_name = "PATH")]
    storage_root: Option<PathBuf>,
    /// Convert the reference's database where it is (the original kept beside it as
    /// <db>.reference-<time>) and use its archive where it is, instead of copying both into
    /// the data directory
    #[arg(long)]
    in_place: bool,
    /// Import the rest when the reference's database holds tables or columns mailroom does
    /// not know (otherwise refused, naming them)
    #[arg(long)]
    leave_unknown: bool,
    #[command(flatten)]
    common: Common,
}

pub fn run(args: ImportArgs) -> Result<()> {
    let source = reference_mailbox(&args)?;
    let data_dir = shared::data_dir(args.common.data_dir.clone());
    let destination = if args.in_place {
        Destination::InPlace
    } else {
        let config = shared::core_config(&data_dir)?;
        shared::refuse_on_postgres(
            &config,
            "import",
            "Import into a data directory on SQLite (without DATABASE_URL), then move it with \
             `mailroom copy-database --to postgres://…`.",
        )?;
        Destination::Copy(Box::new(config))
    };
    // No mailroom server may run on what a copy writes: the data directory and the database.
    // In place there is none yet (serve refuses a reference database), and the reference's
    // own lock is held by the import.
    let _locks = match &destination {
        Destination::Copy(config) => Some((
            shared::lock_data_dir(&data_dir)?,
            shared::lock_database(&config.database_path, Missing::Skip)?,
        )),
        Destination::InPlace => None,
    };
    // One bar per phase on a terminal (tables, archive files, messages re-rendered).
    let mut bar: Option<(&str, Progress)> = None;
    let mut progress = |step: Step<'_>| {
        let (phase, done, total) = match step {
            Step::Table { .. } => ("copying tables", None, REFERENCE_TABLES.len()),
            Step::ArchiveFiles { done, total } => {
                ("copying the archive", Some(done as usize), total as usize)
            }
            Step::Aligning { done, total } => ("aligning the archive", Some(done), total),
            Step::Verifying => ("verifying the archive", Some(0), 0),
        };
        if bar.as_ref().is_none_or(|(current, _)| *current != phase) {
            bar = Some((phase, Progress::new(phase, total)));
        }
        if let Some((_, bar)) = &bar {
            match done {
                Some(done) => bar.update(done, total),
                None => bar.step(),
            }
        }
    };
    let report = import::import_reference(&source, &destination, args.leave_unknown, &mut progress)
        .context("cannot import the reference's mailbox")?;
    drop(bar);
    let value = serde_json::to_value(&report)?;
    output::print(args.common.json, &value, |_| describe(&report));
    Ok(())
}

/// Where the reference keeps its mailbox: the flags, else its `.env`, else its defaults.
fn reference_mailbox(args: &ImportArgs) -> Result<ReferenceMailbox> {
    let dir = match &args.reference_dir {
        Some(dir) => dir.clone(),
        None => std::env::current_dir().context("cannot read the current directory")?,
    };
    let env_path = dir.join(shared::DOTENV);
    let settings = match std::fs::read_to_string(&env_path) {
        Ok(text) => shared::env_file_variables(&text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", env_path.display())),
    };
    let setting = |name: &str| {
        settings.iter().rev().find(|(k, v)| k == name && !v.is_empty()).map(|(_, v)| v.clone())
    };
    // The reference resolves relative paths against the directory it runs in.
    let database = match (&args.database, setting("DATABASE_URL")) {
        (Some(path), _) => path.clone(),
        (None, Some(url)) => dir.join(
            database_path_from_url(&url)
                .map_err(anyhow::Error::msg)
                .with_context(|| format!("in {}", env_path.display()))?,
        ),
        (None, None) => dir.join(REFERENCE_DATABASE),
    };
    let storage_root = match (&args.storage_root, setting("STORAGE_ROOT")) {
        (Some(path), _) => path.clone(),
        (None, Some(root)) => match root.strip_prefix("~/") {
            Some(rest) => home()?.join(rest),
            None => dir.join(root),
        },
        (None, None) => home()?.join(REFERENCE_STORAGE_ROOT),
    };
    Ok(ReferenceMailbox { database, storage_root })
}

fn home() -> Result<PathBuf> {
    std::env::var_os("HOME")
        .map(PathBuf::from)
        .context("HOME is not set: name the reference's archive with --storage-root")
}

fn describe(report: &ImportReport) -> String {
    let mut out = String::new();
    let rows: Vec<Vec<String>> = (report.copied.tables.iter())
        .map(|(table, rows)| vec![table.clone(), rows.to_string()])
        .collect();
    out.push_str(&output::table(&["table", "rows"], rows));
    if !report.copied.absent_tables.is_empty() {
        out.push_str(&format!(
            "not in the reference's release (left empty): {}\n",
            report.copied.absent_tables.join(", ")
        ));
    }
    if report.copied.timestamps_rewritten > 0 {
        out.push_str(&format!(
            "{} timestamps rewritten as YYYY-MM-DD HH:MM:SS.ffffff\n",
            report.copied.timestamps_rewritten
        ));
    }
    for left in &report.copied.left_behind {
        out.push_str(&format!("left behind (--leave-unknown): {left}\n"));
    }
    for moved in &report.moved_aside {
        out.push_str(&format!("moved aside: {}\n", moved.display()));
    }
    match &report.archive_head {
        Some(head) if report.in_place => {
            out.push_str(&format!("archive kept in place at HEAD {head}\n"));
        }
        Some(head) => out.push_str(&format!(
            "copied the archive ({} files) at HEAD {head}\n",
            report.archive_files
        )),
        None => out.push_str(
            "the reference left no Git archive: `mailroom archive rebuild` writes one from \
             the database\n",
        ),
    }
    if let Some(commit) = &report.archive_commit {
        out.push_str(&format!(
            "committed {commit}: what the reference leaves uncommitted (attachment manifests \
             and audit logs)\n"
        ));
    }
    match report.archive_differences.len() {
        0 if report.archive_head.is_some() => {
            out.push_str("the archive agrees with the database (archive verify)\n");
        }
        0 => {}
        n => {
            out.push_str(&format!("archive verify finds {n} differences:\n"));
            for difference in report.archive_differences.iter().take(20) {
                out.push_str(&format!("  {difference}\n"));
            }
            out.push_str("`mailroom archive rebuild` renders the archive from the database\n");
        }
    }
    out.push_str(&format!("database: {}\n", report.database.display()));
    out.push_str(&format!("archive: {}\n", report.storage_root.display()));
    if report.in_place {
        out.push_str(&format!(
            "serve it with: DATABASE_URL=sqlite:///{} STORAGE_ROOT={} mailroom serve\n",
            absolute(&report.database).display(),
            absolute(&report.storage_root).display()
        ));
    }
    out
}

fn absolute(path: &Path) -> PathBuf {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf())
}
