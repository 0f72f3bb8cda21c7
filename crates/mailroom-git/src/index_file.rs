//! Git's index, updated as a stream: the entries on disk are copied through in order, with
//! the new ones merged in where they belong, into `index.lock`, which then replaces the index.
//!
//! The index holds an entry per archived file. Loaded whole by libgit2 to add a batch, it
//! took 24 MB of heap at 54,000 files (a 15-minute soak), a peak that grew with the archive
//! and that the allocator then kept: the server's resident memory followed it. Streamed, an
//! update holds the batch's entries and two buffers.
//!
//! Format (Git's `Documentation/gitformat-index.txt`, versions 2 and 3): a 12-byte header
//! (`DIRC`, version, entry count), entries sorted by path (62 fixed bytes, 2 more in version
//! 3 when the entry says so, the path, 1 to 8 NULs to a multiple of 8 bytes), extensions,
//! and the SHA-1 of everything before it. Optional extensions (the cached tree, the untracked
//! cache, offsets into the old file) are dropped: Git rebuilds them when missing. A sparse
//! index (`sdir`: entries that stand for a whole directory outside the sparse checkout, with
//! a directory's mode and the skip-worktree flag) is read and written like any other: such
//! an entry is set, replaced or removed by its path ending in `/`, and `collapse` drops every
//! entry under a directory its new sparse entry stands for. An index this code does not
//! handle (version 4, or another required extension: a split index) is reported as
//! [`Update::Unsupported`]. A path that is both a file and another entry's
//! directory (which a human's `git add` could never produce, nor `tree_merge` commit) is not
//! looked for.

use std::fs::{self, File, OpenOptions};
use std::io::{BufRead, BufReader, BufWriter, ErrorKind, Seek, SeekFrom, Write};
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

use git2::IndexEntry;
use sha1::{Digest as _, Sha1};

use crate::error::{Result, io_err};

const SIGNATURE: &[u8; 4] = b"DIRC";
const HEADER_LEN: usize = 12;
const CHECKSUM_LEN: usize = 20;
/// ctime, mtime (seconds and nanoseconds each), dev, ino, mode, uid, gid, size, id, flags.
const FIXED_LEN: usize = 62;
const FLAG_EXTENDED: u16 = 0x4000;
const NAME_MASK: u16 = 0x0fff;
/// The extension marking an index that may hold sparse directory entries.
const SPARSE_EXTENSION: &[u8; 4] = b"sdir";
/// A sparse directory entry's mode: a directory's (its id is the directory's tree).
pub(crate) const DIRECTORY_MODE: u32 = 0o040000;
/// The extended flag of an entry whose file is not in the work tree.
pub(crate) const SKIP_WORKTREE: u16 = 1 << 14;

/// What an update did.
#[derive(Debug, PartialEq, Eq)]
pub(crate) enum Update {
    /// The index was replaced; it now holds this many entries.
    Written(usize),
    /// Another process holds `index.lock` (a human's git command): nothing was written.
    Busy,
    /// The index is of a form this code does not rewrite; nothing was written.
    Unsupported,
    /// The index does not parse or its checksum is wrong (named); nothing was written.
    Damaged(&'static str),
}

/// What one update changes in the index.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    /// Entries set (a file's, or a sparse directory's), each replacing its path's entries in
    /// any stage; of a path given twice the last is kept.
    pub(crate) set: Vec<IndexEntry>,
    /// Paths whose entries go.
    pub(crate) remove: Vec<Vec<u8>>,
    /// Directories, ending in `/`, whose entries all go (a sparse entry set for the same path
    /// stands for them).
    pub(crate) collapse: Vec<Vec<u8>>,
}

/// Sets `entries` (stage 0, each with its path and stat data) in the index of `git_dir`.
#[cfg(test)]
pub(crate) fn add_entries(git_dir: &Path, entries: Vec<IndexEntry>) -> Result<Update> {
    update(git_dir, Changes { set: entries, ..Changes::default() })
}

