//! Keeps the archive's object store packed.
//!
//! Every commit writes new tree objects for the directories it touches, in one pack per
//! commit (`repo.rs`), and the reference's layout puts a month's messages in one directory
//! (`messages/YYYY/MM/`), so each commit rewrites a tree that grows with the month. Every
//! 32 commits, the writer rolls their packs up into one, on a thread beside it
//! (`roll_up.rs`: each path's older versions become deltas of its newest). When the packs
//! are many, the smallest are merged into one by copying their entries (`merge.rs`), up to
//! 256 MB at a time, so their number stays logarithmic in their bytes whatever else
//! runs or is cut short: before any full pack (a server restarted more often than its full
//! pack takes would otherwise keep every roll-up), and, beside a running full pack, among
//! the packs written since its listing. Once the packs have doubled since the last full
//! pack, the run is a full pack (`full_pack.rs`: the whole archive in one pack, `git`
//! pairing versions across roll-ups, which shrinks it many times), and Git's geometric
//! repack takes the packs no merge can (loose objects, a human's packs repeating objects);
//! neither starts once the packs pass a quarter of the machine's memory (`git` reads them
//! all into its own).
//! Roll-ups go on beside a full pack (they take only packs written after its listing) and
//! beside a merge (which takes no commit's pack); otherwise one run at a time, and while
//! one is going the commits' packs wait for the next roll-up.

use std::collections::HashSet;
use std::ffi::{OsStr, OsString};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

use git2::Oid;

use crate::error::Result;
use crate::full_pack::{self, Replaced};
use crate::merge;
use crate::roll_up::{self, CommitPack};
use crate::{ArchiveRepo, Committed};

/// Commits between two runs. A roll-up stores each path's newest version whole, so fewer
/// commits per roll-up store more of them whole, and more commits leave more packs for
/// libgit2 to search meanwhile (it searches every pack's index for an object it has not
/// found in the last one).
const COMMITS_PER_CHECK: u32 = 32;

/// The packs may grow past twice their size after the last full pack, plus this, before the
/// next full pack (`full_pack.rs`): each full pack reads and rewrites the whole archive, so
/// they are spaced geometrically. The commits' packs waiting for a roll-up are not counted:
/// a roll-up shrinks them tenfold and more.
const FULL_PACK_GROWTH: u64 = 16 << 20;

/// Packs (besides the commits' packs waiting for a roll-up) past which the smallest are
/// merged (while a full pack runs, among the packs written since its listing), or else
/// Git's geometric repack merges them.
const MAX_PACKS: usize = 24;

/// Most bytes one merge copies. A merge holds about 110 bytes per object it copies (its
/// sources' entries, the ids it checks for repeats, the new index): at ten million messages
/// a gigabyte held 60 MB for as long as it ran, more than the rest of the server, and its
/// writes slowed the sends beside it (p99 7.9 ms, 4.1 with no merge running). A quarter of that leaves
/// about 120 packs at ten million messages (of 3,298 before the merges; libgit2 searches
/// each's index only for an object it misses in the last one).
const MERGE_BYTES: u64 = 256 << 20;

/// Most commits' packs one roll-up takes (it holds each open while it runs); when more
/// wait (behind a long geometric repack), the rest go to the next roll-ups.
const MAX_ROLLED: usize = 64;

/// A run that is neither a full pack nor a merge.
enum Running {
    /// `git repack --geometric`.
    Geometric(Child),
    /// `roll_up::roll_up` on its own thread.
    RollUp(JoinHandle<Result<Option<PathBuf>>>),
}

/// `full_pack::pack_everything` on its own thread.
type FullPack = JoinHandle<Result<()>>;

/// `merge::merge` on its own thread: the merged pack, if any.
type Merge = JoinHandle<Result<Option<PathBuf>>>;

