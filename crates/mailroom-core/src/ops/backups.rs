//! Copies of the database and backups of a data directory, taken while a server may go on
//! using it: the snapshots of saved states (`mailroom archive save`), which may keep only some
//! projects, and the backups taken before the operator's destructive commands (`doctor
//! repair`, `projects adopt`, the hard deletes), listed by `doctor backups` and put back by
//! `doctor restore`.
//!
//! One home and one naming: `DATA_DIR/backups/<YYYY-MM-DDTHH-MM-SS-ffffff>_<reason>/` (UTC),
//! holding `database.sqlite3` (a consistent copy, taken while a server may go on writing),
//! `archive.bundle` when asked for (`git bundle create … --all` of the archive) and
//! `manifest.json` saying what is there. The reference keeps the same folders under its
//! storage root; mailroom's storage root is the archive's Git work tree, which a restore
//! moves aside, so the backups sit beside it instead. Files an older mailroom wrote there
//! (`mailroom-<time>-before-<operation>.sqlite3`, a database only) are listed and restored
//! too.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use serde::{Deserialize, Serialize};

use crate::database_files::{aside_path, move_aside, remove_database_files, rename, with_suffix};
use crate::error::{Error, Result};
use crate::model::time::Timestamp;
use crate::records::Project;
use crate::store::copy::DatabaseAt;
use crate::store::{self, Reader};

/// The data directory's folder of backups.
pub const BACKUPS_DIR: &str = "backups";
/// In a backup: the database's copy, the archive's bundle and the manifest.
pub const DATABASE_FILE: &str = "database.sqlite3";
pub const BUNDLE_FILE: &str = "archive.bundle";
pub const MANIFEST_FILE: &str = "manifest.json";

/// Gives a database about to be restored a new identity for fetch_inbox_events' cursors
/// (`store::renew_identity`): a cursor of the database it replaces is refused, not misread.
pub fn renew_identity(database: &Path) -> Result<()> {
    store::renew_identity(database)
}

/// Writes a consistent, compacted copy of `database` to `dest`, a SQLite file which must not
/// exist, without locking out a server that uses it: SQLite's `VACUUM INTO`, or PostgreSQL's
/// rows read in one snapshot into a file of the same schema.
pub fn copy_database(database: &DatabaseAt, dest: &Path) -> Result<()> {
    match database {
        DatabaseAt::Sqlite(path) => Reader::open(path)?.copy_to(dest),
        DatabaseAt::Postgres(_) => {
            store::copy::copy_database(database, &DatabaseAt::Sqlite(dest.to_path_buf())).map(drop)
        }
    }
}

/// A project a copy keeps, as a saved state's metadata names it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct KeptProject {
    pub slug: String,
    pub human_key: String,
}

/// What a copy holds after [`keep_projects`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CopyScope {
    /// The projects left, in the order they were created.
    pub kept: Vec<KeptProject>,
    /// How many projects were deleted from the copy.
    pub removed: usize,
    /// The agents left.
    pub agents: usize,
}

/// Keeps in the database copy at `copy` (one no server uses) only the projects `names` name,
/// by slug or human key, compared case-insensitively; every other project goes with all its
/// rows, as hard_delete_project deletes them, and the file is compacted so no trace of them
/// stays in its free pages. No names keeps every project and changes nothing. A name no
/// project has is an error, and the copy is left as it was.
pub fn keep_projects(copy: &Path, names: &[String]) -> Result<CopyScope> {
    let projects = Reader::open(copy)?.read(|db| db.all_projects())?;
    let mut keep = vec![names.is_empty(); projects.len()];
    for name in names {
        let lower = name.to_lowercase();
        let found = projects
            .iter()
            .position(|p| p.slug.to_lowercase() == lower || p.human_key.to_lowercase() == lower);
        match found {
            Some(index) => keep[index] = true,
            None => return Err(unknown_project(name, &projects)),
        }
    }
    let (kept, removed): (Vec<_>, Vec<_>) =
        projects.into_iter().zip(keep).partition(|(_, keep)| *keep);
    if !removed.is_empty() {
        store::edit_database(copy, |db| {
            removed.iter().try_for_each(|(project, _)| db.hard_delete_project(project.id).map(drop))
        })?;
    }
    let agents = Reader::open(copy)?.read(|db| db.agent_ids())?.len();
    Ok(CopyScope {
        kept: kept
            .into_iter()
            .map(|(p, _)| KeptProject { slug: p.slug, human_key: p.human_key })
            .collect(),
        removed: removed.len(),
        agents,
    })
}