/// Applies `changes` to the index of `git_dir`, as a stream into `index.lock`.
pub(crate) fn update(git_dir: &Path, mut changes: Changes) -> Result<Update> {
    // Reversed, then sorted stably: of equal paths the last given comes first, and is kept.
    changes.set.reverse();
    changes.set.sort_by(|a, b| a.path.cmp(&b.path));
    changes.set.dedup_by(|next, kept| next.path == kept.path);
    changes.remove.sort();
    changes.collapse.sort();
    let index_path = git_dir.join("index");
    with_lock(git_dir, |lock| match File::open(&index_path) {
        Ok(old) => merge(Some(BufReader::with_capacity(1 << 16, old)), &changes, lock),
        Err(e) if e.kind() == ErrorKind::NotFound => merge(None::<&[u8]>, &changes, lock),
        Err(e) => Err(MergeError::Io(e)),
    })
}

/// Writes a new index for `git_dir` holding `entries` alone, as they come: they must come
/// sorted by path, one per path (a tree walk's order). Nothing is held but the entry being
/// written; an entry that fails leaves the index as it was.
pub(crate) fn rebuild(
    git_dir: &Path,
    entries: impl Iterator<Item = std::io::Result<IndexEntry>>,
) -> Result<Update> {
    with_lock(git_dir, |lock| {
        // Version 3: a sparse entry's flag needs it, and any entry may be one.
        let mut writer = start_index(lock, 3)?;
        let (mut written, mut sparse) = (0usize, false);
        for entry in entries {
            let entry = entry?;
            sparse |= is_sparse_directory(&entry);
            write_entry(&mut writer, &entry)?;
            written += 1;
        }
        seal_index(writer, written, sparse)
    })
}

/// Takes `index.lock` of `git_dir`, lets `write` fill it, and renames it over the index;
/// `Busy` when another process holds it.
fn with_lock(
    git_dir: &Path,
    write: impl FnOnce(File) -> Result<usize, MergeError>,
) -> Result<Update> {
    let index_path = git_dir.join("index");
    let lock_path = git_dir.join("index.lock");
    let lock = match OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .mode(0o644)
        .open(&lock_path)
    {
        Ok(file) => file,
        Err(e) if e.kind() == ErrorKind::AlreadyExists => return Ok(Update::Busy),
        Err(e) => return Err(io_err("cannot create", &lock_path, e)),
    };
    // From here on the lock is ours: removed whatever happens, unless renamed into place.
    let mut held = HeldLock { path: &lock_path, published: false };
    match write(lock) {
        Ok(count) => {
            fs::rename(&lock_path, &index_path)
                .map_err(|e| io_err("cannot replace", &index_path, e))?;
            held.published = true;
            Ok(Update::Written(count))
        }
        Err(MergeError::Unsupported) => Ok(Update::Unsupported),
        Err(MergeError::Corrupt(why)) => Ok(Update::Damaged(why)),
        Err(MergeError::Io(e)) => Err(io_err("cannot rewrite", &index_path, e)),
    }
}

/// The number of entries the index of `git_dir` says it holds (its header's count; nothing
/// else is read), or `None` when there is no index or its header is not Git's.
pub(crate) fn entry_count(git_dir: &Path) -> Option<usize> {
    let mut header = [0u8; HEADER_LEN];
    std::io::Read::read_exact(&mut File::open(git_dir.join("index")).ok()?, &mut header).ok()?;
    (&header[..4] == SIGNATURE).then(|| u32::from_be_bytes(word(&header[8..12])) as usize)
}

/// `index.lock` while this code holds it: removed when dropped unless it became the index
/// (a failure or a panic must not leave it behind, or every later update would find the
/// index busy).
struct HeldLock<'p> {
    path: &'p Path,
    published: bool,
}

impl Drop for HeldLock<'_> {
    fn drop(&mut self) {
        if !self.published {
            let _ = fs::remove_file(self.path);
        }
    }
}

