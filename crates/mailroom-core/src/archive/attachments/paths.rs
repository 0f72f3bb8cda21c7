//! The path rules: which references may be read, decided before any file is opened.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};

use super::Refusal;

/// Resolves a reference to a regular file, refusing anything outside the rules. Relative
/// paths resolve under `canonical_root` (the project archive, symlinks resolved; None when it
/// does not exist). Only `stat`-like calls are made here; the caller opens the returned
/// canonical path, which contains no symlinks. (A concurrent swap of a directory for a
/// symlink between the two steps is not guarded against: the archive is the server's own.)
pub(super) fn resolve(
    raw: &str,
    canonical_root: Option<&Path>,
    allow_absolute: bool,
) -> Result<PathBuf, Refusal> {
    let canonical = match check_lexically(raw, allow_absolute)? {
        Candidate::Absolute(path) => canonicalize(&path)?,
        Candidate::Relative(relative) => {
            let root = canonical_root.ok_or(Refusal::NoProjectArchive)?;
            let canonical = canonicalize(&root.join(relative))?;
            if !canonical.starts_with(root) {
                return Err(Refusal::Escapes);
            }
            canonical
        }
    };
    require_regular_file(&canonical)?;
    Ok(canonical)
}

/// A path that passed the lexical checks, before touching the filesystem.
enum Candidate {
    Relative(String),
    Absolute(PathBuf),
}

/// Refuses paths by their text alone. Backslashes count as separators (as in the
/// reference), so `..\x` cannot slip past the `..` check.
fn check_lexically(raw: &str, allow_absolute: bool) -> Result<Candidate, Refusal> {
    let trimmed = raw.trim();
    if trimmed.is_empty() {
        return Err(Refusal::Empty);
    }
    if trimmed.contains('\0') {
        return Err(Refusal::NulByte);
    }
    let normalized = trimmed.replace('\\', "/");
    if normalized.starts_with('~') {
        return Err(Refusal::HomeRelative);
    }
    if normalized.split('/').any(|segment| segment == "..") {
        return Err(Refusal::ParentSegment);
    }
    if Path::new(trimmed).is_absolute() {
        return if allow_absolute {
            Ok(Candidate::Absolute(PathBuf::from(trimmed)))
        } else {
            Err(Refusal::AbsoluteDisabled)
        };
    }
    if normalized.starts_with('/') || has_drive_prefix(&normalized) {
        return Err(Refusal::ForeignAbsolute);
    }
    Ok(Candidate::Relative(normalized))
}

/// `C:...`, which is absolute (or drive-relative) on Windows and never meant for our archive.
fn has_drive_prefix(path: &str) -> bool {
    let bytes = path.as_bytes();
    bytes.len() >= 2 && bytes[0].is_ascii_alphabetic() && bytes[1] == b':'
}

fn canonicalize(path: &Path) -> Result<PathBuf, Refusal> {
    fs::canonicalize(path).map_err(|error| match error.kind() {
        io::ErrorKind::NotFound => Refusal::Missing,
        _ => Refusal::Unresolvable(error.to_string()),
    })
}

/// `stat`, not `open`: a FIFO or device must be refused without blocking on it.
fn require_regular_file(path: &Path) -> Result<(), Refusal> {
    let metadata = fs::metadata(path).map_err(|error| Refusal::Unresolvable(error.to_string()))?;
    if metadata.is_file() { Ok(()) } else { Err(Refusal::NotAFile) }
}
