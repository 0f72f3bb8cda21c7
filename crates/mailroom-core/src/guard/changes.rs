//! Which paths a commit or a push changes, asked of the `git` command line as the reference
//! does (docs/compat/cli.md §4.2 step 5), with renames counted under both names.
//!
//! A merge is judged by what the merge itself changes, not by what the merged branches bring:
//! its paths are those whose result differs from every parent. A path equal to one parent's
//! version was brought by that parent (whose own commits were judged when they were made),
//! and Git runs no pre-commit hook at all for a merge without conflicts; counting the merged
//! branch's changes would refuse a conflicted merge that the same merge without a conflict
//! passes.

use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::error::{Error, Result};

/// The options every path listing passes: both names of a rename, NUL-separated, the
/// statuses that change a path (added, copied, modified, renamed, deleted, type-changed,
/// unmerged).
const NAME_STATUS: [&str; 4] = ["--name-status", "-M", "-z", "--diff-filter=ACMRDTU"];

/// The staged paths of the repository at `repo` (the current directory when `None`):
/// added, copied, modified, renamed (old and new name), deleted, type-changed and unmerged.
/// While a merge is being committed (`MERGE_HEAD` present), only the staged paths that
/// differ from `HEAD` and from every merged commit.
///
/// One `git diff --cached --name-status -M -z --diff-filter=ACMRDTU` gives what the
/// reference gathers with two calls (`--name-only` plus the rename pairs of
/// `--name-status -M`): every listed path, and both names of each rename.
pub fn staged_paths(repo: Option<&Path>) -> Result<Vec<String>> {
    let merged = merge_heads(repo);
    if merged.is_empty() {
        return Ok(dedupe(staged_against(repo, None)?));
    }
    let mut per_parent = vec![staged_against(repo, Some("HEAD"))?];
    for commit in &merged {
        per_parent.push(staged_against(repo, Some(commit))?);
    }
    Ok(changed_from_every_parent(per_parent))
}

/// The paths where the index differs from `commit` (from `HEAD` when `None`).
fn staged_against(repo: Option<&Path>, commit: Option<&str>) -> Result<Vec<String>> {
    let mut args = vec!["diff", "--cached"];
    args.extend(NAME_STATUS);
    args.extend(commit);
    let output = git(repo, &args)?.ok_or_else(|| Error::internal("git diff --cached failed"))?;
    Ok(parse_name_status(&output))
}

/// The commits of `MERGE_HEAD` (several for an octopus merge), or none when no merge is in
/// progress. Read from the repository's own Git directory, where Git keeps it per worktree.
fn merge_heads(repo: Option<&Path>) -> Vec<String> {
    let Some(repository) = open_repository(repo) else { return Vec::new() };
    let Ok(text) = std::fs::read_to_string(repository.path().join("MERGE_HEAD")) else {
        return Vec::new();
    };
    text.split_whitespace().map(str::to_string).collect()
}

/// The paths changed by the commits a push sends, from Git's pre-push stdin lines
/// `<local ref> <local sha> <remote ref> <remote sha>`: the commits are
/// `git rev-list --topo-order <local sha> --not --remotes=<remote>` (a merge counting only
/// what it changed itself); when that fails, the diff `<remote sha>..<local sha>` (or all of
/// `<local sha>` for a new branch). A deleted ref (all-zero local sha) sends nothing.
pub fn pushed_paths(repo: Option<&Path>, remote: &str, refs: &str) -> Result<Vec<String>> {
    let mut paths = Vec::new();
    let remotes = format!("--remotes={remote}");
    for line in refs.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [_, local_sha, _, remote_sha, ..] = fields[..] else { continue };
        if is_zero(local_sha) {
            continue;
        }
        let listed =
            git(repo, &["rev-list", "--topo-order", "--parents", local_sha, "--not", &remotes])?;
        match listed {
            Some(list) => {
                for line in String::from_utf8_lossy(&list).lines() {
                    let ids: Vec<&str> = line.split_whitespace().collect();
                    if let [commit, parents @ ..] = &ids[..] {
                        paths.extend(commit_paths(repo, commit, parents)?);
                    }
                }
            }
            None => paths.extend(range_paths(repo, local_sha, remote_sha)?),
        }
    }
    Ok(dedupe(paths))
}

/// The paths `commit` changes: against its parent (everything, for a root commit), or for a
/// merge those that differ from every parent. A diff Git cannot make (a parent missing from
/// a shallow clone) is left out, so the merge is judged against the parents it can be.
fn commit_paths(repo: Option<&Path>, commit: &str, parents: &[&str]) -> Result<Vec<String>> {
    if parents.len() < 2 {
        return Ok(diff_tree(repo, &[commit])?.unwrap_or_default());
    }
    let mut per_parent = Vec::new();
    for parent in parents {
        per_parent.extend(diff_tree(repo, &[parent, commit])?);
    }
    Ok(changed_from_every_parent(per_parent))
}

/// `git diff-tree -r` of one commit (against its first parent, or the empty tree for a root
/// commit) or between two; `None` when Git cannot make it.
fn diff_tree(repo: Option<&Path>, revisions: &[&str]) -> Result<Option<Vec<String>>> {
    let mut args = vec!["diff-tree", "-r", "--root", "--no-commit-id", "--no-ext-diff"];
    args.extend(NAME_STATUS);
    args.extend(revisions);
    Ok(git(repo, &args)?.map(|output| parse_name_status(&output)))
}