/// Keeps a repository's packs few and small, beside the one thread that commits to it (see
/// the module's documentation): told of every commit, it rolls up, fully packs or
/// geometrically repacks on threads and `git` processes of its own.
pub struct Repacker {
    root: PathBuf,
    /// Runs first on each thread the repacker starts.
    on_thread_start: fn(),
    commits_since_check: u32,
    /// A roll-up or geometric repack. A roll-up may run beside a full pack: it takes only
    /// packs written after the full pack listed the packs it replaces.
    running: Option<Running>,
    full: Option<FullPack>,
    /// A merge, beside a roll-up or a full pack (it takes neither's packs), never beside a
    /// geometric repack, and no full pack starts while it runs.
    merging: Option<Merge>,
    /// The file names of the packs this repacker wrote (roll-ups, merges) while the running
    /// full pack runs: the only ones a merge takes. Not the full pack's own new pack, nor a
    /// human's, nor the ones the full pack replaces.
    beside_full: HashSet<OsString>,
    /// How many packs a merge could take (those beside the running full pack, or else the
    /// settled ones) when one last merged nothing (its packs repeated objects): no merge is
    /// tried again until there are more, so other runs go on.
    fruitless_merge_at: usize,
    /// The packs of the commits since the last roll-up (or full pack), in order.
    unrolled: Vec<CommitPack>,
    /// The commits' packs a running roll-up is rolling up.
    rolling: Vec<PathBuf>,
    /// Bytes of packs right after the last full pack finished (at start, the largest pack:
    /// the last full pack's, if there was one).
    packed_after_full: u64,
    /// Tells a running full pack to stop (the server is stopping).
    stop: Arc<AtomicBool>,
    /// Cleared when `git` cannot be started: the full and geometric packs are then left to
    /// the humans (the roll-ups need no `git`).
    git_runs: bool,
    /// Bytes of packs past which no full or geometric pack starts: a quarter of the
    /// machine's memory. Both read every object through `git`, whose anonymous memory grew
    /// with the packs: at ten million messages (30 GB of packs) the full pack's
    /// `git rev-list` reached 24 GB and was killed for want of memory, the geometric
    /// repack's `git pack-objects` 2.8 GB within 36 s and rising. Past it the merges alone
    /// keep the packs few (about one per `MERGE_BYTES`), and the disk keeps what the
    /// roll-ups left (no version paired across roll-ups).
    git_bytes: u64,
}

impl Repacker {
    /// A repacker for the repository whose work tree is `root`. `on_thread_start` runs first
    /// on each thread it starts (the server lowers their scheduling priority there; the
    /// `git` processes started from them inherit it).
    pub fn new(root: &Path, on_thread_start: fn()) -> Self {
        let mut repacker = Self {
            root: root.to_path_buf(),
            on_thread_start,
            commits_since_check: 0,
            running: None,
            full: None,
            merging: None,
            beside_full: HashSet::new(),
            fruitless_merge_at: 0,
            unrolled: Vec::new(),
            rolling: Vec::new(),
            packed_after_full: 0,
            stop: Arc::new(AtomicBool::new(false)),
            git_runs: true,
            git_bytes: memory_total().map_or(u64::MAX, |bytes| bytes / 4),
        };
        // What a merge a crash cut short left (`merge.rs`).
        let _ = std::fs::remove_file(repacker.pack_dir().join(merge::TEMP_PACK));
        // Otherwise every start would find the packs "doubled" and pack everything again.
        repacker.packed_after_full = repacker.pack_sizes().into_iter().max().unwrap_or(0);
        repacker
    }

    fn pack_dir(&self) -> PathBuf {
        self.root.join(".git/objects/pack")
    }

    /// Sizes of the packs a full pack would rewrite (kept packs are not counted), but for
    /// the commits' packs waiting for a roll-up or being rolled up.
    fn pack_sizes(&self) -> Vec<u64> {
        self.settled_packs().iter().filter_map(|p| p.metadata().ok()).map(|m| m.len()).collect()
    }

    /// The packs a full pack would rewrite but for the commits' packs waiting for a roll-up
    /// or being rolled up.
    fn settled_packs(&self) -> Vec<PathBuf> {
        let mut packs = full_pack::packs_without_keep(&self.pack_dir()).unwrap_or_default();
        // Compared by name: the writer's paths are libgit2's (absolute), these are the data
        // dir's (relative by default).
        let unrolled: HashSet<&OsStr> = (self.unrolled.iter().map(|p| &p.pack))
            .chain(&self.rolling)
            .filter_map(|pack| pack.file_name())
            .collect();
        packs.retain(|pack| pack.file_name().is_none_or(|name| !unrolled.contains(name)));
        packs
    }

    /// The roll-ups (and merges of them) made beside the running full pack, still there.
    fn packs_beside_full(&self) -> Vec<PathBuf> {
        let mut packs = self.settled_packs();
        packs.retain(|p| p.file_name().is_some_and(|name| self.beside_full.contains(name)));
        packs
    }

    fn pack_bytes(&self) -> u64 {
        self.pack_sizes().iter().sum()
    }

    /// Called on the committing thread after each commit `repo` made, HEAD now naming it;
    /// every 32 commits it starts a run: a full pack or a geometric repack when nothing runs,
    /// a roll-up unless one runs.
    /// When a run finished since the last call, `repo` is reopened, so that libgit2 lets go of
    /// the packs it replaced (open files, mapped windows and delta caches, kept per pack).
    pub fn after_commit(&mut self, repo: &mut ArchiveRepo, committed: Committed) {
        if self.note_commit(committed.id, Some(committed.pack)) {
            repo.reopen();
        }
    }

