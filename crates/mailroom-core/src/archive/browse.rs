//! Read-only views of the archive's Git history for the web UI: recent commits, one commit
//! with its diff, a directory or file of HEAD, and an agent's inbox as it stood at a moment
//! (time travel). Each opens a handle of its own (the writer thread owns the repository);
//! paths are read from Git's trees, never from the file system, so no path can leave the
//! archive, and paths are checked first so that a bad one gets a clear error.

use std::path::Path;

use git2::{Commit, DiffFormat, DiffOptions, ObjectType, Oid, Repository, Sort, Tree};
use serde::Serialize;

use super::format::{self, MessageDoc};
use super::history::git_err;
use crate::error::{Error, Result};
use crate::model::time::Timestamp;

/// Commits walked at most when looking for those touching a directory.
pub const MAX_WALK: usize = 5_000;
/// Messages of a time-travel snapshot read at most (the newest).
pub const MAX_SNAPSHOT: usize = 1_000;
/// Entries of a directory listed at most (in name order, directories first).
pub const MAX_ENTRIES: usize = 2_000;

/// A commit in a list.
#[derive(Debug, Clone, Serialize)]
pub struct CommitSummary {
    pub sha: String,
    pub short_sha: String,
    /// The message's first line.
    pub summary: String,
    pub author: String,
    pub authored_ts: Timestamp,
}

/// One file a commit changed.
#[derive(Debug, Clone, Serialize)]
pub struct ChangedFile {
    pub path: String,
    /// `added`, `deleted`, `modified`, …
    pub status: &'static str,
}

/// A commit with its whole message and its diff (cut at the byte limit).
#[derive(Debug, Clone, Serialize)]
pub struct CommitDiff {
    pub commit: CommitSummary,
    pub message: String,
    pub files: Vec<ChangedFile>,
    pub insertions: usize,
    pub deletions: usize,
    /// The patch, `git show` style, at most the limit asked for.
    pub patch: String,
    pub truncated: bool,
}

/// An entry of a directory of HEAD.
#[derive(Debug, Clone, Serialize)]
pub struct DirEntry {
    pub name: String,
    pub is_dir: bool,
    /// A file's size in bytes.
    pub size: Option<usize>,
}

/// What a path of HEAD holds.
#[derive(Debug, Clone)]
pub enum Node {
    /// The first [`MAX_ENTRIES`] entries and how many there are in all.
    Directory {
        entries: Vec<DirEntry>,
        total: usize,
    },
    File(Vec<u8>),
}

/// An agent's inbox as the last commit at or before a moment held it.
#[derive(Debug, Clone)]
pub struct Snapshot {
    pub commit: CommitSummary,
    /// The messages, newest first (at most [`MAX_SNAPSHOT`]).
    pub messages: Vec<MessageDoc>,
}

/// Checks a repo-relative path a person typed: `/`-separated, no empty, `.` or `..`
/// component, no backslash or NUL, not absolute. `""` is the root.
pub fn checked_path(path: &str) -> Result<&str> {
    let path = path.trim_end_matches('/');
    if path.is_empty() {
        return Ok("");
    }
    let bad = path.starts_with('/')
        || path.contains(['\\', '\0'])
        || path.split('/').any(|part| part.is_empty() || part == "." || part == "..");
    if bad {
        return Err(Error::invalid(format!(
            "path: {path:?} is not a path inside the archive (no `..`, `.`, empty or absolute \
             parts, no backslash)."
        )));
    }
    Ok(path)
}

/// The newest `limit` commits, of those touching `prefix` when given (looked for among the
/// newest [`MAX_WALK`]).
pub fn activity(root: &Path, limit: usize, prefix: Option<&str>) -> Result<Vec<CommitSummary>> {
    let Some(repo) = open(root)? else { return Ok(Vec::new()) };
    let mut found = Vec::new();
    let mut walk = repo.revwalk().map_err(|e| git_err("revwalk", e))?;
    if walk.push_head().is_err() {
        return Ok(found);
    }
    walk.set_sorting(Sort::TIME).map_err(|e| git_err("revwalk", e))?;
    for id in walk.take(MAX_WALK) {
        if found.len() >= limit {
            break;
        }
        let commit = repo
            .find_commit(id.map_err(|e| git_err("revwalk", e))?)
            .map_err(|e| git_err("commit", e))?;
        if let Some(prefix) = prefix
            && !touches(&commit, prefix)?
        {
            continue;
        }
        found.push(summary(&commit));
    }
    Ok(found)
}

