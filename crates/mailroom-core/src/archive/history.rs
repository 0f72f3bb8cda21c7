//! The archive commit that last wrote a file, with its diff for that file: what the inbox
//! resource shows per message (docs/compat/resources.md §4.3, `commit`). Best-effort: one walk from
//! HEAD over at most [`MAX_COMMITS_WALKED`] commits serves a whole page of messages, and a
//! file not found within it (or not committed yet) simply has no entry.

use std::collections::HashMap;
use std::path::Path;

use git2::{DiffOptions, Oid, Repository, Tree};
use serde::Serialize;

use crate::error::{Error, Result};
use crate::model::time::Timestamp;

/// How far back the walk goes: keeps an inbox read bounded on a long history.
pub const MAX_COMMITS_WALKED: usize = 500;
/// At most this many `+`/`-` lines in an excerpt, each cut to this many characters.
const EXCERPT_LINES: usize = 12;
const EXCERPT_LINE_CHARS: usize = 200;

/// The commit that last changed a file, and what it changed in that file.
#[derive(Debug, Clone, Serialize)]
pub struct FileCommit {
    /// The first 12 hex digits.
    pub hexsha: String,
    /// The commit message's first line.
    pub summary: String,
    pub authored_ts: Timestamp,
    pub insertions: usize,
    pub deletions: usize,
    pub hunks: usize,
    pub excerpt: Vec<String>,
}

/// The last commit touching each of `paths` (repo-relative), for those found.
pub fn last_commits(root: &Path, paths: &[String]) -> Result<HashMap<String, FileCommit>> {
    let mut found = HashMap::new();
    let repo = match Repository::open(root) {
        Ok(repo) => repo,
        Err(_) => return Ok(found),
    };
    let mut walk = repo.revwalk().map_err(|e| git_err("revwalk", e))?;
    if walk.push_head().is_err() {
        return Ok(found);
    }
    let mut pending: Vec<&String> = paths.iter().collect();
    for id in walk.take(MAX_COMMITS_WALKED) {
        if pending.is_empty() {
            break;
        }
        let commit = repo
            .find_commit(id.map_err(|e| git_err("revwalk", e))?)
            .map_err(|e| git_err("commit", e))?;
        let tree = commit.tree().map_err(|e| git_err("tree", e))?;
        let parent_tree = commit.parents().next().and_then(|p| p.tree().ok());
        let mut still_pending = Vec::with_capacity(pending.len());
        for path in pending {
            let now = entry_id(&tree, path);
            if now.is_some() && now != parent_tree.as_ref().and_then(|t| entry_id(t, path)) {
                let file = file_commit(&repo, &commit, parent_tree.as_ref(), &tree, path)?;
                found.insert(path.clone(), file);
            } else {
                still_pending.push(path);
            }
        }
        pending = still_pending;
    }
    Ok(found)
}

fn entry_id(tree: &Tree<'_>, path: &str) -> Option<Oid> {
    tree.get_path(Path::new(path)).ok().map(|entry| entry.id())
}

fn file_commit(
    repo: &Repository,
    commit: &git2::Commit<'_>,
    parent: Option<&Tree<'_>>,
    tree: &Tree<'_>,
    path: &str,
) -> Result<FileCommit> {
    let mut options = DiffOptions::new();
    options.pathspec(path).disable_pathspec_match(true);
    let diff = repo
        .diff_tree_to_tree(parent, Some(tree), Some(&mut options))
        .map_err(|e| git_err("diff", e))?;
    let stats = diff.stats().map_err(|e| git_err("diff stats", e))?;
    let mut hunks = 0;
    let mut excerpt = Vec::new();
    diff.foreach(
        &mut |_, _| true,
        None,
        Some(&mut |_, _| {
            hunks += 1;
            true
        }),
        Some(&mut |_, _, line| {
            let sign = line.origin();
            if matches!(sign, '+' | '-') && excerpt.len() < EXCERPT_LINES {
                let text = String::from_utf8_lossy(line.content());
                let text: String =
                    text.trim_end_matches('\n').chars().take(EXCERPT_LINE_CHARS).collect();
                excerpt.push(format!("{sign}{text}"));
            }
            true
        }),
    )
    .map_err(|e| git_err("diff walk", e))?;
    let hex = commit.id().to_string();
    Ok(FileCommit {
        hexsha: hex[..12].to_string(),
        summary: String::from_utf8_lossy(commit.summary_bytes().unwrap_or_default()).into_owned(),
        authored_ts: Timestamp::from_micros(
            commit.author().when().seconds().saturating_mul(1_000_000),
        ),
        insertions: stats.insertions(),
        deletions: stats.deletions(),
        hunks,
        excerpt,
    })
}

/// libgit2's `error` while doing `context`, as the engine reports it.
pub(super) fn git_err(context: &'static str, error: git2::Error) -> Error {
    mailroom_git::Error::Git { context, source: error }.into()
}