    /// Notes a commit, HEAD now naming `head`, with the commit's own pack (`None` if its
    /// objects were written otherwise). Every `COMMITS_PER_CHECK` commits it starts a merge
    /// when the packs are many and none runs, then, unless a roll-up or geometric repack
    /// runs, a full pack or a geometric repack (neither beside a merge) or a roll-up. Says
    /// whether a run finished since the last call.
    fn note_commit(&mut self, head: Oid, pack: Option<CommitPack>) -> bool {
        let (finished, merge_finished) = self.reap();
        self.unrolled.extend(pack);
        self.commits_since_check += 1;
        if self.commits_since_check < COMMITS_PER_CHECK {
            // Merges follow one another while the packs are many: when commits are slow
            // (libgit2 searching thousands of packs), checks are far apart.
            if merge_finished {
                self.try_merge();
            }
            return finished;
        }
        self.commits_since_check = 0;
        self.try_merge();
        if self.running.is_some() {
            return finished;
        }
        let sizes = self.pack_sizes();
        let bytes: u64 = sizes.iter().sum();
        let git_may_run = self.git_runs
            && self.full.is_none()
            && self.merging.is_none()
            && bytes <= self.git_bytes;
        if git_may_run && bytes >= 2 * self.packed_after_full + FULL_PACK_GROWTH {
            self.start_full_pack(head);
        } else if git_may_run && (sizes.len() > MAX_PACKS || self.unrolled.is_empty()) {
            // No commit packs at all: the commits' objects were written otherwise (loose).
            match geometric_command(&self.root).spawn() {
                Ok(child) => self.running = Some(Running::Geometric(child)),
                Err(e) => {
                    tracing::warn!(error = %e, "cannot run `git repack`; only roll-ups run");
                    self.git_runs = false;
                }
            }
        } else if self.unrolled.len() >= 2 {
            self.start_roll_up();
        }
        finished
    }

    /// Starts a merge if the packs are many and neither a merge nor a geometric repack runs:
    /// beside a full pack, of the packs written since its listing; otherwise of the settled
    /// ones, before any full pack (which would replace them too, but one cut short by a stop
    /// leaves them all).
    fn try_merge(&mut self) {
        if self.merging.is_some() || matches!(self.running, Some(Running::Geometric(_))) {
            return;
        }
        let candidates = match self.full {
            Some(_) => self.packs_beside_full(),
            None => self.settled_packs(),
        };
        let packs = self.mergeable(candidates);
        if !packs.is_empty() {
            self.start_merge(packs);
        }
    }

    /// Which of `packs` to merge: none while they are at most `MAX_PACKS` (or no more than
    /// when a merge last merged nothing), else the smallest, as many as keep each pack at
    /// least twice the size of all smaller ones together (so that a byte is copied a
    /// logarithmic number of times) and `MERGE_BYTES` together; none when fewer than two.
    fn mergeable(&self, packs: Vec<PathBuf>) -> Vec<PathBuf> {
        if packs.len() <= MAX_PACKS.max(self.fruitless_merge_at) {
            return Vec::new();
        }
        geometric_prefix(packs, MERGE_BYTES)
    }

    /// Merges `packs` into one on a thread (`merge.rs`).
    fn start_merge(&mut self, packs: Vec<PathBuf>) {
        let (pack_dir, stop) = (self.pack_dir(), Arc::clone(&self.stop));
        self.merging = self.spawn("merge", move || merge::merge(&pack_dir, &packs, &stop));
    }

    /// The oldest commits' packs waiting, as many as one roll-up takes.
    fn take_unrolled(&mut self) -> Vec<CommitPack> {
        let rest = self.unrolled.split_off(self.unrolled.len().min(MAX_ROLLED));
        std::mem::replace(&mut self.unrolled, rest)
    }

    fn start_roll_up(&mut self) {
        let packs = self.take_unrolled();
        self.rolling = packs.iter().map(|p| p.pack.clone()).collect();
        let pack_dir = self.pack_dir();
        // Never stopped: a roll-up is short, and at stop it is awaited (`finish`).
        let started = self.spawn("roll-up", move || roll_up::roll_up(&pack_dir, &packs));
        self.running = started.map(Running::RollUp);
    }

