//! Git's index, kept in step with the archive's commits for humans (`git status`), without
//! ever being held in memory: every update is a streamed merge (`index_file`).
//!
//! After each sync that leaves nothing waiting, the commit the index then reflects is
//! written to `.git/mailroom-index` (its id and a newline). At open the marker replaces
//! reading the index: naming HEAD, the index is in step; naming an older commit (a crash
//! between a commit and the next sync, or a human's commit), the files that differ between
//! the two trees wait for the next sync like a commit's (libgit2's tree diff skips the
//! subtrees both share, so this costs what changed, not the archive's size). Reading the
//! index and building its trees took 82 % of a start-up at 400,000 files and grew with them.
//! Only without a usable marker (an archive from before it, an index removed, a retirement
//! cut short) is the index rebuilt from HEAD's tree, at the first sync rather than in the
//! way of start-up; so is an index the merge cannot take (a form a human's Git chose).
//!
//! A file under a retired directory (`repo/sparse.rs`) has no entry of its own: its
//! directory's sparse entry is given the directory's new tree instead.

use std::collections::BTreeSet;
use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::PathBuf;

use git2::{Delta, DiffOptions, IndexEntry, IndexTime, ObjectType, Oid};

use super::{ArchiveRepo, head_commit, head_tree};
use crate::atomic_file::write_atomically;
use crate::error::{Result, git_err, io_err};
use crate::index_file::{self, Changes, DIRECTORY_MODE, SKIP_WORKTREE, Update};

/// The marker's file name in the Git directory.
const MARKER: &str = "mailroom-index";
/// A file's mode in the index (what the archive writes).
const FILE_MODE: u32 = 0o100644;

impl ArchiveRepo {
    /// Entries in Git's index (about one per archived file in the work tree).
    pub fn index_entries(&self) -> usize {
        self.index_len
    }

    /// Whether committed paths still wait for the index, or the index waits to be rebuilt.
    pub fn index_stale(&self) -> bool {
        self.index_rebuild
            || !self.index_pending.is_empty()
            || !self.index_removals.is_empty()
            || !self.index_collapse.is_empty()
    }

    /// How many committed paths wait for the index.
    pub fn index_backlog(&self) -> usize {
        self.index_pending.len() + self.index_removals.len()
    }

    /// Records the committed files in Git's index (with their stat data, so `git status`
    /// stays fast) and writes it. Best effort: when a human's git command holds
    /// `index.lock`, the paths wait for the next call.
    pub fn sync_index(&mut self) -> Result<()> {
        if self.index_rebuild && !self.rebuild_index()? {
            return Ok(());
        }
        if self.index_stale() {
            self.apply_index_changes()?;
        }
        if !self.index_stale() {
            self.mark_index();
        }
        Ok(())
    }

    /// Writes the waiting additions, removals and retirements into the index.
    fn apply_index_changes(&mut self) -> Result<()> {
        let paths = std::mem::take(&mut self.index_pending);
        let removals = std::mem::take(&mut self.index_removals);
        let collapse = std::mem::take(&mut self.index_collapse);
        let changes = self.index_changes(&paths, &removals, &collapse)?;
        match index_file::update(self.repo.path(), changes) {
            Ok(Update::Written(entries)) => {
                self.index_len = entries;
                self.remove_retired_from_work_tree(&collapse);
                self.note_new_directories(&paths);
            }
            Ok(Update::Busy) => {
                tracing::debug!("archive index busy; will retry");
                (self.index_pending, self.index_removals) = (paths, removals);
                self.index_collapse = collapse;
            }
            // A form a human's Git chose (version 4, a split index), a sparse entry of a
            // human's own sparse checkout over a committed file, or a damaged index: written
            // anew from HEAD, which holds everything that waited.
            Ok(update @ (Update::Unsupported | Update::Damaged(_))) => {
                tracing::info!(?update, "the archive's Git index is rebuilt from HEAD");
                self.index_rebuild = true;
                self.rebuild_index()?;
            }
            Err(e) => {
                (self.index_pending, self.index_removals) = (paths, removals);
                self.index_collapse = collapse;
                return Err(e);
            }
        }
        Ok(())
    }

