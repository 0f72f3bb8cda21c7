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
use std::fs;
use std::hash::{Hash, Hasher};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

/// Packs every object reachable from the refs, the reflogs and the index into one new pack,
/// then deletes the packs that were there before (a pack with a `.keep` file stays; so does
/// every pack written meanwhile, and every loose object). Blocking; run beside the writer.
pub(super) fn pack_everything(root: &Path) -> Result<(), String> {
    let pack_dir = root.join(".git/objects/pack");
    let before = packs_without_keep(&pack_dir)?;
    if before.is_empty() {
        return Ok(());
    }
    let mut objects = git(root)
        .args(["rev-list", "--objects", "--all", "--reflog", "--indexed-objects"])
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run git rev-list: {e}"))?;
    // Relative to `root`, where `git -C` runs: the data dir may be relative (the default is).
    let mut packer = git(root)
        .args(["pack-objects", "-q", "--window=2", "--depth=50", "--delta-base-offset"])
        .arg(".git/objects/pack/pack")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .map_err(|e| format!("cannot run git pack-objects: {e}"))?;
    let listed = objects.stdout.take().map(BufReader::new);
    let feed = packer.stdin.take().map(BufWriter::new);
    let fed = match (listed, feed) {
        (Some(listed), Some(feed)) => rename_paths(listed, feed),
        _ => Err("git's pipes were not opened".to_string()),
    };
    if fed.is_err() {
        // Nobody reads the list any more: a `git rev-list` blocked on a full pipe would
        // never end.
        let _ = objects.kill();
    }
    let mut name = String::new();
    if let Some(mut out) = packer.stdout.take() {
        out.read_to_string(&mut name).map_err(|e| format!("git pack-objects: {e}"))?;
    }
    let listed = objects.wait().map_err(|e| e.to_string())?;
    let packed = packer.wait().map_err(|e| e.to_string())?;
    fed?;
    if !listed.success() || !packed.success() {
        return Err(format!("git rev-list ({listed}) or git pack-objects ({packed}) failed"));
    }
    let name = format!("pack-{}", name.trim());
    if !pack_dir.join(format!("{name}.idx")).is_file() {
        return Err(format!("git pack-objects wrote no {name}.idx"));
    }
    for old in before.iter().filter(|old| old.file_stem().is_some_and(|stem| stem != name.as_str()))
    {
        remove_pack(old);
    }
    Ok(())
}

/// Copies `git rev-list --objects` lines, each path replaced by a hash of it: Git's delta
/// search then groups the versions of one path, whatever its last characters.
fn rename_paths(listed: impl BufRead, mut feed: impl Write) -> Result<(), String> {
    for line in listed.lines() {
        let line = line.map_err(|e| format!("git rev-list: {e}"))?;
        let written = match line.split_once(' ') {
            Some((id, path)) if !path.is_empty() => {
                let mut hasher = DefaultHasher::new();
                path.hash(&mut hasher);
                writeln!(feed, "{id} {:016x}", hasher.finish())
            }
            Some((id, _)) => writeln!(feed, "{id}"),
            None => writeln!(feed, "{line}"),
        };
        written.map_err(|e| format!("git pack-objects: {e}"))?;
    }
    feed.flush().map_err(|e| format!("git pack-objects: {e}"))
}

fn git(root: &Path) -> Command {
    let mut command = Command::new("git");
    command.arg("-C").arg(root).stdin(Stdio::null()).stderr(Stdio::null());
    command
}

/// The `.pack` files of `pack_dir` that no `.keep` file protects.
pub(super) fn packs_without_keep(pack_dir: &Path) -> Result<Vec<PathBuf>, String> {
    let entries = fs::read_dir(pack_dir).map_err(|e| format!("{}: {e}", pack_dir.display()))?;
    Ok(entries
        .filter_map(|entry| entry.ok().map(|entry| entry.path()))
        .filter(|path| path.extension().is_some_and(|ext| ext == "pack"))
        .filter(|path| !path.with_extension("keep").exists())
        .collect())
}

