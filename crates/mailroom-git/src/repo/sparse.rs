//! Directories retired from the work tree: their files leave it and Git's index, which holds
//! one sparse entry per directory instead (Git's sparse index, `sdir`), so neither grows with
//! what they hold. The commits keep them whole: `git log`, `git show HEAD:<path>` and
//! `git grep HEAD` read them as before, and `git sparse-checkout add <dir>` (or `disable`)
//! brings them back. The caller chooses what to retire (the archive: its oldest months).
//!
//! Git is told as it would tell itself: `core.sparseCheckout`, `core.sparseCheckoutCone` and
//! `index.sparse` are set, and `.git/info/sparse-checkout` lists, in cone form, every
//! directory of HEAD not retired (each ancestor of a retired directory as a parent, its
//! other subdirectories whole). The retired directories themselves are listed one per line
//! in `.git/mailroom-retired`, written before anything else changes; the index's marker is
//! removed first and written again once the index holds the sparse entries, so a retirement
//! cut short is finished by the rebuild at the next start. At open, a retired directory that
//! Git's sparse-checkout brought back (the cone includes it, or sparse checkout is off) is
//! no longer retired, and the index is rebuilt. A retired directory's files go to the trash
//! (`.git/mailroom-trash`) at once and are deleted from there on a thread of their own.

use std::collections::{BTreeSet, HashSet};
use std::fmt::Write as _;
use std::fs;
use std::path::Path;

use git2::{ObjectType, Oid};

use super::{ArchiveRepo, ancestors, head_tree, remove_emptied_parents};
use crate::atomic_file::write_atomically;
use crate::error::{Result, git_err, io_err};

/// The list of retired directories, in the Git directory.
const RETIRED: &str = "mailroom-retired";
/// Git's list of what the work tree holds.
const CONE: &str = "info/sparse-checkout";
/// Where retired directories wait, in the Git directory, for their files to be deleted.
const TRASH: &str = "mailroom-trash";

/// The retired directories, and the cone last written for them.
#[derive(Debug, Default)]
pub(super) struct Sparse {
    retired: BTreeSet<String>,
    /// Ancestors of retired directories (`""` for the root): only their listed
    /// subdirectories are in the work tree.
    parents: HashSet<String>,
    /// Subdirectories of parents that the cone names whole.
    listed: HashSet<String>,
}

impl Sparse {
    /// The retired directories recorded in `git_dir` (none when there is no list).
    pub(super) fn load(git_dir: &Path) -> Self {
        Self { retired: retired_list(git_dir).into_iter().collect(), ..Self::default() }
    }

    pub(super) fn is_retired(&self, dir: &str) -> bool {
        self.retired.contains(dir)
    }

    /// The retired directories, in order.
    pub(super) fn retired(&self) -> impl Iterator<Item = &str> {
        self.retired.iter().map(String::as_str)
    }

    /// `dir` itself when retired, or the retired directory it lies under: the outermost.
    pub(super) fn outermost<'a>(&'a self, dir: &'a str) -> Option<&'a str> {
        self.retired_dir_of(dir).or_else(|| self.is_retired(dir).then_some(dir))
    }

    /// The retired directory `path` lies under (the outermost), if any.
    pub(super) fn retired_dir_of(&self, path: &str) -> Option<&str> {
        if self.retired.is_empty() {
            return None;
        }
        ancestors(path).find_map(|dir| self.retired.get(dir).map(String::as_str))
    }
}

/// The retired directories recorded in `git_dir`, as listed (none when there is no list).
pub(crate) fn retired_list(git_dir: &Path) -> Vec<String> {
    let text = fs::read_to_string(git_dir.join(RETIRED)).unwrap_or_default();
    text.lines().filter(|l| !l.is_empty()).map(str::to_string).collect()
}

impl ArchiveRepo {
    /// The directories retired from the work tree, in order.
    pub fn retired_directories(&self) -> impl Iterator<Item = &str> {
        self.sparse.retired()
    }

    /// The names of the subdirectories of `dir` (`""`: the root) in HEAD; none when HEAD
    /// has no such directory.
    pub fn directories_in(&self, dir: &str) -> Result<Vec<String>> {
        let Some(tree) = self.head_directory(dir)? else { return Ok(Vec::new()) };
        let tree = self.repo.find_tree(tree).map_err(|e| git_err("find tree", e))?;
        Ok(tree
            .iter()
            .filter(|entry| entry.kind() == Some(ObjectType::Tree))
            .filter_map(|entry| entry.name().ok().map(str::to_string))
            .collect())
    }

    /// The tree of directory `dir` (`""`: the root) in HEAD.
    pub(super) fn head_directory(&self, dir: &str) -> Result<Option<Oid>> {
        let Some(root) = head_tree(&self.repo)? else { return Ok(None) };
        if dir.is_empty() {
            return Ok(Some(root.id()));
        }
        match root.get_path(Path::new(dir)) {
            Ok(entry) if entry.kind() == Some(ObjectType::Tree) => Ok(Some(entry.id())),
            Ok(_) => Ok(None),
            Err(e) if e.code() == git2::ErrorCode::NotFound => Ok(None),
            Err(e) => Err(git_err("tree lookup", e)),
        }
    }

