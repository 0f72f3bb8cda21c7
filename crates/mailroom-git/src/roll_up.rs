//! Rolls the packs of the last commits into one pack in which each later version of a large
//! directory or file is a delta of an earlier version.
//!
//! Each commit's pack (`repo.rs`) holds every tree it rewrote whole, and the month
//! directories' trees grow all month: a two-hour soak's month tree was 12.5 MB, rewritten
//! by every commit, and the commits' packs grew by gigabytes an hour, faster than `git`
//! could repack them on a busy machine. Git's own roll-ups store most of those trees whole
//! again (`repack.rs`), and its delta search costs a multiple of each tree's size.
//!
//! The writer knows what Git has to search for: which tree or file each new one replaced at
//! the same path (`tree_merge.rs`). Here the versions of each path in the roll-up are
//! grouped; the newest is stored whole, and each older one as a delta of it (`delta.rs`),
//! built from their common start and end, without a search. An older version of a month
//! tree is the newest one without its last entries, so its delta is copy instructions only
//! (one per 64 KiB: about 200 bytes for a 12 MB tree); reading the newest costs no delta at
//! all (as in Git's own packs, where the recent versions are the whole ones). Every other
//! object is copied as it is. Each delta is checked by rebuilding its target before the
//! pack is written, and the commits' packs are deleted only once the roll-up holding all
//! their objects is in place; whatever fails, they stay.

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};

use git2::Oid;

use crate::delta;
use crate::error::{Error, Result};
use crate::pack::{self, OpenPack, PackBuilder, PackEntry};

/// A pack one commit wrote, and which of its objects replaced which at the same path
/// (new id, previous id).
#[derive(Debug, Clone)]
pub(crate) struct CommitPack {
    pub pack: PathBuf,
    pub versions: Vec<(Oid, Oid)>,
}

/// Objects smaller than this are copied as they are: a delta would save little.
const DELTA_MIN: usize = 1024;

/// Where an object is: its source and its entry.
#[derive(Clone, Copy)]
struct Location {
    source: usize,
    entry: PackEntry,
}

/// Rolls `packs` (in the order they were written) into one new pack in `pack_dir`, then
/// deletes them. Packs gone meanwhile (most often merged by a geometric repack) are skipped.
/// `None` when fewer than two packs were there (nothing to gain). Every entry must be a
/// whole object, as the writer's packs hold, and match its index's CRC: anything else fails
/// the roll-up, which then writes and deletes nothing. Not stoppable: the repacker awaits a
/// running one at stop (it is short).
pub(crate) fn roll_up(pack_dir: &Path, packs: &[CommitPack]) -> Result<Option<PathBuf>> {
    let mut sources = Vec::with_capacity(packs.len());
    for commit_pack in packs {
        if let Some(source) = OpenPack::open(&commit_pack.pack)? {
            sources.push(source);
        }
    }
    if sources.len() < 2 {
        return Ok(None);
    }
    let mut located = HashMap::new();
    for (i, source) in sources.iter().enumerate() {
        for entry in &source.entries {
            located.entry(entry.id).or_insert(Location { source: i, entry: *entry });
        }
    }
    let mut out = PackBuilder::new();
    let mut written = HashSet::with_capacity(located.len());
    let mut scratch = Scratch::default();
    for (newest, older) in version_groups(packs, &located) {
        write_group(&mut out, &sources, &located, newest, &older, &mut written, &mut scratch)?;
    }
    for (i, source) in sources.iter().enumerate() {
        // An object held twice is copied once, from its first source (as `located` has it).
        for entry in &source.entries {
            if written.insert(entry.id) {
                read_entry(&sources, Location { source: i, entry: *entry }, &mut scratch.entry)?;
                out.push_raw(entry.id, &scratch.entry, entry.crc);
            }
        }
    }
    let rolled_up = out.publish(pack_dir)?;
    pack::retire_packs(pack_dir, sources.iter().map(|source| source.path.as_path()), &rolled_up)?;
    Ok(Some(rolled_up))
}

/// The versions of each path in the roll-up: its newest version, and the older ones (as
/// the commits wrote them, oldest first). Only objects the roll-up holds are grouped.
fn version_groups(packs: &[CommitPack], located: &HashMap<Oid, Location>) -> Vec<(Oid, Vec<Oid>)> {
    let mut next = HashMap::new();
    for (new, previous) in packs.iter().flat_map(|p| p.versions.iter()) {
        if new != previous && located.contains_key(new) && located.contains_key(previous) {
            next.insert(*previous, *new);
        }
    }
    let mut older: HashMap<Oid, Vec<Oid>> = HashMap::new();
    let mut grouped = HashSet::new();
    for pack in packs {
        for (_, first) in &pack.versions {
            if grouped.contains(first) || !next.contains_key(first) {
                continue;
            }
            // Follows the path forward to its newest version. A file set back to an earlier
            // content makes a loop: the walk stops where it would go round.
            let mut chain = vec![*first];
            let mut seen = HashSet::from([*first]);
            let mut at = *first;
            while let Some(following) = next.get(&at).filter(|n| seen.insert(**n)) {
                chain.push(*following);
                at = *following;
            }
            let newest = chain.pop().unwrap_or(*first);
            grouped.extend(chain.iter().copied());
            grouped.insert(newest);
            let listed = older.entry(newest).or_default();
            listed.extend(chain.into_iter().filter(|id| *id != newest));
        }
    }
    older.into_iter().filter(|(_, older)| !older.is_empty()).collect()
}