    /// The index changes for committed `paths` and `removals`, and for the directories to
    /// `collapse` into sparse entries. A path under a retired directory refreshes that
    /// directory's sparse entry instead of having one of its own.
    fn index_changes(
        &self,
        paths: &[(String, Oid)],
        removals: &[String],
        collapse: &[String],
    ) -> Result<Changes> {
        let mut changes = Changes::default();
        // A directory folded into a retired ancestor since it was queued is that ancestor.
        let mut retired: BTreeSet<&str> =
            collapse.iter().filter_map(|dir| self.sparse.outermost(dir)).collect();
        let mut files = Vec::with_capacity(paths.len());
        for (path, blob) in paths {
            match self.sparse.retired_dir_of(path) {
                Some(dir) => _ = retired.insert(dir),
                None => files.push((path.as_str(), *blob)),
            }
        }
        changes.set = self.index_entries_of(&files);
        for path in removals {
            match self.sparse.retired_dir_of(path) {
                Some(dir) => _ = retired.insert(dir),
                None => changes.remove.push(path.clone().into_bytes()),
            }
        }
        // A sparse entry is set with its directory collapsed: whatever stands under it (a
        // human's Git may have expanded it into its files) goes.
        for dir in retired {
            changes.collapse.push(format!("{dir}/").into_bytes());
            match self.head_directory(dir)? {
                Some(tree) => changes.set.push(sparse_entry(dir, tree)),
                None => changes.remove.push(format!("{dir}/").into_bytes()),
            }
        }
        Ok(changes)
    }

    /// Index entries for committed files still in the work tree, with their stat data.
    ///
    /// Each path is stat'ed for itself, even a hard link of another path of its batch: the
    /// paths wait here across batches, that other path may be rewritten meanwhile, and Git
    /// takes a size differing from the index's as a change without reading the file.
    fn index_entries_of(&self, paths: &[(&str, Oid)]) -> Vec<IndexEntry> {
        let stat = |path: &str| fs::metadata(self.root.join(path)).ok();
        paths
            .iter()
            .filter_map(|(path, blob)| Some(file_entry(path, *blob, FILE_MODE, Some(&stat(path)?))))
            .collect()
    }

    /// Writes the index anew from HEAD's tree (a retired directory as its sparse entry), with
    /// the work tree's stat data, and takes the retired directories' files out of the work
    /// tree. The entries are written as the tree walk yields them, none held. False when a
    /// human's Git holds the index: the rebuild waits for the next sync.
    fn rebuild_index(&mut self) -> Result<bool> {
        let Some(tree) = head_tree(&self.repo)? else {
            self.index_rebuild = false;
            return Ok(true);
        };
        let walk = TreeEntries { archive: self, stack: vec![(String::new(), tree, 0)] };
        match index_file::rebuild(self.repo.path(), walk)? {
            Update::Written(entries) => self.index_len = entries,
            _ => return Ok(false),
        }
        let retired: Vec<String> = self.sparse.retired().map(str::to_string).collect();
        self.remove_retired_from_work_tree(&retired);
        if !retired.is_empty() {
            self.write_sparse_checkout()?;
        }
        // HEAD holds every committed path: nothing waits any more.
        self.index_pending.clear();
        self.index_removals.clear();
        self.index_collapse.clear();
        self.index_rebuild = false;
        Ok(true)
    }

    /// At open: what the index lacks of HEAD, from its marker, waits for the next sync;
    /// without a usable marker the next sync rebuilds the index. Reads the entry count from
    /// the index's header, not its entries.
    pub(super) fn catch_up_index(&mut self) -> Result<()> {
        self.index_len = index_file::entry_count(self.repo.path()).unwrap_or(0);
        let Some(head) = head_commit(&self.repo)?.map(|c| c.id()) else { return Ok(()) };
        let marked = self.read_marker();
        self.index_marked = marked;
        let index_present = self.repo.path().join("index").exists();
        match marked {
            Some(marked) if index_present && marked == head => {}
            Some(marked) if index_present => {
                if let Err(e) = self.queue_changes_since(marked, head) {
                    tracing::debug!(error = %e, "index marker unusable; rebuilding the index");
                    self.index_rebuild = true;
                }
            }
            _ => self.index_rebuild = true,
        }
        Ok(())
    }

    /// Queues for the index the files that differ between `from`'s tree and `to`'s.
    fn queue_changes_since(&mut self, from: Oid, to: Oid) -> Result<()> {
        let tree_of = |commit: Oid| {
            self.repo.find_commit(commit).and_then(|c| c.tree()).map_err(|e| git_err("tree", e))
        };
        let (old, new) = (tree_of(from)?, tree_of(to)?);
        let mut options = DiffOptions::new();
        options.skip_binary_check(true);
        let diff = self
            .repo
            .diff_tree_to_tree(Some(&old), Some(&new), Some(&mut options))
            .map_err(|e| git_err("diff", e))?;
        for delta in diff.deltas() {
            let path =
                |file: git2::DiffFile<'_>| file.path().and_then(|p| p.to_str()).map(str::to_string);
            match delta.status() {
                Delta::Deleted => self.index_removals.extend(path(delta.old_file())),
                _ => {
                    let id = delta.new_file().id();
                    self.index_pending.extend(path(delta.new_file()).map(|p| (p, id)));
                }
            }
        }
        Ok(())
    }

    fn marker_path(&self) -> PathBuf {
        self.repo.path().join(MARKER)
    }

