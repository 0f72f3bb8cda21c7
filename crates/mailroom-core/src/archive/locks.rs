//! Ownership of the archive and the clean-up of lock files left by dead processes.
//!
//! One process writes an archive: `archive.lock` carries an OS lock (released by the kernel
//! when the owner dies, however it dies) and `archive.lock.owner.json` names the owner's pid so
//! a refused start can say who holds it. Lock files of the reference's shape (`*.lock` with a
//! `*.lock.owner.json` beside it) and Git's own `*.lock` files can outlive a killed process;
//! [`heal_stale_locks`] removes those whose owner is gone.

use std::fs::{self, File, OpenOptions};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime};

use crate::error::{Error, Result};

/// Name of the ownership lock file at the archive root.
pub const OWNER_LOCK: &str = "archive.lock";

/// A reference-style lock without owner metadata counts as stale after this long.
pub(crate) const UNOWNED_LOCK_STALE_AFTER: Duration = Duration::from_secs(180);

/// Git's own lock files carry no pid. Git holds them for milliseconds, so one this old when
/// the archive's new owner starts was left by a process that died holding it.
const GIT_LOCK_STALE_AFTER: Duration = Duration::from_secs(2);

/// The held ownership lock; dropping it releases the OS lock.
#[derive(Debug)]
pub struct OwnerLock {
    _file: File,
    owner_path: PathBuf,
}

impl Drop for OwnerLock {
    fn drop(&mut self) {
        let _ = fs::remove_file(&self.owner_path);
    }
}

/// Becomes the archive's writer: creates the root if needed, takes the ownership lock and
/// then removes the lock files dead processes left behind (safe only once the lock is held).
pub fn take_ownership(root: &Path) -> Result<OwnerLock> {
    let (owner, healing) = take_ownership_unhealed(root)?;
    healing.heal();
    Ok(owner)
}

/// [`take_ownership`] with the healing left to the caller (a walk of the whole archive, which
/// a command that may never touch the archive defers until it does).
pub fn take_ownership_unhealed(root: &Path) -> Result<(OwnerLock, Healing)> {
    fs::create_dir_all(root).map_err(|e| {
        Error::internal(format!("cannot create archive root {}: {e}", root.display()))
    })?;
    // A clean stop removes the owner file before it lets the OS lock go: one there before
    // this process took the lock says the last owner died holding it.
    let killed = root.join(format!("{OWNER_LOCK}.owner.json")).exists();
    let owner = acquire_owner_lock(root)?;
    Ok((owner, Healing { root: root.to_path_buf(), killed }))
}

/// The healing an owner does on taking over: stale lock files cleared, and the branch lock a
/// killed owner left.
#[derive(Debug)]
pub struct Healing {
    root: std::path::PathBuf,
    killed: bool,
}

impl Healing {
    pub fn heal(self) {
        heal_stale_locks(&self.root);
        if self.killed {
            remove_branch_lock(&self.root);
        }
    }
}

/// Removes the lock on the branch HEAD names, however young. An owner killed while it moved
/// the branch leaves it, and every commit is refused until it goes: waiting for it to age
/// past `GIT_LOCK_STALE_AFTER` made a quick restart's stop give up with its work queued.
/// Only that lock: the others may be a human's Git at work in the archive.
fn remove_branch_lock(root: &Path) {
    let git = root.join(".git");
    let Ok(head) = fs::read_to_string(git.join("HEAD")) else { return };
    let Some(branch) = head.trim().strip_prefix("ref: refs/heads/") else { return };
    let lock = git.join("refs/heads").join(format!("{branch}.lock"));
    if branch.split('/').all(|part| !part.is_empty() && part != "..") && lock.exists() {
        remove(&lock, &mut Vec::new());
    }
}

/// Takes the archive's ownership lock, or says which process holds it.
pub fn acquire_owner_lock(root: &Path) -> Result<OwnerLock> {
    let lock_path = root.join(OWNER_LOCK);
    let owner_path = root.join(format!("{OWNER_LOCK}.owner.json"));
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .map_err(|e| Error::internal(format!("cannot open {}: {e}", lock_path.display())))?;
    if !lock_or_wait_for_own_release(&file, &owner_path) {
        let holder = read_owner_pid(&owner_path)
            .map(|pid| format!("process {pid}"))
            .unwrap_or_else(|| "another process".to_string());
        return Err(Error::new(
            crate::error::Category::Internal,
            ARCHIVE_IN_USE,
            format!(
                "the archive at {} is in use by {holder} (lock {})",
                root.display(),
                lock_path.display()
            ),
        ));
    }
    write_owner(&owner_path)?;
    Ok(OwnerLock { _file: file, owner_path })
}

