//! Which paths a commit or a push changes, asked of the `git` command line as the reference
//! does (docs/compat/cli.md §4.2 step 5), with renames counted under both names.

use std::collections::HashSet;
use std::path::Path;
use std::process::{Command, Stdio};

use crate::error::{Error, Result};

/// The staged paths of the repository at `repo` (the current directory when `None`):
/// added, copied, modified, renamed (old and new name), deleted, type-changed and unmerged.
///
/// One `git diff --cached --name-status -M -z --diff-filter=ACMRDTU` gives what the
/// reference gathers with two calls (`--name-only` plus the rename pairs of
/// `--name-status -M`): every listed path, and both names of each rename.
pub fn staged_paths(repo: Option<&Path>) -> Result<Vec<String>> {
    let output =
        git(repo, &["diff", "--cached", "--name-status", "-M", "-z", "--diff-filter=ACMRDTU"])?
            .ok_or_else(|| Error::internal("git diff --cached failed"))?;
    Ok(dedupe(parse_name_status(&output)))
}

/// The paths changed by the commits a push sends, from Git's pre-push stdin lines
/// `<local ref> <local sha> <remote ref> <remote sha>`: the commits are
/// `git rev-list --topo-order <local sha> --not --remotes=<remote>`; when that fails, the diff
/// `<remote sha>..<local sha>` (or all of `<local sha>` for a new branch). A deleted ref
/// (all-zero local sha) sends nothing.
pub fn pushed_paths(repo: Option<&Path>, remote: &str, refs: &str) -> Result<Vec<String>> {
    let mut paths = Vec::new();
    let remotes = format!("--remotes={remote}");
    for line in refs.lines() {
        let fields: Vec<&str> = line.split_whitespace().collect();
        let [_, local_sha, _, remote_sha, ..] = fields[..] else { continue };
        if is_zero(local_sha) {
            continue;
        }
        match git(repo, &["rev-list", "--topo-order", local_sha, "--not", &remotes])? {
            Some(list) => {
                for commit in String::from_utf8_lossy(&list).split_whitespace() {
                    let changed = git(
                        repo,
                        &[
                            "diff-tree",
                            "-r",
                            "--root",
                            "--no-commit-id",
                            "--name-status",
                            "-M",
                            "--no-ext-diff",
                            "--diff-filter=ACMRDTU",
                            "-z",
                            commit,
                        ],
                    )?;
                    paths.extend(changed.map(|c| parse_name_status(&c)).unwrap_or_default());
                }
            }
            None => {
                let range = if is_zero(remote_sha) {
                    local_sha.to_string()
                } else {
                    format!("{remote_sha}..{local_sha}")
                };
                let changed = git(repo, &["diff", "--name-status", "-M", "-z", &range])?;
                paths.extend(changed.map(|c| parse_name_status(&c)).unwrap_or_default());
            }
        }
    }
    Ok(dedupe(paths))
}

/// Whether the repository at `repo` (the current directory when `None`) sets
/// `core.ignorecase` (true on case-insensitive file systems); false outside a repository.
pub fn ignores_case(repo: Option<&Path>) -> bool {
    git2::Repository::discover(repo.unwrap_or(Path::new(".")))
        .and_then(|r| r.config())
        .and_then(|c| c.get_bool("core.ignorecase"))
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
    fn nul_input_and_dedupe() {
        assert_eq!(split_nul(b"a\0\0b c\0a\0"), ["a", "b c", "a"]);
        assert_eq!(dedupe(split_nul(b"a\0b\0a\0")), ["a", "b"]);
    }
}
