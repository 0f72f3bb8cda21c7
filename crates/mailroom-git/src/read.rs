//! Read-only views of a repository, for maintenance and for what agents are shown: HEAD's
//! files, the latest commits, the branch a project's directory has checked out. None of them
//! writes anything, so each is safe beside a server that keeps committing.

use std::cell::RefCell;
use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;

use git2::{ObjectType, Oid, Repository, RepositoryOpenFlags, TreeWalkMode, TreeWalkResult};

use crate::error::{Error, Result, git_err};
use crate::repo::head_tree;
use crate::tree_merge;

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

/// The files of the archive's HEAD commit: a read-only view for maintenance.
///
/// Opening it writes nothing (no index, no work tree, no lock), so it is safe beside a server
/// that keeps committing; it shows HEAD as it was when opened. Nothing is listed up front:
/// a path is looked up through its directories' trees, the directories read last kept up to
/// [`CommittedFiles::CACHE_BYTES`] (a check of every message reads its month directories
/// over and over), and [`CommittedFiles::for_each_file`] walks HEAD without keeping what it
/// passed. Its memory follows the largest directories, not the archive.
pub struct CommittedFiles {
    repo: Repository,
    head: Option<Oid>,
    /// HEAD's root tree.
    root: Option<Oid>,
    directories: RefCell<Directories>,
    /// [`Self::CACHE_BYTES`] but in tests.
    cache_bytes: usize,
}

/// Directory trees read, by repo-relative path (`""` for the root), the least recently used
/// dropped past the budget.
#[derive(Default)]
struct Directories {
    trees: HashMap<String, (Rc<TreeBytes>, u64)>,
    bytes: usize,
    clock: u64,
}

/// A tree's bytes and where each of its entries starts.
struct TreeBytes {
    bytes: Vec<u8>,
    starts: Vec<u32>,
}

impl TreeBytes {
    fn parse(bytes: Vec<u8>) -> Result<Self> {
        let mut starts = Vec::new();
        let mut at = 0usize;
        for entry in tree_merge::entries(&bytes) {
            let entry = entry?;
            starts.push(u32::try_from(at).map_err(|_| Error::invalid("a tree over 4 GiB"))?);
            at += entry.raw.len();
        }
        Ok(Self { bytes, starts })
    }

    /// The entry starting at `start` (one of `starts`: it parsed).
    fn entry_at(&self, start: u32) -> Option<tree_merge::Entry<'_>> {
        tree_merge::entries(&self.bytes[start as usize..]).next()?.ok()
    }

    /// The entry named `name`, a file's or a directory's (whether it is one), searched for
    /// in Git's order.
    fn find(&self, name: &[u8]) -> Option<(Oid, bool)> {
        [false, true].into_iter().find_map(|is_directory| {
            let found = self.starts.binary_search_by(|start| match self.entry_at(*start) {
                Some(entry) => {
                    tree_merge::git_order(entry.name, entry.is_directory, name, is_directory)
                }
                None => std::cmp::Ordering::Less,
            });
            let entry = self.entry_at(self.starts[found.ok()?])?;
            let id = Oid::from_bytes(entry.id).ok()?;
            (entry.is_directory == is_directory).then_some((id, is_directory))
        })
    }

    fn size(&self) -> usize {
        self.bytes.len() + 4 * self.starts.len()
    }
}

impl CommittedFiles {
    /// Bytes of directory trees kept for the next lookups.
    pub const CACHE_BYTES: usize = 64 << 20;

    /// Opens HEAD of the repository at `root`; `None` when `root` holds no repository. A
    /// repository without commits holds no file.
    pub fn open(root: &Path) -> Result<Option<Self>> {
        // No upward search: a directory inside some other repository is not an archive.
        let flags = RepositoryOpenFlags::NO_SEARCH;
        let repo = match Repository::open_ext(root, flags, std::iter::empty::<&std::ffi::OsStr>()) {
            Ok(repo) => repo,
            Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
            Err(e) => return Err(git_err("open", e)),
        };
        let (head, root) = match head_tree(&repo)? {
            None => (None, None),
            Some(tree) => (repo.head().ok().and_then(|h| h.target()), Some(tree.id())),
        };
        Ok(Some(Self {
            repo,
            head,
            root,
            directories: RefCell::default(),
            cache_bytes: Self::CACHE_BYTES,
        }))
    }

    /// The HEAD commit id; `None` before the first commit.
    pub fn head(&self) -> Option<Oid> {
        self.head
    }

    /// Whether `path` is committed (as a file).
    pub fn contains(&self, path: &str) -> bool {
        matches!(self.blob(path), Ok(Some(_)))
    }

    /// Whether `path` is committed with exactly `bytes`, compared by blob id (nothing is read).
    pub fn holds(&self, path: &str, bytes: &[u8]) -> bool {
        matches!(self.blob(path), Ok(Some(id)) if Some(id) == blob_id(bytes))
    }