/// The error kind of an archive another live process holds (a former leader finishing its
/// commit): a reason to wait, not a failure.
pub const ARCHIVE_IN_USE: &str = "ARCHIVE_IN_USE";

/// How long a lock recorded as held by this very process may take to go away.
const OWN_RELEASE_WAIT: Duration = Duration::from_secs(2);

/// Takes the OS lock. When the owner file names this process, the holder is a handle this
/// process just closed whose descriptor a child forked meanwhile (e.g. a `git` command started
/// by another thread) still shares until it execs: wait briefly for it instead of failing.
/// So too when there is no owner file: a clean stop removes it just before it closes the lock,
/// and the same child may hold that lock a moment longer.
fn lock_or_wait_for_own_release(file: &File, owner_path: &Path) -> bool {
    let started = std::time::Instant::now();
    loop {
        if file.try_lock().is_ok() {
            return true;
        }
        let going = read_owner_pid(owner_path).is_none_or(|pid| pid == std::process::id());
        if !going || started.elapsed() >= OWN_RELEASE_WAIT {
            return false;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn write_owner(owner_path: &Path) -> Result<()> {
    let created = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_secs_f64())
        .unwrap_or_default();
    let body = serde_json::json!({ "pid": std::process::id(), "created_ts": created });
    let mut file = File::create(owner_path)
        .map_err(|e| Error::internal(format!("cannot write {}: {e}", owner_path.display())))?;
    writeln!(file, "{body}")
        .map_err(|e| Error::internal(format!("cannot write {}: {e}", owner_path.display())))
}

pub(crate) fn read_owner_pid(owner_path: &Path) -> Option<u32> {
    let text = fs::read_to_string(owner_path).ok()?;
    let value: serde_json::Value = serde_json::from_str(&text).ok()?;
    value.get("pid")?.as_u64()?.try_into().ok()
}

/// Whether a process with this pid exists (Linux `/proc`; elsewhere assume it does, which
/// errs on the side of keeping a lock).
pub(crate) fn process_alive(pid: u32) -> bool {
    if pid == std::process::id() {
        return true;
    }
    let proc_root = Path::new("/proc");
    if !proc_root.join("self").exists() {
        return true;
    }
    proc_root.join(pid.to_string()).exists()
}

fn age(path: &Path) -> Option<Duration> {
    let modified = fs::metadata(path).ok()?.modified().ok()?;
    SystemTime::now().duration_since(modified).ok()
}

/// Removes lock files whose owner is dead; returns the paths removed. Called by the archive's
/// owner, after [`acquire_owner_lock`], so no other mailroom can be writing.
///
/// * `<x>.lock` with `<x>.lock.owner.json`: stale when the pid is not running.
/// * `<x>.lock` without metadata (outside `.git`): stale after 180 s, as in the reference.
/// * orphan `*.lock.owner.json`: removed.
/// * `.git/index.lock`, `.git/config.lock`, `.git/HEAD.lock`, `.git/packed-refs.lock`,
///   `.git/refs/**.lock`: stale after 2 s (and the branch's lock at once after a killed
///   owner: see [`take_ownership`]).
pub fn heal_stale_locks(root: &Path) -> Vec<PathBuf> {
    let mut removed = heal_stale_lock_files(root);
    let git = root.join(".git");
    for name in ["index.lock", "config.lock"] {
        remove_if_older(&git.join(name), GIT_LOCK_STALE_AFTER, &mut removed);
    }
    removed.extend(heal_stale_ref_locks(root));
    removed
}

/// Calls `visit` with the path and name of every lock file (`*.lock`) and lock owner record
/// (`*.lock.owner.json`) under `root`, outside `.git`, but this archive's own ownership lock.
/// The walk the healing and the lock report share.
pub(crate) fn walk_lock_files(root: &Path, visit: &mut dyn FnMut(&Path, &str)) {
    walk_dir(root, root, visit);
}

fn walk_dir(root: &Path, dir: &Path, visit: &mut dyn FnMut(&Path, &str)) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        let name = entry.file_name().to_string_lossy().into_owned();
        let Ok(kind) = entry.file_type() else { continue };
        if kind.is_dir() {
            if name != ".git" {
                walk_dir(root, &path, visit);
            }
        } else if (name.ends_with(".lock") || name.ends_with(".lock.owner.json"))
            && !(dir == root && name == OWNER_LOCK)
        {
            visit(&path, &name);
        }
    }
}