    /// Runs `work` on a thread of its own named `mailroom-<name>`, after `on_thread_start`;
    /// `None` (logged) when no thread can be started.
    fn spawn<T: Send + 'static>(
        &self,
        name: &str,
        work: impl FnOnce() -> T + Send + 'static,
    ) -> Option<JoinHandle<T>> {
        let on_thread_start = self.on_thread_start;
        let started =
            std::thread::Builder::new().name(format!("mailroom-{name}")).spawn(move || {
                on_thread_start();
                work()
            });
        started.map_err(|e| tracing::warn!(error = %e, "cannot start the archive's {name}")).ok()
    }

    fn start_full_pack(&mut self, head: Oid) {
        // Listed here, on the writer's thread, right after the commit moved HEAD: see
        // `Replaced`. A listing taken on the pack's thread could include a pack whose
        // commit HEAD did not name yet when `git rev-list` read it.
        let replaced = match Replaced::list(&self.root, head) {
            Ok(replaced) => replaced,
            Err(e) => {
                tracing::warn!(error = %e, "the archive's packs cannot be listed");
                return;
            }
        };
        // The full pack replaces them.
        self.unrolled.clear();
        self.beside_full.clear();
        self.fruitless_merge_at = 0;
        let (root, stop) = (self.root.clone(), Arc::clone(&self.stop));
        self.full = self.spawn("pack", move || full_pack::pack_everything(&root, &replaced, &stop));
    }

    /// At stop: waits for a running geometric repack or roll-up to finish (a half-written
    /// pack would only be garbage; they are short), stops a merge or a full pack (on a large
    /// archive they run for many seconds), and rolls up the commits' packs still waiting, so
    /// that the archive is left with few packs: the list of them lives in memory only.
    pub fn finish(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        match self.running.take() {
            Some(Running::Geometric(mut child)) => match child.wait() {
                Ok(status) if !status.success() => {
                    tracing::warn!(%status, "`git repack` failed");
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(error = %e, "`git repack` not awaited"),
            },
            Some(Running::RollUp(handle)) => self.roll_up_ended(handle),
            None => {}
        }
        if let Some(handle) = self.merging.take() {
            self.merge_ended(handle);
        }
        if let Some(handle) = self.full.take() {
            self.full_pack_ended(handle);
        }
        let pack_dir = self.pack_dir();
        while self.unrolled.len() >= 2 {
            let packs = self.take_unrolled();
            if let Err(e) = roll_up::roll_up(&pack_dir, &packs) {
                tracing::warn!(error = %e, "the archive's last roll-up failed");
                break;
            }
        }
    }

    /// Forgets finished runs, logging failures; whether one finished, and whether it was a
    /// merge.
    fn reap(&mut self) -> (bool, bool) {
        let full = take_finished(&mut self.full);
        let full_finished = full.is_some();
        if let Some(handle) = full {
            self.full_pack_ended(handle);
        }
        let merge = take_finished(&mut self.merging);
        let merge_finished = merge.is_some();
        if let Some(handle) = merge {
            self.merge_ended(handle);
        }
        let finished = match self.running.take() {
            None => false,
            Some(Running::Geometric(mut child)) => match child.try_wait() {
                Ok(None) => {
                    self.running = Some(Running::Geometric(child));
                    false
                }
                Ok(Some(status)) => {
                    if !status.success() {
                        tracing::warn!(%status, "`git repack` failed");
                    }
                    true
                }
                Err(e) => {
                    tracing::warn!(error = %e, "`git repack` lost");
                    true
                }
            },
            Some(Running::RollUp(handle)) if !handle.is_finished() => {
                self.running = Some(Running::RollUp(handle));
                false
            }
            Some(Running::RollUp(handle)) => {
                self.roll_up_ended(handle);
                true
            }
        };
        (finished || full_finished || merge_finished, merge_finished)
    }

    /// A failed roll-up's packs stay as they were, for the next full or geometric pack.
    fn roll_up_ended(&mut self, handle: JoinHandle<Result<Option<PathBuf>>>) {
        self.rolling.clear();
        match handle.join() {
            Ok(Ok(rolled)) => self.note_beside_full(rolled),
            Ok(Err(e)) => tracing::warn!(error = %e, "the archive's roll-up failed"),
            Err(_) => tracing::warn!("the archive's roll-up panicked"),
        }
    }

    /// A failed or stopped merge's packs stay as they were, for the next run.
    fn merge_ended(&mut self, handle: Merge) {
        match handle.join() {
            Ok(Ok(None)) => {
                self.fruitless_merge_at = match self.full {
                    Some(_) => self.packs_beside_full().len(),
                    None => self.settled_packs().len(),
                };
            }
            Ok(Ok(merged)) => self.note_beside_full(merged),
            Ok(Err(crate::Error::Stopped)) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "the archive's pack merge failed"),
            Err(_) => tracing::warn!("the archive's pack merge panicked"),
        }
    }

    /// Notes a pack this repacker wrote, if a full pack runs beside it.
    fn note_beside_full(&mut self, written: Option<PathBuf>) {
        let name = written.as_deref().and_then(Path::file_name);
        if let (Some(name), true) = (name, self.full.is_some()) {
            self.beside_full.insert(name.to_owned());
        }
    }

    fn full_pack_ended(&mut self, handle: FullPack) {
        match handle.join() {
            Ok(Ok(())) => {}
            Ok(Err(_)) if self.stop.load(Ordering::Relaxed) => {}
            Ok(Err(e)) => tracing::warn!(error = %e, "the archive's full pack failed"),
            Err(_) => tracing::warn!("the archive's full pack panicked"),
        }
        // Also after a failure: the next attempt waits for the packs to double again. The
        // roll-ups made meanwhile count; the commits' packs still waiting for one do not.
        self.packed_after_full = self.pack_bytes();
        self.beside_full.clear();
    }
}

