//! Git's index, kept in step with the archive's commits for humans (`git status`), without
//! ever being read whole on the way: additions are merged in as a stream (`index_file`).
//!
//! After each sync that leaves nothing waiting, the commit the index then reflects is
//! written to `.git/mailroom-index` (its id and a newline). At open the marker replaces
//! reading the index: naming HEAD, the index is in step; naming an older commit (a crash
//! between a commit and the next sync, or a human's commit), the files that differ between
//! the two trees wait for the next sync like a commit's (libgit2's tree diff skips the
//! subtrees both share, so this costs what changed, not the archive's size). Reading the index
//! and building its trees took 82 % of a start-up at 400,000 files and grew with them. Only
//! without a usable marker (an archive from before it, an index removed) is the index
//! rebuilt from HEAD as before, at the first sync rather than in the way of start-up.

use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use git2::{Delta, DiffOptions, Index, IndexEntry, IndexTime, Oid};

use super::{ArchiveRepo, head_commit, head_tree};
use crate::atomic_file::write_atomically;
use crate::error::{Result, git_err};
use crate::index_file::{self, Update};

/// The marker's file name in the Git directory.
const MARKER: &str = "mailroom-index";

impl ArchiveRepo {
    /// Entries in Git's index (about one per archived file).
    pub fn index_entries(&self) -> usize {
        self.index_len
    }

    /// Git's index as on disk (empty when there is none yet), apart from the repository's
    /// own copy, so that it is freed when dropped.
    fn load_index(&self) -> Result<Index> {
        Index::open(&self.repo.path().join("index")).map_err(|e| git_err("index", e))
    }

    /// Whether committed paths still wait for the index, or the index waits to be rebuilt.
    pub fn index_stale(&self) -> bool {
        self.index_rebuild || !self.index_pending.is_empty() || !self.index_removals.is_empty()
    }

    /// How many committed paths wait for the index.
    pub fn index_backlog(&self) -> usize {
        self.index_pending.len() + self.index_removals.len()
    }

    /// Records the committed files in Git's index (with their stat data, so `git status`
    /// stays fast) and writes it. Best effort: when a human's git command holds
    /// `index.lock`, the paths wait for the next call.
    pub fn sync_index(&mut self) -> Result<()> {
        if self.index_abandoned {
            self.index_pending.clear();
            self.index_removals.clear();
            return Ok(());
        }
        if self.index_rebuild {
            self.realign_index()?;
            self.index_rebuild = false;
        }
        self.sync_index_additions()?;
        if self.index_pending.is_empty() && !self.index_removals.is_empty() {
            self.sync_index_removals()?;
        }
        if !self.index_stale() {
            self.mark_index();
        }
        Ok(())
    }

    /// Takes the removed files out of Git's index through libgit2 (removals are rare: a
    /// person deleting messages), after the additions before them. A busy index keeps them
    /// for the next call.
    fn sync_index_removals(&mut self) -> Result<()> {
        let mut index = match self.load_index() {
            Ok(index) => index,
            Err(e) => {
                tracing::warn!(error = %e, "the archive's Git index cannot be read; it is no \
                    longer kept in step");
                self.index_abandoned = true;
                self.index_removals.clear();
                return Ok(());
            }
        };
        for path in &self.index_removals {
            // A path the index lacks (never synced, or removed before a crash) is no error.
            let _ = index.remove_path(Path::new(path));
        }
        match index.write() {
            Ok(()) => {
                self.index_len = index.len();
                self.index_removals.clear();
            }
            Err(e) if e.code() == git2::ErrorCode::Locked => {
                tracing::debug!(error = %e.message(), "archive index busy; will retry");
            }
            Err(e) => {
                tracing::warn!(error = %e.message(), "the archive's Git index cannot be \
                    written; it is no longer kept in step (`git status` will differ until it \
                    is rebuilt, e.g. `rm .git/index && git reset`)");
                self.index_abandoned = true;
                self.index_removals.clear();
            }
        }
        Ok(())
    }

