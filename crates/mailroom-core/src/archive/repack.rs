//! Keeps the archive's object store packed.
//!
//! Every commit writes new tree objects for the directories it touches, in one pack per
//! commit (`git.rs`), and the reference's layout puts a month's messages in one directory
//! (`messages/YYYY/MM/`), so each commit rewrites a tree that grows with the month. libgit2
//! has no repack, so the writer asks the `git` command, in a child process beside the writer
//! (commits go on meanwhile), every 32 commits: a geometric repack rolls up the small packs
//! (each commit writes one), so the packs stay few (libgit2 searches every pack's index for
//! an object it has not found in the last one) and each run handles little more than the
//! last commits' objects. Git 2.39's roll-ups store most trees whole, though, so once the
//! packs have doubled since the last full pack, the run is a full pack instead
//! (`full_pack.rs`: the whole archive in one pack, each path's versions as deltas). While a
//! run is still going, the next is skipped.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use git2::Oid;

use super::full_pack::{self, Replaced};

/// Commits between two repacks. Each commit's pack holds the month directories' trees whole
/// (3 MB raw, a megabyte deflated, once the month has 36,000 messages): at 200 messages/s,
/// repacking every 100 commits let 88 packs and 106 MB pile up, every 32 kept 34 packs and
/// 60 MB for a fifth more `git` CPU. A repack keeps the packs few but stores most trees
/// whole still: Git 2.39 pairs few trees with their previous versions (BENCHMARKS.md, "The
/// writer paces itself").
const COMMITS_PER_CHECK: u32 = 32;

/// The packs may grow past twice their size after the last full pack, plus this, before the
/// next full pack (`full_pack.rs`): each full pack reads and rewrites the whole archive, so
/// they are spaced geometrically, and the geometric roll-ups between them keep the packs few.
const FULL_PACK_GROWTH: u64 = 16 << 20;

enum Running {
    /// `git repack --geometric`.
    RollUp(Child),
    /// `full_pack::pack_everything` on its own thread.
    Full(JoinHandle<Result<u64, String>>),
}

pub(super) struct Repacker {
    root: PathBuf,
    commits_since_check: u32,
    running: Option<Running>,
    /// Bytes of packs right after the last full pack finished (at start, the largest pack:
    /// the last full pack's, if there was one).
    packed_after_full: u64,
    /// Tells a running full pack to stop (the server is stopping).
    stop: Arc<AtomicBool>,
    /// Cleared when `git` cannot be started: packing is then left to the humans.
    enabled: bool,
}

impl Repacker {
    pub(super) fn new(root: &Path) -> Self {
        let mut repacker = Self {
            root: root.to_path_buf(),
            commits_since_check: 0,
            running: None,
            packed_after_full: 0,
            stop: Arc::new(AtomicBool::new(false)),
            enabled: true,
        };
        // Otherwise every start would find the packs "doubled" and pack everything again.
        repacker.packed_after_full = repacker.pack_sizes().into_iter().max().unwrap_or(0);
        repacker
    }

    /// Sizes of the packs a full pack would rewrite (kept packs are not counted).
    fn pack_sizes(&self) -> Vec<u64> {
        let packs = full_pack::packs_without_keep(&self.root.join(".git/objects/pack"));
        packs
            .unwrap_or_default()
            .iter()
            .filter_map(|p| p.metadata().ok())
            .map(|m| m.len())
            .collect()
    }

    fn pack_bytes(&self) -> u64 {
        self.pack_sizes().iter().sum()
    }

    /// Called after each commit, HEAD now naming `head`; starts a repack every
    /// `COMMITS_PER_CHECK` commits unless one is still running. Says whether a repack
    /// finished since the last call: the writer then reopens the repository, so that libgit2
    /// lets go of the packs it replaced (open files, mapped windows and delta caches, kept
    /// per pack).
    pub(super) fn after_commit(&mut self, head: Oid) -> bool {
        let finished = self.reap();
        self.commits_since_check += 1;
        if !self.enabled || self.running.is_some() || self.commits_since_check < COMMITS_PER_CHECK {
            return finished;
        }
        self.commits_since_check = 0;
        if self.pack_bytes() >= 2 * self.packed_after_full + FULL_PACK_GROWTH {
            // Listed here, on the writer's thread, right after the commit moved HEAD: see
            // `Replaced`. A listing taken on the pack's thread could include a pack whose
            // commit HEAD did not name yet when `git rev-list` read it.
            let replaced = match Replaced::list(&self.root, head) {
                Ok(replaced) => replaced,
                Err(e) => {
                    tracing::warn!(error = %e, "the archive's packs cannot be listed");
                    return finished;
                }
            };
            let (root, stop) = (self.root.clone(), Arc::clone(&self.stop));
            let started =
                std::thread::Builder::new().name("mailroom-pack".to_string()).spawn(move || {
                    crate::background::lower_thread_priority();
                    full_pack::pack_everything(&root, &replaced, &stop)
                });
            match started {
                Ok(handle) => self.running = Some(Running::Full(handle)),
                Err(e) => tracing::warn!(error = %e, "cannot start the archive's full pack"),
            }
            return finished;
        }
        match gc_command(&self.root).spawn() {
            Ok(child) => self.running = Some(Running::RollUp(child)),
            Err(e) => {
                tracing::warn!(error = %e, "cannot run `git repack`; the archive stays unpacked");
                self.enabled = false;
            }
        }
        finished
    }