/// Removes one lock file or owner record found by the walk when it is stale.
fn heal(path: &Path, name: &str, removed: &mut Vec<PathBuf>) {
    if name.ends_with(".lock.owner.json") {
        let lock = path.with_file_name(name.trim_end_matches(".owner.json"));
        if !lock.exists() {
            remove(path, removed);
        }
        return;
    }
    if held_by_os_lock(path) {
        // A server's `server.lock` (this one's, when the data dir is inside the archive) or
        // any other flock-held lock is live whatever its age.
        return;
    }
    let owner = path.with_file_name(format!("{name}.owner.json"));
    let stale = match read_owner_pid(&owner) {
        Some(pid) => !process_alive(pid),
        None => age(path).is_some_and(|a| a >= UNOWNED_LOCK_STALE_AFTER),
    };
    if stale {
        remove(path, removed);
        if owner.exists() {
            remove(&owner, removed);
        }
    }
}

/// The first part of [`heal_stale_locks`]: the reference-style lock files (and orphaned owner
/// records) under `root` whose owner is dead, not Git's own. Safe beside the archive's owner
/// (a running server), whose live locks name a live pid or hold an OS lock: `doctor repair`
/// heals with it while a server runs, on the whole archive or one project's directory.
pub fn heal_stale_lock_files(root: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    walk_lock_files(root, &mut |path, name| heal(path, name, &mut removed));
    removed
}

/// Removes Git ref locks (HEAD, refs, packed-refs) older than 2 s: what a commit retry needs.
/// Leaves `index.lock` alone, which a human's `git commit` may hold for minutes while its
/// editor is open; archive commits do not need the index.
pub fn heal_stale_ref_locks(root: &Path) -> Vec<PathBuf> {
    let mut removed = Vec::new();
    let git = root.join(".git");
    for name in ["HEAD.lock", "packed-refs.lock"] {
        remove_if_older(&git.join(name), GIT_LOCK_STALE_AFTER, &mut removed);
    }
    heal_git_refs(&git.join("refs"), &mut removed);
    removed
}

/// Whether another open file holds an OS lock on `path` (flock-style locks vanish with their
/// process, so a held one is never stale).
fn held_by_os_lock(path: &Path) -> bool {
    match File::open(path) {
        Ok(file) => file.try_lock().is_err(),
        Err(_) => false,
    }
}

fn heal_git_refs(dir: &Path, removed: &mut Vec<PathBuf>) {
    let Ok(entries) = fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        let path = entry.path();
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            heal_git_refs(&path, removed);
        } else if path.extension().is_some_and(|e| e == "lock") {
            remove_if_older(&path, GIT_LOCK_STALE_AFTER, removed);
        }
    }
}

fn remove_if_older(path: &Path, limit: Duration, removed: &mut Vec<PathBuf>) {
    if age(path).is_some_and(|a| a >= limit) {
        remove(path, removed);
    }
}