    /// The additions of [`sync_index`](Self::sync_index).
    fn sync_index_additions(&mut self) -> Result<()> {
        if self.index_pending.is_empty() {
            return Ok(());
        }
        let paths = std::mem::take(&mut self.index_pending);
        match index_file::add_entries(self.repo.path(), self.index_entries_of(&paths)) {
            Ok(Update::Written(entries)) => self.index_len = entries,
            Ok(Update::Busy) => {
                tracing::debug!("archive index busy; will retry");
                self.index_pending = paths;
            }
            // A form a human's Git chose: libgit2 rewrites version 4; a split or sparse
            // index, or a damaged one, it cannot read either.
            Ok(update @ (Update::Unsupported | Update::Damaged(_))) => {
                if let Err(e) = self.sync_index_with_libgit2(&paths) {
                    if !self.index_abandoned {
                        tracing::warn!(?update, error = %e, "the archive's Git index is of a \
                            form mailroom cannot update; it is no longer kept in step (`git \
                            status` will list the archive's files until it is rebuilt, e.g. \
                            `rm .git/index && git reset`)");
                    }
                    self.index_abandoned = true;
                }
            }
            Err(e) => {
                self.index_pending = paths;
                return Err(e);
            }
        }
        Ok(())
    }

    /// Index entries for committed files still in the work tree, with their stat data.
    ///
    /// Each path is stat'ed for itself, even a hard link of another path of its batch: the
    /// paths wait here across batches, that other path may be rewritten meanwhile, and Git
    /// takes a size differing from the index's as a change without reading the file.
    fn index_entries_of(&self, paths: &[(String, Oid)]) -> Vec<IndexEntry> {
        let stat = |path: &str| fs::metadata(self.root.join(path)).ok();
        paths
            .iter()
            .filter_map(|(path, blob)| Some(index_entry(path, *blob, &stat(path)?)))
            .collect()
    }

    /// `sync_index` through libgit2, which loads the whole index. A busy index keeps the
    /// paths for the next call; another failure leaves them to the caller.
    fn sync_index_with_libgit2(&mut self, paths: &[(String, Oid)]) -> Result<()> {
        let mut index = self.load_index()?;
        for entry in self.index_entries_of(paths) {
            index.add(&entry).map_err(|e| git_err("index add", e))?;
        }
        match index.write() {
            Ok(()) => self.index_len = index.len(),
            Err(e) => {
                tracing::debug!(error = %e.message(), "archive index busy; will retry");
                self.index_pending = paths.to_vec();
            }
        }
        Ok(())
    }

    /// Reloads the index from HEAD's tree when they differ: the whole index is read (and its
    /// tree built), so this runs only when the marker cannot say what the index lacks.
    fn realign_index(&mut self) -> Result<()> {
        let Some(head_tree) = head_tree(&self.repo)?.map(|t| t.id()) else { return Ok(()) };
        let mut index = self.load_index()?;
        let index_tree = index.write_tree_to(&self.repo).ok();
        if index_tree != Some(head_tree) {
            let tree = self.repo.find_tree(head_tree).map_err(|e| git_err("find tree", e))?;
            index.read_tree(&tree).map_err(|e| git_err("index reload", e))?;
            if let Err(e) = index.write() {
                // The index is not kept: the next start re-aligns it.
                tracing::warn!(error = %e.message(), "cannot rewrite the archive index");
                return Ok(());
            }
        }
        self.index_len = index.len();
        Ok(())
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
}

fn index_entry(path: &str, id: Oid, meta: &fs::Metadata) -> IndexEntry {
    // Index stat fields are 32-bit by format; truncation is what Git itself stores.
    let time = |secs: i64, nanos: i64| IndexTime::new(secs as i32, nanos as u32);
    IndexEntry {
        ctime: time(meta.ctime(), meta.ctime_nsec()),
        mtime: time(meta.mtime(), meta.mtime_nsec()),
        dev: meta.dev() as u32,
        ino: meta.ino() as u32,
        mode: 0o100644,
        uid: meta.uid(),
        gid: meta.gid(),
        file_size: meta.size() as u32,
        id,
        flags: path.len().min(0xfff) as u16,
        flags_extended: 0,
        path: path.as_bytes().to_vec(),
    }
}