/// The thread in `slot` if it has ended, taken out of the slot.
fn take_finished<T>(slot: &mut Option<JoinHandle<T>>) -> Option<JoinHandle<T>> {
    slot.take_if(|handle| handle.is_finished())
}

/// The smallest of `packs`: each next one in size order while it is at most twice the size
/// of those taken before it together and all taken stay within `most` bytes; none when
/// fewer than two.
fn geometric_prefix(packs: Vec<PathBuf>, most: u64) -> Vec<PathBuf> {
    let size = |p: &PathBuf| p.metadata().map(|m| m.len()).unwrap_or(0);
    let mut sized: Vec<(u64, PathBuf)> = packs.into_iter().map(|p| (size(&p), p)).collect();
    sized.sort();
    let (mut taken, mut total) = (0, 0);
    for (size, _) in &sized {
        if (total > 0 && *size > 2 * total) || total + size > most {
            break;
        }
        taken += 1;
        total += size;
    }
    // A tiny pack beside larger ones still goes with the next smallest.
    if taken < 2 {
        match sized.as_slice() {
            [(first, _), (second, _), ..] if first + second <= most => taken = 2,
            _ => return Vec::new(),
        }
    }
    sized.truncate(taken);
    sized.into_iter().map(|(_, p)| p).collect()
}

/// The machine's memory (`MemTotal` of `/proc/meminfo`); `None` where it cannot be read.
fn memory_total() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = meminfo.lines().find(|line| line.starts_with("MemTotal:"))?;
    let kilobytes: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kilobytes * 1024)
}

/// `git repack --geometric=2 -d` for the archive: merges the smaller packs so that each pack
/// holds at least twice the objects of the next smaller one, keeping their number
/// logarithmic, and packs loose objects (a human's commits). `git gc --auto` did not keep
/// up: its full repack (`-A`) of a soak's growing archive ran for minutes with a 1.6 GB
/// child while 115 packs piled up. The delta window is 2: without the paths
/// (`--stdin-packs` has none) Git's default of 10 found no more deltas among the month trees
/// and cost a fifth more CPU. Runs in the foreground of its own process (so it can be
/// awaited), touches no ref (the writer moves HEAD's branch meanwhile), quiet.
fn geometric_command(root: &Path) -> Command {
    let mut command = full_pack::git(root);
    command.args(["repack", "-d", "-q", "--geometric=2", "--window=2"]).stdout(Stdio::null());
    command
}