    /// The committed bytes of `path`, if it is committed.
    pub fn read(&self, path: &str) -> Result<Option<Vec<u8>>> {
        let Some(id) = self.blob(path)? else { return Ok(None) };
        let blob = self.repo.find_blob(id).map_err(|e| git_err("blob", e))?;
        Ok(Some(blob.content().to_vec()))
    }

    /// The blob ids of many files at once, in the order of `paths` (`None` where HEAD has no
    /// file). Each directory they name is read once for all of them and not kept, so a batch
    /// spread over a month's large directories (a check of every message: its canonical,
    /// outbox and inbox copies, its thread's digest) costs one read of each, where one path
    /// at a time would read them again whenever they outgrew the cache.
    pub fn blob_ids(&self, paths: &[&str]) -> Result<Vec<Option<Oid>>> {
        let mut order: Vec<(&str, &str, usize)> = paths
            .iter()
            .enumerate()
            .map(|(at, path)| {
                let (parent, name) = path.rsplit_once('/').unwrap_or(("", path));
                (parent, name, at)
            })
            .collect();
        order.sort_unstable();
        let mut found = vec![None; paths.len()];
        let odb = self.repo.odb().map_err(|e| git_err("odb", e))?;
        for group in order.chunk_by(|a, b| a.0 == b.0) {
            let parent = group[0].0;
            let Some(id) = self.directory_id(parent)? else { continue };
            let object = odb.read(id).map_err(|e| git_err("tree", e))?;
            let tree = TreeBytes::parse(object.data().to_vec())?;
            drop(object);
            for (_, name, at) in group {
                found[*at] = tree.find(name.as_bytes()).filter(|(_, dir)| !dir).map(|(id, _)| id);
            }
        }
        Ok(found)
    }

    /// The bytes of the blob `id` (one [`Self::blob_ids`] gave).
    pub fn read_blob(&self, id: Oid) -> Result<Vec<u8>> {
        let blob = self.repo.find_blob(id).map_err(|e| git_err("blob", e))?;
        Ok(blob.content().to_vec())
    }

    /// Calls `visit` with every committed file under the directory `under` (`""`: all of
    /// HEAD) with its repo-relative path (`/` separators) and blob id, in Git's order (the
    /// paths' byte order), keeping none of them.
    pub fn for_each_file(&self, under: &str, mut visit: impl FnMut(&str, Oid)) -> Result<()> {
        let under = under.trim_end_matches('/');
        let Some(id) = self.directory_id(under)? else { return Ok(()) };
        let prefix = if under.is_empty() { String::new() } else { format!("{under}/") };
        let tree = self.repo.find_tree(id).map_err(|e| git_err("tree", e))?;
        tree.walk(TreeWalkMode::PreOrder, |directory, entry| {
            if entry.kind() == Some(ObjectType::Blob) {
                let name = String::from_utf8_lossy(entry.name_bytes());
                visit(&format!("{prefix}{directory}{name}"), entry.id());
            }
            TreeWalkResult::Ok
        })
        .map_err(|e| git_err("tree walk", e))
    }

    /// The blob id of the file at `path`; `None` if HEAD has no file there.
    fn blob(&self, path: &str) -> Result<Option<Oid>> {
        Ok(self.entry(path)?.and_then(|(id, is_directory)| (!is_directory).then_some(id)))
    }

    /// The tree id of the directory at `path` (`""`: the root); `None` if HEAD has none.
    fn directory_id(&self, path: &str) -> Result<Option<Oid>> {
        if path.is_empty() {
            return Ok(self.root);
        }
        Ok(self.entry(path)?.and_then(|(id, is_directory)| is_directory.then_some(id)))
    }

    /// The entry at `path` (not the root), found in its parent directory's tree: its id and
    /// whether it is a directory.
    fn entry(&self, path: &str) -> Result<Option<(Oid, bool)>> {
        let (parent, name) = path.rsplit_once('/').unwrap_or(("", path));
        Ok(self.directory(parent)?.and_then(|tree| tree.find(name.as_bytes())))
    }

    /// The tree of the directory at `path` (`""`: the root); `None` if HEAD has none there.
    fn directory(&self, path: &str) -> Result<Option<Rc<TreeBytes>>> {
        {
            let mut directories = self.directories.borrow_mut();
            directories.clock += 1;
            let now = directories.clock;
            if let Some((tree, used)) = directories.trees.get_mut(path) {
                *used = now;
                return Ok(Some(Rc::clone(tree)));
            }
        }
        let Some(id) = self.directory_id(path)? else { return Ok(None) };
        let odb = self.repo.odb().map_err(|e| git_err("odb", e))?;
        let object = odb.read(id).map_err(|e| git_err("tree", e))?;
        let tree = Rc::new(TreeBytes::parse(object.data().to_vec())?);
        let mut directories = self.directories.borrow_mut();
        directories.bytes += tree.size();
        let now = directories.clock;
        directories.trees.insert(path.to_owned(), (Rc::clone(&tree), now));
        while directories.bytes > self.cache_bytes && directories.trees.len() > 1 {
            let oldest = directories.trees.iter().min_by_key(|(_, (_, used))| *used);
            let Some(oldest) = oldest.map(|(path, _)| path.clone()) else { break };
            if let Some((dropped, _)) = directories.trees.remove(&oldest) {
                directories.bytes -= dropped.size();
            }
        }
        Ok(Some(tree))
    }
}