/// The diff `<remote sha>..<local sha>`, or all of `<local sha>` for a new branch: the
/// fallback when the pushed commits cannot be listed.
fn range_paths(repo: Option<&Path>, local_sha: &str, remote_sha: &str) -> Result<Vec<String>> {
    let range = if is_zero(remote_sha) {
        local_sha.to_string()
    } else {
        format!("{remote_sha}..{local_sha}")
    };
    let changed = git(repo, &["diff", "--name-status", "-M", "-z", &range])?;
    Ok(changed.map(|c| parse_name_status(&c)).unwrap_or_default())
}

/// The paths listed for every parent, in the first listing's order: those whose result
/// differs from each parent's version.
fn changed_from_every_parent(per_parent: Vec<Vec<String>>) -> Vec<String> {
    let mut listings = per_parent.into_iter();
    let Some(first) = listings.next() else { return Vec::new() };
    let others: Vec<HashSet<String>> = listings.map(|l| l.into_iter().collect()).collect();
    dedupe(first.into_iter().filter(|path| others.iter().all(|o| o.contains(path))).collect())
}

/// The repository at `repo`, or when `None` the one Git itself would use here (`GIT_DIR`
/// and the other variables Git exports to hooks, else discovery from the current
/// directory); `None` outside a repository.
pub fn open_repository(repo: Option<&Path>) -> Option<git2::Repository> {
    match repo {
        Some(dir) => git2::Repository::discover(dir).ok(),
        None => git2::Repository::open_from_env().ok(),
    }
}

/// Whether the repository at `repo` (the current directory when `None`) sets
/// `core.ignorecase` (true on case-insensitive file systems); false outside a repository.
pub fn ignores_case(repo: Option<&Path>) -> bool {
    open_repository(repo)
        .and_then(|r| r.config().ok())
        .and_then(|c| c.get_bool("core.ignorecase").ok())
        .unwrap_or(false)
}

fn is_zero(sha: &str) -> bool {
    sha.bytes().all(|b| b == b'0')
}

/// Runs `git` and returns its stdout, or `None` when it exits non-zero. Failing to start
/// `git` at all is an error.
fn git(repo: Option<&Path>, args: &[&str]) -> Result<Option<Vec<u8>>> {
    let mut command = Command::new("git");
    if let Some(dir) = repo {
        command.arg("-C").arg(dir);
    }
    let output = command
        .args(args)
        .stdin(Stdio::null())
        .stderr(Stdio::null())
        .output()
        .map_err(|e| Error::internal(format!("cannot run git: {e}")))?;
    Ok(output.status.success().then_some(output.stdout))
}

/// Parses `--name-status -z` output: a status field, then one path, or two for renames and
/// copies (`R…`/`C…`: old then new name).
pub fn parse_name_status(output: &[u8]) -> Vec<String> {
    let mut fields = output.split(|b| *b == 0).filter(|f| !f.is_empty());
    let mut paths = Vec::new();
    while let Some(status) = fields.next() {
        let names = if matches!(status.first(), Some(b'R' | b'C')) { 2 } else { 1 };
        for field in fields.by_ref().take(names) {
            paths.push(String::from_utf8_lossy(field).into_owned());
        }
    }
    paths
}

/// Drops repeated paths, keeping the first occurrence's position.
fn dedupe(paths: Vec<String>) -> Vec<String> {
    let mut seen = HashSet::new();
    paths.into_iter().filter(|p| seen.insert(p.clone())).collect()
}

/// Splits NUL-separated paths (the `--stdin-nul` input), dropping empty fields.
pub fn split_nul(input: &[u8]) -> Vec<String> {
    input
        .split(|b| *b == 0)
        .filter(|f| !f.is_empty())
        .map(|f| String::from_utf8_lossy(f).into_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn name_status_gives_both_names_of_renames_and_copies() {
        let output = b"M\0src/a.rs\0R087\0old/b.rs\0new/b.rs\0D\0gone.txt\0C100\0x\0y\0A\0new.md\0";
        assert_eq!(
            parse_name_status(output),
            ["src/a.rs", "old/b.rs", "new/b.rs", "gone.txt", "x", "y", "new.md"]
        );
        assert!(parse_name_status(b"").is_empty());
    }

    #[test]
    fn a_merge_counts_the_paths_that_differ_from_every_parent() {
        let listing = |paths: &[&str]| paths.iter().map(|p| p.to_string()).collect::<Vec<_>>();
        let per_parent = vec![
            listing(&["other.txt", "src/reserved.py", "both.rs", "both.rs"]),
            listing(&["both.rs", "other.txt", "theirs.md"]),
        ];
        assert_eq!(changed_from_every_parent(per_parent), ["other.txt", "both.rs"]);
        let octopus = vec![listing(&["a", "b"]), listing(&["a", "b"]), listing(&["b"])];
        assert_eq!(changed_from_every_parent(octopus), ["b"]);
        assert!(changed_from_every_parent(Vec::new()).is_empty());
    }

    #[test]
    fn nul_input_and_dedupe() {
        assert_eq!(split_nul(b"a\0\0b c\0a\0"), ["a", "b c", "a"]);
        assert_eq!(dedupe(split_nul(b"a\0b\0a\0")), ["a", "b"]);
    }
}
