//! Archive maintenance behind `mailroom archive …`: check the archive against the database
//! ([`verify`]), regenerate the archive from the database ([`rebuild`]), or the other way
//! round, a new database from the archive ([`reconstruct`]).
//!
//! Each takes the configuration a server would run with and opens what it needs itself.
//! `verify` only reads (a read-only SQLite connection, HEAD listed without touching index or
//! work tree), so it may run beside a live server. `rebuild` and `reconstruct` write; they take
//! the archive's owner lock, and their caller must make sure no server runs on the data.

use std::path::Path;

use mailroom_git::{ArchiveRepo, CommittedFiles};

use super::rebuild::{Projects, REBUILD_COMMIT_MESSAGE};
use super::{ArchiveSettings, LAYOUT, locks, rebuild, reconstruct, verify};
use crate::config::CoreConfig;
use crate::database_files::{move_aside, remove_database_files, rename, with_suffix};
use crate::error::{Category, Error, Result};
use crate::records::MessageId;
use crate::store::{self, Db, Reader};

pub use super::rebuild::RebuildReport;
pub use super::reconstruct::ReconstructReport;
pub use super::verify::{CopyRole, Difference, VerifyReport};

/// Told, as long work advances, how many items are done of how many (`mailroom archive`
/// draws a progress bar with it).
pub type Progress<'a> = &'a mut dyn FnMut(usize, usize);

/// Compares the database with the archive's HEAD and lists every difference.
///
/// The database is read in one snapshot taken before HEAD is listed, so everything the
/// snapshot counts as archived is in the listing; messages sent in between show up only in
/// HEAD, and are looked up again in a fresh snapshot before being called unknown.
pub fn verify(config: &CoreConfig) -> Result<VerifyReport> {
    let mut reader = Reader::for_config(config)?;
    let mut report = reader.read(|db| {
        let queued = db.queued_archive_work(0, i64::MAX)?;
        let head = committed_files(&config.storage_root)?;
        verify::check(db, &head, &queued)
    })?;
    reader.read(|db| verify::recheck_unknown(db, &mut report))?;
    Ok(report)
}

/// Regenerates every archive file the database accounts for and commits those that differ
/// from HEAD, in commits of at most 64 MB of them (none when nothing differs). Other files
/// stay as they are.
/// `progress` hears how many messages were rendered of how many.
pub fn rebuild(config: &CoreConfig, progress: Progress<'_>) -> Result<RebuildReport> {
    let root = &config.storage_root;
    // The database is opened first: without one there is nothing to rebuild from, and the
    // archive should not be created or locked for nothing.
    let mut reader = Reader::for_config(config)?;
    let _owner = locks::take_ownership(root)?;
    let mut repo =
        ArchiveRepo::open_or_init(root, ArchiveSettings::from_config(config).author, LAYOUT)?;
    let head = committed_files(root)?;
    // What differs is committed a chunk at a time (a lost archive differs everywhere), and
    // Git's index written after each (it holds what it still has to take in): memory follows
    // the chunk, not the archive.
    let mut commit = None;
    let mut commit_chunk = |files: Vec<(String, Vec<u8>)>| -> Result<()> {
        if let Some(committed) = repo.commit_files(&files, REBUILD_COMMIT_MESSAGE)? {
            commit = Some(committed.id.to_string());
            repo.sync_index()?;
        }
        Ok(())
    };
    let regenerated = reader.read(|db| {
        rebuild::regenerate(db, root, &head, Projects::All, progress, Some(&mut commit_chunk))
    })?;
    if !regenerated.files.is_empty() {
        commit_chunk(regenerated.files)?;
    }
    let mut report = regenerated.report;
    report.commit = commit;
    Ok(report)
}