/// The blob id Git gives `bytes` (no object is written): what [`CommittedFiles::blob_ids`]
/// finds for a file committed with these bytes.
pub fn blob_id(bytes: &[u8]) -> Option<Oid> {
    Oid::hash_object(ObjectType::Blob, bytes).ok()
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ArchiveRepo;
    use crate::testing::{LAYOUT, author};

    /// Names that sort differently as files and as directories (`a.md`, `a/`, `a-b`, `a0`).
    const FILES: [&str; 7] = [
        "a.md",
        "a/x.md",
        "a/y/z.md",
        "a-b",
        "a0",
        "messages/2026/11/2026-11-23T10-00__one__1.md",
        "messages/2026/11/2026-11-23T10-01__two__2.md",
    ];

    fn archive() -> (tempfile::TempDir, CommittedFiles) {
        let dir = tempfile::tempdir().expect("temp dir");
        let mut repo = ArchiveRepo::open_or_init(dir.path(), author(), LAYOUT).expect("archive");
        let files: Vec<(String, Vec<u8>)> =
            FILES.iter().map(|p| (p.to_string(), format!("{p}\n").into_bytes())).collect();
        repo.commit_files(&files, "files\n").expect("commit").expect("a commit");
        let committed = CommittedFiles::open(dir.path()).expect("opened").expect("a repository");
        (dir, committed)
    }

    /// Every committed file is found, read and matched by content; a directory, a missing
    /// file and a path through a file are not files.
    #[test]
    fn paths_are_looked_up_through_their_directories() {
        let (_dir, files) = archive();
        for path in FILES {
            assert!(files.contains(path), "{path}");
            let bytes = format!("{path}\n").into_bytes();
            assert!(files.holds(path, &bytes), "{path}");
            assert!(!files.holds(path, b"other"), "{path}");
            assert_eq!(files.read(path).expect("read"), Some(bytes), "{path}");
        }
        for absent in ["a", "a/y", "a/missing.md", "a.md/x", "a0/x", "b", "", "messages/2026"] {
            assert!(!files.contains(absent), "{absent}");
            assert_eq!(files.read(absent).expect("read"), None, "{absent}");
        }
    }

    /// A batch finds what one lookup at a time finds, in the order asked, keeping no
    /// directory.
    #[test]
    fn a_batch_finds_each_path_as_one_lookup_does() {
        let (_dir, files) = archive();
        let mut paths: Vec<&str> = FILES.iter().rev().copied().collect();
        paths.extend(["a", "a/y", "a/missing.md", "a.md/x", "b", "", "messages/2026", "a.md"]);
        let found = files.blob_ids(&paths).expect("looked up");
        let kept = files.directories.borrow().trees.contains_key("messages/2026/11");
        assert!(!kept, "the files' directory is not kept");
        for (path, id) in paths.iter().zip(&found) {
            assert_eq!(*id, files.blob(path).expect("one lookup"), "{path}");
            assert_eq!(id.is_some(), FILES.contains(path), "{path}");
        }
        let id = found[0].expect("a file");
        assert_eq!(files.read_blob(id).expect("read"), format!("{}\n", paths[0]).into_bytes());
    }

    /// With a cache budget of one byte, every lookup reads its directories again and finds
    /// the same files.
    #[test]
    fn a_small_cache_drops_directories_and_still_finds_files() {
        let (_dir, mut files) = archive();
        files.cache_bytes = 1;
        for _ in 0..2 {
            for path in FILES.iter().rev() {
                assert!(files.contains(path), "{path}");
            }
        }
        assert!(files.directories.borrow().trees.len() <= 1, "one directory kept at most");
    }

    /// The walk lists every file in the paths' byte order, or those under one directory.
    #[test]
    fn the_walk_lists_files_in_path_order() {
        let (_dir, files) = archive();
        let mut listed = Vec::new();
        files.for_each_file("", |path, _| listed.push(path.to_owned())).expect("walked");
        let mut sorted: Vec<String> = FILES.iter().map(|p| p.to_string()).collect();
        sorted.sort();
        // The archive's own first-commit files come along; the test's are in order among them.
        listed.retain(|path| FILES.contains(&path.as_str()));
        assert_eq!(listed, sorted);
        let mut under = Vec::new();
        files.for_each_file("a/", |path, _| under.push(path.to_owned())).expect("walked");
        assert_eq!(under, ["a/x.md", "a/y/z.md"]);
        let mut none = Vec::new();
        files.for_each_file("a.md", |path, _| none.push(path.to_owned())).expect("walked");
        assert!(none.is_empty(), "a file is no directory");
    }
}