fn unknown_project(name: &str, projects: &[Project]) -> Error {
    let known: Vec<&str> = projects.iter().map(|p| p.slug.as_str()).collect();
    let known = if known.is_empty() { "none".to_owned() } else { known.join(", ") };
    Error::not_found(format!("no project is named {name:?} (by slug or human key; known: {known})"))
}

/// What a backup holds (`manifest.json`).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    /// Why it was taken: `repair`, `adopt`, `hard_delete_agent`, …
    pub reason: String,
    /// When, in the tools' ISO form.
    pub created: String,
    pub mailroom_version: String,
    /// The project the operation was about, when it was about one.
    #[serde(default)]
    pub project: Option<String>,
    /// The database copied, and its copy's size.
    pub database: Option<Copied>,
    /// The archive bundled (its root and HEAD), and the bundle's size.
    #[serde(default)]
    pub archive: Option<Copied>,
}

/// One thing a backup copied.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Copied {
    /// Where it was copied from.
    pub source: String,
    /// Its file in the backup.
    pub file: String,
    pub bytes: u64,
    /// The archive's HEAD commit when bundled.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub head: Option<String>,
}

/// What to back up.
#[derive(Debug, Clone)]
pub struct BackupRequest<'a> {
    /// The database to copy: SQLite's file, or a PostgreSQL database (copied, in one
    /// consistent snapshot, into a SQLite file of the same schema).
    pub database: &'a DatabaseAt,
    /// The archive to bundle; `None` for a database copy alone.
    pub storage_root: Option<&'a Path>,
    /// The folder the backup goes in (`DATA_DIR/backups` unless the operator chose another).
    pub parent: &'a Path,
    pub reason: &'a str,
    pub project: Option<&'a str>,
}

/// Takes a backup: the archive's bundle first, then the database's copy, so that the
/// database is never older than the archive beside it (`archive rebuild` renders what the
/// archive lacks; nothing would remove what only it had). The backup's folder; a failed
/// backup leaves none.
pub fn create_backup(request: &BackupRequest<'_>) -> Result<(PathBuf, Manifest)> {
    let now = Timestamp::now();
    let dir = new_backup_dir(request.parent, &format!("{}_{}", backup_stamp(now), request.reason))?;
    let filled = fill_backup(request, &dir, now);
    if filled.is_err() {
        let _ = std::fs::remove_dir_all(&dir);
    }
    filled.map(|manifest| (dir, manifest))
}

fn fill_backup(request: &BackupRequest<'_>, dir: &Path, now: Timestamp) -> Result<Manifest> {
    let archive = match request.storage_root.filter(|root| root.join(".git").exists()) {
        Some(root) => Some(bundle_archive(root, &dir.join(BUNDLE_FILE))?),
        None => None,
    };
    let copy = dir.join(DATABASE_FILE);
    copy_database(request.database, &copy)?;
    let source = match request.database {
        DatabaseAt::Sqlite(path) => absolute_text(path),
        DatabaseAt::Postgres(_) => request.database.describe(),
    };
    let manifest = Manifest {
        reason: request.reason.to_string(),
        created: now.to_iso(),
        mailroom_version: env!("CARGO_PKG_VERSION").to_string(),
        project: request.project.map(str::to_string),
        database: Some(Copied {
            source,
            file: DATABASE_FILE.to_string(),
            bytes: file_size(&copy),
            head: None,
        }),
        archive,
    };
    let text = serde_json::to_string_pretty(&manifest)
        .map_err(|e| Error::internal(format!("manifest: {e}")))?;
    write_file(&dir.join(MANIFEST_FILE), format!("{text}\n").as_bytes())?;
    Ok(manifest)
}

