//! Packs the whole archive into one pack in which each file's and directory's versions are
//! stored as deltas of one another.
//!
//! Each commit rewrites every touched directory's tree whole, and Git 2.39's own repacks
//! cannot pair most trees with their previous versions: Git sorts objects for its delta
//! search by a hash of the last 16 characters of their path, and every agent's
//! `inbox/2026/11` ends alike, so the versions of 25 inbox trees interleave farther apart than
//! any delta window (the geometric roll-up's `--stdin-packs` has no paths at all). Measured on
//! a 30-minute soak's archive: `git repack -a -d -f` left 630 of 712 MB. Here `git rev-list
//! --objects` lists every object with its path, each path is replaced by a hash of the whole
//! path, and `git pack-objects` reads that list: each path's versions now sort together, and
//! the same archive packed into 34 MB.

use std::collections::hash_map::DefaultHasher;
use std::ffi::OsString;
use std::fs;
use std::hash::{Hash, Hasher};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::Mutex;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, SystemTime};

use git2::Oid;

use crate::error::{Error, Result, io_err};

/// The packs a full pack may replace, listed on the writer's thread right after a commit
/// moved HEAD to `head`: every pack the writer wrote until then holds only objects that HEAD
/// or its reflog reaches, and every pack written later is not in the list.
pub(crate) struct Replaced {
    pub packs: Vec<PathBuf>,
    pub head: Oid,
}

impl Replaced {
    /// The packs of `root` now (none protected by a `.keep` file), HEAD being `head`.
    pub(crate) fn list(root: &Path, head: Oid) -> Result<Self> {
        Ok(Self { packs: packs_without_keep(&root.join(".git/objects/pack"))?, head })
    }
}