enum MergeError {
    Unsupported,
    Corrupt(&'static str),
    Io(std::io::Error),
}

impl From<std::io::Error> for MergeError {
    fn from(e: std::io::Error) -> Self {
        if e.kind() == ErrorKind::UnexpectedEof {
            return Self::Corrupt("it ends early");
        }
        Self::Io(e)
    }
}

/// Writes to `out` the index read from `old` (`None`: there is none yet) with `entries`
/// (sorted by path, one per path) merged in. Returns the number of entries written.
fn merge(old: Option<impl BufRead>, changes: &Changes, out: File) -> Result<usize, MergeError> {
    let mut old = match old {
        Some(reader) => Some(OldIndex::open(reader)?),
        None => None,
    };
    // Extended flags (a sparse entry's skip-worktree) need version 3.
    let extended = changes.set.iter().any(|entry| entry.flags_extended != 0);
    let old_version = old.as_ref().map_or(2, |index| index.version);
    let version = if extended { old_version.max(3) } else { old_version };
    let mut writer = start_index(out, version)?;

    let mut pending = changes.set.iter().peekable();
    let mut removed = changes.remove.iter().peekable();
    let mut collapsed = changes.collapse.iter().peekable();
    let mut written = 0usize;
    let mut sparse = changes.set.iter().any(is_sparse_directory);
    // The last old sparse entry kept: a new entry under it would stand twice for one file
    // (a human's own sparse checkout over a path the archive commits), which the caller must
    // settle by writing the index anew.
    let mut kept_sparse: Option<Vec<u8>> = None;
    let under_kept = |kept: &Option<Vec<u8>>, new: &IndexEntry| {
        kept.as_ref().is_some_and(|dir| new.path.starts_with(dir))
    };
    if let Some(old) = old.as_mut() {
        // The path whose entries (one per stage) a new entry replaced.
        let mut replaced: Option<Vec<u8>> = None;
        while let Some(entry) = old.next_entry()? {
            let path = entry.path();
            if replaced.as_deref() == Some(path) {
                continue;
            }
            while let Some(new) = pending.next_if(|new| new.path.as_slice() < path) {
                if under_kept(&kept_sparse, new) {
                    return Err(MergeError::Unsupported);
                }
                write_entry(&mut writer, new)?;
                written += 1;
            }
            if let Some(new) = pending.next_if(|new| new.path.as_slice() == path) {
                write_entry(&mut writer, new)?;
                written += 1;
                replaced = Some(path.to_vec());
                continue;
            }
            // A directory's entries follow it in order: one passed is passed for good.
            while collapsed.next_if(|dir| dir.as_slice() < path && !path.starts_with(dir)).is_some()
            {
            }
            while removed.next_if(|gone| gone.as_slice() < path).is_some() {}
            let goes = collapsed.peek().is_some_and(|dir| path.starts_with(dir))
                || removed.peek().is_some_and(|gone| gone.as_slice() == path);
            if !goes {
                if entry.is_sparse_directory() {
                    kept_sparse = Some(path.to_vec());
                }
                writer.write_all(entry.bytes)?;
                written += 1;
            }
        }
        sparse |= old.check_trailer()?;
    }
    for new in pending {
        if under_kept(&kept_sparse, new) {
            return Err(MergeError::Unsupported);
        }
        write_entry(&mut writer, new)?;
        written += 1;
    }
    seal_index(writer, written, sparse)
}

/// A buffered writer on `out` with the index header written; the entry count is patched in
/// by [`seal_index`] once known.
fn start_index(out: File, version: u32) -> std::io::Result<BufWriter<File>> {
    let mut writer = BufWriter::with_capacity(1 << 16, out);
    writer.write_all(SIGNATURE)?;
    writer.write_all(&version.to_be_bytes())?;
    writer.write_all(&0u32.to_be_bytes())?;
    Ok(writer)
}

/// Ends an index of `written` entries: the `sdir` extension when it may hold sparse entries,
/// the count patched into the header, and the checksum of it all. Returns `written`.
fn seal_index(
    mut writer: BufWriter<File>,
    written: usize,
    sparse: bool,
) -> Result<usize, MergeError> {
    if sparse {
        // `sdir`: the index may hold sparse directory entries (an empty extension).
        writer.write_all(SPARSE_EXTENSION)?;
        writer.write_all(&0u32.to_be_bytes())?;
    }
    let count = u32::try_from(written).map_err(|_| MergeError::Corrupt("too many entries"))?;
    let mut out = writer.into_inner().map_err(|e| e.into_error())?;
    out.seek(SeekFrom::Start(8))?;
    out.write_all(&count.to_be_bytes())?;
    // The checksum covers the patched header: read the file back (it is in the page cache).
    out.seek(SeekFrom::Start(0))?;
    let mut hasher = Sha1::new();
    let mut reader = BufReader::with_capacity(1 << 16, &mut out);
    loop {
        let chunk = reader.fill_buf()?;
        if chunk.is_empty() {
            break;
        }
        hasher.update(chunk);
        let read = chunk.len();
        reader.consume(read);
    }
    drop(reader);
    out.write_all(&hasher.finalize())?;
    Ok(written)
}

/// The index on disk, read entry by entry and hashed as it goes.
struct OldIndex<R> {
    reader: R,
    hasher: Sha1,
    version: u32,
    remaining: u32,
    /// The current entry's bytes, padding included.
    entry: Vec<u8>,
}

/// One entry of the old index, borrowed.
struct OldEntry<'a> {
    bytes: &'a [u8],
    path: std::ops::Range<usize>,
}

