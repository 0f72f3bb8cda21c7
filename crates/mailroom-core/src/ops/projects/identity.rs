//! Project identity (docs/compat/tools.md §1.5 and §2.2, `dir` mode): what a project path resolves
//! to — its slug, project uid and, when the path lies in a Git repository, the repository facts
//! agents use to tell worktrees apart (root, common dir, branch, worktree name, remote).
//!
//! Used by ensure_project (with WORKTREES_ENABLED) and `resource://identity/{project}`.

use std::path::Path;

use serde::Serialize;

use crate::error::{Error, Result};
use crate::model::slug::{looks_like_path, normalize_absolute_path, project_uid_for_path, slugify};
use crate::ops::Mailroom;

/// The identity fields the reference adds when worktrees are enabled.
#[derive(Debug, Clone, Serialize)]
pub struct ProjectIdentity {
    pub identity_mode_used: &'static str,
    pub canonical_path: String,
    pub repo_root: Option<String>,
    pub git_common_dir: Option<String>,
    pub branch: Option<String>,
    pub worktree_name: Option<String>,
    pub core_ignorecase: Option<bool>,
    pub normalized_remote: Option<String>,
    pub project_uid: String,
    pub discovery: Option<serde_json::Value>,
}

/// `resource://identity/{project}`: the identity plus the slug and human key it yields.
#[derive(Debug, Clone, Serialize)]
pub struct IdentityReport {
    pub slug: String,
    pub human_key: String,
    #[serde(flatten)]
    pub identity: ProjectIdentity,
}

/// The committed marker file whose first line overrides the project uid.
const UID_MARKER: &str = ".agent-mail-project-id";
/// The discovery file that may name `project_uid:` (and `product_uid:`).
const DISCOVERY_FILE: &str = ".agent-mail.yaml";

impl Mailroom {
    /// Resolves `project` to its identity. An absolute (or `~`, `.`, `/`-containing)
    /// identifier is a path; a bare identifier is an existing project's slug when one has it,
    /// otherwise a directory name under the server's working directory (the reference's older
    /// behaviour, which the conformance recording shows).
    pub async fn project_identity(&self, project: String) -> Result<IdentityReport> {
        let raw = project.trim().to_string();
        if raw.is_empty() {
            return Err(Error::invalid("project must not be empty."));
        }
        let path = if looks_like_path(&raw) {
            absolute_path(&raw)?
        } else {
            let key = raw.clone();
            let by_slug = self.store.read(move |db| db.project_matching(&key, &[])).await?;
            match by_slug {
                Some(found) => found.human_key,
                None => absolute_path(&raw)?,
            }
        };
        let identity = tokio::task::spawn_blocking({
            let path = path.clone();
            move || dir_identity(&path)
        })
        .await
        .map_err(|e| Error::internal(format!("identity resolution stopped: {e}")))?;
        Ok(IdentityReport { slug: slugify(&path), human_key: path, identity })
    }
}

/// The identity of a project directory given as a path (absolute, `~`, or relative to the
/// working directory), without a server: for the command line (`mail status`, `amctl env`).
/// Reads the file system.
pub fn path_identity(path: &str) -> Result<IdentityReport> {
    let path = absolute_path(path.trim())?;
    let identity = dir_identity(&path);
    Ok(IdentityReport { slug: slugify(&path), human_key: path, identity })
}

/// The `dir`-mode identity of an absolute, normalised path. Reads the file system (Git
/// metadata, marker files): call it off the async workers.
pub(crate) fn dir_identity(path: &str) -> ProjectIdentity {
    let repo = git2::Repository::discover(path).ok();
    let repo_root = repo.as_ref().and_then(|r| r.workdir()).map(display_dir);
    let git_common_dir = repo.as_ref().map(|r| display_dir(r.commondir()));
    let branch = repo.as_ref().and_then(|r| {
        let head = r.head().ok()?;
        head.is_branch().then(|| head.shorthand().ok().map(str::to_string)).flatten()
    });
    let worktree_name = repo
        .as_ref()
        .filter(|r| r.is_worktree())
        .and_then(|r| r.workdir())
        .and_then(|dir| dir.file_name())
        .map(|name| name.to_string_lossy().into_owned());
    let core_ignorecase =
        repo.as_ref().and_then(|r| r.config().ok()?.get_bool("core.ignorecase").ok());
    let normalized_remote = repo.as_ref().and_then(|r| {
        let remote = r.find_remote("origin").ok()?;
        normalize_remote(remote.url().ok()?)
    });
    let marker_root = repo_root.clone().unwrap_or_else(|| path.to_string());
    let project_uid = committed_uid(Path::new(&marker_root))
        .or_else(|| discovery_uid(Path::new(&marker_root)))
        .unwrap_or_else(|| project_uid_for_path(path));
    ProjectIdentity {
        identity_mode_used: "dir",
        canonical_path: path.to_string(),
        repo_root,
        git_common_dir,
        branch,
        worktree_name,
        core_ignorecase,
        normalized_remote,
        project_uid,
        discovery: None,
    }
}

