//! Git's delta format (`Documentation/gitformat-pack.txt`, "Deltified representation"), for
//! two versions of one file or directory that share a start and an end.
//!
//! That is how the archive's large objects change: a month directory's tree gains its new
//! messages' entries near its end (their names start with the time), an agent's inbox month
//! likewise, and a thread digest grows by appending. So a delta is the common prefix
//! copied, the middle inserted, and the common suffix copied: one pass of comparisons, no
//! search (Git's encoder indexes the base and searches it, which is what made its repacks of
//! megabyte trees slow).

/// Most bytes one copy instruction takes, as in Git's own encoder; a copy of exactly this
/// many bytes leaves its size out (a size of 0 means 0x10000), as Git writes it.
const MAX_COPY: usize = 0x10000;
/// Most bytes one insert instruction carries (its opcode is the length).
const MAX_INSERT: usize = 0x7f;

/// The delta that rebuilds `target` from `base` (under 4 GiB: see `push_copies`).
pub(crate) fn encode(base: &[u8], target: &[u8]) -> Vec<u8> {
    let prefix = common_prefix(base, target);
    let suffix = common_suffix(&base[prefix..], &target[prefix..]);
    let middle = &target[prefix..target.len() - suffix];
    let copies = (prefix + suffix) / MAX_COPY + 2;
    let mut delta = Vec::with_capacity(20 + copies * 8 + middle.len() + middle.len() / MAX_INSERT);
    push_size(&mut delta, base.len());
    push_size(&mut delta, target.len());
    push_copies(&mut delta, 0, prefix);
    for chunk in middle.chunks(MAX_INSERT) {
        // At most `MAX_INSERT` (127) bytes: the opcode is the length.
        delta.push(chunk.len() as u8);
        delta.extend_from_slice(chunk);
    }
    push_copies(&mut delta, base.len() - suffix, suffix);
    delta
}

/// Rebuilds the target of `delta` from `base` into `target` (emptied first, its buffer
/// reused); `None` if the delta is malformed or was made from another base.
pub(crate) fn apply(base: &[u8], delta: &[u8], target: &mut Vec<u8>) -> Option<()> {
    target.clear();
    let mut rest = delta;
    let base_len = read_size(&mut rest)?;
    let target_len = read_size(&mut rest)?;
    if base_len != base.len() {
        return None;
    }
    target.reserve(target_len);
    while let Some((&opcode, tail)) = rest.split_first() {
        rest = tail;
        if opcode & 0x80 != 0 {
            let mut offset = 0usize;
            let mut size = 0usize;
            for bit in 0..4 {
                if opcode & (1 << bit) != 0 {
                    let (&byte, tail) = rest.split_first()?;
                    rest = tail;
                    offset |= usize::from(byte) << (8 * bit);
                }
            }
            for bit in 0..3 {
                if opcode & (0x10 << bit) != 0 {
                    let (&byte, tail) = rest.split_first()?;
                    rest = tail;
                    size |= usize::from(byte) << (8 * bit);
                }
            }
            if size == 0 {
                size = MAX_COPY;
            }
            target.extend_from_slice(base.get(offset..offset.checked_add(size)?)?);
        } else if opcode != 0 {
            let len = usize::from(opcode);
            let bytes = rest.get(..len)?;
            target.extend_from_slice(bytes);
            rest = &rest[len..];
        } else {
            return None;
        }
    }
    (target.len() == target_len).then_some(())
}

/// Length of the longest common start of `a` and `b`. Compared in blocks first (each a
/// `memcmp`), then byte by byte within the block that differs.
fn common_prefix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 256;
    let same_blocks = a.chunks_exact(BLOCK).zip(b.chunks_exact(BLOCK)).take_while(|(x, y)| x == y);
    let start = same_blocks.count() * BLOCK;
    start + a[start..].iter().zip(&b[start..]).take_while(|(x, y)| x == y).count()
}

/// Length of the longest common end of `a` and `b`.
fn common_suffix(a: &[u8], b: &[u8]) -> usize {
    const BLOCK: usize = 256;
    let same_blocks =
        a.rchunks_exact(BLOCK).zip(b.rchunks_exact(BLOCK)).take_while(|(x, y)| x == y);
    let done = same_blocks.count() * BLOCK;
    let (a, b) = (&a[..a.len() - done], &b[..b.len() - done]);
    done + a.iter().rev().zip(b.iter().rev()).take_while(|(x, y)| x == y).count()
}

/// A size in the delta's header: 7 bits per byte, low bits first, the high bit saying more
/// follow.
fn push_size(out: &mut Vec<u8>, mut size: usize) {
    while size >= 0x80 {
        out.push((size & 0x7f) as u8 | 0x80);
        size >>= 7;
    }
    out.push(size as u8);
}