impl OldEntry<'_> {
    fn path(&self) -> &[u8] {
        &self.bytes[self.path.clone()]
    }

    /// Whether it stands for a directory outside the sparse checkout (its mode, after the
    /// times, device and inode, is a directory's).
    fn is_sparse_directory(&self) -> bool {
        u32::from_be_bytes(word(&self.bytes[24..28])) == DIRECTORY_MODE
    }
}

impl<R: BufRead> OldIndex<R> {
    fn open(mut reader: R) -> Result<Self, MergeError> {
        let mut header = [0u8; HEADER_LEN];
        reader.read_exact(&mut header)?;
        if &header[..4] != SIGNATURE {
            return Err(MergeError::Corrupt("no DIRC signature"));
        }
        let version = u32::from_be_bytes(word(&header[4..8]));
        if version != 2 && version != 3 {
            return Err(MergeError::Unsupported);
        }
        let remaining = u32::from_be_bytes(word(&header[8..12]));
        let mut hasher = Sha1::new();
        hasher.update(header);
        Ok(Self { reader, hasher, version, remaining, entry: Vec::with_capacity(256) })
    }

    fn next_entry(&mut self) -> Result<Option<OldEntry<'_>>, MergeError> {
        if self.remaining == 0 {
            return Ok(None);
        }
        self.remaining -= 1;
        let entry = &mut self.entry;
        entry.clear();
        entry.resize(FIXED_LEN, 0);
        self.reader.read_exact(entry)?;
        let flags = u16::from_be_bytes([entry[60], entry[61]]);
        if flags & FLAG_EXTENDED != 0 {
            if self.version < 3 {
                return Err(MergeError::Corrupt("an extended entry in a version 2 index"));
            }
            entry.extend_from_slice(&[0, 0]);
            let len = entry.len();
            self.reader.read_exact(&mut entry[len - 2..])?;
        }
        let path_start = entry.len();
        // The path ends at its first NUL; more NULs pad the entry to a multiple of 8 bytes.
        self.reader.read_until(0, entry)?;
        if entry.last() != Some(&0) {
            return Err(MergeError::Corrupt("it ends early"));
        }
        let path_end = entry.len() - 1;
        let padded = entry.len().div_ceil(8) * 8;
        let unpadded = entry.len();
        entry.resize(padded, 0);
        self.reader.read_exact(&mut entry[unpadded..])?;
        if entry[unpadded..].iter().any(|&b| b != 0) {
            return Err(MergeError::Corrupt("an entry's padding is not NUL"));
        }
        self.hasher.update(&entry[..]);
        Ok(Some(OldEntry { bytes: &self.entry, path: path_start..path_end }))
    }

    /// Reads what follows the entries: extensions, then the checksum of everything before
    /// it, which must match. An extension that changes what the entries mean is unsupported,
    /// but for `sdir` (sparse directory entries, which are copied like any other): whether
    /// it is there.
    fn check_trailer(&mut self) -> Result<bool, MergeError> {
        let mut rest = Vec::new();
        self.reader.read_to_end(&mut rest)?;
        if rest.len() < CHECKSUM_LEN {
            return Err(MergeError::Corrupt("no checksum"));
        }
        let (extensions, checksum) = rest.split_at(rest.len() - CHECKSUM_LEN);
        self.hasher.update(extensions);
        // All zeros: written with `index.skipHash` (Git 2.40+, `feature.manyFiles`).
        let skipped = checksum.iter().all(|&b| b == 0);
        if !skipped && self.hasher.clone().finalize().as_slice() != checksum {
            return Err(MergeError::Corrupt("its checksum does not match"));
        }
        let mut remaining = extensions;
        let mut sparse = false;
        while !remaining.is_empty() {
            if remaining.len() < 8 {
                return Err(MergeError::Corrupt("a truncated extension"));
            }
            // A signature not starting with `A`–`Z` marks an extension readers must
            // understand (a split index's `link`, a sparse index's `sdir`, …).
            if &remaining[..4] == SPARSE_EXTENSION {
                sparse = true;
            } else if !remaining[0].is_ascii_uppercase() {
                return Err(MergeError::Unsupported);
            }
            let size = u32::from_be_bytes(word(&remaining[4..8])) as usize;
            remaining =
                remaining.get(8 + size..).ok_or(MergeError::Corrupt("an extension overruns"))?;
        }
        Ok(sparse)
    }
}

