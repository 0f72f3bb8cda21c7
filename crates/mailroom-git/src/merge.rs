//! Merges packs into one by copying their entries as they are stored.
//!
//! Packs pile up where no full pack ends: while one of a large archive runs
//! (`full_pack.rs`: minutes at a million messages) the commits' packs go on being rolled up
//! beside it (`roll_up.rs`), and a server restarted more often than its full pack takes
//! (each start lists the packs anew, each stop kills it) kept every roll-up it made: 3,298
//! packs at ten million messages. libgit2 searches every pack's index for an object it has
//! not found in the last one, so lookups, mapped memory and start-up grew with them. Git's own
//! merge of them (`git pack-objects --stdin-packs`) walks the commits they hold to name
//! their objects, which at a million messages kept the repacker busy for twenty seconds at
//! a time while the commits' own packs piled up behind it. Here nothing is searched,
//! inflated or walked: each pack's entries are copied in their order, so an offset delta
//! keeps its distance to its base, which is in the same pack. Each entry is checked against
//! its index's CRC on the way, and the packs are removed only once the merged pack is in
//! place.

use std::collections::HashSet;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};

use sha1::{Digest as _, Sha1};

use crate::error::{Error, Result, io_err};
use crate::pack::{self, IndexEntry, OpenPack};

/// Merges `packs` (those still there; a pack holding an object another already gives waits
/// for a later merge) into one new pack in `pack_dir`, then removes them. `None` when fewer
/// than two could be merged. When `stop` is set it returns [`Error::Stopped`], removing
/// nothing.
pub(crate) fn merge(
    pack_dir: &Path,
    packs: &[PathBuf],
    stop: &AtomicBool,
) -> Result<Option<PathBuf>> {
    let mut sources = Vec::with_capacity(packs.len());
    let mut ids = HashSet::new();
    for path in packs {
        let Some(source) = OpenPack::open(path)? else { continue };
        // Copied twice, an object would be listed twice in the index, which Git refuses: a
        // pack repeating an object (another's, or its own) waits.
        let own: HashSet<_> = source.entries.iter().map(|entry| entry.id).collect();
        if own.len() < source.entries.len() || own.iter().any(|id| ids.contains(id)) {
            continue;
        }
        ids.extend(own);
        sources.push(source);
    }
    if sources.len() < 2 {
        return Ok(None);
    }
    let count =
        u32::try_from(ids.len()).map_err(|_| Error::invalid("too many objects for one pack"))?;
    // One merge at a time (the repacker's turn), so one name; a leftover of a merge a crash
    // interrupted is removed here and when a repacker starts.
    let temp = pack_dir.join(TEMP_PACK);
    let _ = std::fs::remove_file(&temp);
    let published =
        copy_entries(&temp, &sources, count, stop).and_then(|(checksum, mut listed)| {
            listed.sort_by_key(|entry| entry.0);
            let index = pack::build_index(&listed, &checksum);
            pack::publish_pack(pack_dir, &temp, &checksum, &index)
        });
    let merged = match published {
        Ok(merged) => merged,
        Err(e) => {
            let _ = std::fs::remove_file(&temp);
            return Err(e);
        }
    };
    pack::retire_packs(pack_dir, sources.iter().map(|source| source.path.as_path()), &merged)?;
    Ok(Some(merged))
}

/// The merged pack's name while it is written.
pub(crate) const TEMP_PACK: &str = "tmp_pack_merge";

/// Writes a pack of `count` objects at `temp`: every entry of `sources`, in order, each
/// pack's entries together. Flushed to the disk. The pack's checksum and its index entries
/// (id, CRC, offset). Checks `stop` between entries.
fn copy_entries(
    temp: &Path,
    sources: &[OpenPack],
    count: u32,
    stop: &AtomicBool,
) -> Result<([u8; 20], Vec<IndexEntry>)> {
    let file = File::create_new(temp).map_err(|e| io_err("cannot create", temp, e))?;
    let mut out = HashingWriter { out: BufWriter::new(file), hasher: Sha1::new(), written: 0 };
    let failed = |e: std::io::Error| io_err("cannot write", temp, e);
    out.write(&pack::header(count)).map_err(failed)?;
    let mut listed = Vec::with_capacity(count as usize);
    let mut entry = Vec::new();
    for source in sources {
        for at in &source.entries {
            if stop.load(Ordering::Relaxed) {
                return Err(Error::Stopped);
            }
            source.read_entry(at, &mut entry)?;
            listed.push((at.id, at.crc, out.written));
            out.write(&entry).map_err(failed)?;
        }
    }
    let checksum: [u8; 20] = out.hasher.finalize().into();
    let mut out = out.out;
    out.write_all(&checksum).map_err(failed)?;
    let file = out.into_inner().map_err(|e| failed(e.into_error()))?;
    file.sync_all().map_err(failed)?;
    Ok((checksum, listed))
}

/// A pack being written: its bytes so far hashed for its checksum, and counted.
struct HashingWriter {
    out: BufWriter<File>,
    hasher: Sha1,
    written: u64,
}

impl HashingWriter {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.out.write_all(bytes)?;
        self.hasher.update(bytes);
        self.written += bytes.len() as u64;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ArchiveRepo;
    use crate::roll_up;
    use crate::testing::{LAYOUT, assert_fsck_clean, author, copy_pack, pack_files};