/// Removes a pack: its index first, so that no reader finds an index without its pack.
fn remove_pack(pack: &Path) {
    for ext in ["idx", "pack", "rev", "bitmap", "mtimes"] {
        let file = pack.with_extension(ext);
        if let Err(e) = fs::remove_file(&file)
            && e.kind() != std::io::ErrorKind::NotFound
        {
            tracing::warn!(error = %e, file = %file.display(), "old pack not removed");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::archive::git::{ArchiveRepo, Author};

    fn pack_files(root: &Path) -> Vec<PathBuf> {
        packs_without_keep(&root.join(".git/objects/pack")).expect("pack dir")
    }

    fn pack_bytes(root: &Path) -> u64 {
        pack_files(root).iter().map(|p| fs::metadata(p).expect("size").len()).sum()
    }

    /// The writer's packs (one per commit, each holding the month trees whole) become one
    /// pack with the growing trees stored as deltas; a kept pack and every object stay, and
    /// `git fsck --strict` finds nothing wrong.
    #[test]
    fn the_archive_becomes_one_pack_of_deltas() {
        // Relative to the working dir, as the server's default data dir is.
        let dir = tempfile::tempdir_in(".").expect("temp dir");
        let root = dir.path().file_name().map(PathBuf::from).expect("name").join("archive");
        assert!(root.is_relative());
        let author = Author { name: "m".to_string(), email: "m@example.com".to_string() };
        let mut repo = ArchiveRepo::open_or_init(&root, author).expect("init");
        // Two agents' inboxes whose paths end alike, growing by five messages a commit:
        // their trees' sizes interleave, so without their whole paths Git pairs them
        // with each other rather than with their own previous versions.
        for round in 0..40 {
            let files: Vec<(String, Vec<u8>)> = (0..5)
                .flat_map(|i| {
                    let name = format!("2026-11-22T10-{round:02}-{i:02}Z__note__{round}{i}.md");
                    ["BlueLake", "GreenCastle"].map(|agent| {
                        let bytes = format!("message {round} {i} for {agent}\n").into_bytes();
                        (format!("projects/p/agents/{agent}/inbox/2026/11/{name}"), bytes)
                    })
                })
                .collect();
            repo.commit_files(&files, "mail: round\n").expect("commit");
        }
        let kept = root.join(".git/objects/pack/pack-kept.pack");
        fs::write(&kept, b"not a pack, but kept").expect("kept pack");
        fs::write(kept.with_extension("keep"), b"").expect("keep file");
        let before = pack_bytes(&root);

        pack_everything(&root).expect("packed");

        let packs = pack_files(&root);
        assert_eq!(packs.len(), 1, "one pack left besides the kept one: {packs:?}");
        assert!(kept.exists(), "a pack with a .keep file stays");
        fs::remove_file(&kept).expect("remove kept");
        fs::remove_file(kept.with_extension("keep")).expect("remove keep");
        let after = pack_bytes(&root);
        assert!(after * 3 < before, "{after} bytes after, {before} before");
        let fsck = Command::new("git")
            .arg("-C")
            .arg(&root)
            .args(["fsck", "--strict", "--no-dangling"])
            .output()
            .expect("git fsck");
        assert!(fsck.status.success(), "{}", String::from_utf8_lossy(&fsck.stderr));
        let reopened = ArchiveRepo::open_or_init(
            &root,
            Author { name: "m".to_string(), email: "m@example.com".to_string() },
        )
        .expect("reopen");
        let path = "projects/p/agents/GreenCastle/inbox/2026/11/2026-11-22T10-39-04Z__note__394.md";
        assert_eq!(
            reopened.committed_file(path).expect("read"),
            Some(b"message 39 4 for GreenCastle\n".to_vec())
        );
    }

    /// Paths become fixed-width hashes; the root tree's empty path and commits stay bare.
    #[test]
    fn paths_are_replaced_by_their_hash() {
        let listed =
            "c1\nt1 \nt2 agents/BlueLake/inbox/2026/11\nt3 agents/GreenCastle/inbox/2026/11\n";
        let mut fed = Vec::new();
        rename_paths(listed.as_bytes(), &mut fed).expect("renamed");
        let fed = String::from_utf8(fed).expect("utf-8");
        let lines: Vec<&str> = fed.lines().collect();
        assert_eq!(lines[..2], ["c1", "t1"]);
        let (blue, green) = (&lines[2][3..], &lines[3][3..]);
        assert_eq!((blue.len(), green.len()), (16, 16));
        assert_ne!(blue, green, "paths that end alike get different names");
    }
}