    /// At stop: waits for a running roll-up to finish (a half-written pack would only be
    /// garbage, but a finished one keeps the repository small; roll-ups are short), and
    /// stops a full pack, which on a large archive runs for many seconds (the next one
    /// starts over).
    pub(super) fn finish(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        match self.running.take() {
            Some(Running::RollUp(mut child)) => match child.wait() {
                Ok(status) if !status.success() => {
                    tracing::warn!(%status, "`git repack` failed");
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "`git repack` not awaited"),
            },
            Some(Running::Full(handle)) => self.full_pack_ended(handle),
            None => {}
        }
    }

    /// Forgets a finished run, logging a failure; whether one finished.
    fn reap(&mut self) -> bool {
        match self.running.take() {
            None => false,
            Some(Running::RollUp(mut child)) => {
                match child.try_wait() {
                    Ok(None) => {
                        self.running = Some(Running::RollUp(child));
                        return false;
                    }
                    Ok(Some(status)) if !status.success() => {
                        tracing::warn!(%status, "`git repack` failed");
                    }
                    Ok(Some(_)) => {}
                    Err(e) => tracing::warn!(error = %e, "`git repack` lost"),
                }
                true
            }
            Some(Running::Full(handle)) if !handle.is_finished() => {
                self.running = Some(Running::Full(handle));
                false
            }
            Some(Running::Full(handle)) => {
                self.full_pack_ended(handle);
                true
            }
        }
    }

    fn full_pack_ended(&mut self, handle: JoinHandle<Result<u64, String>>) {
        match handle.join() {
            Ok(Ok(_)) => {}
            Ok(Err(_)) if self.stop.load(Ordering::Relaxed) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "the archive's full pack failed"),
            Err(_) => tracing::warn!("the archive's full pack panicked"),
        }
        // Also after a failure: the next attempt waits for the packs to double again. The
        // packs written while it ran count too: basing the threshold on the full pack's own
        // size, with roll-ups going on beside it, was tried and cost more (BENCHMARKS.md).
        self.packed_after_full = self.pack_bytes();
    }
}

/// `git repack --geometric=2 -d` for the archive: rolls the smaller packs up so that each pack holds at least twice the objects of the next smaller
/// one, keeping their number logarithmic (each commit writes a pack). `git gc --auto`
/// did not keep up: its full repack (`-A`) of a soak's growing archive ran for minutes with a
/// 1.6 GB child while 115 packs piled up. The delta window is 2: without the paths
/// (`--stdin-packs` has none) Git's default of 10 found no more deltas among the month trees
/// and cost a fifth more CPU. Runs in the foreground of its own process (so it can
/// be awaited), touches no ref (the writer moves HEAD's branch meanwhile), quiet.
fn gc_command(root: &Path) -> Command {
    let mut command = full_pack::git(root);
    command.args(["repack", "-d", "-q", "--geometric=2", "--window=2"]).stdout(Stdio::null());
    command
}

#[cfg(test)]
mod tests {
    use super::*;

