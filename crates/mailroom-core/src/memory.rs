//! Handing freed memory back to the system.
//!
//! glibc's allocator keeps what a thread frees in that thread's arena for reuse, and returns
//! it to the system only from the top of a heap. The archive's large transient buffers (a
//! commit's month-directory trees and pack, which grow all month) and SQLite's pages come and
//! go in several arenas, so the freed memory stayed resident: after a 40-minute soak the
//! server held 77 MB of anonymous memory of which 29 MB were in use, and one `malloc_trim`
//! returned 41 MB. The store's checkpointer thread calls [`release_free_memory`] at most
//! every [`TRIM_INTERVAL`] while writes go on.

use std::time::Duration;

/// The shortest time between two trims: a trim walks every arena, so it is not free.
pub(crate) const TRIM_INTERVAL: Duration = Duration::from_secs(10);

/// Returns the allocator's free memory to the system (glibc's `malloc_trim(0)`, which also
/// releases free pages inside the heaps); nothing elsewhere.
pub(crate) fn release_free_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `malloc_trim` takes no pointer and only rearranges the allocator's free lists,
    // under the allocator's own locks; any thread may call it at any time.
    #[allow(unsafe_code)]
    unsafe {
        libc::malloc_trim(0);
    }
}

/// The size from which glibc serves an allocation with its own `mmap`, given back to the
/// system as soon as it is freed: the Git engine's, which keeps buffers that large for reuse.
pub(crate) const MMAP_THRESHOLD: i32 = mailroom_git::MMAP_THRESHOLD as i32;

/// Fixes glibc's mmap threshold at [`MMAP_THRESHOLD`], unless `MALLOC_MMAP_THRESHOLD_` is
/// set in the environment (glibc has then applied the user's value).
///
/// glibc starts at 128 KiB and raises the threshold to the size of any mapped block that is
/// freed (up to 32 MiB): after the first roll-up or large commit freed its buffers, later
/// megabyte buffers came from the heaps and their pages stayed resident. In a 45-minute soak
/// the server's anonymous memory jumped from 58 to 103 MB in five minutes, while the same
/// build with the threshold fixed at 1 MiB stayed at 44 MB. A fixed value also stops the
/// dynamic adjustment.
pub fn fix_mmap_threshold() {
    if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_some() {
        return;
    }
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: `mallopt` takes no pointer and sets the allocator's parameters under its own
    // lock; any thread may call it at any time.
    #[allow(unsafe_code)]
    unsafe {
        libc::mallopt(libc::M_MMAP_THRESHOLD, MMAP_THRESHOLD);
    }
}

/// Caps what libgit2 maps of the archive's packs: every commit is a pack of its own until the
/// next repack rolls them up (`mailroom_git::Repacker`), and libgit2 maps each pack it reads (up
/// to 8 GB in 1 GB windows by default) and keeps it open. With a pack per commit and no cap,
/// a 20-minute soak's file-backed memory reached 300 MB. Past these caps libgit2 unmaps the
/// least recently used windows and closes the least recently used packs.
///
/// # Safety
///
/// No other thread may exist yet: libgit2 keeps the limits in globals it writes and reads
/// without a lock (`main` calls this first thing).
#[allow(unsafe_code)]
pub unsafe fn limit_git_mappings() -> crate::Result<()> {
    const WINDOW: usize = 8 << 20;
    const MAPPED: usize = 32 << 20;
    const OPEN_PACKS: usize = 32;
    // SAFETY: the caller guarantees that no other thread exists, so nothing reads the
    // globals while they are written.
    unsafe {
        git2::opts::set_mwindow_size(WINDOW)
            .and_then(|()| git2::opts::set_mwindow_mapped_limit(MAPPED))
            .and_then(|()| git2::opts::set_mwindow_file_limit(OPEN_PACKS))
    }
    .map_err(|e| crate::Error::internal(format!("libgit2's pack mappings are not capped: {e}")))
}

/// Bytes SQLite has allocated and not freed, in the whole process.
pub fn sqlite_memory_used() -> i64 {
    // SAFETY: reads SQLite's allocation counter under its own mutex; no pointer is involved.
    #[allow(unsafe_code)]
    unsafe {
        rusqlite::ffi::sqlite3_memory_used()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// After a large mapped block is freed, a megabyte-sized one is still mapped (glibc's
    /// dynamic threshold would have carved it from a heap), so freeing it returns it. Run
    /// in a process of its own (this test binary again, this test alone): where a block
    /// comes from depends on what else the arena holds free, and tests beside it free
    /// megabytes.
    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn megabyte_buffers_stay_mapped_after_a_larger_one_is_freed() {
        const ALONE: &str = "MAILROOM_MMAP_TEST_ALONE";
        const NAME: &str =
            "memory::tests::megabyte_buffers_stay_mapped_after_a_larger_one_is_freed";
        if std::env::var_os("MALLOC_MMAP_THRESHOLD_").is_some() {
            return;
        }
        if std::env::var_os(ALONE).is_none() {
            let exe = std::env::current_exe().expect("test binary");
            let output = std::process::Command::new(exe)
                .args([NAME, "--exact", "--test-threads=1", "--nocapture"])
                .env(ALONE, "1")
                .output()
                .expect("run alone");
            let stdout = String::from_utf8_lossy(&output.stdout);
            assert!(
                output.status.success() && stdout.contains("1 passed"),
                "alone: {stdout}{}",
                String::from_utf8_lossy(&output.stderr)
            );
            return;
        }
        fix_mmap_threshold();
        drop(std::hint::black_box(vec![1u8; 8 << 20]));
        let buffer = std::hint::black_box(vec![1u8; 2 << 20]);
        // glibc marks a chunk it mapped by itself with bit 1 (IS_MMAPPED) of the size word
        // just before the pointer it hands out.
        // SAFETY: the word before a live glibc allocation is its chunk's size field.
        #[allow(unsafe_code)]
        let size_word = unsafe { *buffer.as_ptr().cast::<usize>().sub(1) };
        assert_ne!(size_word & 2, 0, "a 2 MiB buffer came from a heap (size word {size_word:#x})");
    }

    /// Freed memory leaves the process's resident set.
    #[test]
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    fn freed_memory_leaves_the_resident_set() {
        let resident_kib = || {
            let status = std::fs::read_to_string("/proc/self/status").expect("status");
            status
                .lines()
                .find_map(|l| l.strip_prefix("RssAnon:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
                .expect("RssAnon")
        };
        // Many mid-sized blocks (below the mmap threshold), all touched, then all freed but
        // the last, which pins the heap's top so that free alone cannot shrink it.
        let mut blocks: Vec<Vec<u8>> = (0..2048).map(|_| vec![1u8; 32 * 1024]).collect();
        let pin = blocks.pop();
        drop(blocks);
        let before = resident_kib();
        release_free_memory();
        let after = resident_kib();
        drop(pin);
        assert!(after + 32 * 1024 < before, "64 MB freed: {before} kB before, {after} kB after");
    }
}