/// `YYYY-MM-DDTHH-MM-SS-ffffff` (UTC): sorts in time order and is a valid name everywhere.
fn backup_stamp(at: Timestamp) -> String {
    at.to_db().replace(' ', "T").replace([':', '.'], "-")
}

/// Creates `parent/name` (`name-2`, … when taken).
fn new_backup_dir(parent: &Path, name: &str) -> Result<PathBuf> {
    std::fs::create_dir_all(parent).map_err(|e| io_error("cannot create", parent, &e))?;
    for attempt in 1.. {
        let dir = match attempt {
            1 => parent.join(name),
            n => parent.join(format!("{name}-{n}")),
        };
        match std::fs::create_dir(&dir) {
            Ok(()) => return Ok(dir),
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => return Err(io_error("cannot create", &dir, &e)),
        }
    }
    unreachable!("an unbounded range ends only by returning")
}

/// `git bundle create DEST --all` in the archive; what the manifest says of it.
fn bundle_archive(root: &Path, dest: &Path) -> Result<Copied> {
    let head = git(Some(root), &["rev-parse", "--verify", "HEAD"])?;
    // Git runs in the archive: a relative path would name a file there.
    let dest = std::path::absolute(dest).map_err(|e| io_error("cannot resolve", dest, &e))?;
    git(Some(root), &["bundle", "create", &utf8(&dest)?, "--all"])?;
    Ok(Copied {
        source: absolute_text(root),
        file: BUNDLE_FILE.to_string(),
        bytes: file_size(&dest),
        head: Some(head.trim().to_string()),
    })
}

/// One backup, as `doctor backups` lists it.
#[derive(Debug, Clone, Serialize)]
pub struct BackupEntry {
    pub path: String,
    pub reason: String,
    /// When it was taken (the manifest's time; a file's modification time otherwise).
    pub created: String,
    pub project: Option<String>,
    /// Whether it holds a database copy, and an archive bundle.
    pub database: bool,
    pub archive: bool,
    pub bytes: u64,
}

/// The backups in `dir` (a data directory's `backups`), oldest first; none when it does not
/// exist.
pub fn list_backups(dir: &Path) -> Result<Vec<BackupEntry>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(io_error("cannot read", dir, &e)),
    };
    let mut found: Vec<(std::time::SystemTime, BackupEntry)> = Vec::new();
    for entry in entries.flatten() {
        let path = entry.path();
        let modified = entry.metadata().and_then(|m| m.modified()).unwrap_or(std::time::UNIX_EPOCH);
        let listed = if path.is_dir() {
            backup_folder(&path, modified)
        } else {
            legacy_file(&path, modified)
        };
        if let Some(listed) = listed {
            found.push((modified, listed));
        }
    }
    found.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.path.cmp(&b.1.path)));
    Ok(found.into_iter().map(|(_, entry)| entry).collect())
}

/// A backup folder, described by its manifest (or, without one, by its name and files).
fn backup_folder(path: &Path, modified: std::time::SystemTime) -> Option<BackupEntry> {
    let database = path.join(DATABASE_FILE).is_file();
    let archive = path.join(BUNDLE_FILE).is_file();
    if !database && !archive {
        return None;
    }
    let manifest = read_manifest(path);
    let name = path.file_name()?.to_string_lossy().into_owned();
    let reason = manifest
        .as_ref()
        .map(|m| m.reason.clone())
        .or_else(|| name.split_once('_').map(|(_, reason)| reason.to_string()));
    let bytes = [DATABASE_FILE, BUNDLE_FILE].iter().map(|f| file_size(&path.join(f))).sum();
    Some(BackupEntry {
        path: path.display().to_string(),
        reason: reason.unwrap_or_else(|| "unknown".to_string()),
        created: manifest.as_ref().map_or_else(|| system_time_iso(modified), |m| m.created.clone()),
        project: manifest.and_then(|m| m.project),
        database,
        archive,
        bytes,
    })
}