/// One commit, named by at least 4 hex digits, with its diff cut at `max_patch_bytes`.
pub fn commit_diff(root: &Path, sha: &str, max_patch_bytes: usize) -> Result<CommitDiff> {
    if !(4..=40).contains(&sha.len()) || !sha.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(Error::invalid(format!(
            "sha: {sha:?} is not a commit id (4 to 40 hexadecimal digits)."
        )));
    }
    let missing = || Error::not_found(format!("No commit {sha} in the archive."));
    let repo = open(root)?.ok_or_else(missing)?;
    let object = repo.revparse_single(sha).map_err(|e| match e.code() {
        git2::ErrorCode::Ambiguous => {
            Error::invalid(format!("sha: {sha} names more than one object; give more digits."))
        }
        _ => missing(),
    })?;
    let commit = object.peel_to_commit().map_err(|_| missing())?;
    let tree = commit.tree().map_err(|e| git_err("tree", e))?;
    let parent = commit.parents().next().map(|p| p.tree()).transpose();
    let parent = parent.map_err(|e| git_err("parent tree", e))?;
    let mut options = DiffOptions::new();
    let diff = repo
        .diff_tree_to_tree(parent.as_ref(), Some(&tree), Some(&mut options))
        .map_err(|e| git_err("diff", e))?;
    let stats = diff.stats().map_err(|e| git_err("diff stats", e))?;
    let files = diff
        .deltas()
        .map(|delta| ChangedFile {
            path: delta
                .new_file()
                .path()
                .or_else(|| delta.old_file().path())
                .map(|p| p.to_string_lossy().into_owned())
                .unwrap_or_default(),
            status: status_name(delta.status()),
        })
        .collect();
    let mut patch = String::new();
    let mut truncated = false;
    // A failed print is the callback stopping at the limit.
    let _ = diff.print(DiffFormat::Patch, |_, _, line| {
        let prefix = match line.origin() {
            sign @ ('+' | '-' | ' ') => Some(sign),
            _ => None,
        };
        let text = String::from_utf8_lossy(line.content());
        if patch.len() + text.len() + 1 > max_patch_bytes {
            truncated = true;
            return false;
        }
        patch.extend(prefix);
        patch.push_str(&text);
        true
    });
    Ok(CommitDiff {
        commit: summary(&commit),
        message: String::from_utf8_lossy(commit.message_bytes()).into_owned(),
        files,
        insertions: stats.insertions(),
        deletions: stats.deletions(),
        patch,
        truncated,
    })
}

/// What `path` (checked by [`checked_path`]) holds in HEAD: a directory's entries
/// (directories first, then by name) or a file's bytes, up to `max_file_bytes` (a larger
/// file is an error naming its size). `None` when HEAD has no such path.
pub fn browse(root: &Path, path: &str, max_file_bytes: usize) -> Result<Option<Node>> {
    let path = checked_path(path)?;
    let Some(repo) = open(root)? else { return Ok(None) };
    let Some(tree) = head_tree(&repo)? else { return Ok(None) };
    let object = if path.is_empty() {
        tree.as_object().clone()
    } else {
        match tree.get_path(Path::new(path)) {
            Ok(entry) => entry.to_object(&repo).map_err(|e| git_err("object", e))?,
            Err(_) => return Ok(None),
        }
    };
    match object.kind() {
        Some(ObjectType::Tree) => {
            let dir = object.peel_to_tree().map_err(|e| git_err("tree", e))?;
            Ok(Some(Node::Directory { entries: entries(&repo, &dir)?, total: dir.len() }))
        }
        Some(ObjectType::Blob) => {
            let blob = object.peel_to_blob().map_err(|e| git_err("blob", e))?;
            if blob.size() > max_file_bytes {
                return Err(Error::invalid(format!(
                    "path: {path} holds {} bytes, more than the {max_file_bytes} shown.",
                    blob.size()
                )));
            }
            Ok(Some(Node::File(blob.content().to_vec())))
        }
        _ => Ok(None),
    }
}