    /// A new archive in a temporary directory with `rounds` of messages committed into one
    /// month directory (whose tree each rewrites) and each ten commits' packs rolled up, so
    /// that the roll-ups hold deltas; its pack directory and the roll-ups.
    fn rolled_up_archive(rounds: u32) -> (tempfile::TempDir, PathBuf, Vec<PathBuf>) {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut repo = ArchiveRepo::open_or_init(dir.path(), author(), LAYOUT).expect("archive");
        let pack_dir = dir.path().join(".git/objects/pack");
        let mut waiting = Vec::new();
        let mut rolled = Vec::new();
        for round in 0..rounds {
            // Large enough for a delta: a month tree of some kilobytes.
            let files: Vec<(String, Vec<u8>)> = (0..20)
                .map(|i| {
                    let path = format!("messages/2026/11/2026-11-23T10-{round:04}-{i:02}__m.md");
                    (path, format!("message {round} {i}\n").into_bytes())
                })
                .collect();
            let committed = repo.commit_files(&files, "mail\n").expect("commit").expect("new");
            waiting.push(committed.pack);
            if waiting.len() == 10 {
                let packs = std::mem::take(&mut waiting);
                rolled.push(roll_up::roll_up(&pack_dir, &packs).expect("rolled").expect("a pack"));
            }
        }
        (dir, pack_dir, rolled)
    }

    /// Roll-ups (deltas among them) merge into one pack that Git reads whole, and every
    /// object of theirs is in it.
    #[test]
    fn roll_ups_merge_into_one_pack_git_reads() {
        let (dir, pack_dir, rolled) = rolled_up_archive(40);
        assert_eq!(rolled.len(), 4);
        let objects: Vec<git2::Oid> = rolled
            .iter()
            .flat_map(|p| pack::index_ids(&p.with_extension("idx")).expect("ids"))
            .collect();
        let before = pack_files(dir.path());

        let merged = merge(&pack_dir, &rolled, &AtomicBool::new(false))
            .expect("merged")
            .expect("a new pack");

        let after = pack_files(dir.path());
        assert_eq!(after.len(), before.len() - 3, "four became one: {after:?}");
        assert!(rolled.iter().all(|p| !p.exists() && !p.with_extension("idx").exists()));
        let held = pack::index_ids(&merged.with_extension("idx")).expect("ids");
        assert_eq!(held.len(), objects.len());
        assert!(objects.iter().all(|id| held.binary_search(id).is_ok()));
        let verified = std::process::Command::new("git")
            .arg("verify-pack")
            .arg(merged.with_extension("idx"))
            .status()
            .expect("git verify-pack");
        assert!(verified.success(), "git verify-pack accepts the merged pack");
        assert_fsck_clean(dir.path());
    }

    /// A pack holding an object another pack of the merge already gives is left out of it,
    /// and stays.
    #[test]
    fn a_pack_repeating_an_object_waits() {
        let (dir, pack_dir, rolled) = rolled_up_archive(30);
        // A second copy of the first roll-up's objects, as its own pack.
        let copy = pack_dir.join("pack-copy.pack");
        copy_pack(&rolled[0], &copy);
        let mut inputs = rolled.clone();
        inputs.insert(1, copy.clone());

        merge(&pack_dir, &inputs, &AtomicBool::new(false)).expect("merged").expect("a new pack");

        assert!(copy.exists(), "the repeating pack stays");
        assert!(rolled.iter().all(|p| !p.exists()), "the others were merged");
        assert_fsck_clean(dir.path());
    }

    /// A pack listing one object twice (a human's Git may write one) is left out too.
    #[test]
    fn a_pack_repeating_its_own_object_waits() {
        let (_dir, pack_dir, rolled) = rolled_up_archive(20);
        let id = git2::Oid::hash_object(git2::ObjectType::Blob, b"twice").expect("id");
        let mut builder = pack::PackBuilder::new();
        for _ in 0..2 {
            builder.push_whole(id, git2::ObjectType::Blob, b"twice").expect("pushed");
        }
        let twice = builder.publish(&pack_dir).expect("published");
        let mut inputs = vec![twice.clone()];
        inputs.extend(rolled.iter().cloned());

        merge(&pack_dir, &inputs, &AtomicBool::new(false)).expect("merged").expect("a new pack");

        assert!(twice.exists(), "the pack repeating its object stays");
        assert!(rolled.iter().all(|p| !p.exists()), "the others were merged");
    }

    /// A stopped merge removes nothing and leaves no temporary file.
    #[test]
    fn a_stopped_merge_removes_nothing() {
        let (dir, pack_dir, rolled) = rolled_up_archive(20);
        let before = pack_files(dir.path());

        let stopped = merge(&pack_dir, &rolled, &AtomicBool::new(true));

        assert!(matches!(stopped, Err(Error::Stopped)), "{stopped:?}");
        assert_eq!(pack_files(dir.path()), before);
        assert!(!pack_dir.join(TEMP_PACK).exists(), "no temporary file is left");
    }

    /// An entry that does not match its CRC fails the merge, which removes nothing and
    /// leaves no temporary file.
    #[test]
    fn a_damaged_entry_fails_the_merge_and_removes_nothing() {
        let (dir, pack_dir, rolled) = rolled_up_archive(20);
        let mut bytes = std::fs::read(&rolled[1]).expect("pack");
        bytes[12] ^= 0x01;
        std::fs::write(&rolled[1], &bytes).expect("damage");
        let before = pack_files(dir.path());

        assert!(merge(&pack_dir, &rolled, &AtomicBool::new(false)).is_err());

        assert_eq!(pack_files(dir.path()), before);
        let temp = std::fs::read_dir(&pack_dir)
            .expect("pack dir")
            .filter_map(|e| e.ok())
            .any(|e| e.file_name().to_string_lossy().starts_with("tmp_"));
        assert!(!temp, "no temporary file is left");
    }
}
