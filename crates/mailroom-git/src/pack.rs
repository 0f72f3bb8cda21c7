//! Git pack files (with their `.idx`): one for each commit's new objects, and the roll-ups
//! of those (`roll_up.rs`), built here and read back.
//!
//! Written as loose objects, each object of a commit costs a file creation in
//! `.git/objects` (temp file, write, rename), and creating inodes is most of the archive's
//! disk cost. A pack holds them all in two files. A commit's objects are stored whole, each
//! its own zlib stream: deflated at the fastest level, like libgit2's loose objects, or,
//! below `STORE_BELOW` bytes, kept in stored (uncompressed) deflate blocks; a roll-up adds
//! deltas. Formats: Git's `Documentation/gitformat-pack.txt` (pack version 2, index
//! version 2).

use std::collections::HashSet;
use std::fs::{self, File};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use flate2::{Compress, Compression, FlushCompress, Status};
use git2::{ObjectType, Oid};

use crate::atomic_file::write_synced;
use crate::digest::sha1;
use crate::error::{Error, Result, git_err, io_err};

/// An object to pack: its id (computed by the caller), kind and raw content.
pub(crate) struct PackObject<'a> {
    pub id: Oid,
    pub kind: ObjectType,
    pub data: &'a [u8],
}

/// Objects smaller than this (a message's file, small trees) are stored, not deflated.
/// Starting a deflate stream clears the compressor's tables (~160 KB), which cost more than
/// compressing such an object, and together they were a tenth of the archive thread; the
/// bytes saved are small beside the 4 KiB block each message's file takes in the work tree.
const STORE_BELOW: usize = 4096;

/// Offsets past this need the index's 8-byte offset table.
const LARGE_OFFSET: u64 = 0x7fff_ffff;
/// The type code of a delta whose base is named by its distance back in the same pack.
const OFFSET_DELTA: u8 = 6;