    /// The commit the marker names, if it names one.
    fn read_marker(&self) -> Option<Oid> {
        let text = fs::read_to_string(self.marker_path()).ok()?;
        Oid::from_str(text.trim()).ok()
    }

    /// Notes that the index now reflects HEAD. A marker that cannot be written is only a
    /// slower next start (the index is rebuilt), so a failure is logged, not returned.
    fn mark_index(&mut self) {
        let head = match head_commit(&self.repo) {
            Ok(Some(commit)) => commit.id(),
            _ => return,
        };
        if self.index_marked == Some(head) {
            return;
        }
        match write_atomically(&self.marker_path(), format!("{head}\n").as_bytes()) {
            Ok(()) => self.index_marked = Some(head),
            Err(e) => tracing::debug!(error = %e, "cannot write the index marker"),
        }
    }

    /// Removes the marker before a change the index must not be trusted across (a crash
    /// in the middle then rebuilds it).
    pub(super) fn unmark_index(&mut self) -> Result<()> {
        let path = self.marker_path();
        match fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => return Err(io_err("cannot remove", &path, e)),
        }
        self.index_marked = None;
        Ok(())
    }
}

/// The index entries of a tree, in the index's order (a tree's entries are in Git's tree
/// order, directories compared as if their name ended in `/`: walked depth first, that is
/// the order of their full paths), each file's with its stat data from the work tree, a
/// retired directory as its sparse entry. Holds one tree per level.
struct TreeEntries<'r> {
    archive: &'r ArchiveRepo,
    /// Per level: the directory's path with a trailing `/` (`""` at the root), its tree, and
    /// the next entry's position.
    stack: Vec<(String, git2::Tree<'r>, usize)>,
}

impl Iterator for TreeEntries<'_> {
    type Item = std::io::Result<IndexEntry>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            let (prefix, tree, at) = self.stack.last_mut()?;
            let Some(entry) = tree.get(*at) else {
                self.stack.pop();
                continue;
            };
            *at += 1;
            let Ok(name) = entry.name() else { continue };
            let path = format!("{prefix}{name}");
            let (id, kind, mode) = (entry.id(), entry.kind(), entry.filemode() as u32);
            drop(entry);
            match kind {
                Some(ObjectType::Tree) if self.archive.sparse.is_retired(&path) => {
                    return Some(Ok(sparse_entry(&path, id)));
                }
                Some(ObjectType::Tree) => match self.archive.repo.find_tree(id) {
                    Ok(subtree) => self.stack.push((format!("{path}/"), subtree, 0)),
                    Err(e) => return Some(Err(std::io::Error::other(e.message().to_string()))),
                },
                Some(ObjectType::Blob) => {
                    let meta = fs::symlink_metadata(self.archive.root.join(&path)).ok();
                    return Some(Ok(file_entry(&path, id, mode, meta.as_ref())));
                }
                _ => {}
            }
        }
    }
}

/// A file's index entry, with `meta`'s stat data (zero without: Git then reads the file).
fn file_entry(path: &str, id: Oid, mode: u32, meta: Option<&fs::Metadata>) -> IndexEntry {
    // Index stat fields are 32-bit by format; truncation is what Git itself stores.
    let time = |secs: i64, nanos: i64| IndexTime::new(secs as i32, nanos as u32);
    let zero = IndexTime::new(0, 0);
    IndexEntry {
        ctime: meta.map_or(zero, |m| time(m.ctime(), m.ctime_nsec())),
        mtime: meta.map_or(zero, |m| time(m.mtime(), m.mtime_nsec())),
        dev: meta.map_or(0, |m| m.dev() as u32),
        ino: meta.map_or(0, |m| m.ino() as u32),
        mode,
        uid: meta.map_or(0, MetadataExt::uid),
        gid: meta.map_or(0, MetadataExt::gid),
        file_size: meta.map_or(0, |m| m.size() as u32),
        id,
        flags: path.len().min(0xfff) as u16,
        flags_extended: 0,
        path: path.as_bytes().to_vec(),
    }
}

/// The sparse entry of retired directory `dir` (no trailing `/`), whose tree is `tree`: Git
/// writes these as the directory's path with a `/`, a directory's mode, no stat data and the
/// skip-worktree flag.
fn sparse_entry(dir: &str, tree: Oid) -> IndexEntry {
    let path = format!("{dir}/");
    let zero = IndexTime::new(0, 0);
    IndexEntry {
        ctime: zero,
        mtime: zero,
        dev: 0,
        ino: 0,
        mode: DIRECTORY_MODE,
        uid: 0,
        gid: 0,
        file_size: 0,
        id: tree,
        flags: path.len().min(0xfff) as u16,
        flags_extended: SKIP_WORKTREE,
        path: path.into_bytes(),
    }
}
