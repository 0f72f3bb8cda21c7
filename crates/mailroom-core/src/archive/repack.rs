//! Keeps the archive's object store packed.
//!
//! Every commit writes new loose tree objects for the directories it touches, and the
//! reference's layout puts a month's messages in one directory (`messages/YYYY/MM/`), so each
//! commit rewrites a tree that grows with the month: measured here, a 20-minute soak at 200
//! requests/s left 147,000 loose objects and 1.8 GB, which `git gc` packs into a few MB
//! (similar trees delta-compress well). libgit2 has no repack, so the writer asks the `git`
//! command, in a child process beside the writer (commits go on meanwhile): `gc --auto`
//! decides from its own loose-object estimate whether anything needs doing, and does nothing
//! in a small repository.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

/// Commits between two `gc --auto` checks.
const COMMITS_PER_CHECK: u32 = 200;

pub(super) struct Repacker {
    root: PathBuf,
    commits_since_check: u32,
    running: Option<Child>,
    /// Cleared when `git` cannot be started: packing is then left to the humans.
    enabled: bool,
}

impl Repacker {
    pub(super) fn new(root: &Path) -> Self {
        Self { root: root.to_path_buf(), commits_since_check: 0, running: None, enabled: true }
    }

    /// Called after each commit; starts `git gc --auto` every `COMMITS_PER_CHECK` commits
    /// unless one is still running.
    pub(super) fn after_commit(&mut self) {
        self.reap();
        self.commits_since_check += 1;
        if !self.enabled || self.running.is_some() || self.commits_since_check < COMMITS_PER_CHECK {
            return;
        }
        self.commits_since_check = 0;
        match gc_command(&self.root).spawn() {
            Ok(child) => self.running = Some(child),
            Err(e) => {
                tracing::warn!(error = %e, "cannot run `git gc --auto`; the archive stays unpacked");
                self.enabled = false;
            }
        }
    }

    /// Waits for a running pack to finish (at stop: a half-written pack would only be
    /// garbage, but a finished one keeps the repository small).
    pub(super) fn finish(&mut self) {
        if let Some(mut child) = self.running.take() {
            match child.wait() {
                Ok(status) if !status.success() => {
                    tracing::warn!(%status, "`git gc --auto` failed");
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "`git gc --auto` not awaited"),
            }
        }
    }

    /// Forgets a finished run, logging a failure.
    fn reap(&mut self) {
        let Some(child) = self.running.as_mut() else { return };
        match child.try_wait() {
            Ok(None) => {}
            Ok(Some(status)) => {
                if !status.success() {
                    tracing::warn!(%status, "`git gc --auto` failed");
                }
                self.running = None;
            }
            Err(e) => {
                tracing::warn!(error = %e, "`git gc --auto` lost");
                self.running = None;
            }
        }
    }
}

/// `git gc --auto` for the archive: in the foreground of its own process (so it can be
/// awaited), touching no ref (the writer moves HEAD's branch meanwhile), consolidating packs
/// early, quiet.
fn gc_command(root: &Path) -> Command {
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(root)
        .args(["-c", "gc.autoDetach=false", "-c", "gc.packRefs=false"])
        // Expiring reflogs locks each ref, the branch the writer moves included; with both
        // set to never, gc skips that step.
        .args(["-c", "gc.reflogExpire=never", "-c", "gc.reflogExpireUnreachable=never"])
        // Past this many packs (each large commit writes one, each incremental repack adds
        // one, none delta-compressed against the others) `gc --auto` repacks them all into
        // one with deltas: a soak's 18 packs held 259 MB.
        .args(["-c", "gc.autoPackLimit=8", "gc", "--auto", "--quiet"])
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::null());
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

    /// A repository past git's loose-object threshold gets packed, and what was committed
    /// still reads back.
    #[test]
    fn gc_auto_packs_a_repository_full_of_loose_objects() {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = git2::Repository::init(dir.path()).expect("init");
        // gc.auto at 1 makes git's threshold (loose objects sampled in objects/17) easy to pass.
        repo.config().expect("config").set_i32("gc.auto", 1).expect("gc.auto");
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
            packer.after_commit();
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
}