/// Writes `objects` as one pack in `pack_dir` (`.git/objects/pack`), each stored whole.
/// Objects repeated in `objects` are stored once. Returns the pack's path. The pack is built
/// in `pack`, kept by the caller from one commit to the next so that its buffer (megabytes
/// when a month tree is in it) is reused rather than mapped and faulted in again.
pub(crate) fn write_pack(
    pack_dir: &Path,
    objects: &[PackObject<'_>],
    pack: &mut PackBuilder,
) -> Result<PathBuf> {
    pack.restart();
    pack.bytes.reserve(objects.iter().map(|o| o.data.len() / 2 + 16).sum());
    let mut seen = HashSet::with_capacity(objects.len());
    for object in objects.iter().filter(|o| seen.insert(o.id)) {
        pack.push_whole(object.id, object.kind, object.data)?;
    }
    pack.publish(pack_dir)
}

/// An object as a pack index lists it: id, CRC-32 of its packed entry, offset.
pub(crate) type IndexEntry = (Oid, u32, u64);

/// A version 2 pack's first 12 bytes, for `count` objects.
pub(crate) fn header(count: u32) -> [u8; 12] {
    let mut header = [0; 12];
    header[..4].copy_from_slice(b"PACK");
    header[4..8].copy_from_slice(&2u32.to_be_bytes());
    header[8..].copy_from_slice(&count.to_be_bytes());
    header
}

/// A pack being built in memory, entry by entry, then published.
pub(crate) struct PackBuilder {
    bytes: Vec<u8>,
    entries: Vec<IndexEntry>,
    /// One compressor, reset per object: setting one up (its tables) cost more than
    /// compressing a small message.
    compressor: Compress,
}

impl PackBuilder {
    /// A buffer grown past this is not kept for the next pack. A commit's pack needs its
    /// packed objects and room for the largest one uncompressed: about 20 MB for a commit
    /// writing three month trees of 12 MB.
    const KEEP_AT_MOST: usize = 32 << 20;

    pub fn new() -> Self {
        let mut pack = Self {
            bytes: Vec::with_capacity(4096),
            entries: Vec::new(),
            compressor: Compress::new(Compression::fast(), true),
        };
        pack.restart();
        pack
    }

    /// Empties the builder for a new pack, keeping its buffers.
    pub fn restart(&mut self) {
        if self.bytes.capacity() > Self::KEEP_AT_MOST {
            self.bytes = Vec::with_capacity(4096);
        }
        self.bytes.clear();
        // The object count is set at `publish`.
        self.bytes.extend_from_slice(&header(0));
        self.entries.clear();
    }

    /// Appends an object stored whole; its offset in the pack.
    pub fn push_whole(&mut self, id: Oid, kind: ObjectType, data: &[u8]) -> Result<u64> {
        let offset = self.bytes.len() as u64;
        push_entry_header(&mut self.bytes, object_type_code(kind)?, data.len() as u64);
        self.push_stream(data)?;
        self.entry_done(id, offset);
        Ok(offset)
    }

    /// Appends `delta` (`delta.rs`) rebuilding `id` from the object at `base_offset`, which
    /// this pack holds (an "offset delta": Git resolves it without looking elsewhere).
    pub fn push_delta(&mut self, id: Oid, base_offset: u64, delta: &[u8]) -> Result<u64> {
        let offset = self.bytes.len() as u64;
        let distance = offset
            .checked_sub(base_offset)
            .filter(|d| *d > 0)
            .ok_or_else(|| Error::invalid("a delta's base must come before it"))?;
        push_entry_header(&mut self.bytes, OFFSET_DELTA, delta.len() as u64);
        push_base_distance(&mut self.bytes, distance);
        self.push_stream(delta)?;
        self.entry_done(id, offset);
        Ok(offset)
    }

    /// Appends an entry copied from another pack as it is (header and zlib stream of a
    /// whole object: see `entry_header`), whose CRC-32 `crc` the caller checked; its offset.
    pub fn push_raw(&mut self, id: Oid, entry: &[u8], crc: u32) -> u64 {
        let offset = self.bytes.len() as u64;
        self.bytes.extend_from_slice(entry);
        self.entries.push((id, crc, offset));
        offset
    }

    fn push_stream(&mut self, data: &[u8]) -> Result<()> {
        if data.len() < STORE_BELOW {
            store_into(data, &mut self.bytes);
            Ok(())
        } else {
            self.compressor.reset();
            deflate_into(&mut self.compressor, data, &mut self.bytes)
        }
    }

    fn entry_done(&mut self, id: Oid, offset: u64) {
        let mut crc = flate2::Crc::new();
        crc.update(&self.bytes[offset as usize..]);
        self.entries.push((id, crc.sum(), offset));
    }

    /// Writes the pack and its index into `pack_dir`; the pack's path. The pack is
    /// published by renaming its index into place last: Git and libgit2 only see a pack
    /// through its index, so an interrupted write leaves a `tmp_` file nobody reads.
    /// The builder is empty again afterwards, ready for another pack.
    pub fn publish(&mut self, pack_dir: &Path) -> Result<PathBuf> {
        let published = self.write_files(pack_dir);
        self.restart();
        published
    }

    fn write_files(&mut self, pack_dir: &Path) -> Result<PathBuf> {
        let Self { bytes: pack, entries, .. } = self;
        let count = u32::try_from(entries.len())
            .map_err(|_| Error::invalid("too many objects for one pack"))?;
        pack[8..12].copy_from_slice(&count.to_be_bytes());
        let checksum = sha1(&[pack]);
        pack.extend_from_slice(&checksum);
        entries.sort_by_key(|entry| entry.0);
        let index = build_index(entries, &checksum);

        let name = Oid::from_bytes(&checksum).map_err(|e| git_err("pack name", e))?.to_string();
        fs::create_dir_all(pack_dir).map_err(|e| io_err("cannot create", pack_dir, e))?;
        let temp_pack = pack_dir.join(format!("tmp_pack_{name}"));
        // A leftover of a write a crash interrupted has the same name.
        let _ = fs::remove_file(&temp_pack);
        write_synced(&temp_pack, pack).map_err(|e| io_err("cannot write", &temp_pack, e))?;
        publish_pack(pack_dir, &temp_pack, &checksum, &index)
    }
}

/// Puts the pack written (and flushed) at `temp_pack`, whose checksum is `checksum`, in
/// place as `pack-<checksum>.pack` with `index`; the pack's path. Both files reach the disk
/// before either name appears (HEAD may move right after, and a ref surviving a power loss
/// must not point into a pack that did not), and the index is renamed last: Git and libgit2
/// only see a pack through its index, so an interrupted write leaves a `tmp_` file nobody
/// reads.
pub(crate) fn publish_pack(
    pack_dir: &Path,
    temp_pack: &Path,
    checksum: &[u8; 20],
    index: &[u8],
) -> Result<PathBuf> {
    let name = Oid::from_bytes(checksum).map_err(|e| git_err("pack name", e))?.to_string();
    let pack_path = pack_dir.join(format!("pack-{name}.pack"));
    let index_path = pack_dir.join(format!("pack-{name}.idx"));
    let temp_index = pack_dir.join(format!("tmp_idx_{name}"));
    let _ = fs::remove_file(&temp_index);
    write_synced(&temp_index, index).map_err(|e| io_err("cannot write", &temp_index, e))?;
    fs::rename(temp_pack, &pack_path).map_err(|e| io_err("cannot rename", temp_pack, e))?;
    fs::rename(&temp_index, &index_path).map_err(|e| io_err("cannot rename", &temp_index, e))?;
    Ok(pack_path)
}

/// A pack opened for reading its entries as they are stored.
pub(crate) struct OpenPack {
    pub path: PathBuf,
    file: File,
    /// Its entries, in the order they were written.
    pub entries: Vec<PackEntry>,
}

/// Where an object's entry is in its pack.
#[derive(Clone, Copy)]
pub(crate) struct PackEntry {
    pub id: Oid,
    /// The entry's CRC-32 as the index gives it, checked when the entry is read.
    pub crc: u32,
    pub start: u64,
    pub end: u64,
}

impl OpenPack {
    /// The pack at `pack`, with its entries from its index; `None` if it is gone. Fails if
    /// the index is not a version 2 index of this pack.
    pub fn open(pack: &Path) -> Result<Option<Self>> {
        let index_path = pack.with_extension("idx");
        let index = match fs::read(&index_path) {
            Ok(index) => index,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err("cannot read", &index_path, e)),
        };
        let file = match File::open(pack) {
            Ok(file) => file,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(io_err("cannot open", pack, e)),
        };
        let len = file.metadata().map_err(|e| io_err("cannot read", pack, e))?.len();
        let (mut listed, checksum) = read_index(&index).ok_or_else(|| {
            Error::invalid(format!("{} is not a version 2 pack index", index_path.display()))
        })?;
        // The last entry ends where the pack's 20-byte checksum starts, which the index
        // repeats.
        let end_of_entries = len.saturating_sub(20);
        let mut trailer = [0u8; 20];
        file.read_exact_at(&mut trailer, end_of_entries)
            .map_err(|e| io_err("cannot read", pack, e))?;
        if trailer != checksum {
            let pack = pack.display();
            return Err(Error::invalid(format!("{pack}: its index belongs to another pack")));
        }
        listed.sort_unstable_by_key(|listed| listed.offset);
        let ends = listed.iter().skip(1).map(|next| next.offset).chain([end_of_entries]);
        let entries: Vec<PackEntry> = listed
            .iter()
            .zip(ends)
            .map(|(l, end)| PackEntry { id: l.id, crc: l.crc, start: l.offset, end })
            .collect();
        // Entries start after the 12-byte header and do not overlap.
        if entries.iter().any(|e| e.start < 12 || e.start >= e.end) {
            let pack = pack.display();
            return Err(Error::invalid(format!("{pack}: its index does not match it")));
        }
        Ok(Some(Self { path: pack.to_path_buf(), file, entries }))
    }

    /// Reads `at`'s entry as stored (header and stream) into `entry`, checked against the
    /// CRC its index gives.
    pub fn read_entry(&self, at: &PackEntry, entry: &mut Vec<u8>) -> Result<()> {
        entry.clear();
        entry.resize((at.end - at.start) as usize, 0);
        self.file
            .read_exact_at(entry, at.start)
            .map_err(|e| io_err("cannot read", &self.path, e))?;
        let mut crc = flate2::Crc::new();
        crc.update(entry);
        if crc.sum() != at.crc {
            let (pack, id) = (self.path.display(), at.id);
            return Err(Error::invalid(format!("{pack}: {id} does not match its CRC")));
        }
        Ok(())
    }
}