fn remove(path: &Path, removed: &mut Vec<PathBuf>) {
    match fs::remove_file(path) {
        Ok(()) => {
            tracing::warn!(path = %path.display(), "removed a stale lock file");
            removed.push(path.to_path_buf());
        }
        Err(e) => tracing::warn!(path = %path.display(), error = %e, "cannot remove stale lock"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_owner_is_refused_with_the_first_owners_pid() {
        let dir = tempfile::tempdir().expect("temp dir");
        let first = acquire_owner_lock(dir.path()).expect("first owner");
        let refused = acquire_owner_lock(dir.path()).expect_err("second owner");
        assert!(
            refused.message.contains(&format!("process {}", std::process::id())),
            "{}",
            refused.message
        );
        drop(first);
        acquire_owner_lock(dir.path()).expect("free again once released");
    }

    #[test]
    fn locks_of_dead_owners_are_removed_and_live_ones_kept() {
        let dir = tempfile::tempdir().expect("temp dir");
        let project = dir.path().join("projects/p");
        fs::create_dir_all(&project).expect("mkdir");
        let dead = project.join(".archive.lock");
        fs::write(&dead, "").expect("write");
        // Pid 0 is never a user process, and /proc/0 does not exist.
        fs::write(project.join(".archive.lock.owner.json"), r#"{"pid": 0, "created_ts": 1.0}"#)
            .expect("write");
        let live = project.join(".commit.lock");
        fs::write(&live, "").expect("write");
        let me = format!(r#"{{"pid": {}, "created_ts": 1.0}}"#, std::process::id());
        fs::write(project.join(".commit.lock.owner.json"), me).expect("write");
        let orphan = project.join("gone.lock.owner.json");
        fs::write(&orphan, "{}").expect("write");
        let fresh_unowned = project.join("fresh.lock");
        fs::write(&fresh_unowned, "").expect("write");

        let removed = heal_stale_locks(dir.path());

        assert!(!dead.exists() && !project.join(".archive.lock.owner.json").exists());
        assert!(!orphan.exists());
        assert!(live.exists(), "a lock whose owner runs is kept");
        assert!(fresh_unowned.exists(), "an unowned lock younger than 180 s is kept");
        assert_eq!(removed.len(), 3, "{removed:?}");
    }

    #[test]
    fn an_os_locked_file_is_never_stale() {
        let dir = tempfile::tempdir().expect("temp dir");
        let server_lock = dir.path().join("server.lock");
        let held = File::create(&server_lock).expect("create");
        held.lock().expect("hold the OS lock");
        held.set_modified(SystemTime::now() - Duration::from_secs(3600)).expect("set mtime");
        assert!(heal_stale_locks(dir.path()).is_empty(), "held lock kept");
        drop(held);
        assert_eq!(heal_stale_locks(dir.path()), vec![server_lock], "released and old: stale");
    }

    #[test]
    fn git_lock_files_are_stale_only_when_old() {
        let dir = tempfile::tempdir().expect("temp dir");
        let heads = dir.path().join(".git/refs/heads");
        fs::create_dir_all(&heads).expect("mkdir");
        let young = heads.join("main.lock");
        fs::write(&young, "").expect("write");
        assert!(heal_stale_locks(dir.path()).is_empty());
        let old = File::options().write(true).open(&young).expect("open");
        old.set_modified(SystemTime::now() - Duration::from_secs(10)).expect("set mtime");
        assert_eq!(heal_stale_locks(dir.path()), vec![young]);
    }

    #[test]
    fn a_killed_owners_young_branch_lock_is_removed_by_the_next_owner() {
        let dir = tempfile::tempdir().expect("temp dir");
        let git = dir.path().join(".git");
        fs::create_dir_all(git.join("refs/heads/team")).expect("mkdir");
        fs::write(git.join("HEAD"), "ref: refs/heads/team/main\n").expect("HEAD");
        let branch_lock = git.join("refs/heads/team/main.lock");
        let other_lock = git.join("packed-refs.lock");
        let owner_file = dir.path().join(format!("{OWNER_LOCK}.owner.json"));

        // The last owner stopped cleanly (no owner file): a young lock may be someone's.
        fs::write(&branch_lock, "").expect("write");
        fs::write(&other_lock, "").expect("write");
        drop(take_ownership(dir.path()).expect("owner"));
        assert!(!owner_file.exists(), "a clean stop removes the owner file");
        assert!(branch_lock.exists(), "a young branch lock is kept after a clean stop");

        // The owner file outlived its OS lock: the last owner was killed.
        fs::write(&owner_file, r#"{"pid": 4194304, "created_ts": 1.0}"#).expect("write");
        let _owner = take_ownership(dir.path()).expect("owner");
        assert!(!branch_lock.exists(), "the killed owner's branch lock is removed at once");
        assert!(other_lock.exists(), "young locks it cannot have held are left to age");
    }
}