/// Packs every object reachable from the refs, the reflogs and the index into one new pack,
/// then deletes the `replaced` packs, once the new pack is known to hold the commit HEAD
/// named when they were listed. Packs written meanwhile, kept packs and loose objects stay
/// (the objects of kept packs are copied as well). Blocking; run beside the writer. When
/// `stop` is set it kills its `git` children and returns, removing nothing.
pub(crate) fn pack_everything(root: &Path, replaced: &Replaced, stop: &AtomicBool) -> Result<()> {
    if replaced.packs.is_empty() {
        return Ok(());
    }
    let mut objects = git(root)
        .args(["rev-list", "--objects", "--all", "--reflog", "--indexed-objects"])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| Error::Command(format!("cannot run git rev-list: {e}")))?;
    // Relative to `root`, where `git -C` runs: the data dir may be relative (the default is).
    // One pack whatever the configuration: its name is read back as one.
    let packer = git(root)
        .args(["-c", "pack.packSizeLimit=0", "pack-objects", "-q", "--window=2", "--depth=50"])
        .args(["--delta-base-offset", ".git/objects/pack/pack"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn();
    let mut packer = match packer {
        Ok(packer) => packer,
        Err(e) => {
            end(&mut objects);
            return Err(Error::Command(format!("cannot run git pack-objects: {e}")));
        }
    };
    let started = SystemTime::now();
    let mut feed = packer.stdin.take().map(BufWriter::new);
    let name = match feed_and_wait(&mut objects, &mut packer, &mut feed, stop) {
        Ok(name) => name,
        Err(e) => {
            // Killed before its input closes (`feed` is still open), so that it cannot
            // publish a pack of part of the list; and `git rev-list` may be blocked on a
            // pipe nobody reads any more.
            end(&mut packer);
            end(&mut objects);
            drop(feed);
            remove_git_temp_files(&root.join(".git/objects/pack"), started);
            return Err(e);
        }
    };
    let index = root.join(".git/objects/pack").join(format!("{name}.idx"));
    if !index_holds(&index, replaced.head)? {
        let head = replaced.head;
        return Err(Error::invalid(format!("{name} lacks HEAD's commit {head}; no pack removed")));
    }
    let pack = index.with_extension("pack");
    let pack_dir = root.join(".git/objects/pack");
    crate::pack::retire_packs(&pack_dir, replaced.packs.iter().map(PathBuf::as_path), &pack)
}

/// Feeds `objects`' list, renamed, to `packer`, closes `feed` once the whole list was read
/// and `git rev-list` ended well (only a complete list may reach pack-objects' end of input),
/// and waits for `packer`: the new pack's name. On an error the caller ends both children
/// before it drops `feed`.
fn feed_and_wait(
    objects: &mut Child,
    packer: &mut Child,
    feed: &mut Option<BufWriter<ChildStdin>>,
    stop: &AtomicBool,
) -> Result<String> {
    let (Some(listed), Some(writer)) = (objects.stdout.take().map(BufReader::new), feed.as_mut())
    else {
        return Err(Error::Command("git's pipes were not opened".to_string()));
    };
    // `git rev-list` may print nothing for minutes (measured: over a minute on an archive of
    // four million messages in 1,200 packs) while the copy waits on its pipe; a stop then
    // kills it from beside the copy, which reads the end of the list and returns.
    let lister = Mutex::new(&mut *objects);
    let copying = AtomicBool::new(true);
    let copied = std::thread::scope(|scope| {
        scope.spawn(|| kill_when_stopped(&lister, stop, &copying));
        let copied = rename_paths(listed, writer, stop);
        copying.store(false, Ordering::Relaxed);
        copied
    });
    copied?;
    if stop.load(Ordering::Relaxed) {
        return Err(Error::Stopped);
    }
    let listed = objects.wait().map_err(|e| Error::Command(format!("git rev-list: {e}")))?;
    if !listed.success() {
        return Err(Error::Command(format!("git rev-list failed ({listed})")));
    }
    drop(feed.take());
    let packed = wait_unless_stopped(packer, stop)?;
    if !packed.success() {
        return Err(Error::Command(format!("git pack-objects failed ({packed})")));
    }
    let mut name = String::new();
    if let Some(mut out) = packer.stdout.take() {
        out.read_to_string(&mut name).map_err(|e| pack_objects_failed(&e))?;
    }
    Ok(format!("pack-{}", name.trim()))
}

/// Removes what a killed `git pack-objects` left in `pack_dir` since `since`: its
/// `tmp_pack_XXXXXX`, `tmp_idx_XXXXXX` and `tmp_rev_XXXXXX` files (Git names them with six
/// random characters; the writer's own temporary packs have 40 and are left alone).
fn remove_git_temp_files(pack_dir: &Path, since: SystemTime) {
    let Ok(entries) = fs::read_dir(pack_dir) else { return };
    for entry in entries.filter_map(|e| e.ok()) {
        let name = entry.file_name();
        let name = name.to_string_lossy();
        let from_git = ["tmp_pack_", "tmp_idx_", "tmp_rev_"]
            .iter()
            .any(|prefix| name.strip_prefix(prefix).is_some_and(|rest| rest.len() == 6));
        let recent = entry.metadata().and_then(|m| m.modified()).is_ok_and(|t| t >= since);
        if from_git && recent {
            let _ = fs::remove_file(entry.path());
        }
    }
}

/// Copies `git rev-list --objects` lines, each path replaced by a hash of it: Git's delta
/// search then groups the versions of one path, whatever its last characters. Paths are
/// hashed as bytes (Git prints them unconverted, not always UTF-8).
fn rename_paths(mut listed: impl BufRead, feed: &mut impl Write, stop: &AtomicBool) -> Result<()> {
    let mut line = Vec::new();
    loop {
        line.clear();
        let read = listed
            .read_until(b'\n', &mut line)
            .map_err(|e| Error::Command(format!("git rev-list: {e}")))?;
        if read == 0 {
            break;
        }
        if stop.load(Ordering::Relaxed) {
            return Err(Error::Stopped);
        }
        let text = line.strip_suffix(b"\n").unwrap_or(&line);
        let written = match text.iter().position(|b| *b == b' ') {
            Some(space) if space + 1 < text.len() => {
                let mut hasher = DefaultHasher::new();
                text[space + 1..].hash(&mut hasher);
                feed.write_all(&text[..space])
                    .and_then(|()| writeln!(feed, " {:016x}", hasher.finish()))
            }
            Some(space) => feed.write_all(&text[..space]).and_then(|()| feed.write_all(b"\n")),
            None => feed.write_all(text).and_then(|()| feed.write_all(b"\n")),
        };
        written.map_err(|e| pack_objects_failed(&e))?;
    }
    feed.flush().map_err(|e| pack_objects_failed(&e))
}

fn pack_objects_failed(e: &std::io::Error) -> Error {
    Error::Command(format!("git pack-objects: {e}"))
}

/// Waits for `child`, polling, so that a stop can kill it (a full pack of a large archive
/// takes many seconds, and the server's stop must not wait for it).
fn wait_unless_stopped(child: &mut Child, stop: &AtomicBool) -> Result<std::process::ExitStatus> {
    loop {
        if let Some(status) = child.try_wait().map_err(|e| Error::Command(e.to_string()))? {
            return Ok(status);
        }
        if stop.load(Ordering::Relaxed) {
            end(child);
            return Err(Error::Stopped);
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Polls `stop` while `copying`; once set, kills the child (not reaped here: its owner waits
/// for it).
fn kill_when_stopped(child: &Mutex<&mut Child>, stop: &AtomicBool, copying: &AtomicBool) {
    while copying.load(Ordering::Relaxed) {
        if stop.load(Ordering::Relaxed) {
            if let Ok(mut child) = child.lock() {
                let _ = child.kill();
            }
            return;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Kills and reaps a child (no zombie is left; it may have ended already).
fn end(child: &mut Child) {
    let _ = child.kill();
    let _ = child.wait();
}

/// Whether the pack index at `path` (version 2) lists `id`.
fn index_holds(path: &Path, id: Oid) -> Result<bool> {
    Ok(crate::pack::index_ids(path)?.binary_search(&id).is_ok())
}

/// `git -C root`, without the caller's `GIT_*` variables: a `GIT_DIR` or
/// `GIT_OBJECT_DIRECTORY` inherited from a hook or script would point it at another
/// repository, whose objects would then replace the archive's.
pub(crate) fn git(root: &Path) -> Command {
    let mut command = Command::new("git");
    without_git_variables(&mut command, std::env::vars_os().map(|(name, _)| name));
    command.arg("-C").arg(root).stdin(Stdio::null()).stderr(Stdio::null());
    command
}

/// Keeps every `GIT_*` variable among `names` from reaching `command`.
fn without_git_variables(command: &mut Command, names: impl IntoIterator<Item = OsString>) {
    for name in names {
        if name.to_string_lossy().starts_with("GIT_") {
            command.env_remove(name);
        }
    }
}

/// The `.pack` files of `pack_dir` that no `.keep` file protects.
pub(crate) fn packs_without_keep(pack_dir: &Path) -> Result<Vec<PathBuf>> {
    let entries = fs::read_dir(pack_dir).map_err(|e| io_err("cannot list", pack_dir, e))?;
    Ok(entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "pack"))
        .filter(|path| !path.with_extension("keep").exists())
        .collect())
}

/// Removes a pack: its index first, so that no reader finds an index without its pack; if
/// the index stays, so does the pack. Whether the pack went.
pub(crate) fn remove_pack(pack: &Path) -> bool {
    for ext in ["idx", "pack", "rev", "bitmap", "mtimes"] {
        let file = pack.with_extension(ext);
        if let Err(e) = fs::remove_file(&file)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(error = %e, file = %file.display(), "old pack not removed");
            if ext == "idx" || ext == "pack" {
                return false;
            }
        }
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::ArchiveRepo;
    use crate::pack::{PackBuilder, PackObject, write_pack};
    use crate::testing::{LAYOUT, assert_fsck_clean, author, pack_bytes, pack_files};

    /// Two agents' inboxes whose paths end alike, growing by five messages a commit: their
    /// trees' sizes interleave, so without their whole paths Git pairs them with each other
    /// rather than with their own previous versions.
    fn commit_rounds(repo: &mut ArchiveRepo, rounds: std::ops::Range<usize>) -> Oid {
        let mut head = None;
        for round in rounds {
            let files: Vec<(String, Vec<u8>)> = (0..5)
                .flat_map(|i| {
                    let name = format!("2026-11-22T10-{round:02}-{i:02}Z__note__{round}{i}.md");
                    ["BlueLake", "GreenCastle"].map(|agent| {
                        let bytes = format!("message {round} {i} for {agent}\n").into_bytes();
                        (format!("projects/p/agents/{agent}/inbox/2026/11/{name}"), bytes)
                    })
                })
                .collect();
            head = repo.commit_files(&files, "mail: round\n").expect("commit").map(|c| c.id);
        }
        head.expect("a commit")
    }

    /// A fresh archive under a temporary directory, with `rounds` commits made.
    fn archive(rounds: usize) -> (tempfile::TempDir, PathBuf, ArchiveRepo, Oid) {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path().join("archive");
        let mut repo = ArchiveRepo::open_or_init(&root, author(), LAYOUT).expect("init");
        let head = commit_rounds(&mut repo, 0..rounds);
        (dir, root, repo, head)
    }

    /// The writer's packs (one per commit, each holding the month trees whole) become one
    /// pack with the growing trees stored as deltas; a kept pack and every object stay, and
    /// `git fsck --strict` finds nothing wrong.
    /// A stop while `git rev-list` prints nothing (here a child that prints nothing for 30 s)
    /// kills it at once: the copy ends with `Stopped`, and the child died of the kill, not of
    /// old age (before, the stop waited for its first line).
    #[test]
    fn a_stop_kills_a_silent_lister() {
        use std::os::unix::process::ExitStatusExt;
        let mut silent =
            Command::new("sleep").arg("30").stdout(Stdio::piped()).spawn().expect("sleep");
        let mut packer =
            Command::new("cat").stdin(Stdio::piped()).stdout(Stdio::null()).spawn().expect("cat");
        let mut feed = packer.stdin.take().map(BufWriter::new);
        let stop = AtomicBool::new(false);
        let result = std::thread::scope(|scope| {
            scope.spawn(|| {
                std::thread::sleep(Duration::from_millis(200));
                stop.store(true, Ordering::Relaxed);
            });
            feed_and_wait(&mut silent, &mut packer, &mut feed, &stop)
        });
        assert!(matches!(result, Err(Error::Stopped)), "{:?}", result.err());
        let status = silent.wait().expect("reaped");
        assert_eq!(status.signal(), Some(9), "killed, not ended: {status:?}");
        end(&mut packer);
    }

    #[test]
    fn the_archive_becomes_one_pack_of_deltas() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = crate::testing::relative(dir.path()).join("archive");
        assert!(root.is_relative());
        let mut repo = ArchiveRepo::open_or_init(&root, author(), LAYOUT).expect("init");
        let head = commit_rounds(&mut repo, 0..40);
        let listed = pack_files(&root);
        let kept_data = b"an object only a kept pack holds".to_vec();
        let kept_id = Oid::hash_object(git2::ObjectType::Blob, &kept_data).expect("hash");
        let kept_object =
            PackObject { id: kept_id, kind: git2::ObjectType::Blob, data: &kept_data };
        write_pack(&root.join(".git/objects/pack"), &[kept_object], &mut PackBuilder::new())
            .expect("pack");
        let kept = pack_files(&root).into_iter().find(|p| !listed.contains(p)).expect("kept");
        fs::write(kept.with_extension("keep"), b"").expect("keep file");
        let before = pack_bytes(&root);

        let replaced = Replaced::list(&root, head).expect("listed");
        pack_everything(&root, &replaced, &AtomicBool::new(false)).expect("packed");

        let packs = pack_files(&root);
        assert_eq!(packs.len(), 1, "one pack left besides the kept one: {packs:?}");
        assert!(kept.exists(), "a pack with a .keep file stays");
        let after = pack_bytes(&root);
        assert!(after * 3 < before, "{after} bytes after, {before} before");
        assert_fsck_clean(&root);
        let reopened = ArchiveRepo::open_or_init(&root, author(), LAYOUT).expect("reopen");
        let path = "projects/p/agents/GreenCastle/inbox/2026/11/2026-11-22T10-39-04Z__note__394.md";
        assert_eq!(
            reopened.committed_file(path).expect("read"),
            Some(b"message 39 4 for GreenCastle\n".to_vec())
        );
        let git = git2::Repository::open(&root).expect("open");
        assert!(git.odb().expect("odb").exists(kept_id), "the kept pack's object reads");
    }

    /// Commits made after the packs were listed (the writer goes on during a full pack) keep
    /// their packs, and the archive stays whole.
    #[test]
    fn packs_written_after_the_listing_stay() {
        let (_dir, root, mut repo, head) = archive(10);
        let replaced = Replaced::list(&root, head).expect("listed");
        commit_rounds(&mut repo, 10..12);
        let later = pack_files(&root).into_iter().filter(|p| !replaced.packs.contains(p));
        let later: Vec<PathBuf> = later.collect();
        assert_eq!(later.len(), 2);

        pack_everything(&root, &replaced, &AtomicBool::new(false)).expect("packed");

        assert!(later.iter().all(|p| p.exists()), "the later commits' packs stay");
        assert_eq!(pack_files(&root).len(), 3);
        assert_fsck_clean(&root);
    }

    /// A pack that lacks the commit HEAD named at the listing replaces nothing.
    #[test]
    fn a_pack_without_the_listed_head_removes_nothing() {
        let (_dir, root, _repo, _head) = archive(3);
        let stranger = Oid::hash_object(git2::ObjectType::Blob, b"in no pack").expect("hash");
        let replaced = Replaced::list(&root, stranger).expect("listed");

        let failed = pack_everything(&root, &replaced, &AtomicBool::new(false));

        assert!(failed.is_err_and(|e| e.to_string().contains("lacks HEAD")));
        assert!(replaced.packs.iter().all(|p| p.exists()), "every listed pack stays");
        assert_fsck_clean(&root);
    }

    /// A stop before the end kills the children and removes nothing.
    #[test]
    fn a_stopped_pack_removes_nothing() {
        let (_dir, root, _repo, head) = archive(3);
        let replaced = Replaced::list(&root, head).expect("listed");

        let stopped = pack_everything(&root, &replaced, &AtomicBool::new(true));

        assert!(matches!(stopped, Err(Error::Stopped)), "{stopped:?}");
        let mut listed = replaced.packs.clone();
        listed.sort();
        assert_eq!(pack_files(&root), listed, "the listed packs, all of them");
        assert_fsck_clean(&root);
    }

    /// Paths become fixed-width hashes, whatever their bytes; the root tree's empty path and
    /// commits stay bare.
    #[test]
    fn paths_are_replaced_by_their_hash() {
        let listed: &[u8] =
            b"c1\nt1 \nt2 agents/BlueLake/inbox/2026/11\nt3 agents/GreenCastle/inbox/2026/11\nb4 caf\xe9\n";
        let mut fed = Vec::new();
        rename_paths(listed, &mut fed, &AtomicBool::new(false)).expect("renamed");
        let fed = String::from_utf8(fed).expect("utf-8");
        let lines: Vec<&str> = fed.lines().collect();
        assert_eq!(lines[..2], ["c1", "t1"]);
        let (blue, green) = (&lines[2][3..], &lines[3][3..]);
        assert_eq!((blue.len(), green.len(), lines[4].len()), (16, 16, 19));
        assert_ne!(blue, green, "paths that end alike get different names");
    }

    #[test]
    fn inherited_git_variables_are_not_passed_on() {
        let mut command = Command::new("git");
        let names = ["PATH", "GIT_DIR", "HOME", "GIT_OBJECT_DIRECTORY"].map(OsString::from);
        without_git_variables(&mut command, names);
        let removed: Vec<_> = command.get_envs().filter(|(_, value)| value.is_none()).collect();
        assert_eq!(removed, [("GIT_DIR".as_ref(), None), ("GIT_OBJECT_DIRECTORY".as_ref(), None)]);
    }

    /// Git's temporary files from this run go; older ones and the writer's stay.
    #[test]
    fn a_killed_packs_temporary_files_are_removed() {
        let dir = tempfile::tempdir().expect("temp dir");
        let old = dir.path().join("tmp_pack_AbC123");
        fs::write(&old, b"older").expect("old");
        let since = SystemTime::now() - Duration::from_secs(60);
        let earlier = since - Duration::from_secs(60);
        fs::File::options()
            .write(true)
            .open(&old)
            .and_then(|f| f.set_modified(earlier))
            .expect("mtime");
        let names = ["tmp_pack_XyZ789", "tmp_idx_XyZ789", "tmp_rev_XyZ789", "keep.txt"];
        let writers = format!("tmp_pack_{}", "a".repeat(40));
        for name in names.iter().copied().chain([writers.as_str()]) {
            fs::write(dir.path().join(name), b"x").expect("file");
        }
        remove_git_temp_files(dir.path(), since);
        let mut left: Vec<_> = fs::read_dir(dir.path())
            .expect("dir")
            .map(|e| e.expect("entry").file_name().to_string_lossy().into_owned())
            .collect();
        left.sort();
        assert_eq!(left, ["keep.txt", "tmp_pack_AbC123", writers.as_str()]);
    }
}