/// An object a pack index lists.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) struct Listed {
    pub id: Oid,
    /// CRC-32 of the packed entry (header and zlib stream).
    pub crc: u32,
    pub offset: u64,
}

/// The ids the version 2 pack index at `path` lists, sorted.
pub(crate) fn index_ids(path: &Path) -> Result<Vec<Oid>> {
    let bytes = fs::read(path).map_err(|e| io_err("cannot read", path, e))?;
    let (listed, _) = read_index(&bytes).ok_or_else(|| {
        Error::invalid(format!("{} is not a version 2 pack index", path.display()))
    })?;
    Ok(listed.into_iter().map(|listed| listed.id).collect())
}

/// The objects a version 2 pack index lists, in the index's order (by id), and the
/// checksum of the pack it indexes.
pub(crate) fn read_index(index: &[u8]) -> Option<(Vec<Listed>, [u8; 20])> {
    if index.get(..8) != Some(b"\xfftOc\0\0\0\x02".as_slice()) {
        return None;
    }
    let word = |at: usize| -> Option<u32> {
        Some(u32::from_be_bytes(index.get(at..at + 4)?.try_into().ok()?))
    };
    let count = word(8 + 255 * 4)? as usize;
    let names_at = 8 + 256 * 4;
    let crcs_at = names_at + count * 20;
    let offsets_at = crcs_at + count * 4;
    let large_at = offsets_at + count * 4;
    let pack_checksum = index.len().checked_sub(40).and_then(|at| index.get(at..at + 20))?;
    let listed = (0..count)
        .map(|i| {
            let id = Oid::from_bytes(index.get(names_at + i * 20..names_at + i * 20 + 20)?).ok()?;
            let small = word(offsets_at + i * 4)?;
            let offset = if small & 0x8000_0000 == 0 {
                u64::from(small)
            } else {
                let at = large_at + (small & 0x7fff_ffff) as usize * 8;
                u64::from_be_bytes(index.get(at..at + 8)?.try_into().ok()?)
            };
            Some(Listed { id, crc: word(crcs_at + i * 4)?, offset })
        })
        .collect::<Option<Vec<_>>>()?;
    Some((listed, pack_checksum.try_into().ok()?))
}

