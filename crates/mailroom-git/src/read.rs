//! Read-only views of a repository, for maintenance and for what agents are shown: HEAD's
//! files, the latest commits, the branch a project's directory has checked out. None of them
//! writes anything, so each is safe beside a server that keeps committing.

use std::collections::HashMap;
use std::path::Path;

use git2::{ObjectType, Oid, Repository, RepositoryOpenFlags, Tree, TreeWalkMode, TreeWalkResult};

use crate::error::{Result, git_err};
use crate::repo::head_tree;

/// A commit as a listing shows it.
#[derive(Debug, Clone, PartialEq)]
pub struct CommitInfo {
    /// The first 12 hex digits of the commit's id.
    pub hexsha: String,
    /// The message's first line.
    pub summary: String,
    /// When it was authored, in seconds since the Unix epoch.
    pub authored_seconds: i64,
}

/// The files of the archive's HEAD commit, listed once: a read-only view for maintenance.
///
/// Opening it writes nothing (no index, no work tree, no lock), so it is safe beside a server
/// that keeps committing; it shows HEAD as it was when opened.
pub struct CommittedFiles {
    repo: Repository,
    /// Repo-relative path (`/` separators) → blob id, for every file of the HEAD tree.
    files: HashMap<String, Oid>,
    head: Option<Oid>,
}

impl CommittedFiles {
    /// Lists HEAD of the repository at `root`; `None` when `root` holds no repository. A
    /// repository without commits yields an empty listing.
    pub fn open(root: &Path) -> Result<Option<Self>> {
        // No upward search: a directory inside some other repository is not an archive.
        let flags = RepositoryOpenFlags::NO_SEARCH;
        let repo = match Repository::open_ext(root, flags, std::iter::empty::<&std::ffi::OsStr>()) {
            Ok(repo) => repo,
            Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
            Err(e) => return Err(git_err("open", e)),
        };
        let mut files = HashMap::new();
        let head = match head_tree(&repo)? {
            None => None,
            Some(tree) => {
                list_tree(&tree, &mut files)?;
                repo.head().ok().and_then(|h| h.target())
            }
        };
        Ok(Some(Self { repo, files, head }))
    }

    /// The HEAD commit id; `None` before the first commit.
    pub fn head(&self) -> Option<Oid> {
        self.head
    }

    /// Whether `path` is committed.
    pub fn contains(&self, path: &str) -> bool {
        self.files.contains_key(path)
    }

    /// Whether `path` is committed with exactly `bytes`, compared by blob id (nothing is read).
    pub fn holds(&self, path: &str, bytes: &[u8]) -> bool {
        self.files.get(path).is_some_and(|id| Some(*id) == blob_id(bytes))
    }

    /// The committed bytes of `path`, if it is committed.
    pub fn read(&self, path: &str) -> Result<Option<Vec<u8>>> {
        let Some(id) = self.files.get(path) else { return Ok(None) };
        let blob = self.repo.find_blob(*id).map_err(|e| git_err("blob", e))?;
        Ok(Some(blob.content().to_vec()))
    }

    /// Every committed path, in no particular order.
    pub fn paths(&self) -> impl Iterator<Item = &str> {
        self.files.keys().map(String::as_str)
    }

    /// Number of committed files.
    pub fn len(&self) -> usize {
        self.files.len()
    }

    /// Whether HEAD holds no file (or there is no commit).
    pub fn is_empty(&self) -> bool {
        self.files.is_empty()
    }
}

/// The blob id Git gives `bytes` (no object is written).
fn blob_id(bytes: &[u8]) -> Option<Oid> {
    Oid::hash_object(ObjectType::Blob, bytes).ok()
}

fn list_tree(tree: &Tree<'_>, files: &mut HashMap<String, Oid>) -> Result<()> {
    tree.walk(TreeWalkMode::PreOrder, |directory, entry| {
        if entry.kind() == Some(ObjectType::Blob) {
            let name = String::from_utf8_lossy(entry.name_bytes());
            files.insert(format!("{directory}{name}"), entry.id());
        }
        TreeWalkResult::Ok
    })
    .map_err(|e| git_err("tree walk", e))
}

/// The newest `limit` commits of the repository at `root`, newest first; none when `root`
/// holds no repository or no commit.
pub fn recent_commits(root: &Path, limit: usize) -> Result<Vec<CommitInfo>> {
    let repo = match Repository::open(root) {
        Ok(repo) => repo,
        Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(git_err("open", e)),
    };
    let mut walk = repo.revwalk().map_err(|e| git_err("revwalk", e))?;
    if walk.push_head().is_err() {
        return Ok(Vec::new());
    }
    let mut commits = Vec::with_capacity(limit);
    for id in walk.take(limit) {
        let id = id.map_err(|e| git_err("revwalk", e))?;
        let commit = repo.find_commit(id).map_err(|e| git_err("commit", e))?;
        let hex = id.to_string();
        commits.push(CommitInfo {
            hexsha: hex[..12].to_string(),
            summary: String::from_utf8_lossy(commit.summary_bytes().unwrap_or_default())
                .into_owned(),
            authored_seconds: commit.author().when().seconds(),
        });
    }
    Ok(commits)
}

/// The branch checked out in the repository containing `work_dir` (a project's directory),
/// if it is one and HEAD names a branch; build slots default their branch to it.
pub fn current_branch(work_dir: &Path) -> Option<String> {
    let repo = Repository::discover(work_dir).ok()?;
    let head = repo.head().ok()?;
    if !head.is_branch() {
        return None;
    }
    head.shorthand().ok().map(str::to_string)
}

/// The directories retired from the work tree of the repository at `root` (see
/// [`ArchiveRepo::retire_directories`](crate::ArchiveRepo::retire_directories)), each with
/// the number of files HEAD holds under it; none when nothing is retired. Read-only.
pub fn retired_directories(root: &Path) -> Result<Vec<(String, usize)>> {
    let retired = crate::repo::retired_list(&root.join(".git"));
    if retired.is_empty() {
        return Ok(Vec::new());
    }
    let repo = Repository::open(root).map_err(|e| git_err("open", e))?;
    let Some(tree) = head_tree(&repo)? else { return Ok(Vec::new()) };
    let mut counted = Vec::with_capacity(retired.len());
    for dir in retired {
        let files = match tree.get_path(Path::new(&dir)) {
            Ok(entry) => {
                let object = entry.to_object(&repo).map_err(|e| git_err("tree", e))?;
                let mut count = 0;
                if let Some(subtree) = object.as_tree() {
                    subtree
                        .walk(TreeWalkMode::PreOrder, |_, entry| {
                            count += usize::from(entry.kind() == Some(ObjectType::Blob));
                            TreeWalkResult::Ok
                        })
                        .map_err(|e| git_err("tree walk", e))?;
                }
                count
            }
            Err(_) => 0,
        };
        counted.push((dir, files));
    }
    Ok(counted)
}
