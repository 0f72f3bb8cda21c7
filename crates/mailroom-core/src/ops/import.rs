//! Moving over from the Python reference: its SQLite database and its Git archive become
//! mailroom's, with nothing left behind (`mailroom import`, `docs/compat/cli.md` §14).
//!
//! The archive's layout is the reference's already, so it comes over as it is, history and
//! all: copied to mailroom's storage root, or used where it is (in place). The database is
//! rebuilt row for row in mailroom's schema (`store/import.rs`) from a consistent copy of the
//! reference's file; in place, the new database then takes the reference's file's path and
//! the original is kept beside it. Afterwards the archive is brought in line with the new
//! database as `mailroom archive rebuild` does (one commit, of the attachment manifests and
//! audit logs the reference leaves uncommitted), then checked as `mailroom archive verify`
//! does, and what still differs is reported.
//!
//! Nothing runs while the reference does (its `server.lock` in the storage root is held), and
//! a copy lands only where no mailbox lives yet.

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::archive::maintenance;
use crate::config::CoreConfig;
use crate::database_files::{aside_path, move_aside, remove_database_files, rename, with_suffix};
use crate::error::{Category, Error, Result};
use crate::store::Reader;
pub use crate::store::import::REFERENCE_TABLES;
use crate::store::import::{DatabaseImport, import_reference_database};

/// Where the reference keeps its mailbox.
#[derive(Debug, Clone)]
pub struct ReferenceMailbox {
    /// Its SQLite database (the path in its `DATABASE_URL`).
    pub database: PathBuf,
    /// Its Git archive (its `STORAGE_ROOT`).
    pub storage_root: PathBuf,
}

/// Where the mailbox goes.
#[derive(Debug, Clone)]
pub enum Destination {
    /// Into mailroom's own database and storage root (the configuration's).
    Copy(Box<CoreConfig>),
    /// Where the reference keeps it: the database converted at its path, the archive kept.
    InPlace,
}

/// A step of the work, for progress reports.
#[derive(Debug, Clone, Copy)]
pub enum Step<'a> {
    /// A table was copied, with its rows.
    Table { name: &'a str, rows: u64 },
    /// Archive files copied so far, of all.
    ArchiveFiles { done: u64, total: u64 },
    /// Messages rendered so far, of all, bringing the archive in line with the database.
    Aligning { done: usize, total: usize },
    /// The archive is being checked against the new database.
    Verifying,
}

/// What an import did.
#[derive(Debug, Clone, serde::Serialize)]
pub struct ImportReport {
    /// The database mailroom now uses.
    pub database: PathBuf,
    /// The archive mailroom now uses.
    pub storage_root: PathBuf,
    /// Whether the mailbox stayed where it was.
    pub in_place: bool,
    /// The rows copied, per table, and what the reference's release lacked.
    #[serde(flatten)]
    pub copied: DatabaseImport,
    /// Files of the archive copied (0 in place).
    pub archive_files: u64,
    /// The archive's HEAD commit as the reference left it; `None` when it left no archive.
    pub archive_head: Option<String>,
    /// The commit that brought the archive in line with the database (the files the
    /// reference leaves uncommitted); `None` when nothing differed.
    pub archive_commit: Option<String>,
    /// Where the reference's own database file went (in place), or the empty mailroom
    /// database and archive found at the destination were moved (a copy).
    pub moved_aside: Vec<PathBuf>,
    /// What `archive verify` finds between the archive and the imported database.
    pub archive_differences: Vec<String>,
}