/// `mailroom-<time>-before-<operation>.sqlite3`, an older mailroom's database copy.
fn legacy_file(path: &Path, modified: std::time::SystemTime) -> Option<BackupEntry> {
    let name = path.file_name()?.to_str()?;
    let stem = name.strip_prefix("mailroom-")?.strip_suffix(".sqlite3")?;
    let (_, operation) = stem.rsplit_once("-before-")?;
    Some(BackupEntry {
        path: path.display().to_string(),
        reason: operation.to_string(),
        created: system_time_iso(modified),
        project: None,
        database: true,
        archive: false,
        bytes: file_size(path),
    })
}

/// The manifest of the backup folder `dir`, when it has a readable one.
pub fn read_manifest(dir: &Path) -> Option<Manifest> {
    let text = std::fs::read_to_string(dir.join(MANIFEST_FILE)).ok()?;
    serde_json::from_str(&text).ok()
}

/// What `doctor restore` does, worked out before anything moves.
#[derive(Debug, Clone, Serialize)]
pub struct RestorePlan {
    /// The database copy restored, and where it goes.
    pub database_from: PathBuf,
    pub database_to: PathBuf,
    /// The archive bundle restored, if the backup has one, and the archive it replaces.
    pub bundle: Option<PathBuf>,
    pub archive_to: PathBuf,
}

/// What a restore moved aside.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Restored {
    pub database_moved_to: Option<PathBuf>,
    pub archive_moved_to: Option<PathBuf>,
}

/// Plans restoring `backup` (a backup folder, or a database copy file) over `database` and
/// `storage_root`; refuses a backup without a mailroom database in it.
pub fn plan_restore(backup: &Path, database: &Path, storage_root: &Path) -> Result<RestorePlan> {
    let (database_from, bundle) = if backup.is_dir() {
        let bundle = Some(backup.join(BUNDLE_FILE)).filter(|b| b.is_file());
        (backup.join(DATABASE_FILE), bundle)
    } else {
        (backup.to_path_buf(), None)
    };
    if !database_from.is_file() {
        return Err(Error::not_found(format!(
            "{} holds no database copy ({DATABASE_FILE})",
            backup.display()
        )));
    }
    if !super::doctor::is_mailroom_database(&database_from) {
        return Err(Error::invalid(format!(
            "{} is not a mailroom database",
            database_from.display()
        )));
    }
    Ok(RestorePlan {
        database_from,
        database_to: database.to_path_buf(),
        bundle,
        archive_to: storage_root.to_path_buf(),
    })
}

/// Restores what `plan` says. Each part is made ready beside its target first (the database
/// copied, the bundle cloned), so a failure there changes nothing; then the current
/// database (with its `-wal`/`-shm`) and archive are moved aside to
/// `<path>.pre-restore-<time>`, never deleted, and the restored ones take their places. No
/// server may run on them meanwhile (the caller holds the data directory's locks).
pub fn restore(plan: &RestorePlan) -> Result<Restored> {
    let staged_database = with_suffix(&plan.database_to, ".restoring");
    // A leftover of an interrupted restore goes with its -wal, which would replay into the copy.
    remove_database_files(&staged_database)?;
    std::fs::copy(&plan.database_from, &staged_database)
        .map_err(|e| io_error("cannot copy to", &staged_database, &e))?;
    // Cursors the replaced database gave out must not read on in the restored one.
    if let Err(e) = store::renew_identity(&staged_database) {
        let _ = remove_database_files(&staged_database);
        return Err(e);
    }
    let staged_archive = match &plan.bundle {
        Some(bundle) => match clone_bundle(bundle, &plan.archive_to) {
            Ok(staged) => Some(staged),
            Err(e) => {
                let _ = remove_database_files(&staged_database);
                return Err(e);
            }
        },
        None => None,
    };
    let mut restored = Restored {
        database_moved_to: move_aside(&plan.database_to, "pre-restore")?,
        archive_moved_to: None,
    };
    rename(&staged_database, &plan.database_to)?;
    if let Some(staged) = staged_archive {
        if plan.archive_to.exists() {
            let aside = aside_path(&plan.archive_to, "pre-restore", |p| p.exists());
            rename(&plan.archive_to, &aside)?;
            restored.archive_moved_to = Some(aside);
        }
        rename(&staged, &plan.archive_to)?;
    }
    Ok(restored)
}