    /// Retires `dirs` (repo-relative directories of HEAD) from the work tree: from the next
    /// index sync, which this runs, each is one sparse entry in the index and its files are
    /// gone from the work tree. A directory HEAD lacks, or one already retired (itself or
    /// an ancestor), is passed over; a retired directory under a new one is folded into it.
    /// Returns how many were retired. When a human's Git holds the index, the index and the
    /// work tree follow at a later sync.
    pub fn retire_directories(&mut self, dirs: &[String]) -> Result<usize> {
        let asked: BTreeSet<&str> = dirs.iter().map(|dir| dir.trim_matches('/')).collect();
        // One given under another given is folded into it.
        let under_another = |dir: &str| ancestors(dir).any(|ancestor| asked.contains(ancestor));
        let mut new = Vec::new();
        for &dir in &asked {
            let known = self.sparse.outermost(dir).is_some();
            if dir.is_empty() || known || under_another(dir) || self.head_directory(dir)?.is_none()
            {
                continue;
            }
            new.push(dir.to_string());
        }
        if new.is_empty() {
            return Ok(0);
        }
        self.unmark_index()?;
        for dir in &new {
            let nested = format!("{dir}/");
            self.sparse.retired.retain(|old| !old.starts_with(&nested));
            self.sparse.retired.insert(dir.clone());
        }
        self.save_retired()?;
        self.write_sparse_checkout()?;
        self.index_collapse.extend(new.iter().cloned());
        self.sync_index()?;
        Ok(new.len())
    }

    /// At open: a list of retired directories with sparse checkout turned off meanwhile (a
    /// human's `git sparse-checkout disable` brought every file back) is dropped, and the
    /// index rebuilt; otherwise the cone is brought up to date with HEAD.
    pub(super) fn open_sparse(&mut self) -> Result<()> {
        let trash = self.repo.path().join(TRASH);
        if trash.exists() {
            empty_trash(&trash);
        }
        if self.sparse.retired.is_empty() {
            return Ok(());
        }
        let config = self.repo.config().map_err(|e| git_err("config", e))?;
        let before = self.sparse.retired.len();
        if !config.get_bool("core.sparseCheckout").unwrap_or(false) {
            self.sparse.retired.clear();
        } else {
            let cone = fs::read_to_string(self.repo.path().join(CONE)).unwrap_or_default();
            let whole = whole_directories(&cone);
            let brought_back = |dir: &str| ancestors(dir).chain([dir]).any(|d| whole.contains(d));
            self.sparse.retired.retain(|dir| !brought_back(dir));
        }
        if self.sparse.retired.len() != before {
            // Rebuilt at the first sync; a stop before it must not leave the marker naming
            // an index that still has the directories' sparse entries.
            self.unmark_index()?;
            tracing::info!(
                directories = before - self.sparse.retired.len(),
                "retired archive directories were brought back by Git's sparse-checkout"
            );
            self.save_retired()?;
            self.index_rebuild = true;
        }
        if self.sparse.retired.is_empty() {
            return Ok(());
        }
        self.write_sparse_checkout()
    }

    /// Rewrites the cone, when a new directory appeared under a retired one's ancestor.
    pub(super) fn note_new_directories(&mut self, paths: &[(String, Oid)]) {
        if self.sparse.parents.is_empty() {
            return;
        }
        let mut stale = false;
        for (path, _) in paths {
            let mut parent = "";
            for dir in ancestors(path) {
                if !self.sparse.parents.contains(dir) {
                    let known = self.sparse.listed.contains(dir) || self.sparse.is_retired(dir);
                    stale |= !known && self.sparse.parents.contains(parent);
                    break;
                }
                parent = dir;
            }
        }
        if stale && let Err(e) = self.write_sparse_checkout() {
            tracing::warn!(error = %e, "the archive's sparse-checkout list is not updated");
        }
    }

    /// Takes the retired directories' files out of the work tree (the index no longer
    /// lists them), with the directories they leave empty. Each directory is renamed into
    /// the trash (`.git/mailroom-trash`, on the same filesystem, which Git never looks at)
    /// at once, and its files are deleted there on a thread of their own: unlinking a
    /// month's hundreds of thousands of files took seconds, which the commits behind would
    /// have waited.
    pub(super) fn remove_retired_from_work_tree(&self, dirs: &[String]) {
        let trash = self.repo.path().join(TRASH);
        let mut moved = false;
        for (n, dir) in dirs.iter().enumerate() {
            let path = self.root.join(dir);
            if !path.exists() {
                continue;
            }
            let _ = fs::create_dir_all(&trash);
            let target = trash.join(format!("{}-{n}", unique_name()));
            // Another filesystem (a `.git` elsewhere) cannot take a rename: deleted here.
            match fs::rename(&path, &target).or_else(|_| fs::remove_dir_all(&path)) {
                Ok(()) => moved = true,
                Err(e) => tracing::warn!(error = %e, path = %path.display(), "a retired \
                    directory is still in the work tree"),
            }
            remove_emptied_parents(&self.root, dir);
        }
        if moved {
            empty_trash(&trash);
        }
    }

