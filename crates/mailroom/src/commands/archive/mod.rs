//! `mailroom archive`: check the Git archive against the database, regenerate it from the
//! database or the database from it (`mailroom_core::archive::maintenance` does the work;
//! this module resolves the data directory, takes the data-dir lock where a command writes,
//! and prints), and save, list and restore whole states of the data directory (`save.rs`,
//! `list.rs`, `restore.rs`, their layout in `states.rs`).

pub mod list;
pub mod restore;
pub mod save;
pub mod states;

use std::path::PathBuf;

use anyhow::{Context, Result};
use clap::{Args, Subcommand};
use mailroom_core::archive::maintenance::{self, RebuildReport, ReconstructReport, VerifyReport};

use super::progress::Progress;
use super::shared;

/// Flags of `mailroom archive`.
#[derive(Args, Debug)]
pub struct ArchiveArgs {
    #[command(subcommand)]
    pub command: ArchiveCommand,
}

/// The archive subcommands.
#[derive(Subcommand, Debug)]
pub enum ArchiveCommand {
    /// Compare the database with the archive's last commit and print every difference.
    ///
    /// Checks every message's canonical, outbox and inbox copies, thread digests, profiles
    /// and attachment files, and canonical files of messages the database lacks. Read-only,
    /// safe while a server runs. Exits 0 when they agree, 1 when they differ, 2 on error.
    Verify(VerifyArgs),
    /// Regenerate the archive from the database, or the database from the archive.
    ///
    /// Without flags: renders every message copy, thread digest and profile from the
    /// database and commits those that differ (one commit per 64 MB of them, so a lost
    /// archive is not held in memory whole); other files stay. With
    /// --reconstruct-database: builds a new database from the archive's committed files.
    /// Refused while a server runs on the data directory.
    Rebuild(RebuildArgs),
    /// Save the database and the archive in one ZIP file (lossless), in
    /// DATA_DIR/archived_mailbox_states.
    ///
    /// The database is a consistent snapshot taken while a server may go on running; the
    /// archive is copied whole, its Git history included. With --project, only those
    /// projects' rows and archive directories.
    Save(save::SaveArgs),
    /// The saved states, newest first.
    List(list::ListArgs),
    /// Restore a saved state: the current database and archive are moved aside first.
    ///
    /// Asks first unless --force; refused while a server runs on the data directory.
    Restore(restore::RestoreArgs),
}

/// Flags of `mailroom archive verify`.
#[derive(Args, Debug)]
pub struct VerifyArgs {
    /// Directory of the database and the archive [default: ./mailroom-data]
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
}

/// Flags of `mailroom archive rebuild`.
#[derive(Args, Debug)]
pub struct RebuildArgs {
    /// Directory of the database and the archive [default: ./mailroom-data]
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Build a new database from the archive's committed files (projects, agents, messages
    /// with their ids and recipients; read/ack state is not archived)
    #[arg(long)]
    reconstruct_database: bool,
    /// Move an existing database aside to <db>.pre-reconstruct-<timestamp> instead of
    /// refusing (it is never deleted)
    #[arg(long, requires = "reconstruct_database")]
    force: bool,
}

/// How a command that compares ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Verdict {
    /// Nothing to report (or the command does not compare).
    Clean,
    /// `verify` found differences.
    Differences,
}

/// Runs one archive subcommand.
pub fn run(args: ArchiveArgs) -> Result<Verdict> {
    match args.command {
        ArchiveCommand::Verify(args) => verify(args),
        ArchiveCommand::Rebuild(args) => rebuild(args).map(|()| Verdict::Clean),
        ArchiveCommand::Save(args) => save::run(args).map(|()| Verdict::Clean),
        ArchiveCommand::List(args) => list::run(args).map(|()| Verdict::Clean),
        ArchiveCommand::Restore(args) => restore::run(args).map(|()| Verdict::Clean),
    }
}

fn verify(args: VerifyArgs) -> Result<Verdict> {
    let data_dir = shared::data_dir(args.data_dir);
    let config = shared::core_config(&data_dir)?;
    shared::init_logging()?;
    let report = maintenance::verify(&config).context("cannot verify the archive")?;
    print_verify(&report);
    Ok(if report.is_clean() { Verdict::Clean } else { Verdict::Differences })
}

fn rebuild(args: RebuildArgs) -> Result<()> {
    let data_dir = shared::data_dir(args.data_dir);
    let config = shared::core_config(&data_dir)?;
    shared::init_logging()?;
    let _lock = shared::lock_data_dir(&data_dir)?;
    let _database_lock = shared::lock_database(&config.database_path, shared::Missing::Skip)?;
    if args.reconstruct_database {
        let progress = Progress::new("reading messages", 0);
        let report = maintenance::reconstruct(&config, args.force, &mut |done, total| {
            progress.update(done, total)
        })
        .context("cannot reconstruct the database")?;
        drop(progress);
        print_reconstruct(&report);
    } else {
        let progress = Progress::new("rendering messages", 0);
        let report = maintenance::rebuild(&config, &mut |done, total| progress.update(done, total))
            .context("cannot rebuild the archive")?;
        drop(progress);
        print_rebuild(&report);
    }
    Ok(())
}

fn print_verify(report: &VerifyReport) {
    for difference in &report.differences {
        println!("{difference}");
    }
    let head = report.head.as_deref().map_or("none", |h| h.get(..12).unwrap_or(h));
    let found = match report.differences.len() {
        0 => "no differences".to_owned(),
        1 => "1 difference".to_owned(),
        n => format!("{n} differences"),
    };
    println!(
        "{found}: checked {} messages and {} agents against {} committed files (HEAD {head})",
        report.messages_checked, report.agents_checked, report.committed_files
    );
    if report.queued_rows > 0 {
        println!(
            "{} changes are still queued in archive_queue ({} messages and {} profiles not \
             compared): the server may still be running, or was stopped before archiving \
             them; they are replayed at its next start",
            report.queued_rows, report.queued_messages, report.queued_profiles
        );
    }
}

fn print_rebuild(report: &RebuildReport) {
    println!(
        "rendered {} messages ({} copies), {} thread digests, {} profiles and {} file \
         reservations from the database",
        report.messages, report.message_files, report.digests, report.profiles, report.reservations
    );
    println!(
        "wrote {} files ({} already up to date, {} attachment files restored from the work tree)",
        report.files_written, report.files_unchanged, report.attachments_restored
    );
    for path in &report.attachments_missing {
        eprintln!("warning: attachment file in neither the archive nor the work tree: {path}");
    }
    match &report.commit {
        Some(commit) => println!("committed {commit}"),
        None => println!("nothing to commit: the archive already matches the database"),
    }
}

fn print_reconstruct(report: &ReconstructReport) {
    if let Some(moved) = &report.moved_aside {
        println!("moved the previous database to {}", moved.display());
    }
    for warning in &report.warnings {
        eprintln!("warning: {warning}");
    }
    println!("reconstructed {} from the archive:", report.database.display());
    println!("  {} projects", report.projects);
    println!(
        "  {} agents ({} from profiles, {} named only in messages, program and model \"unknown\")",
        report.agents_from_profiles + report.agents_from_messages,
        report.agents_from_profiles,
        report.agents_from_messages
    );
    println!(
        "  {} messages ({} read from a mailbox copy), {} recipient rows",
        report.messages, report.messages_from_mailbox_copies, report.recipients
    );
    println!("  {} file reservations", report.reservations);
    println!(
        "read and acknowledgement state, topics, contacts and registration tokens are not \
         archived and start empty"
    );
}