/// Clones `bundle` beside `root` (`<root>.restoring`) as an archive mailroom can take over:
/// no remote, no signing; the clone's path.
fn clone_bundle(bundle: &Path, root: &Path) -> Result<PathBuf> {
    let staged = with_suffix(root, ".restoring");
    if staged.exists() {
        std::fs::remove_dir_all(&staged).map_err(|e| io_error("cannot remove", &staged, &e))?;
    }
    git(None, &["clone", "--quiet", &utf8(bundle)?, &utf8(&staged)?])?;
    git(Some(&staged), &["remote", "remove", "origin"])?;
    git(Some(&staged), &["config", "commit.gpgsign", "false"])?;
    Ok(staged)
}

/// Runs `git` (in `dir`); its stdout, or an error with its stderr.
fn git(dir: Option<&Path>, args: &[&str]) -> Result<String> {
    let mut command = Command::new("git");
    if let Some(dir) = dir {
        command.arg("-C").arg(dir);
    }
    let output = command
        .args(args)
        .stdin(Stdio::null())
        .output()
        .map_err(|e| Error::internal(format!("cannot run git: {e}")))?;
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(Error::internal(format!("git {} failed: {}", args.join(" "), stderr.trim())));
    }
    Ok(String::from_utf8_lossy(&output.stdout).into_owned())
}

/// `path` made absolute (as it is when that fails), for the manifest.
fn absolute_text(path: &Path) -> String {
    std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf()).display().to_string()
}

fn utf8(path: &Path) -> Result<String> {
    path.to_str().map(str::to_string).ok_or_else(|| Error::internal("a path is not UTF-8"))
}

fn write_file(path: &Path, bytes: &[u8]) -> Result<()> {
    std::fs::write(path, bytes).map_err(|e| io_error("cannot write", path, &e))
}

fn file_size(path: &Path) -> u64 {
    std::fs::metadata(path).map_or(0, |m| m.len())
}

fn system_time_iso(time: std::time::SystemTime) -> String {
    let micros = time
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| i64::try_from(d.as_micros()).unwrap_or(i64::MAX));
    Timestamp::from_micros(micros).to_iso()
}

fn io_error(what: &str, path: &Path, e: &std::io::Error) -> Error {
    Error::from_storage_io(e, &path.display().to_string())
        .unwrap_or_else(|| Error::internal(format!("{what} {}: {e}", path.display())))
}

#[cfg(test)]
mod tests {
    use std::path::PathBuf;

    use super::*;
    use crate::config::CoreConfig;
    use crate::ops::Mailroom;

    /// A database in `dir` with `projects`, and the path of its copy (made once).
    async fn copied(dir: &Path, projects: &[&str]) -> (PathBuf, PathBuf) {
        let mut config = CoreConfig::for_data_dir(dir);
        config.archive.enabled = false;
        let database = config.database_path.clone();
        let core = Mailroom::open(config).expect("open");
        for project in projects {
            core.ensure_project(project).await.expect("project");
            let url = "https://hooks.example.com/in".to_owned();
            core.register_webhook((*project).to_owned(), url, None, None).await.expect("webhook");
        }
        let copy = dir.join("copy.sqlite3");
        copy_database(&DatabaseAt::Sqlite(database.clone()), &copy).expect("copy");
        (database, copy)
    }

    /// A data directory in `dir` (no archive) with one project.
    async fn one_project(dir: &Path) -> (CoreConfig, Mailroom) {
        let mut config = CoreConfig::for_data_dir(dir);
        config.archive.enabled = false;
        let core = Mailroom::open(config.clone()).expect("open");
        core.ensure_project("/work/backed-up").await.expect("project");
        (config, core)
    }

    fn projects(database: &Path) -> usize {
        let mut reader = crate::store::Reader::open(database).expect("open");
        reader.read(|db| db.all_projects()).expect("read").len()
    }