/// Makes `raw` absolute (`~` → HOME, relative → the working directory) and normalises it.
fn absolute_path(raw: &str) -> Result<String> {
    let joined = if let Some(rest) = raw.strip_prefix('~') {
        let home = std::env::var("HOME").map_err(|_| Error::invalid("project: HOME is not set"))?;
        format!("{home}/{rest}")
    } else if raw.starts_with('/') {
        raw.to_string()
    } else {
        let cwd = std::env::current_dir()
            .map_err(|e| Error::internal(format!("working directory unknown: {e}")))?;
        format!("{}/{raw}", cwd.display())
    };
    normalize_absolute_path(&joined.replace('\\', "/"))
        .ok_or_else(|| Error::invalid(format!("project: cannot resolve '{raw}' to a path")))
}

/// A directory as the reference prints it: no trailing slash.
fn display_dir(dir: &Path) -> String {
    let text = dir.to_string_lossy();
    let trimmed = text.trim_end_matches('/');
    if trimmed.is_empty() { "/".to_string() } else { trimmed.to_string() }
}

fn committed_uid(root: &Path) -> Option<String> {
    let text = std::fs::read_to_string(root.join(UID_MARKER)).ok()?;
    let uid = text.lines().next()?.trim();
    (!uid.is_empty()).then(|| uid.to_string())
}

fn discovery_uid(root: &Path) -> Option<String> {
    let text = std::fs::read_to_string(root.join(DISCOVERY_FILE)).ok()?;
    text.lines().find_map(|line| {
        let value = line.trim().strip_prefix("project_uid:")?.trim();
        let value = value.trim_matches(|c| c == '"' || c == '\'');
        (!value.is_empty()).then(|| value.to_string())
    })
}

/// `host/owner/repo`, lower-cased, from an scp-style (`git@host:owner/repo.git`) or URL
/// remote; `None` when it has no owner and repository.
fn normalize_remote(url: &str) -> Option<String> {
    let url = url.trim();
    let (host, path) = if let Some((_, rest)) = url.split_once("://") {
        let rest = rest.rsplit_once('@').map_or(rest, |(_, after)| after);
        rest.split_once('/')?
    } else {
        let rest = url.rsplit_once('@').map_or(url, |(_, after)| after);
        rest.split_once(':')?
    };
    let host = host.split(':').next()?.to_lowercase();
    let path = path.trim_end_matches('/').trim_end_matches(".git");
    let mut segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    if segments.len() < 2 || host.is_empty() {
        return None;
    }
    let repo = segments.pop()?;
    let owner = segments.pop()?;
    Some(format!("{host}/{owner}/{repo}").to_lowercase())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn remotes_normalise_to_host_owner_repo() {
        let cases = [
            ("git@github.com:Owner/Repo.git", Some("github.com/owner/repo")),
            ("https://github.com/Owner/Repo.git", Some("github.com/owner/repo")),
            ("ssh://git@host.example:2222/group/sub/repo", Some("host.example/sub/repo")),
            ("https://user:pw@gitlab.com/a/b/", Some("gitlab.com/a/b")),
            ("/srv/git/repo.git", None),
            ("https://github.com/only", None),
        ];
        for (url, expected) in cases {
            assert_eq!(normalize_remote(url).as_deref(), expected, "{url}");
        }
    }

    #[test]
    fn a_path_outside_any_repository_has_no_git_fields() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = normalize_absolute_path(&dir.path().to_string_lossy()).expect("absolute");
        let identity = dir_identity(&path);
        assert_eq!(identity.repo_root, None);
        assert_eq!(identity.branch, None);
        assert_eq!(identity.project_uid, project_uid_for_path(&path));
    }

    #[test]
    fn a_repository_reports_root_branch_remote_and_marker_uid() {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = git2::Repository::init(dir.path()).expect("init");
        repo.remote("origin", "git@github.com:Acme/Widgets.git").expect("remote");
        repo.set_head("refs/heads/feature-x").expect("head");
        std::fs::write(dir.path().join(UID_MARKER), "uid-from-marker\n").expect("marker");
        let sub = dir.path().join("src");
        std::fs::create_dir(&sub).expect("sub dir");
        let path = normalize_absolute_path(&sub.to_string_lossy()).expect("absolute");
        let identity = dir_identity(&path);
        let root = normalize_absolute_path(&dir.path().to_string_lossy()).expect("absolute");
        assert_eq!(identity.repo_root.as_deref(), Some(root.as_str()));
        assert_eq!(identity.branch, None, "an unborn branch has no commit to name yet");
        assert_eq!(identity.normalized_remote.as_deref(), Some("github.com/acme/widgets"));
        assert_eq!(identity.project_uid, "uid-from-marker");
        assert_eq!(identity.worktree_name, None);
        assert!(identity.git_common_dir.is_some_and(|d| d.ends_with(".git")));
    }
}
