//! The Git engine under mailroom's archive: it writes the objects, trees, packs and index of
//! one repository itself, and keeps its packs few and small. libgit2 creates and opens the
//! repository, reads objects, diffs trees, moves refs and hashes blobs; the `git` command
//! line runs the full and geometric repacks. Nothing here depends on the archive's layout:
//! what its first commit holds, which local files Git must not offer to add, and which files
//! the caller writes into the work tree itself come from the caller ([`Layout`]).
//!
//! # Invariants
//!
//! What keeps the repository sound, for humans and for Git, whatever fails or is killed:
//!
//! - **One writer.** An [`ArchiveRepo`] and its [`Repacker`] live on one thread, the only one
//!   that commits to the repository; read-only views ([`CommittedFiles`],
//!   [`recent_commits`]) open handles of their own.
//! - **No history is lost.** HEAD's branch moves only from the commit a new commit was built
//!   on (the first commit only when the branch does not exist yet): a commit a human made
//!   meanwhile makes the commit fail, and the retry builds on it.
//! - **A ref never points into a missing pack.** A commit's blobs, trees and commit object are
//!   one pack, stored whole, never loose objects. The `.pack` and `.idx` reach the disk
//!   before either name appears, the index is renamed into place last (Git and libgit2 see a
//!   pack only through its index), and HEAD moves after that.
//!   [`ArchiveRepo::make_durable`] then flushes the moved ref and the work tree: a caller
//!   forgets the work a commit carried only after it.
//! - **Objects are named as Git names them.** Trees and commits are written by hand,
//!   byte-identical to libgit2's and named with [`sha1()`] of their bytes; blobs, whose bytes
//!   come from outside, are named by libgit2's collision-detecting SHA-1. A previous tree
//!   that does not parse fails the commit, and so does a path with an empty, `.`, `..` or
//!   `.git` component, a NUL, or a name that would be both a file and a directory.
//! - **Replays are harmless.** A batch whose files HEAD already holds commits nothing. The
//!   work tree is written in place, not atomically (with same-content copies hard-linked, and
//!   a file replaced, never written through a link): a caller replays a batch a crash cut
//!   short, which rewrites the same bytes.
//! - **The index is never the truth, never read whole, and never left locked.** At open its
//!   marker says which commit it reflects (what it missed is found from the two commits'
//!   trees; without a marker it is rebuilt from HEAD at the first sync); it is updated by a
//!   streamed merge into `index.lock` created exclusively (a human's `git` holding it only
//!   delays the update), and the lock is removed on any failure. An index the merge does not
//!   take (a form a human's Git chose, a sparse entry of a human's own over a committed
//!   file, damage) is written anew from HEAD.
//! - **A retired directory is never in the index twice.** Its sparse entry replaces its
//!   files' entries in one update, and its files leave the work tree only after that; the
//!   list of retired directories is written, and the index's marker removed, before either,
//!   so a retirement cut short is finished by the rebuild at the next open.
//! - **A pack is deleted only when another holds its objects.** Before any removal the
//!   filesystem is flushed and Git's multi-pack index removed; a pack's index goes before
//!   the pack, and a pack whose index stays stops the removals. A roll-up reads only whole
//!   objects whose CRC matches their index, rebuilds and compares every delta before its
//!   pack is written, and deletes only the packs whose every object it copied, once its own
//!   pack is in place. A full pack deletes only the packs listed on the committing thread
//!   right after a commit moved HEAD, and only if the new pack's index holds that commit;
//!   packs written meanwhile and packs with a `.keep` file stay. A merge takes, beside a
//!   running full pack, only packs the repacker itself wrote since its listing (never the
//!   full pack's own or a human's), and otherwise the settled packs (none with a `.keep`
//!   file, none of a commit waiting for a roll-up); never one repeating an object. It copies
//!   every entry of each, checked against its CRC, and deletes them once its pack is in
//!   place. Only a complete object list reaches the end of `git pack-objects`' input, and a
//!   stopped full pack or merge kills its `git` children or removes its temporary pack, and
//!   removes nothing else.
//! - **Repacks never meet on a pack.** One roll-up or geometric repack at a time, and one
//!   merge, which may run beside a roll-up (it takes no commit's pack) but not beside a
//!   geometric repack; no full pack starts beside a merge or geometric repack. Roll-ups,
//!   and merges of the packs written since its listing, go on beside a full pack, which
//!   first takes the commits' packs it replaces off the roll-up list. `git` runs without
//!   the caller's `GIT_*` variables, so it cannot be pointed at another repository.
//! - **The repository is reopened after every repack**, at the first commit after it ended
//!   (libgit2 keeps each pack it read open, mapped and with its delta cache), and at
//!   [`Repacker::finish`] a roll-up or geometric repack is awaited, a merge or full pack
//!   stopped, and the commits' packs still waiting rolled up.

// The public API is small and every item of it is documented; this keeps it so.
#![warn(missing_docs)]

mod atomic_file;
mod delta;
mod digest;
mod error;
mod full_pack;
mod index_file;
mod merge;
mod pack;
mod read;
mod repack;
mod repo;
mod roll_up;
mod tree_merge;

#[cfg(test)]
mod testing;

pub use atomic_file::{write_atomically, write_atomically_with_mode};
pub use digest::sha1;
pub use error::{Error, Result};
pub use read::{
    CommitInfo, CommittedFiles, blob_id, current_branch, recent_commits, retired_directories,
};
pub use repack::Repacker;
pub use repo::{ArchiveRepo, Author, Committed, Layout};

/// The allocation size from which the engine counts on the allocator to map a buffer of its
/// own and to unmap it when freed: glibc's mmap threshold, which a program using the engine
/// should fix at this value (glibc raises it as large blocks are freed). Buffers at least
/// this large (a month directory's tree, a roll-up's objects) are kept for reuse, since a
/// fresh one is faulted in page by page; smaller ones are allocated afresh.
pub const MMAP_THRESHOLD: usize = 1 << 20;