    #[tokio::test]
    async fn the_copy_holds_what_the_database_holds() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (database, dest) = copied(dir.path(), &["/work/backed-up"]).await;
        let copied =
            Reader::open(&dest).expect("open copy").read(|db| db.all_projects()).expect("read");
        assert_eq!(copied.len(), 1);
        let again = copy_database(&DatabaseAt::Sqlite(database), &dest);
        assert!(again.is_err(), "an existing file is not overwritten");
    }

    #[tokio::test]
    async fn backups_are_listed_and_restored_over_a_changed_database() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (config, core) = one_project(dir.path()).await;
        let database = &config.database_path;
        let parent = dir.path().join(BACKUPS_DIR);
        let request = BackupRequest {
            database: &DatabaseAt::Sqlite(database.clone()),
            storage_root: None,
            parent: &parent,
            reason: "test",
            project: Some("backed-up"),
        };
        let (backup, manifest) = create_backup(&request).expect("backup");
        assert!(backup.file_name().is_some_and(|n| n.to_string_lossy().ends_with("_test")));
        assert!(manifest.archive.is_none(), "no archive asked for");
        std::fs::write(parent.join("mailroom-2024-01-01T00-00-00-before-x.sqlite3"), b"")
            .expect("legacy file");
        std::fs::write(parent.join("notes.txt"), b"").expect("other file");
        let listed = list_backups(&parent).expect("list");
        let reasons: Vec<_> = listed.iter().map(|b| b.reason.as_str()).collect();
        assert_eq!(reasons.len(), 2, "{listed:?}");
        assert!(reasons.contains(&"test") && reasons.contains(&"x"), "{reasons:?}");

        core.ensure_project("/work/after").await.expect("project");
        core.close();
        let plan = plan_restore(&backup, database, &config.storage_root).expect("plan");
        let identity = |path: &Path| -> String {
            rusqlite::Connection::open(path)
                .and_then(|c| {
                    c.query_row("SELECT database_id FROM mailbox_events_log", [], |r| r.get(0))
                })
                .expect("identity")
        };
        let backed_up = identity(&backup.join(DATABASE_FILE));
        let restored = restore(&plan).expect("restore");
        assert_ne!(identity(database), backed_up, "the restored copy has an identity of its own");
        let aside = restored.database_moved_to.expect("the current database moved aside");
        assert_eq!(projects(database), 1, "the backup's");
        assert_eq!(projects(&aside), 2, "the replaced database is kept");
        assert!(plan_restore(&parent.join("notes.txt"), database, &config.storage_root).is_err());
    }

    #[tokio::test]
    async fn a_scoped_copy_keeps_only_the_named_projects() {
        let dir = tempfile::tempdir().expect("temp dir");
        let (_, copy) = copied(dir.path(), &["/work/kept", "/work/dropped"]).await;

        let unknown = keep_projects(&copy, &["/work/nowhere".to_owned()]).expect_err("unknown");
        assert!(unknown.message.contains("work-kept, work-dropped"), "{}", unknown.message);
        let all = keep_projects(&copy, &[]).expect("no names");
        assert_eq!((all.kept.len(), all.removed), (2, 0));
        let scope = keep_projects(&copy, &["/WORK/KEPT".to_owned()]).expect("scope");
        let kept = KeptProject { slug: "work-kept".to_owned(), human_key: "/work/kept".to_owned() };
        assert_eq!((scope.kept, scope.removed, scope.agents), (vec![kept], 1, 0));
        let left = Reader::open(&copy).expect("open").read(|db| db.all_projects()).expect("read");
        assert_eq!(left.iter().map(|p| p.slug.as_str()).collect::<Vec<_>>(), ["work-kept"]);
        let webhooks: Vec<i64> = rusqlite::Connection::open(&copy)
            .and_then(|c| {
                let mut stmt = c.prepare("SELECT project_id FROM webhooks")?;
                stmt.query_map([], |r| r.get(0))?.collect()
            })
            .expect("webhooks");
        assert_eq!(webhooks, [left[0].id.0], "no webhook of a dropped project is left");
    }
}