/// Removes the `old` packs that `new` (just written into `pack_dir`) replaces, `new` itself
/// excepted (compared by name: the paths may be absolute or relative). First the filesystem
/// is flushed (data and names): a power loss must not keep the removals and lose the new
/// pack, and `git pack-objects` does not sync its pack by default, so the whole filesystem
/// is, as after each commit (`ArchiveRepo::make_durable`). Then Git's multi-pack index goes,
/// since it would name the removed packs; a pack whose index stays is the last tried.
pub(crate) fn retire_packs<'a>(
    pack_dir: &Path,
    old: impl IntoIterator<Item = &'a Path>,
    new: &Path,
) -> Result<()> {
    let dir = fs::File::open(pack_dir).map_err(|e| io_err("cannot open", pack_dir, e))?;
    rustix::fs::syncfs(&dir)
        .map_err(|e| Error::Flush { path: pack_dir.to_path_buf(), source: e.into() })?;
    let _ = fs::remove_file(pack_dir.join("multi-pack-index"));
    for pack in old.into_iter().filter(|old| old.file_name() != new.file_name()) {
        if !crate::full_pack::remove_pack(pack) {
            break;
        }
    }
    Ok(())
}

/// A packed entry's header: its type code (1 commit, 2 tree, 3 blob, 4 tag, 6 and 7 deltas),
/// the inflated size, and the header's length.
pub(crate) fn entry_header(entry: &[u8]) -> Option<(u8, usize, usize)> {
    let first = *entry.first()?;
    let kind = (first >> 4) & 0x07;
    let mut size = usize::from(first & 0x0f);
    let mut shift = 4;
    let mut used = 1;
    let mut byte = first;
    while byte & 0x80 != 0 {
        byte = *entry.get(used)?;
        used += 1;
        size |= usize::from(byte & 0x7f).checked_shl(shift)?;
        shift += 7;
        if shift > 60 {
            return None;
        }
    }
    Some((kind, size, used))
}