/// Builds a new database from the archive's HEAD at `config.database_path`.
///
/// An existing database is refused unless `force`; then it is moved aside (with its `-wal`
/// and `-shm` files) to `<db>.pre-reconstruct-<timestamp>`, never deleted. The new database
/// is built beside it first, so a failure leaves the old one where it was. `progress` hears
/// how many messages were read from the archive of how many.
pub fn reconstruct(
    config: &CoreConfig,
    force: bool,
    progress: Progress<'_>,
) -> Result<ReconstructReport> {
    let database = &config.database_path;
    if database.exists() && !force {
        return Err(Error::new(
            Category::Conflict,
            "DATABASE_EXISTS",
            format!(
                "the database {} exists; pass --force to move it aside and build a new one",
                database.display()
            ),
        ));
    }
    let root = &config.storage_root;
    // The lock is taken before HEAD is listed, so no other writer can move HEAD while it is
    // read. A root without a repository holds no archive to lock (and gets no lock file).
    if !root.join(".git").exists() {
        return Err(no_archive(root));
    }
    let _owner = locks::acquire_owner_lock(root)?;
    let head = committed_files(root)?;
    let recovered = reconstruct::read_archive(&head, progress)?;
    if let Some(parent) = database.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent)
            .map_err(|e| Error::internal(format!("cannot create {}: {e}", parent.display())))?;
    }
    let building = with_suffix(database, ".reconstructing");
    // Only this function creates that file: a leftover is an interrupted earlier attempt.
    remove_database_files(&building)?;
    let built = store::create_database(&building, |db| reconstruct::write_database(db, recovered));
    let mut report = match built {
        Ok(report) => report,
        Err(e) => {
            let _ = remove_database_files(&building);
            return Err(e);
        }
    };
    report.moved_aside = move_aside(database, "pre-reconstruct")?;
    rename(&building, database)?;
    report.database = database.clone();
    Ok(report)
}

fn committed_files(root: &Path) -> Result<CommittedFiles> {
    CommittedFiles::open(root)?.ok_or_else(|| no_archive(root))
}

fn no_archive(root: &Path) -> Error {
    Error::not_found(format!("there is no Git archive at {}", root.display()))
}

/// What a committed path is, as far as maintenance cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum ArchivePath<'a> {
    /// `projects/<slug>/messages/YYYY/MM/<message file>`
    Canonical { slug: &'a str, message_id: MessageId },
    /// `projects/<slug>/agents/<Name>/{inbox,outbox}/YYYY/MM/<message file>`
    Mailbox { slug: &'a str, message_id: MessageId },
    /// `projects/<slug>/agents/<Name>/profile.json`
    Profile { slug: &'a str, agent: &'a str },
    /// `projects/<slug>/file_reservations/id-<id>.json` (not the legacy SHA-1-named copy)
    Reservation { slug: &'a str, reservation_id: i64 },
    /// Any other file under `projects/<slug>/`.
    Project { slug: &'a str },
}

/// Messages the maintenance commands read from the database at a time.
const MESSAGE_PAGE: i64 = 10_000;

/// Calls `visit` with every message id and its project's slug, in id order, a page at a
/// time: memory follows the page, not the archive.
pub(super) fn for_each_message(
    db: &Db<'_>,
    mut visit: impl FnMut(MessageId, String) -> Result<()>,
) -> Result<()> {
    let mut after = MessageId(0);
    loop {
        let page = db.message_ids_with_project_slug(after, MESSAGE_PAGE)?;
        let Some((last, _)) = page.last() else { return Ok(()) };
        after = *last;
        for (id, slug) in page {
            visit(id, slug)?;
        }
    }
}

/// Classifies a repo-relative path; `None` for files outside `projects/<slug>/`.
pub(super) fn classify_path(path: &str) -> Option<ArchivePath<'_>> {
    let parts: Vec<&str> = path.split('/').collect();
    let ["projects", slug, rest @ ..] = parts.as_slice() else { return None };
    let slug = *slug;
    if slug.is_empty() || rest.is_empty() {
        return None;
    }
    let message_id = |year: &str, month: &str, file: &str| {
        let dated = is_ascii_digits(year, 4) && is_ascii_digits(month, 2);
        dated.then(|| super::format::parse_message_file_name(file)).flatten()
    };
    let classified = match rest {
        ["messages", year, month, file] => message_id(year, month, file)
            .map(|message_id| ArchivePath::Canonical { slug, message_id }),
        ["agents", _, "inbox" | "outbox", year, month, file] => message_id(year, month, file)
            .map(|message_id| ArchivePath::Mailbox { slug, message_id }),
        ["agents", agent, "profile.json"] => Some(ArchivePath::Profile { slug, agent }),
        ["file_reservations", file] => file
            .strip_prefix("id-")
            .and_then(|rest| rest.strip_suffix(".json"))
            .filter(|id| !id.is_empty() && id.bytes().all(|b| b.is_ascii_digit()))
            .and_then(|id| id.parse().ok())
            .map(|reservation_id| ArchivePath::Reservation { slug, reservation_id }),
        _ => None,
    };
    Some(classified.unwrap_or(ArchivePath::Project { slug }))
}

/// Whether `text` is exactly `len` ASCII digits (the `YYYY` and `MM` directory names).
fn is_ascii_digits(text: &str, len: usize) -> bool {
    text.len() == len && text.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests;