/// The messages under `inbox_dir` (an agent's `inbox` directory) in the last commit at or
/// before `moment`; `None` when the archive has no commit that old.
pub fn snapshot(root: &Path, inbox_dir: &str, moment: Timestamp) -> Result<Option<Snapshot>> {
    let Some(repo) = open(root)? else { return Ok(None) };
    let mut walk = repo.revwalk().map_err(|e| git_err("revwalk", e))?;
    if walk.push_head().is_err() {
        return Ok(None);
    }
    walk.set_sorting(Sort::TIME).map_err(|e| git_err("revwalk", e))?;
    let seconds = moment.as_micros().div_euclid(1_000_000);
    let mut chosen = None;
    // The whole history if need be: a commit's header is cheap to read.
    for id in walk {
        let commit = repo
            .find_commit(id.map_err(|e| git_err("revwalk", e))?)
            .map_err(|e| git_err("commit", e))?;
        if commit.author().when().seconds() <= seconds {
            chosen = Some(commit);
            break;
        }
    }
    let Some(commit) = chosen else { return Ok(None) };
    let tree = commit.tree().map_err(|e| git_err("tree", e))?;
    // Every file of the inbox (`YYYY/MM/<time>__…`: the path orders them by time), then the
    // newest [`MAX_SNAPSHOT`] read.
    let mut files: Vec<(String, Oid)> = Vec::new();
    if let Ok(entry) = tree.get_path(Path::new(inbox_dir))
        && let Ok(inbox) = entry.to_object(&repo).and_then(|o| o.peel_to_tree())
    {
        inbox
            .walk(git2::TreeWalkMode::PreOrder, |dir, entry| {
                if entry.kind() == Some(ObjectType::Blob) {
                    let name = String::from_utf8_lossy(entry.name_bytes());
                    files.push((format!("{dir}{name}"), entry.id()));
                }
                git2::TreeWalkResult::Ok
            })
            .map_err(|e| git_err("tree walk", e))?;
    }
    files.sort_unstable_by(|a, b| b.0.cmp(&a.0));
    let mut messages = Vec::new();
    for (_, id) in files.iter().take(MAX_SNAPSHOT) {
        let blob = repo.find_blob(*id).map_err(|e| git_err("blob", e))?;
        if let Ok(doc) = format::parse_message(&String::from_utf8_lossy(blob.content())) {
            messages.push(doc);
        }
    }
    messages.sort_by_key(|m| std::cmp::Reverse((m.created, m.id)));
    Ok(Some(Snapshot { commit: summary(&commit), messages }))
}

fn open(root: &Path) -> Result<Option<Repository>> {
    if !root.join(".git").exists() {
        return Ok(None);
    }
    Repository::open(root).map(Some).map_err(|e| git_err("open", e))
}

fn head_tree(repo: &Repository) -> Result<Option<Tree<'_>>> {
    match repo.head() {
        Ok(head) => head.peel_to_tree().map(Some).map_err(|e| git_err("HEAD tree", e)),
        Err(_) => Ok(None),
    }
}

/// The first [`MAX_ENTRIES`] entries, directories first, then by name.
fn entries(repo: &Repository, tree: &Tree<'_>) -> Result<Vec<DirEntry>> {
    let odb = repo.odb().map_err(|e| git_err("odb", e))?;
    let mut list: Vec<(bool, String, Oid)> = tree
        .iter()
        .map(|entry| {
            let name = String::from_utf8_lossy(entry.name_bytes()).into_owned();
            (entry.kind() == Some(ObjectType::Tree), name, entry.id())
        })
        .collect();
    list.sort_by(|a, b| (!a.0, &a.1).cmp(&(!b.0, &b.1)));
    list.truncate(MAX_ENTRIES);
    Ok(list
        .into_iter()
        .map(|(is_dir, name, id)| {
            let size = (!is_dir).then(|| odb.read_header(id).ok().map(|(n, _)| n)).flatten();
            DirEntry { name, is_dir, size }
        })
        .collect())
}

/// Whether the commit changed anything under `prefix` (compared with its first parent).
fn touches(commit: &Commit<'_>, prefix: &str) -> Result<bool> {
    let id =
        |tree: &Tree<'_>| -> Option<Oid> { tree.get_path(Path::new(prefix)).ok().map(|e| e.id()) };
    let now = commit.tree().map_err(|e| git_err("tree", e))?;
    let before = match commit.parents().next() {
        Some(parent) => id(&parent.tree().map_err(|e| git_err("tree", e))?),
        None => None,
    };
    Ok(id(&now) != before)
}

fn summary(commit: &Commit<'_>) -> CommitSummary {
    let sha = commit.id().to_string();
    CommitSummary {
        short_sha: sha[..12].to_string(),
        sha,
        summary: String::from_utf8_lossy(commit.summary_bytes().unwrap_or_default()).into_owned(),
        author: String::from_utf8_lossy(commit.author().name_bytes()).into_owned(),
        authored_ts: Timestamp::from_micros(
            commit.author().when().seconds().saturating_mul(1_000_000),
        ),
    }
}

fn status_name(status: git2::Delta) -> &'static str {
    match status {
        git2::Delta::Added => "added",
        git2::Delta::Deleted => "deleted",
        git2::Delta::Modified => "modified",
        git2::Delta::Renamed => "renamed",
        git2::Delta::Copied => "copied",
        git2::Delta::Typechange => "type changed",
        _ => "changed",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_that_would_leave_their_place_are_refused() {
        for bad in ["../x", "a/../../b", "/etc/passwd", "a//b", "a\\b", "./a", "a/./b", "a\0b"] {
            let error = checked_path(bad).expect_err(bad);
            assert!(error.message.starts_with("path:"), "{bad:?}: {}", error.message);
        }
        assert_eq!(checked_path("projects/p/").expect("fine"), "projects/p");
        assert_eq!(checked_path("").expect("root"), "");
    }
}