/// Buffers reused from entry to entry of a roll-up. The versions of a month directory's
/// tree are megabytes each, and a fresh buffer that size is mapped and faulted in page by
/// page (glibc's mmap threshold is fixed, [`MMAP_THRESHOLD`](crate::MMAP_THRESHOLD)).
#[derive(Default)]
struct Scratch {
    /// An entry as the pack holds it.
    entry: Vec<u8>,
    /// The newest version of the group's path, inflated.
    base: Vec<u8>,
    /// An older version, inflated.
    older: Vec<u8>,
    /// The older version rebuilt from its delta, to check it.
    rebuilt: Vec<u8>,
}

/// Reads one object's entry from its source into `entry`: a whole object (type 1 to 4)
/// whose CRC is the one its index gives.
fn read_entry(sources: &[OpenPack], at: Location, entry: &mut Vec<u8>) -> Result<()> {
    let source = &sources[at.source];
    source.read_entry(&at.entry, entry)?;
    let failed =
        |what: &str| Error::invalid(format!("{}: {} {what}", source.path.display(), at.entry.id));
    match pack::entry_header(entry) {
        Some((1..=4, _, _)) => Ok(()),
        Some((kind, _, _)) => Err(failed(&format!("is of type {kind}, not a whole object"))),
        None => Err(failed("has a malformed header")),
    }
}

/// A whole object's entry (as `read_entry` gives it), inflated into `content`; its type code.
fn inflate_entry(entry: &[u8], content: &mut Vec<u8>) -> Result<u8> {
    let (kind, size, header) = pack::entry_header(entry).ok_or_else(malformed)?;
    pack::inflate(&entry[header..], size, content)?;
    Ok(kind)
}

/// Writes a path's newest version whole, then each older one as a delta of it where the
/// delta is worth it (and checked); the rest are left for the copy of every other object.
fn write_group(
    out: &mut PackBuilder,
    sources: &[OpenPack],
    located: &HashMap<Oid, Location>,
    newest: Oid,
    older: &[Oid],
    written: &mut HashSet<Oid>,
    scratch: &mut Scratch,
) -> Result<()> {
    if written.contains(&newest) {
        return Ok(());
    }
    let at = located[&newest];
    read_entry(sources, at, &mut scratch.entry)?;
    let (kind, size, _) = pack::entry_header(&scratch.entry).ok_or_else(malformed)?;
    // Copy offsets have 32 bits (`delta.rs`).
    if size < DELTA_MIN || size > u32::MAX as usize {
        return Ok(());
    }
    let base_offset = out.push_raw(newest, &scratch.entry, at.entry.crc);
    written.insert(newest);
    inflate_entry(&scratch.entry, &mut scratch.base)?;
    for id in older {
        if written.contains(id) {
            continue;
        }
        read_entry(sources, located[id], &mut scratch.entry)?;
        let older_kind = inflate_entry(&scratch.entry, &mut scratch.older)?;
        let data = &scratch.older;
        if older_kind != kind || data.len() < DELTA_MIN {
            continue;
        }
        let delta = delta::encode(&scratch.base, data);
        if delta.len() >= data.len() / 2 {
            continue;
        }
        let rebuilt = delta::apply(&scratch.base, &delta, &mut scratch.rebuilt);
        if rebuilt.is_none() || scratch.rebuilt != *data {
            return Err(Error::invalid(format!("the delta for {id} does not rebuild it")));
        }
        out.push_delta(*id, base_offset, &delta)?;
        written.insert(*id);
    }
    Ok(())
}