fn read_size(rest: &mut &[u8]) -> Option<usize> {
    let mut size = 0usize;
    let mut shift = 0;
    loop {
        let (&byte, tail) = rest.split_first()?;
        *rest = tail;
        size |= usize::from(byte & 0x7f).checked_shl(shift)?;
        if byte & 0x80 == 0 {
            return Some(size);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

/// Copy instructions for `len` bytes of the base from `offset`: an opcode whose bits say
/// which offset and size bytes follow (zero bytes are left out). Offsets have 32 bits: the
/// caller makes deltas of bases under 4 GiB only.
fn push_copies(out: &mut Vec<u8>, mut offset: usize, mut len: usize) {
    while len > 0 {
        let size = len.min(MAX_COPY);
        let at = out.len();
        let mut opcode = 0x80u8;
        out.push(opcode);
        for bit in 0..4 {
            let byte = (offset >> (8 * bit)) as u8;
            if byte != 0 {
                opcode |= 1 << bit;
                out.push(byte);
            }
        }
        for bit in 0..3 {
            let byte = (size >> (8 * bit)) as u8;
            if byte != 0 && size != MAX_COPY {
                opcode |= 0x10 << bit;
                out.push(byte);
            }
        }
        out[at] = opcode;
        offset += size;
        len -= size;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn rebuilt(base: &[u8], delta: &[u8]) -> Option<Vec<u8>> {
        let mut target = vec![1, 2, 3];
        apply(base, delta, &mut target)?;
        Some(target)
    }

    #[test]
    fn an_appended_tail_is_one_insert_after_copies() {
        let base: Vec<u8> = (0..300_000u32).map(|i| (i % 251) as u8).collect();
        let mut target = base.clone();
        target.extend_from_slice(b"new entry");
        let delta = encode(&base, &target);
        assert!(delta.len() < 64, "{} bytes", delta.len());
        assert_eq!(rebuilt(&base, &delta).as_deref(), Some(target.as_slice()));
    }

    /// A copy of exactly 64 KiB is written as Git writes it: no size bytes.
    #[test]
    fn a_full_copy_has_no_size_bytes() {
        let base = vec![7u8; 0x10000];
        let delta = encode(&base, &base);
        // Sizes 0x10000 (3 bytes each), then one copy opcode with no offset or size bytes.
        assert_eq!(delta, [0x80, 0x80, 0x04, 0x80, 0x80, 0x04, 0x80]);
        assert_eq!(rebuilt(&base, &delta).as_deref(), Some(base.as_slice()));
    }

    #[test]
    fn a_delta_for_another_length_or_cut_short_is_refused() {
        let delta = encode(b"abcdef", b"abcXdef");
        assert_eq!(rebuilt(b"abcdef", &delta).as_deref(), Some(b"abcXdef".as_slice()));
        assert_eq!(rebuilt(b"abcde", &delta), None, "another length");
        assert_eq!(rebuilt(b"abcdef", &delta[..delta.len() - 1]), None, "cut short");
    }

    /// Git itself reads the deltas: `git index-pack` resolves a pack holding a base and a
    /// delta of it, and `git cat-file` prints the target.
    #[test]
    fn git_rebuilds_the_target() {
        use crate::pack;
        let dir = tempfile::tempdir().expect("temp dir");
        git2::Repository::init(dir.path()).expect("init");
        let base: Vec<u8> = (0..200_000u32).flat_map(|i| format!("{i}\n").into_bytes()).collect();
        let mut target = base[..base.len() / 2].to_vec();
        target.extend_from_slice(b"inserted in the middle\n");
        target.extend_from_slice(&base[base.len() / 2..]);
        let base_id = git2::Oid::hash_object(git2::ObjectType::Blob, &base).expect("hash");
        let target_id = git2::Oid::hash_object(git2::ObjectType::Blob, &target).expect("hash");
        let mut packed = pack::PackBuilder::new();
        let base_at = packed.push_whole(base_id, git2::ObjectType::Blob, &base).expect("base");
        packed.push_delta(target_id, base_at, &encode(&base, &target)).expect("delta");
        packed.publish(&dir.path().join(".git/objects/pack")).expect("published");
        let shown = std::process::Command::new("git")
            .arg("-C")
            .arg(dir.path())
            .args(["cat-file", "blob", &target_id.to_string()])
            .output()
            .expect("git cat-file");
        assert!(shown.status.success(), "{}", String::from_utf8_lossy(&shown.stderr));
        assert!(shown.stdout == target, "git's bytes differ from the target");
    }

    proptest! {
        /// Any two byte strings: the delta rebuilds the target exactly.
        #[test]
        fn any_target_is_rebuilt(
            base in proptest::collection::vec(any::<u8>(), 0..2000),
            target in proptest::collection::vec(any::<u8>(), 0..2000),
            cut in 0usize..2000,
        ) {
            // Half the cases share a start with the base, as the archive's versions do.
            let cut = cut.min(base.len());
            let mut shared = base[..cut].to_vec();
            shared.extend_from_slice(&target);
            for target in [&target, &shared] {
                let delta = encode(&base, target);
                let rebuilt = rebuilt(&base, &delta);
                prop_assert_eq!(rebuilt.as_ref(), Some(target));
            }
        }
    }
}
