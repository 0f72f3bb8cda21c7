//! Saved states, as `archive save` writes them and `archive list` and `archive restore` read
//! them: one ZIP file each in `DATA_DIR/archived_mailbox_states/`, holding `metadata.json`,
//! the database snapshot `snapshot/mailbox.sqlite3` and the archive's files under
//! `storage_repo/` (the reference's layout).

use std::borrow::Cow;
use std::fs::File;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use mailroom_core::CoreConfig;
use mailroom_core::ops::backups::KeptProject;
use serde::Serialize;
use serde_json::Value;
use zip::ZipArchive;

/// The directory of saved states, in the data directory.
pub const STATES_DIR: &str = "archived_mailbox_states";
/// A saved state's description.
pub const METADATA: &str = "metadata.json";
/// The database snapshot in a saved state.
pub const SNAPSHOT: &str = "snapshot/mailbox.sqlite3";
/// The folder of the archive's files in a saved state.
pub const STORAGE_DIR: &str = "storage_repo";
/// The only format version written and read.
pub const VERSION: u64 = 1;
/// The only scrub preset: `archive`, which keeps everything.
pub const LOSSLESS_PRESET: &str = "archive";

/// `metadata.json`, in the reference's shape and order.
#[derive(Serialize)]
pub struct Metadata<'a> {
    pub version: u64,
    pub created_at: String,
    pub archive: ArchiveFile<'a>,
    pub projects_requested: &'a [String],
    pub projects_included: &'a [KeptProject],
    pub projects_removed: usize,
    pub scrub_preset: &'static str,
    pub scrub_summary: ScrubSummary,
    /// The snapshot carries mailroom's full-text index of the messages as it is.
    pub fts_enabled: bool,
    pub database: DatabaseSnapshot,
    pub storage: StorageCopy<'a>,
    pub label: Option<&'a str>,
    pub tooling: Tooling,
    pub notes: Vec<String>,
}

/// `archive`: where the saved state was written.
#[derive(Serialize)]
pub struct ArchiveFile<'a> {
    pub filename: Option<Cow<'a, str>>,
    pub directory: Option<&'a Path>,
}

/// `database`: the database saved and its snapshot in the ZIP.
#[derive(Serialize)]
pub struct DatabaseSnapshot {
    pub source_path: PathBuf,
    pub snapshot: &'static str,
    pub size_bytes: u64,
}

/// `storage`: the archive saved, its HEAD then, and its folder in the ZIP.
#[derive(Serialize)]
pub struct StorageCopy<'a> {
    pub source_path: PathBuf,
    pub git_head: Option<&'a str>,
    pub archive_dir: &'static str,
}

/// `tooling`: the program that saved the state.
#[derive(Serialize)]
pub struct Tooling {
    pub package: &'static str,
    pub version: &'static str,
}

/// The reference's scrub summary; its `archive` preset changes nothing.
#[derive(Serialize)]
pub struct ScrubSummary {
    pub preset: &'static str,
    pub pseudonym_salt: &'static str,
    pub agents_total: usize,
    pub agents_pseudonymized: usize,
    pub ack_flags_cleared: usize,
    pub recipients_cleared: usize,
    pub file_reservations_removed: usize,
    pub agent_links_removed: usize,
    pub secrets_replaced: usize,
    pub attachments_sanitized: usize,
    pub bodies_redacted: usize,
    pub attachments_cleared: usize,
}

impl ScrubSummary {
    /// The summary of the one preset, `archive`, which changes nothing.
    pub fn lossless(agents: usize) -> Self {
        Self {
            preset: LOSSLESS_PRESET,
            pseudonym_salt: LOSSLESS_PRESET,
            agents_total: agents,
            agents_pseudonymized: 0,
            ack_flags_cleared: 0,
            recipients_cleared: 0,
            file_reservations_removed: 0,
            agent_links_removed: 0,
            secrets_replaced: 0,
            attachments_sanitized: 0,
            bodies_redacted: 0,
            attachments_cleared: 0,
        }
    }
}