fn malformed() -> Error {
    Error::invalid("a malformed pack entry")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ArchiveRepo;
    use crate::testing::{LAYOUT, assert_fsck_clean, author, git, pack_bytes, pack_files};
    use std::fs;

    /// Commits `rounds` messages into one month directory and one growing digest, a commit
    /// each, as the writer does; the commits' packs.
    fn commit_rounds(repo: &mut ArchiveRepo, rounds: std::ops::Range<usize>) -> Vec<CommitPack> {
        let mut packs = Vec::new();
        for round in rounds {
            let digest: String = (0..=round).map(|i| format!("- message {i}\n")).collect();
            let files = vec![
                (
                    format!("messages/2026/11/2026-11-23T10-{round:05}__subject__{round}.md"),
                    format!("message {round}\n").into_bytes(),
                ),
                ("messages/threads/hot.md".to_string(), digest.into_bytes()),
            ];
            let committed =
                repo.commit_files(&files, "mail: round\n").expect("commit").expect("new");
            packs.push(committed.pack);
        }
        packs
    }

    /// 600 commits' packs become one pack a tenth of their size, every object reads back
    /// through Git, and `git fsck --strict` finds nothing wrong.
    #[test]
    fn commit_packs_become_one_pack_of_deltas() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        let mut repo = ArchiveRepo::open_or_init(root, author(), LAYOUT).expect("archive");
        let packs = commit_rounds(&mut repo, 0..600);
        let before = pack_bytes(root);

        let rolled = roll_up(&root.join(".git/objects/pack"), &packs)
            .expect("rolled up")
            .expect("a new pack");

        let after = pack_files(root);
        assert_eq!(after.len(), 2, "the initial commit's pack and the roll-up: {after:?}");
        assert!(after.contains(&rolled));
        let rolled_bytes = fs::metadata(&rolled).expect("size").len();
        assert!(rolled_bytes * 10 < before, "{rolled_bytes} bytes rolled up from {before}");
        assert_fsck_clean(root);
        let verified = git(
            root,
            &["verify-pack", "-v", rolled.with_extension("idx").to_str().expect("utf-8")],
        );
        assert!(verified.contains("chain length = 1:"), "deltas one deep: {verified}");
        let shown = git(root, &["show", "HEAD:messages/threads/hot.md"]);
        assert!(shown.ends_with("- message 599\n"));
        let listed = git(root, &["ls-tree", "HEAD:messages/2026/11"]);
        assert_eq!(listed.lines().count(), 600);
    }

    /// A pack gone before the roll-up read it is skipped; one pack alone is left as it is.
    #[test]
    fn gone_packs_are_skipped_and_one_pack_is_left() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        let mut repo = ArchiveRepo::open_or_init(root, author(), LAYOUT).expect("archive");
        let packs = commit_rounds(&mut repo, 0..3);
        git(root, &["repack", "-a", "-d", "-q"]);
        assert!(matches!(roll_up(&root.join(".git/objects/pack"), &packs), Ok(None)));

        let more = commit_rounds(&mut repo, 3..6);
        let mut listed = packs.clone();
        listed.extend(more.iter().cloned());
        let rolled = roll_up(&root.join(".git/objects/pack"), &listed).expect("rolled");
        assert!(rolled.is_some());
        assert_eq!(pack_files(root).len(), 2, "git's pack and the roll-up of the three new");
        assert_fsck_clean(root);
    }

    /// A pack holding deltas (a roll-up's own) is not a commit's pack: given as one, it fails
    /// the roll-up, and no pack is deleted.
    #[test]
    fn a_pack_with_deltas_fails_the_roll_up_and_nothing_is_deleted() {
        let dir = tempfile::tempdir().expect("temp dir");
        let root = dir.path();
        let pack_dir = root.join(".git/objects/pack");
        let mut repo = ArchiveRepo::open_or_init(root, author(), LAYOUT).expect("archive");
        let packs = commit_rounds(&mut repo, 0..40);
        let rolled = roll_up(&pack_dir, &packs).expect("rolled").expect("a pack");
        let mut listed = vec![CommitPack { pack: rolled, versions: Vec::new() }];
        listed.extend(commit_rounds(&mut repo, 40..42));
        let mut before = pack_files(root);
        let failed = roll_up(&pack_dir, &listed);
        let whole = |e: &Error| e.to_string().contains("not a whole object");
        assert!(failed.as_ref().is_err_and(whole), "{failed:?}");
        let mut after = pack_files(root);
        before.sort();
        after.sort();
        assert_eq!(after, before);
        assert_fsck_clean(root);
    }

    /// Versions that loop (a file set back to an earlier content) or share an id still
    /// group: each walk ends, and no group lists its newest among the older.
    #[test]
    fn looping_versions_group_without_end_or_self() {
        let id = |n: u8| Oid::from_bytes(&[n; 20]).expect("id");
        let entry = PackEntry { id: id(0), crc: 0, start: 12, end: 13 };
        let located: HashMap<Oid, Location> =
            (1..=6).map(|n| (id(n), Location { source: 0, entry })).collect();
        // 1 -> 2 -> 3 -> 1 loops; 4 -> 2 joins it; 5 -> 6 is a plain chain.
        let versions =
            vec![(id(2), id(1)), (id(3), id(2)), (id(1), id(3)), (id(2), id(4)), (id(6), id(5))];
        let packs = [CommitPack { pack: PathBuf::from("unused"), versions }];
        let groups = version_groups(&packs, &located);
        assert!(!groups.is_empty());
        for (newest, older) in &groups {
            assert!(!older.contains(newest), "{newest} is its own older version");
        }
        let plain = groups.iter().find(|(newest, _)| *newest == id(6)).expect("5 -> 6 grouped");
        assert_eq!(plain.1, vec![id(5)]);
    }
}