/// A repacker dropped without [`Repacker::finish`] (its writer panicked) still waits for its
/// `git` process and threads, so none of them repacks beside the next writer.
impl Drop for Repacker {
    fn drop(&mut self) {
        self.finish();
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::{copy_pack, pack_files};

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

        let mut packer = Repacker::new(dir.path(), || {});
        for _ in 0..COMMITS_PER_CHECK {
            packer.note_commit(commit, None);
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

    /// A fresh archive at `root` and a repacker for it.
    fn archive_and_packer(root: &Path) -> (ArchiveRepo, Repacker) {
        let author = crate::Author { name: "t".to_string(), email: "t@example.com".to_string() };
        let repo =
            ArchiveRepo::open_or_init(root, author, crate::testing::LAYOUT).expect("archive");
        (repo, Repacker::new(root, || {}))
    }

    /// Commits one message `round` and tells `packer`, as the writer does; what
    /// `note_commit` answers.
    fn commit_round(repo: &mut ArchiveRepo, packer: &mut Repacker, round: u32) -> bool {
        let path = format!("messages/2026/11/2026-11-23T10-{round:04}__note__{round}.md");
        let files = vec![(path, format!("message {round}\n").into_bytes())];
        let committed = repo.commit_files(&files, "mail: round\n").expect("commit");
        let committed = committed.expect("a new commit");
        packer.note_commit(committed.id, Some(committed.pack))
    }

    /// A full pack that runs until the test sends on the channel returned.
    fn hold_full_pack(packer: &mut Repacker) -> std::sync::mpsc::Sender<()> {
        let (release, released) = std::sync::mpsc::channel::<()>();
        packer.full = Some(std::thread::spawn(move || {
            let _ = released.recv();
            Ok(())
        }));
        release
    }

    /// Every `COMMITS_PER_CHECK` commits, their own packs are rolled up into one on a thread
    /// beside the writer, and the archive stays whole.
    #[test]
    fn commit_packs_are_rolled_up() {
        let dir = tempfile::tempdir().expect("temp dir");
        // Relative, as the default data dir is: the writer names its packs by libgit2's
        // absolute paths, and they must still be known for the commits' packs.
        let root = &crate::testing::relative(dir.path());
        let (mut repo, mut packer) = archive_and_packer(root);
        for round in 0..COMMITS_PER_CHECK {
            commit_round(&mut repo, &mut packer, round);
        }
        assert_eq!(pack_files(root).len(), 1 + COMMITS_PER_CHECK as usize);
        let Some(Running::RollUp(handle)) = packer.running.take() else {
            panic!("a roll-up runs");
        };
        let rolled = handle.join().expect("joined").expect("rolled up").expect("a new pack");
        assert!(packer.unrolled.is_empty(), "the roll-up took the commits' packs");
        let after = pack_files(root);
        assert_eq!(after.len(), 2, "the first commit's pack and the roll-up: {after:?}");
        assert!(after.contains(&rolled));
        crate::testing::assert_fsck_clean(root);
    }

    /// At stop, the commits' packs still waiting are rolled up.
    #[test]
    fn the_packs_left_at_stop_are_rolled_up() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        let (mut repo, mut packer) = archive_and_packer(root);
        for round in 0..5 {
            commit_round(&mut repo, &mut packer, round);
        }
        assert_eq!(pack_files(root).len(), 6, "the first commit's pack and five more");
        packer.finish();
        assert_eq!(pack_files(root).len(), 2, "the five rolled up into one");
        crate::testing::assert_fsck_clean(root);
    }

    /// While a full pack runs, the commits' packs written since it started are still rolled
    /// up, and no geometric repack starts.
    #[test]
    fn roll_ups_go_on_beside_a_full_pack() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        let (mut repo, mut packer) = archive_and_packer(root);
        let release = hold_full_pack(&mut packer);
        for round in 0..COMMITS_PER_CHECK {
            assert!(!commit_round(&mut repo, &mut packer, round));
        }
        assert!(packer.full.is_some(), "the full pack still runs");
        let Some(Running::RollUp(handle)) = packer.running.take() else {
            panic!("a roll-up runs beside it");
        };
        let rolled = handle.join().expect("joined").expect("rolled up");
        assert!(rolled.is_some(), "a new pack");
        release.send(()).expect("released");
        packer.finish();
        assert!(packer.full.is_none());
        crate::testing::assert_fsck_clean(root);
    }

