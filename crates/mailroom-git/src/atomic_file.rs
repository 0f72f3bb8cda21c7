//! Files replaced atomically: written to a hidden sibling, synced, then renamed over the
//! target, so a reader (or a crash) never sees half a file.

use std::fs::{self, OpenOptions};
use std::io::{self, Write};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// Writes via a temporary file in the same directory and a rename, so a crash leaves the
/// old file or the new one, never half of one (a stray `.tmp` file at worst).
pub fn write_atomically(target: &Path, contents: &[u8]) -> io::Result<()> {
    write_atomically_with_mode(target, contents, None)
}

/// [`write_atomically`], with Unix permission bits set before the rename (hooks: 0o755).
pub fn write_atomically_with_mode(
    target: &Path,
    contents: &[u8],
    mode: Option<u32>,
) -> io::Result<()> {
    let directory = target
        .parent()
        .ok_or_else(|| io::Error::other(format!("{} has no parent", target.display())))?;
    fs::create_dir_all(directory)?;
    let temporary = temporary_sibling(target);
    let result = write_synced_with_mode(&temporary, contents, mode)
        .and_then(|()| fs::rename(&temporary, target));
    if result.is_err() {
        // Best effort: the original error is the one worth reporting.
        let _ = fs::remove_file(&temporary);
    }
    result
}

/// Creates `path` (it must not exist) with `contents` and syncs it to disk.
pub(crate) fn write_synced(path: &Path, contents: &[u8]) -> io::Result<()> {
    write_synced_with_mode(path, contents, None)
}

fn write_synced_with_mode(path: &Path, contents: &[u8], mode: Option<u32>) -> io::Result<()> {
    let mut file = OpenOptions::new().write(true).create_new(true).open(path)?;
    file.write_all(contents)?;
    if let Some(mode) = mode {
        file.set_permissions(fs::Permissions::from_mode(mode))?;
    }
    file.sync_all()
}

/// A name unique within this process and across processes, hidden from casual listings.
fn temporary_sibling(target: &Path) -> PathBuf {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = target.file_name().map(|name| name.to_string_lossy()).unwrap_or_default();
    let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
    target.with_file_name(format!(".{name}.{}-{unique}.tmp", std::process::id()))
}
