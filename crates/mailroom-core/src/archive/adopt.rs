//! The archive's side of `mailroom projects adopt`: a project's directory moved into another
//! project's, in one commit (`chore: adopt project <old> into <new>`), so the history shows
//! the move.
//!
//! Called inside the database transaction that moved the rows, so it renders from the rows as
//! they are now: every message, profile and reservation artifact of the target project, and
//! of the other projects whose messages changed (sent by the source's agents, or linking to
//! its attachments), is rendered again, and those that differ from HEAD are committed, thread
//! digests whole. Files the database does not render (attachments, their manifests and audit
//! logs, anything else) are carried over as they are, the manifests' paths pointing to the
//! new folder; a file the target already has keeps the target's bytes. Every committed file
//! under `projects/<old>/` is removed, and `projects/<new>/aliases.json` records the old
//! slug (`{"former_slugs": [...]}`). Files never committed (lock files, build-slot leases)
//! stay where they are.

use std::collections::BTreeMap;
use std::path::Path;

use mailroom_git::{ArchiveRepo, CommittedFiles};
use serde_json::json;

use super::rebuild::{self, Projects};
use super::{ArchiveSettings, LAYOUT, format, is_stored_attachment, locks};
use crate::config::CoreConfig;
use crate::error::{Error, Result};
use crate::store::Db;

/// The file in a project's directory naming the slugs it had before (adoptions).
pub const ALIASES_FILE: &str = "aliases.json";

/// What the move committed.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct MovedFiles {
    /// Files carried over as they were (attachments, other files).
    pub carried: usize,
    /// Files rendered from the database (message copies, digests, profiles, artifacts).
    pub rendered: usize,
    /// Files removed from `projects/<old>/`.
    pub removed: usize,
    /// The commit, in hex; `None` when nothing changed.
    pub commit: Option<String>,
}

/// The committed files under `projects/<slug>/` and the slugs its `aliases.json` lists,
/// read from HEAD (nothing locked): what an adoption would move and record.
pub fn project_files(root: &Path, slug: &str) -> Result<(usize, Vec<String>)> {
    let Some(head) = CommittedFiles::open(root)? else { return Ok((0, Vec::new())) };
    let prefix = format!("projects/{slug}/");
    let mut files = 0;
    head.for_each_file(&prefix, |_, _| files += 1)?;
    Ok((files, former_slugs(&head, slug)?))
}

/// The slugs `projects/<slug>/aliases.json` lists in HEAD (none without the file).
fn former_slugs(head: &CommittedFiles, slug: &str) -> Result<Vec<String>> {
    let Some(bytes) = head.read(&format!("projects/{slug}/{ALIASES_FILE}"))? else {
        return Ok(Vec::new());
    };
    let value: serde_json::Value = serde_json::from_slice(&bytes).unwrap_or_default();
    let slugs = value["former_slugs"].as_array().map(Vec::as_slice).unwrap_or_default();
    Ok(slugs.iter().filter_map(|s| s.as_str().map(str::to_string)).collect())
}

/// Moves `projects/<old>/` into `projects/<new>/` as described above, rendering
/// `touched` projects' files (besides the target's) from `db`; takes the archive's owner lock
/// (the caller made sure no server runs).
pub fn move_project(
    config: &CoreConfig,
    db: &Db<'_>,
    old: &str,
    new: &str,
    touched: &[String],
) -> Result<MovedFiles> {
    let root = &config.storage_root;
    let _owner = locks::take_ownership(root)?;
    let author = ArchiveSettings::from_config(config).author;
    let mut repo = ArchiveRepo::open_or_init(root, author, LAYOUT)?;
    let head = CommittedFiles::open(root)?
        .ok_or_else(|| Error::internal(format!("there is no Git archive at {}", root.display())))?;
    let (old_dir, new_dir) = (format!("projects/{old}/"), format!("projects/{new}/"));
    let mut removals: Vec<String> = Vec::new();
    head.for_each_file(&old_dir, |path, _| removals.push(path.to_owned()))?;
    let mut files: BTreeMap<String, Vec<u8>> = BTreeMap::new();
    for path in &removals {
        let rest = &path[old_dir.len()..];
        let moved = format!("{new_dir}{rest}");
        // Thread digests are rendered again below, for the moved messages' new paths (a
        // flat digest of the reference's layout would keep links to the old directory).
        if rest == ALIASES_FILE || rest.starts_with("messages/threads/") || head.contains(&moved) {
            continue;
        }
        let bytes = head.read(path)?.unwrap_or_default();
        let bytes = if rest.starts_with("attachments/_manifests/") {
            let (from, to) = (format!("{old_dir}attachments/"), format!("{new_dir}attachments/"));
            String::from_utf8_lossy(&bytes).replace(&from, &to).into_bytes()
        } else {
            bytes
        };
        files.insert(moved, bytes);
    }
    let carried = files.len();
    let mut slugs = vec![new.to_string()];
    slugs.extend(touched.iter().filter(|s| *s != new && *s != old).cloned());
    // One commit moves the project: everything regenerated is returned, none handed over.
    let regenerated =
        rebuild::regenerate(db, root, &head, Projects::Only(&slugs), &mut |_, _| {}, None)?;
    let rendered = regenerated.files.len();
    files.extend(regenerated.files);
    let mut aliases = former_slugs(&head, new)?;
    for slug in std::iter::once(old.to_string()).chain(former_slugs(&head, old)?) {
        if !aliases.contains(&slug) && slug != new {
            aliases.push(slug);
        }
    }
    let record = format::render_aliases(&json!({ "former_slugs": aliases }));
    files.insert(format!("{new_dir}{ALIASES_FILE}"), record.into_bytes());
    let files: Vec<(String, Vec<u8>)> = files.into_iter().collect();
    // The engine leaves attachment files to their writer: this is it, here.
    for (path, bytes) in files.iter().filter(|(path, _)| is_stored_attachment(path)) {
        write_work_file(root, path, bytes)?;
    }
    let message = format!("chore: adopt project {old} into {new}");
    let commit = repo.commit_changes(&files, &removals, &message)?;
    repo.sync_index()?;
    for path in removals.iter().filter(|path| is_stored_attachment(path)) {
        let _ = std::fs::remove_file(root.join(path));
    }
    remove_empty_dirs(&root.join("projects").join(old));
    Ok(MovedFiles {
        carried,
        rendered,
        removed: removals.len(),
        commit: commit.map(|c| c.id.to_string()),
    })
}

fn write_work_file(root: &Path, path: &str, bytes: &[u8]) -> Result<()> {
    let file = root.join(path);
    if let Some(parent) = file.parent() {
        std::fs::create_dir_all(parent)
            .map_err(|e| Error::internal(format!("cannot create {}: {e}", parent.display())))?;
    }
    std::fs::write(&file, bytes)
        .map_err(|e| Error::internal(format!("cannot write {}: {e}", file.display())))
}

/// Removes `dir`'s empty directories, and `dir` itself when it ends up empty.
fn remove_empty_dirs(dir: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else { return };
    for entry in entries.flatten() {
        if entry.file_type().is_ok_and(|t| t.is_dir()) {
            remove_empty_dirs(&entry.path());
        }
    }
    // Fails, as it should, while anything is left in it.
    let _ = std::fs::remove_dir(dir);
}