/// Inflates the zlib `stream` of an object of `size` bytes into `out` (emptied first, its
/// buffer reused).
pub(crate) fn inflate(stream: &[u8], size: usize, out: &mut Vec<u8>) -> Result<()> {
    // One byte of room past the end: zlib may refuse to finish a stream into a full buffer.
    // Not `decompress_vec`: it zeroes all of a vector's spare capacity first, which in a
    // reused buffer can be far more than this object.
    out.clear();
    out.resize(size + 1, 0);
    let mut inflater = flate2::Decompress::new(true);
    let status = inflater
        .decompress(stream, out, flate2::FlushDecompress::Finish)
        .map_err(|e| Error::invalid(format!("a packed object does not inflate: {e}")))?;
    out.truncate(usize::try_from(inflater.total_out()).unwrap_or(usize::MAX));
    if status != Status::StreamEnd || out.len() != size {
        return Err(Error::invalid("a packed object inflates to another size"));
    }
    Ok(())
}

/// An offset delta's distance back to its base: big-endian groups of 7 bits, each group
/// but the last one less than its value (Git's encoding, so that no two encodings mean one
/// distance).
fn push_base_distance(out: &mut Vec<u8>, mut distance: u64) {
    let mut encoded = [0u8; 10];
    let mut at = encoded.len() - 1;
    encoded[at] = (distance & 0x7f) as u8;
    distance >>= 7;
    while distance != 0 {
        distance -= 1;
        at -= 1;
        encoded[at] = 0x80 | (distance & 0x7f) as u8;
        distance >>= 7;
    }
    out.extend_from_slice(&encoded[at..]);
}

/// Appends `data` to `out` as one zlib stream of stored deflate blocks (RFC 1950/1951).
fn store_into(data: &[u8], out: &mut Vec<u8>) {
    // CMF: deflate, 32 KiB window; FLG: fastest level, and (CMF * 256 + FLG) % 31 == 0.
    out.extend_from_slice(&[0x78, 0x01]);
    let mut blocks = data.chunks(usize::from(u16::MAX)).peekable();
    if blocks.peek().is_none() {
        out.extend_from_slice(&[0x01, 0x00, 0x00, 0xff, 0xff]);
    }
    while let Some(block) = blocks.next() {
        let last = blocks.peek().is_none();
        // Chunks are at most u16::MAX long.
        let len = block.len() as u16;
        out.push(u8::from(last));
        out.extend_from_slice(&len.to_le_bytes());
        out.extend_from_slice(&(!len).to_le_bytes());
        out.extend_from_slice(block);
    }
    out.extend_from_slice(&adler2::adler32_slice(data).to_be_bytes());
}