/// Brings the reference's mailbox over. `leave_unknown` imports the rest when the reference's
/// database holds tables or columns mailroom does not know (otherwise refused, naming them).
pub fn import_reference(
    source: &ReferenceMailbox,
    destination: &Destination,
    leave_unknown: bool,
    progress: &mut dyn FnMut(Step<'_>),
) -> Result<ImportReport> {
    if !source.database.is_file() {
        return Err(Error::not_found(format!(
            "there is no database of the reference at {}",
            source.database.display()
        )));
    }
    // Held until the import is done, so the reference cannot start on it meanwhile.
    let _reference_lock = refuse_running_reference(&source.storage_root)?;
    let (database, storage_root) = match destination {
        Destination::Copy(config) => (config.database_path.clone(), config.storage_root.clone()),
        Destination::InPlace => (source.database.clone(), source.storage_root.clone()),
    };
    let in_place = matches!(destination, Destination::InPlace);
    if !in_place {
        refuse_same_files(source, &database, &storage_root)?;
        refuse_occupied(&database, &storage_root)?;
    }
    let parent = database.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    std::fs::create_dir_all(parent)
        .map_err(|e| Error::internal(format!("cannot create {}: {e}", parent.display())))?;
    // A consistent copy of the reference's file (its WAL folded in) is what gets attached.
    let snapshot = with_suffix(&database, ".reference-snapshot");
    let building = with_suffix(&database, ".importing");
    for leftover in [&snapshot, &building] {
        remove_database_files(leftover)?;
    }
    Reader::open(&source.database)?.copy_to(&snapshot)?;
    let mut on_table = |name: &str, rows: u64| progress(Step::Table { name, rows });
    let copied = import_reference_database(&snapshot, &building, leave_unknown, &mut on_table);
    remove_database_files(&snapshot)?;
    let copied = copied.inspect_err(|_| {
        let _ = remove_database_files(&building);
    })?;
    // The archive is copied under another name too, so a failure leaves nothing half-done.
    let staging = with_suffix(&storage_root, ".importing");
    let mut archive_files = 0;
    if !in_place && source.storage_root.is_dir() {
        let copied = remove_dir(&staging)
            .and_then(|()| copy_archive(&source.storage_root, &staging, progress));
        match copied {
            Ok(files) => archive_files = files,
            Err(e) => {
                let _ = remove_dir(&staging);
                let _ = remove_database_files(&building);
                return Err(e);
            }
        }
    }
    let mut moved_aside = Vec::new();
    if in_place {
        moved_aside.extend(move_aside(&database, "reference")?);
    } else {
        moved_aside.extend(move_aside(&database, "pre-import")?);
        if storage_root.exists() {
            let aside = aside_path(&storage_root, "pre-import", |p| p.exists());
            rename(&storage_root, &aside)?;
            moved_aside.push(aside);
        }
        if staging.exists() {
            rename(&staging, &storage_root)?;
        }
    }
    rename(&building, &database)?;
    let archive_head = mailroom_git::CommittedFiles::open(&storage_root)?
        .and_then(|files| files.head())
        .map(|head| head.to_string());
    let mut archive_commit = None;
    let mut archive_differences = Vec::new();
    if archive_head.is_some() {
        let config = CoreConfig {
            database_path: database.clone(),
            storage_root: storage_root.clone(),
            ..CoreConfig::for_data_dir(parent)
        };
        // The reference commits an attachment's image but not its manifest and audit log
        // (spec storage §7), which mailroom's archive holds: one commit adds what differs.
        let mut aligning = |done, total| progress(Step::Aligning { done, total });
        archive_commit = maintenance::rebuild(&config, &mut aligning)?.commit;
        progress(Step::Verifying);
        let report = maintenance::verify(&config)?;
        archive_differences = report.differences.iter().map(ToString::to_string).collect();
    }
    Ok(ImportReport {
        database,
        storage_root,
        in_place,
        copied,
        archive_files,
        archive_head,
        archive_commit,
        moved_aside,
        archive_differences,
    })
}

/// The reference holds `server.lock` in its storage root while it serves; the lock, taken
/// here, keeps it from starting until the caller drops it.
fn refuse_running_reference(storage_root: &Path) -> Result<Option<File>> {
    let Ok(lock) = File::open(storage_root.join("server.lock")) else { return Ok(None) };
    if lock.try_lock().is_err() {
        let pid = std::fs::read_to_string(storage_root.join("server.pid")).unwrap_or_default();
        return Err(Error::new(
            Category::Conflict,
            "REFERENCE_RUNNING",
            format!(
                "the reference's server is running on {} (PID {}): stop it first",
                storage_root.display(),
                pid.trim()
            ),
        ));
    }
    Ok(Some(lock))
}

fn refuse_same_files(source: &ReferenceMailbox, database: &Path, root: &Path) -> Result<()> {
    let same = |a: &Path, b: &Path| match (a.canonicalize(), b.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    };
    if same(&source.database, database) || same(&source.storage_root, root) {
        return Err(Error::invalid(
            "mailroom's database or storage root is the reference's: import in place \
             (--in-place) or give mailroom a data directory of its own",
        ));
    }
    Ok(())
}

/// A copy goes only where no mailbox lives: no database with projects, no archive with any.
/// An empty database or archive (a server started once) is moved aside, never deleted.
fn refuse_occupied(database: &Path, storage_root: &Path) -> Result<()> {
    let has_projects = database.is_file()
        && Reader::open(database)
            .and_then(|mut reader| reader.read(|db| db.all_projects()))
            .map_or(true, |projects| !projects.is_empty());
    let archive_has_projects = std::fs::read_dir(storage_root.join("projects"))
        .map(|mut entries| entries.next().is_some())
        .unwrap_or(false);
    if has_projects || archive_has_projects {
        return Err(Error::new(
            Category::Conflict,
            "DESTINATION_NOT_EMPTY",
            format!(
                "mailroom already holds a mailbox ({} or {}): import into a new data directory",
                database.display(),
                storage_root.display()
            ),
        ));
    }
    Ok(())
}

fn remove_dir(path: &Path) -> Result<()> {
    match std::fs::remove_dir_all(path) {
        Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
            Err(Error::internal(format!("cannot remove {}: {e}", path.display())))
        }
        _ => Ok(()),
    }
}