    /// While a full pack runs, the roll-ups' packs written beside it are merged into one once
    /// they pass `MAX_PACKS`; the packs the full pack replaces are left to it, and the
    /// archive stays whole.
    #[test]
    fn packs_beside_a_full_pack_are_merged() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = &crate::testing::relative(dir.path());
        let (mut repo, mut packer) = archive_and_packer(root);
        let listed = pack_files(root);
        let release = hold_full_pack(&mut packer);
        let mut round = 0;
        let mut beside = 0;
        let merge = loop {
            // Counted before the commit that may start the merge, which may be done at once.
            beside = beside.max(packer.packs_beside_full().len());
            commit_round(&mut repo, &mut packer, round);
            round += 1;
            if let Some(Running::RollUp(handle)) = packer.running.take() {
                // As if the roll-up ended before the next check.
                packer.roll_up_ended(handle);
            }
            if let Some(handle) = packer.merging.take() {
                break handle;
            }
            assert!(round < 64 * COMMITS_PER_CHECK, "no merge started");
        };
        assert!(beside >= MAX_PACKS, "{beside} packs beside the full pack");
        packer.merge_ended(merge);
        // The roll-up started at the merge's check ran beside it, and its pack stays.
        let after = packer.packs_beside_full().len();
        assert!(after <= 2, "the roll-ups' packs became one, and the last roll-up: {after}");
        assert!(listed.iter().all(|p| p.exists()), "the full pack's packs are left to it");
        crate::testing::assert_fsck_clean(root);
        release.send(()).expect("released");
        packer.finish();
        let last =
            format!("messages/2026/11/2026-11-23T10-{:04}__note__{}.md", round - 1, round - 1);
        let files = crate::CommittedFiles::open(root).expect("readable").expect("a HEAD");
        assert!(files.contains(&last), "the last round reads back");
    }

    /// A merge that can merge nothing (its packs repeat one another's objects) is not tried
    /// again until more packs are beside the full pack: the roll-ups go on meanwhile. A
    /// merge's temporary pack left by a crash is removed when a repacker starts.
    #[test]
    fn a_fruitless_merge_lets_roll_ups_go_on() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        let (mut repo, mut packer) = archive_and_packer(root);
        let pack_dir = root.join(".git/objects/pack");
        let first = pack_files(root)[0].clone();
        for i in 0..=MAX_PACKS {
            let copy = pack_dir.join(format!("pack-copy{i:02}.pack"));
            copy_pack(&first, &copy);
            packer.beside_full.insert(copy.file_name().expect("name").to_owned());
        }
        let release = hold_full_pack(&mut packer);
        for round in 0..COMMITS_PER_CHECK {
            commit_round(&mut repo, &mut packer, round);
        }
        let Some(merge) = packer.merging.take() else { panic!("a merge runs") };
        packer.merge_ended(merge);
        assert_eq!(packer.fruitless_merge_at, MAX_PACKS + 1, "it merged nothing");
        for round in COMMITS_PER_CHECK..2 * COMMITS_PER_CHECK {
            commit_round(&mut repo, &mut packer, round);
        }
        assert!(matches!(packer.running, Some(Running::RollUp(_))), "a roll-up runs");
        release.send(()).expect("released");
        packer.finish();
        crate::testing::assert_fsck_clean(root);

        std::fs::write(pack_dir.join(merge::TEMP_PACK), b"cut short").expect("leftover");
        let _ = Repacker::new(root, || {});
        assert!(!pack_dir.join(merge::TEMP_PACK).exists());
    }

    /// Many packs left by earlier runs (a server restarted before its full pack ended keeps
    /// the roll-ups it made) are merged by copying before any full pack or geometric repack,
    /// one merge after another, the commits' packs waiting rolled up alongside, and every
    /// file still reads back.
    #[test]
    fn many_packs_are_merged_before_anything_else() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = &crate::testing::relative(dir.path());
        let (mut repo, mut packer) = archive_and_packer(root);
        let mut round = 0;
        // As a restart leaves them: roll-ups no repacker knows of.
        while pack_files(root).len() <= 2 * MAX_PACKS {
            for _ in 0..2 {
                commit_round(&mut repo, &mut packer, round);
                round += 1;
            }
            packer.finish();
            packer = Repacker::new(root, || {});
        }
        let left = pack_files(root).len();
        let mut merges = 0;
        while packer.settled_packs().len() > MAX_PACKS {
            commit_round(&mut repo, &mut packer, round);
            round += 1;
            if let Some(handle) = &packer.merging {
                while !handle.is_finished() {
                    std::thread::sleep(std::time::Duration::from_millis(1));
                }
                merges += 1;
                // The next commit ends it, and the next merge follows at once, checks or not.
                commit_round(&mut repo, &mut packer, round);
                round += 1;
                let many = packer.settled_packs().len() > MAX_PACKS;
                assert_eq!(packer.merging.is_some(), many, "a merge follows while many");
            }
            match packer.running.take() {
                Some(Running::RollUp(handle)) => packer.roll_up_ended(handle),
                None => {}
                Some(Running::Geometric(_)) => panic!("no geometric repack while merges can run"),
            }
            assert!(round < 64 * COMMITS_PER_CHECK, "the packs were not merged");
        }
        assert!(merges > 0, "{left} packs merged");
        packer.finish();
        let after = pack_files(root).len();
        assert!(after <= MAX_PACKS + 1, "{left} packs became {after}");
        let files = crate::CommittedFiles::open(root).expect("readable").expect("a HEAD");
        for round in 0..round {
            let path = format!("messages/2026/11/2026-11-23T10-{round:04}__note__{round}.md");
            assert!(files.contains(&path), "{path}");
        }
        crate::testing::assert_fsck_clean(root);
    }

    /// The merge's prefix: the smallest packs while each is at most twice the ones before it
    /// together, within the bytes given; a tiny one goes with the next; none when no two fit.
    #[test]
    fn the_merged_packs_are_a_geometric_prefix_within_the_bytes() {
        let dir = tempfile::tempdir().expect("temp dir");
        let pack = |name: &str, size: usize| {
            let path = dir.path().join(name);
            std::fs::write(&path, vec![0u8; size]).expect("written");
            path
        };
        let packs =
            vec![pack("e", 200), pack("a", 10), pack("b", 10), pack("c", 30), pack("d", 40)];
        let names = |taken: Vec<PathBuf>| -> Vec<String> {
            taken
                .iter()
                .map(|p| p.file_name().expect("a name").to_string_lossy().into_owned())
                .collect()
        };
        assert_eq!(names(geometric_prefix(packs.clone(), 1000)), ["a", "b", "c", "d"]);
        assert_eq!(names(geometric_prefix(packs.clone(), 50)), ["a", "b", "c"]);
        assert_eq!(names(geometric_prefix(packs.clone(), 19)), Vec::<String>::new());
        let tiny = vec![pack("t", 1), pack("u", 100), pack("v", 100)];
        assert_eq!(names(geometric_prefix(tiny, 1000)), ["t", "u"]);
    }

    /// Packs of similar size that no roll-up knows of (written before a restart) are merged
    /// by a geometric repack, and every object still reads back.
    #[test]
    fn small_packs_get_a_geometric_repack() {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = git2::Repository::init(dir.path()).expect("init");
        let contents: Vec<Vec<u8>> =
            (0..20).map(|i| format!("packed {i}\n").into_bytes()).collect();
        let mut ids = Vec::new();
        for data in &contents {
            let id = git2::Oid::hash_object(git2::ObjectType::Blob, data).expect("hash");
            let object = crate::pack::PackObject { id, kind: git2::ObjectType::Blob, data };
            crate::pack::write_pack(
                &dir.path().join(".git/objects/pack"),
                &[object],
                &mut crate::pack::PackBuilder::new(),
            )
            .expect("pack");
            ids.push(id);
        }
        assert_eq!(pack_files(dir.path()).len(), 20);

        let mut packer = Repacker::new(dir.path(), || {});
        for _ in 0..COMMITS_PER_CHECK {
            assert!(
                !packer.note_commit(Oid::ZERO_SHA1, None),
                "nothing finished before the first run"
            );
        }
        packer.finish();

        assert_eq!(pack_files(dir.path()).len(), 1, "rolled up");
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

    /// Once the packs pass `FULL_PACK_GROWTH`, the run is a full pack (unless they pass
    /// `git_bytes`): the two packs become one new pack, and its size is what the next full
    /// pack waits to see doubled. A new
    /// repacker on the same archive does not take the packed archive for grown.
    #[test]
    fn large_packs_get_a_full_pack() {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = git2::Repository::init(dir.path()).expect("init");
        // Incompressible, so that the pack is as large as the blob.
        let noise = crate::pack::incompressible_bytes(FULL_PACK_GROWTH as usize + 1024);
        let mut tree = repo.treebuilder(None).expect("tree builder");
        tree.insert("noise", repo.blob(&noise).expect("blob"), 0o100644).expect("entry");
        let tree = repo.find_tree(tree.write().expect("tree")).expect("find tree");
        let signature = git2::Signature::now("t", "t@example.com").expect("signature");
        let commit =
            repo.commit(Some("HEAD"), &signature, &signature, "noise", &tree, &[]).expect("commit");
        let mut packer = Repacker::new(dir.path(), || {});
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
        let before = pack_files(dir.path());
        assert_eq!(before.len(), 2);
        assert!(packer.pack_bytes() >= FULL_PACK_GROWTH);

        // Past a quarter of the machine's memory in packs, `git` would read them all into
        // its own: neither a full pack nor a geometric repack starts.
        assert_eq!(Some(packer.git_bytes), memory_total().map(|total| total / 4));
        packer.git_bytes = packer.pack_bytes() - 1;
        for _ in 0..COMMITS_PER_CHECK {
            packer.note_commit(commit, None);
        }
        assert!(packer.full.is_none() && packer.running.is_none(), "no git repack");
        packer.git_bytes = u64::MAX;
        for _ in 0..COMMITS_PER_CHECK {
            packer.note_commit(commit, None);
        }
        let handle = packer.full.take().expect("a full pack runs");
        handle.join().expect("joined").expect("packed");

        let after = pack_files(dir.path());
        assert_eq!(after.len(), 1);
        assert!(!before.contains(&after[0]), "a new pack replaced both");
        let packed = std::fs::metadata(&after[0]).expect("size").len();
        packer.full_pack_ended(std::thread::spawn(|| Ok(())));
        assert_eq!(packer.packed_after_full, packed, "its size is remembered");
        assert!(packed >= FULL_PACK_GROWTH);
        assert_eq!(Repacker::new(dir.path(), || {}).packed_after_full, packer.packed_after_full);
        let reopened = git2::Repository::open(dir.path()).expect("reopen");
        let tree = reopened.head().expect("head").peel_to_tree().expect("tree");
        let blob = reopened.find_blob(tree.get_name("noise").expect("entry").id()).expect("blob");
        assert_eq!(blob.content(), &noise[..]);
    }
}