/// Where the data directory's saved states live.
pub fn states_dir(data_dir: &Path) -> PathBuf {
    data_dir.join(STATES_DIR)
}

/// Refuses a layout in which the archive directory (`STORAGE_ROOT`) holds the database or the
/// saved states: a save would copy them into themselves, and clearing or restoring the archive
/// would take them with it.
pub fn check_layout(data_dir: &Path, config: &CoreConfig) -> Result<()> {
    let root = resolved(&config.storage_root)?;
    let held =
        [("the database", &config.database_path), ("the saved states", &states_dir(data_dir))];
    for (what, path) in held {
        if resolved(path)?.starts_with(&root) {
            bail!(
                "the archive directory {} holds {what} ({}): saving, restoring or clearing it \
                 would take {what} along; point STORAGE_ROOT at a directory of its own",
                root.display(),
                path.display()
            );
        }
    }
    Ok(())
}

/// `path` made absolute, with symbolic links resolved as far as it exists.
fn resolved(path: &Path) -> Result<PathBuf> {
    let absolute =
        std::path::absolute(path).with_context(|| format!("cannot resolve {}", path.display()))?;
    let mut existing = absolute.as_path();
    let mut rest = Vec::new();
    while !existing.exists() {
        let (Some(parent), Some(name)) = (existing.parent(), existing.file_name()) else {
            return Ok(absolute);
        };
        rest.push(name);
        existing = parent;
    }
    let mut resolved = existing.canonicalize().unwrap_or_else(|_| existing.to_path_buf());
    resolved.extend(rest.iter().rev());
    Ok(resolved)
}

/// Whether `name` is a relative path of plain components (`a/b/c`, a trailing `/` for a
/// directory): no `..` or `.`, nothing absolute, no backslash or NUL, so that joined to a
/// directory it stays inside it on every system.
pub fn is_plain_relative(name: &str) -> bool {
    let name = name.strip_suffix('/').unwrap_or(name);
    !name.is_empty()
        && !name.contains(['\\', '\0'])
        && name.split('/').all(|part| !part.is_empty() && part != "." && part != "..")
}

/// Opens a saved state's ZIP file.
pub fn open_zip(path: &Path) -> Result<ZipArchive<File>> {
    let file = File::open(path).with_context(|| format!("cannot open {}", path.display()))?;
    ZipArchive::new(file).with_context(|| format!("{} is not a ZIP file", path.display()))
}

/// A saved state's `metadata.json`, checked for the version this mailroom reads.
pub fn read_metadata(zip: &mut ZipArchive<File>) -> Result<Value> {
    let entry = zip.by_name(METADATA).with_context(|| format!("no {METADATA}"))?;
    let metadata: Value = serde_json::from_reader(entry).context(METADATA)?;
    match metadata["version"].as_u64() {
        Some(VERSION) => Ok(metadata),
        other => bail!("{METADATA} has version {other:?}; this mailroom reads version {VERSION}"),
    }
}

/// A size in bytes as people read it: `512 B`, `1.5 KiB`, `12.0 MiB`.
pub fn human_size(bytes: u64) -> String {
    const UNITS: [&str; 4] = ["KiB", "MiB", "GiB", "TiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut size = bytes as f64 / 1024.0;
    let mut unit = 0;
    while size >= 1024.0 && unit + 1 < UNITS.len() {
        size /= 1024.0;
        unit += 1;
    }
    format!("{size:.1} {}", UNITS[unit])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_plain_relative_names_pass() {
        for good in ["a", "a/b.txt", ".git/HEAD", "dir/", "a/.hidden/b"] {
            assert!(is_plain_relative(good), "{good}");
        }
        for bad in ["", "/", "/etc/passwd", "../x", "a/../b", "a//b", "./a", "a\\..\\b", "a\0b"] {
            assert!(!is_plain_relative(bad), "{bad:?}");
        }
    }

    #[test]
    fn sizes_read_as_people_read_them() {
        assert_eq!(human_size(512), "512 B");
        assert_eq!(human_size(1536), "1.5 KiB");
        assert_eq!(human_size(12 << 20), "12.0 MiB");
    }
}