/// Whether a file is the reference's process state rather than the mailbox: its server lock
/// and pid, and lock files (Git's and the archive's) a stopped process may have left.
fn is_process_state(relative: &Path) -> bool {
    let name = relative.file_name().and_then(|n| n.to_str()).unwrap_or("");
    let top = relative.parent().is_none_or(|p| p.as_os_str().is_empty());
    (top && (name == "server.lock" || name == "server.pid"))
        || name.ends_with(".lock")
        || name.ends_with(".lock.owner.json")
}

/// Copies the archive (its `.git` included) file by file, leaving out process state.
fn copy_archive(from: &Path, to: &Path, progress: &mut dyn FnMut(Step<'_>)) -> Result<u64> {
    let mut files = Vec::new();
    list_files(from, Path::new(""), &mut files)?;
    let total = files.len() as u64;
    let io = |what: &str, path: &Path, e: std::io::Error| {
        Error::internal(format!("cannot {what} {}: {e}", path.display()))
    };
    let mut done = 0;
    for relative in &files {
        let (source, target) = (from.join(relative), to.join(relative));
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).map_err(|e| io("create", parent, e))?;
        }
        let kind = std::fs::symlink_metadata(&source).map_err(|e| io("read", &source, e))?;
        if kind.file_type().is_symlink() {
            let link = std::fs::read_link(&source).map_err(|e| io("read", &source, e))?;
            std::os::unix::fs::symlink(&link, &target).map_err(|e| io("create", &target, e))?;
        } else {
            std::fs::copy(&source, &target).map_err(|e| io("copy", &source, e))?;
        }
        done += 1;
        progress(Step::ArchiveFiles { done, total });
    }
    // Empty directories Git expects (refs/tags, objects/info, …) come over too.
    create_directories(from, to)?;
    Ok(done)
}

fn list_files(root: &Path, relative: &Path, files: &mut Vec<PathBuf>) -> Result<()> {
    let dir = root.join(relative);
    let entries = std::fs::read_dir(&dir)
        .map_err(|e| Error::internal(format!("cannot read {}: {e}", dir.display())))?;
    for entry in entries {
        let entry =
            entry.map_err(|e| Error::internal(format!("cannot read {}: {e}", dir.display())))?;
        let path = relative.join(entry.file_name());
        let kind = entry
            .file_type()
            .map_err(|e| Error::internal(format!("cannot read {}: {e}", path.display())))?;
        if kind.is_dir() {
            list_files(root, &path, files)?;
        } else if !is_process_state(&path) {
            files.push(path);
        }
    }
    Ok(())
}

fn create_directories(from: &Path, to: &Path) -> Result<()> {
    let entries = std::fs::read_dir(from)
        .map_err(|e| Error::internal(format!("cannot read {}: {e}", from.display())))?;
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            let target = to.join(entry.file_name());
            std::fs::create_dir_all(&target)
                .map_err(|e| Error::internal(format!("cannot create {}: {e}", target.display())))?;
            create_directories(&entry.path(), &target)?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn process_state_stays_behind() {
        for path in ["server.lock", "server.pid", ".git/index.lock", "projects/p/.archive.lock"] {
            assert!(is_process_state(Path::new(path)), "{path}");
        }
        assert!(is_process_state(Path::new("projects/p/.commit.lock.owner.json")));
        for path in ["projects/p/server.pid", ".git/HEAD", "projects/p/messages/2026/11/a.md"] {
            assert!(!is_process_state(Path::new(path)), "{path}");
        }
    }

    #[test]
    fn a_mailroom_database_is_not_imported() {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut config = CoreConfig::for_data_dir(dir.path());
        config.archive.enabled = false;
        let database = config.database_path.clone();
        drop(crate::ops::Mailroom::open(config).expect("open"));
        let source = ReferenceMailbox { database, storage_root: dir.path().join("no-archive") };
        let target = dir.path().join("target");
        let destination = Destination::Copy(Box::new(CoreConfig::for_data_dir(&target)));
        let err = import_reference(&source, &destination, false, &mut |_| {}).expect_err("refused");
        assert!(err.to_string().contains("mailroom database already"), "{err}");
        assert!(!target.join("mailroom.sqlite3").exists(), "nothing left behind");
    }
}
