//! A SQLite database on disk as SQLite keeps it: the file and, beside it, its write-ahead log
//! (`-wal`) and shared memory (`-shm`), which move, and go, together. For the maintenance
//! that replaces a database while no server runs on it (reconstruction, import, restores).

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::model::time::Timestamp;

/// The files SQLite keeps for a database: the file itself, then its WAL and shared memory.
pub fn database_files(database: &Path) -> [PathBuf; 3] {
    [database.to_path_buf(), with_suffix(database, "-wal"), with_suffix(database, "-shm")]
}

/// Moves the database and its sidecar files to `<db>.<label>-<timestamp>` (plus `-wal`/`-shm`,
/// so the moved copy still opens with everything it committed), never over an existing file.
/// `None` when there was nothing to move.
pub fn move_aside(database: &Path, label: &str) -> Result<Option<PathBuf>> {
    if !database_files(database).iter().any(|p| p.exists()) {
        return Ok(None);
    }
    let target =
        aside_path(database, label, |target| database_files(target).iter().any(|p| p.exists()));
    for (from, to) in database_files(database).iter().zip(database_files(&target)) {
        if from.exists() {
            rename(from, &to)?;
        }
    }
    Ok(Some(target))
}

/// Where to move `path` (a database, a directory) aside: `<path>.<label>-<timestamp>`, or the
/// first of `…-2`, `…-3`, … that `taken` does not refuse, so an earlier copy is never
/// overwritten.
pub fn aside_path(path: &Path, label: &str, taken: impl Fn(&Path) -> bool) -> PathBuf {
    let stamp = Timestamp::now().archive_stamp();
    let mut target = with_suffix(path, &format!(".{label}-{stamp}"));
    let mut attempt = 1;
    while taken(&target) {
        attempt += 1;
        target = with_suffix(path, &format!(".{label}-{stamp}-{attempt}"));
    }
    target
}

/// Removes the database and its sidecar files; those absent are no error.
pub fn remove_database_files(database: &Path) -> Result<()> {
    for path in database_files(database) {
        match std::fs::remove_file(&path) {
            Ok(()) => {}
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
            Err(e) => {
                return Err(Error::internal(format!("cannot remove {}: {e}", path.display())));
            }
        }
    }
    Ok(())
}

/// `std::fs::rename` with both paths in its error.
pub fn rename(from: &Path, to: &Path) -> Result<()> {
    std::fs::rename(from, to).map_err(|e| {
        Error::internal(format!("cannot move {} to {}: {e}", from.display(), to.display()))
    })
}

/// `path` with `suffix` appended to its last component (`db` + `-wal` = `db-wal`).
pub fn with_suffix(path: &Path, suffix: &str) -> PathBuf {
    let mut name = OsString::from(path.as_os_str());
    name.push(suffix);
    PathBuf::from(name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moving_aside_takes_the_sidecars_and_never_overwrites() {
        let dir = tempfile::tempdir().expect("temp dir");
        let db = dir.path().join("mail.sqlite3");
        assert_eq!(move_aside(&db, "old").expect("nothing"), None);
        for path in [&db, &with_suffix(&db, "-wal")] {
            std::fs::write(path, "x").expect("write");
        }
        let first = move_aside(&db, "old").expect("moved").expect("a target");
        assert!(first.exists() && with_suffix(&first, "-wal").exists());
        assert!(!db.exists() && !with_suffix(&first, "-shm").exists());
        std::fs::write(&db, "y").expect("write");
        let second = move_aside(&db, "old").expect("moved").expect("a target");
        assert_ne!(first, second, "a second move in the same second gets its own name");
        assert_eq!(std::fs::read(&first).expect("read"), b"x");
    }
}