fn write_entry(out: &mut impl Write, entry: &IndexEntry) -> std::io::Result<()> {
    let mut fixed = [0u8; FIXED_LEN];
    let words = [
        entry.ctime.seconds() as u32,
        entry.ctime.nanoseconds(),
        entry.mtime.seconds() as u32,
        entry.mtime.nanoseconds(),
        entry.dev,
        entry.ino,
        entry.mode,
        entry.uid,
        entry.gid,
        entry.file_size,
    ];
    for (slot, value) in fixed.chunks_exact_mut(4).zip(words) {
        slot.copy_from_slice(&value.to_be_bytes());
    }
    fixed[40..60].copy_from_slice(entry.id.as_bytes());
    // Stage 0; the name length, or 0xfff when longer; then the extended flags, if any.
    let name_len = entry.path.len().min(usize::from(NAME_MASK)) as u16;
    let extended = entry.flags_extended != 0;
    let flags = if extended { name_len | FLAG_EXTENDED } else { name_len };
    fixed[60..62].copy_from_slice(&flags.to_be_bytes());
    out.write_all(&fixed)?;
    if extended {
        out.write_all(&entry.flags_extended.to_be_bytes())?;
    }
    out.write_all(&entry.path)?;
    let unpadded = FIXED_LEN + usize::from(extended) * 2 + entry.path.len();
    let padding = (unpadded + 1).div_ceil(8) * 8 - unpadded;
    out.write_all(&[0u8; 8][..padding])
}

/// Whether `entry` stands for a directory outside the sparse checkout.
pub(crate) fn is_sparse_directory(entry: &IndexEntry) -> bool {
    entry.mode == DIRECTORY_MODE
}

fn word(bytes: &[u8]) -> [u8; 4] {
    [bytes[0], bytes[1], bytes[2], bytes[3]]
}

#[cfg(test)]
mod tests;