/// Appends `data` to `out` as one whole zlib stream.
///
/// The stream is written into room zeroed at `out`'s end for this object alone:
/// `Compress::compress_vec` zeroes all of a vector's spare capacity on every call, which
/// for a pack grown to megabytes made the archive thread spend a quarter of its time in
/// `memset`.
fn deflate_into(compressor: &mut Compress, data: &[u8], out: &mut Vec<u8>) -> Result<()> {
    let failed =
        |e: &dyn std::fmt::Display| Error::invalid(format!("compressing a pack object: {e}"));
    loop {
        // Room for the rest even if it does not compress (stored blocks add a few bytes per
        // 16 KiB); a stream that still needs more gets another round.
        let consumed = usize::try_from(compressor.total_in()).map_err(|e| failed(&e))?;
        let rest = &data[consumed.min(data.len())..];
        let start = out.len();
        // Exactly: `resize` alone grows by doubling, and a kept pack buffer (`PackBuilder`)
        // doubled past `KEEP_AT_MOST` by a month tree would be dropped after every commit.
        let room = rest.len() + rest.len() / 1024 + 64;
        out.reserve_exact(room);
        out.resize(start + room, 0);
        let produced_before = compressor.total_out();
        let status = compressor.compress(rest, &mut out[start..], FlushCompress::Finish);
        let produced =
            usize::try_from(compressor.total_out() - produced_before).map_err(|e| failed(&e))?;
        out.truncate(start + produced);
        match status {
            Ok(Status::StreamEnd) => return Ok(()),
            Ok(Status::Ok | Status::BufError) => {}
            Err(e) => return Err(failed(&e)),
        }
    }
}

pub(crate) fn object_type_code(kind: ObjectType) -> Result<u8> {
    match kind {
        ObjectType::Commit => Ok(1),
        ObjectType::Tree => Ok(2),
        ObjectType::Blob => Ok(3),
        ObjectType::Tag => Ok(4),
        other => Err(Error::invalid(format!("cannot pack a {other:?} object"))),
    }
}

/// The entry header: type and inflated size, the size's low 4 bits first, then 7 bits per
/// byte while the high bit says more follow.
fn push_entry_header(out: &mut Vec<u8>, type_code: u8, size: u64) {
    let mut byte = (type_code << 4) | (size & 0x0f) as u8;
    let mut rest = size >> 4;
    while rest != 0 {
        out.push(byte | 0x80);
        byte = (rest & 0x7f) as u8;
        rest >>= 7;
    }
    out.push(byte);
}

/// The version 2 index of a pack whose `entries` are sorted by id.
pub(crate) fn build_index(entries: &[IndexEntry], pack_checksum: &[u8; 20]) -> Vec<u8> {
    let mut index = Vec::with_capacity(8 + 1024 + entries.len() * 28 + 40);
    index.extend_from_slice(&[0xff, b't', b'O', b'c']);
    index.extend_from_slice(&2u32.to_be_bytes());
    let mut fanout = [0u32; 256];
    for (id, _, _) in entries {
        fanout[usize::from(id.as_bytes()[0])] += 1;
    }
    let mut running = 0u32;
    for slot in fanout {
        running += slot;
        index.extend_from_slice(&running.to_be_bytes());
    }
    for (id, _, _) in entries {
        index.extend_from_slice(id.as_bytes());
    }
    for (_, crc, _) in entries {
        index.extend_from_slice(&crc.to_be_bytes());
    }
    let mut large = Vec::new();
    for (_, _, offset) in entries {
        let small = if *offset > LARGE_OFFSET {
            large.push(*offset);
            0x8000_0000 | (large.len() as u32 - 1)
        } else {
            *offset as u32
        };
        index.extend_from_slice(&small.to_be_bytes());
    }
    for offset in large {
        index.extend_from_slice(&offset.to_be_bytes());
    }
    index.extend_from_slice(pack_checksum);
    let own = sha1(&[&index]);
    index.extend_from_slice(&own);
    index
}