    fn loose_directories(root: &Path) -> usize {
        std::fs::read_dir(root.join(".git/objects"))
            .expect("objects")
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().len() == 2)
            .count()
    }

    /// Loose objects get packed, and what was committed still reads back.
    #[test]
    fn repack_packs_loose_objects() {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = git2::Repository::init(dir.path()).expect("init");
        let mut tree = repo.treebuilder(None).expect("tree builder");
        for i in 0..1000 {
            let blob = repo.blob(format!("object {i}").as_bytes()).expect("blob");
            tree.insert(format!("f{i}"), blob, 0o100644).expect("entry");
        }
        let tree = repo.find_tree(tree.write().expect("tree")).expect("find tree");
        let signature = git2::Signature::now("t", "t@example.com").expect("signature");
        let commit =
            repo.commit(Some("HEAD"), &signature, &signature, "all", &tree, &[]).expect("commit");
        assert!(loose_directories(dir.path()) > 200, "loose objects before packing");

        let mut packer = Repacker::new(dir.path());
        for _ in 0..COMMITS_PER_CHECK {
            packer.after_commit(commit);
        }
        packer.finish();

        assert!(loose_directories(dir.path()) < 10, "loose objects moved into a pack");
        let reopened = git2::Repository::open(dir.path()).expect("reopen");
        let tree = reopened.find_commit(commit).expect("commit").tree().expect("tree");
        assert_eq!(tree.len(), 1000);
        let entry = tree.get_name("f999").expect("entry");
        let blob = reopened.find_blob(entry.id()).expect("blob");
        assert_eq!(blob.content(), b"object 999");
    }

    fn packs(root: &Path) -> Vec<std::path::PathBuf> {
        std::fs::read_dir(root.join(".git/objects/pack"))
            .expect("pack dir")
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "pack"))
            .collect()
    }

    /// Packs of similar size (one per commit) are rolled up into one, and every object
    /// still reads back.
    #[test]
    fn small_packs_are_rolled_up() {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = git2::Repository::init(dir.path()).expect("init");
        let contents: Vec<Vec<u8>> =
            (0..20).map(|i| format!("packed {i}\n").into_bytes()).collect();
        let mut ids = Vec::new();
        for data in &contents {
            let id = git2::Oid::hash_object(git2::ObjectType::Blob, data).expect("hash");
            let object = super::super::pack::PackObject { id, kind: git2::ObjectType::Blob, data };
            super::super::pack::write_pack(&dir.path().join(".git/objects/pack"), &[object])
                .expect("pack");
            ids.push(id);
        }
        assert_eq!(packs(dir.path()).len(), 20);

        let mut packer = Repacker::new(dir.path());
        for _ in 0..COMMITS_PER_CHECK {
            assert!(!packer.after_commit(Oid::ZERO_SHA1), "nothing finished before the first run");
        }
        packer.finish();

        assert_eq!(packs(dir.path()).len(), 1, "rolled up");
        let reopened = git2::Repository::open(dir.path()).expect("reopen");
        let odb = reopened.odb().expect("odb");
        for (id, data) in ids.iter().zip(&contents) {
            assert_eq!(odb.read(*id).expect("object").data(), data.as_slice());
        }
        drop(repo);
    }

    /// Packs the loose objects, as `git repack -d` does.
    fn git_repack(root: &Path) {
        let status = Command::new("git")
            .arg("-C")
            .arg(root)
            .args(["repack", "-q", "-d"])
            .status()
            .expect("git repack");
        assert!(status.success());
    }

    /// Once the packs pass `FULL_PACK_GROWTH`, the run is a full pack: the two packs become
    /// one new pack, and its size is what the next full pack waits to see doubled. A new
    /// repacker on the same archive does not take the packed archive for grown.
    #[test]
    fn large_packs_get_a_full_pack() {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = git2::Repository::init(dir.path()).expect("init");
        // Incompressible, so that the pack is as large as the blob.
        let noise = super::super::pack::incompressible_bytes(FULL_PACK_GROWTH as usize + 1024);
        let mut tree = repo.treebuilder(None).expect("tree builder");
        tree.insert("noise", repo.blob(&noise).expect("blob"), 0o100644).expect("entry");
        let tree = repo.find_tree(tree.write().expect("tree")).expect("find tree");
        let signature = git2::Signature::now("t", "t@example.com").expect("signature");
        let commit =
            repo.commit(Some("HEAD"), &signature, &signature, "noise", &tree, &[]).expect("commit");
        let mut packer = Repacker::new(dir.path());
        assert!(packer.pack_bytes() < FULL_PACK_GROWTH, "loose, not yet packed");
        git_repack(dir.path());
        // A second commit, packed on its own.
        let mut tree = repo.treebuilder(Some(&tree)).expect("tree builder");
        tree.insert("note", repo.blob(b"a second pack").expect("blob"), 0o100644).expect("entry");
        let tree = repo.find_tree(tree.write().expect("tree")).expect("find tree");
        let parent = repo.find_commit(commit).expect("parent");
        let commit = repo
            .commit(Some("HEAD"), &signature, &signature, "note", &tree, &[&parent])
            .expect("second commit");
        git_repack(dir.path());
        let before = packs(dir.path());
        assert_eq!(before.len(), 2);
        assert!(packer.pack_bytes() >= FULL_PACK_GROWTH);

        for _ in 0..COMMITS_PER_CHECK {
            packer.after_commit(commit);
        }
        assert!(matches!(packer.running, Some(Running::Full(_))), "a full pack runs");
        let Some(Running::Full(handle)) = packer.running.take() else { unreachable!() };
        let packed = handle.join().expect("joined").expect("packed");

        let after = packs(dir.path());
        assert_eq!(after.len(), 1);
        assert!(!before.contains(&after[0]), "a new pack replaced both");
        assert_eq!(packed, std::fs::metadata(&after[0]).expect("size").len());
        packer.full_pack_ended(std::thread::spawn(move || Ok(packed)));
        assert_eq!(packer.packed_after_full, packed, "its size is remembered");
        assert!(packed >= FULL_PACK_GROWTH);
        assert_eq!(Repacker::new(dir.path()).packed_after_full, packer.packed_after_full);
        let reopened = git2::Repository::open(dir.path()).expect("reopen");
        let tree = reopened.head().expect("head").peel_to_tree().expect("tree");
        let blob = reopened.find_blob(tree.get_name("noise").expect("entry").id()).expect("blob");
        assert_eq!(blob.content(), &noise[..]);
    }
}