    fn save_retired(&self) -> Result<()> {
        let path = self.repo.path().join(RETIRED);
        if self.sparse.retired.is_empty() {
            return match fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    Err(io_err("cannot remove", &path, e))
                }
                _ => Ok(()),
            };
        }
        let text: String = self.sparse.retired.iter().map(|dir| format!("{dir}\n")).collect();
        write_atomically(&path, text.as_bytes()).map_err(|e| io_err("cannot write", &path, e))
    }

    /// Sets Git's sparse-checkout configuration and writes the cone for HEAD's directories.
    pub(super) fn write_sparse_checkout(&mut self) -> Result<()> {
        let mut parents: BTreeSet<String> = BTreeSet::from([String::new()]);
        for dir in self.sparse.retired() {
            parents.extend(ancestors(dir).map(str::to_string));
        }
        let mut listed = BTreeSet::new();
        for parent in &parents {
            for name in self.directories_in(parent)? {
                let child = if parent.is_empty() { name } else { format!("{parent}/{name}") };
                if !parents.contains(&child) && !self.sparse.is_retired(&child) {
                    listed.insert(child);
                }
            }
        }
        let mut cone = String::from("/*\n!/*/\n");
        for parent in parents.iter().filter(|p| !p.is_empty()) {
            let pattern = escaped(parent);
            let _ = write!(cone, "/{pattern}/\n!/{pattern}/*/\n");
        }
        for dir in &listed {
            let _ = writeln!(cone, "/{}/", escaped(dir));
        }
        let path = self.repo.path().join(CONE);
        if fs::read_to_string(&path).ok().as_deref() != Some(cone.as_str()) {
            if let Some(info) = path.parent() {
                fs::create_dir_all(info).map_err(|e| io_err("cannot create", info, e))?;
            }
            write_atomically(&path, cone.as_bytes())
                .map_err(|e| io_err("cannot write", &path, e))?;
        }
        let mut config = self.repo.config().map_err(|e| git_err("config", e))?;
        for key in ["core.sparseCheckout", "core.sparseCheckoutCone", "index.sparse"] {
            if !config.get_bool(key).unwrap_or(false) {
                config.set_bool(key, true).map_err(|e| git_err("config", e))?;
            }
        }
        self.sparse.parents = parents.into_iter().collect();
        self.sparse.listed = listed.into_iter().collect();
        Ok(())
    }
}

/// A name no other trash entry has: the time in nanoseconds and the process.
fn unique_name() -> String {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos());
    format!("{nanos}-{}", std::process::id())
}

/// Deletes what the trash holds, on a thread of its own (a failure only leaves files there
/// for the next start's try).
fn empty_trash(trash: &Path) {
    let trash = trash.to_path_buf();
    let started = std::thread::Builder::new().name("mailroom-trash".to_string()).spawn(move || {
        for entry in fs::read_dir(&trash).into_iter().flatten().flatten() {
            if let Err(e) = fs::remove_dir_all(entry.path()) {
                tracing::warn!(error = %e, path = %entry.path().display(), "trash not emptied");
            }
        }
    });
    if let Err(e) = started {
        tracing::warn!(error = %e, "cannot start emptying the archive's trash");
    }
}

/// The directories a cone file includes whole: its `/<dir>/` lines not followed by their
/// `!/<dir>/*/` (unescaped).
fn whole_directories(cone: &str) -> HashSet<String> {
    let lines: Vec<&str> = cone.lines().collect();
    let mut whole = HashSet::new();
    for (at, line) in lines.iter().enumerate() {
        let Some(dir) = line.strip_prefix('/').and_then(|l| l.strip_suffix('/')) else { continue };
        if dir == "*" || lines.get(at + 1) == Some(&format!("!/{dir}/*/").as_str()) {
            continue;
        }
        whole.insert(unescaped(dir));
    }
    whole
}

fn unescaped(pattern: &str) -> String {
    let mut dir = String::with_capacity(pattern.len());
    let mut chars = pattern.chars();
    while let Some(c) = chars.next() {
        dir.push(if c == '\\' { chars.next().unwrap_or(c) } else { c });
    }
    dir
}

/// A directory as a cone pattern: Git's wildcard and escape characters escaped.
fn escaped(dir: &str) -> String {
    let mut pattern = String::with_capacity(dir.len());
    for c in dir.chars() {
        if matches!(c, '*' | '?' | '[' | '\\') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern
}

#[cfg(test)]
mod tests;