/// Bytes no compressor can shrink (xorshift), for tests that need a pack as large as its
/// input.
#[cfg(test)]
pub(crate) fn incompressible_bytes(len: usize) -> Vec<u8> {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use git2::Repository;

    /// libgit2 reads back every object of a pack written here, large sizes included, and of
    /// a small pack written next by the same builder (whose buffers it reuses).
    #[test]
    fn packed_objects_read_back_through_libgit2() {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = Repository::init(dir.path()).expect("init");
        let big: Vec<u8> = (0..200_000u32).flat_map(|i| i.to_le_bytes()).collect();
        // Incompressible: the compressor needs more room than the input.
        let noise = incompressible_bytes(300_000);
        // The one compressor serves objects of every size in turn.
        let blobs: Vec<&[u8]> = vec![b"hello\n", b"", &big, &noise, b"bye\n", b"hello\n"];
        let object = |data: &'static [u8]| PackObject {
            id: Oid::hash_object(ObjectType::Blob, data).expect("hash"),
            kind: ObjectType::Blob,
            data,
        };
        let objects: Vec<PackObject<'_>> = blobs
            .iter()
            .map(|data| PackObject {
                id: Oid::hash_object(ObjectType::Blob, data).expect("hash"),
                kind: ObjectType::Blob,
                data,
            })
            .collect();
        let pack_dir = dir.path().join(".git/objects/pack");
        let mut builder = PackBuilder::new();
        write_pack(&pack_dir, &objects, &mut builder).expect("pack");
        let after = [object(b"written after a larger pack\n")];
        write_pack(&pack_dir, &after, &mut builder).expect("second pack");
        let odb = repo.odb().expect("odb");
        for object in objects.iter().chain(&after) {
            let read = odb.read(object.id).expect("object in the pack");
            assert_eq!(read.data(), object.data);
            assert_eq!(read.kind(), ObjectType::Blob);
        }
        let packs: Vec<_> = fs::read_dir(&pack_dir)
            .expect("pack dir")
            .map(|entry| entry.expect("entry").path())
            .collect();
        assert_eq!(packs.len(), 4, "a .pack and an .idx each, no temp file left");
        // libgit2 checks only the pack's trailing checksum; Git's own verifier also checks the
        // index's CRCs, offsets and checksum.
        for index in packs.iter().filter(|p| p.extension().is_some_and(|e| e == "idx")) {
            let verified = std::process::Command::new("git")
                .args(["verify-pack", "-v"])
                .arg(index)
                .output()
                .expect("run git verify-pack");
            assert!(verified.status.success(), "{}", String::from_utf8_lossy(&verified.stderr));
        }
    }

    /// Offsets past 2 GiB go through the index's table of 8-byte offsets and read back.
    #[test]
    fn large_offsets_round_trip_through_the_index() {
        let ids: Vec<Oid> = (1..=3u8).map(|i| Oid::from_bytes(&[i; 20]).expect("id")).collect();
        let entries = vec![(ids[0], 7, 12), (ids[1], 8, 0x8000_0000), (ids[2], 9, 0x1_2345_6789)];
        let index = build_index(&entries, &[0xab; 20]);
        let (listed, checksum) = read_index(&index).expect("an index");
        assert_eq!(checksum, [0xab; 20]);
        let read: Vec<(Oid, u32, u64)> = listed.iter().map(|l| (l.id, l.crc, l.offset)).collect();
        assert_eq!(read, entries);
    }

    #[test]
    fn entry_headers_carry_type_and_size() {
        let mut out = Vec::new();
        push_entry_header(&mut out, 3, 5);
        assert_eq!(out, [0x35]);
        out.clear();
        push_entry_header(&mut out, 2, 300);
        // 300 = 0b1_0010_1100: low nibble 0xc with the continuation bit, then 300 >> 4 = 18.
        assert_eq!(out, [0x80 | 0x20 | 0x0c, 18]);
    }

    /// Stored streams inflate back to their bytes at every block boundary.
    #[test]
    fn stored_streams_inflate_to_their_bytes() {
        for size in [0, 1, 4095, 65_535, 65_536, 200_000] {
            let data: Vec<u8> = (0..size).map(|i| (i * 7 % 251) as u8).collect();
            let mut stream = Vec::new();
            store_into(&data, &mut stream);
            let mut inflated = Vec::new();
            let mut reader = flate2::read::ZlibDecoder::new(stream.as_slice());
            std::io::Read::read_to_end(&mut reader, &mut inflated).expect("inflates");
            assert_eq!(inflated, data, "{size} bytes");
        }
    }
}
