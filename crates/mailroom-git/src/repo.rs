//! The archive's repository: blobs, trees and the commit are written by this crate as one
//! pack and the commit moves HEAD, so no commit waits for Git's shared index lock. The
//! working tree and the index are kept in step afterwards for humans (`ls`, `git status`),
//! but nothing depends on them.

use std::collections::HashMap;
use std::collections::hash_map::Entry;
use std::fs;
use std::io::Write;
use std::os::fd::{AsFd, BorrowedFd, OwnedFd};
use std::path::{Path, PathBuf};

use git2::{ObjectType, Oid, Repository, Signature, Tree};
use rustix::fs::{AtFlags, Mode, OFlags};
use rustix::io::Errno;

use crate::digest::sha1;
use crate::error::{Error, Result, git_err, io_err};
use crate::pack::{self, PackBuilder, PackObject};
use crate::roll_up::CommitPack;
use crate::tree_merge::{self, RecentTrees};
use sparse::Sparse;
pub(crate) use sparse::retired_list;

/// Who commits to the archive (author and committer of every commit).
#[derive(Debug, Clone)]
pub struct Author {
    /// The name Git records.
    pub name: String,
    /// The e-mail address Git records.
    pub email: String,
}

/// What the repository holds besides the files committed to it, chosen by its owner, who
/// knows the archive's layout.
#[derive(Debug, Clone, Copy)]
pub struct Layout {
    /// The files of the first commit (path, content), made when the repository has none.
    pub first_files: &'static [(&'static str, &'static str)],
    /// That commit's message.
    pub first_message: &'static str,
    /// Lines appended to `.git/info/exclude` unless already there: local files Git should not
    /// offer to add.
    pub excludes: &'static str,
    /// Whether the owner writes a committed path's file into the work tree itself:
    /// [`ArchiveRepo::commit_files`] then commits the path but leaves its file alone.
    pub written_by_owner: fn(&str) -> bool,
}

/// The maps of a commit's per-file work, several times faster than std's SipHash on contents
/// and paths. Agents choose those in part; foldhash seeds per process (from addresses, being
/// built without its `std` feature), and a map holds one batch at most.
type FastMap<K, V> = HashMap<K, V, foldhash::fast::RandomState>;

/// A batch's distinct file contents and their blob ids.
type Distinct<'f> = FastMap<&'f [u8], Oid>;

/// The archive repository, owned by the archive writer thread.
pub struct ArchiveRepo {
    repo: Repository,
    root: PathBuf,
    author: Author,
    layout: Layout,
    /// Entries in Git's index when it was last written. The index is never held in memory:
    /// it has an entry per archived file, so kept there it grew with the archive (~200 bytes
    /// per file), and loaded for each update it was the peak the allocator kept (see
    /// `index_file`).
    index_len: usize,
    /// Files committed (path, blob id) since the index was last written.
    index_pending: Vec<(String, Oid)>,
    /// Files removed since the index was last written.
    index_removals: Vec<String>,
    /// The last commit's new trees (the largest that fit), the next commit's baseline.
    recent_trees: RecentTrees,
    /// The builder of each commit's pack, kept for its buffers.
    pack: PackBuilder,
    /// Set at open when the commit the index reflects is not known (an archive from before
    /// the index's marker, or an index removed): the next index sync rebuilds it from HEAD.
    index_rebuild: bool,
    /// The commit the index's marker names, as last read or written (`repo/index.rs`).
    index_marked: Option<Oid>,
    /// Retired directories whose files the index still lists, for the next sync.
    index_collapse: Vec<String>,
    /// The directories retired from the work tree (`repo/sparse.rs`).
    sparse: Sparse,
}

/// A commit the archive made: its id, and its pack, for the roll-ups (`roll_up.rs`), which
/// [`Repacker::after_commit`](crate::Repacker::after_commit) takes.
pub struct Committed {
    /// The commit's id.
    pub id: Oid,
    pub(crate) pack: CommitPack,
}

impl ArchiveRepo {
    /// Opens the repository at `root`, creating it (with `layout`'s first commit) when
    /// absent. Git's index is not read: what it lacks of HEAD is found from its marker and
    /// left for the next [`sync_index`](Self::sync_index) (see `repo/index.rs`).
    pub fn open_or_init(root: &Path, author: Author, layout: Layout) -> Result<Self> {
        fs::create_dir_all(root).map_err(|e| io_err("cannot create", root, e))?;
        // Every object read would otherwise be re-hashed; the archive trusts its own writes
        // and `git fsck` remains the integrity check.
        git2::opts::strict_hash_verification(false);
        // Likewise, checking that every blob a new tree names exists re-reads each one; the
        // writer names only blobs it has just written.
        git2::opts::strict_object_creation(false);
        // libgit2 keeps every small tree it parses (up to 256 MB): each commit parses new
        // versions of the directories it touches, so a long-running server's memory grew by
        // ~350 MB/hour in a soak. A commit reads only a handful of small trees again.
        git2::opts::enable_caching(false);
        let fresh = !root.join(".git").exists();
        let repo = if fresh {
            let repo = Repository::init(root).map_err(|e| git_err("init", e))?;
            repo.config()
                .and_then(|mut c| c.set_bool("commit.gpgsign", false))
                .map_err(|e| git_err("config", e))?;
            repo
        } else {
            Repository::open(root).map_err(|e| git_err("open", e))?
        };
        ensure_excludes(root, layout.excludes)?;
        let mut archive = Self {
            repo,
            root: root.to_path_buf(),
            author,
            layout,
            index_len: 0,
            index_pending: Vec::new(),
            index_removals: Vec::new(),
            recent_trees: RecentTrees::default(),
            pack: PackBuilder::new(),
            index_rebuild: false,
            index_marked: None,
            index_collapse: Vec::new(),
            sparse: Sparse::load(&root.join(".git")),
        };
        if fresh || archive.head_tree()?.is_none() {
            let files: Vec<(String, Vec<u8>)> = (layout.first_files.iter())
                .map(|(path, text)| (path.to_string(), text.as_bytes().to_vec()))
                .collect();
            archive.commit_files(&files, layout.first_message)?;
            archive.sync_index()?;
        } else {
            archive.catch_up_index()?;
            archive.open_sparse()?;
        }
        Ok(archive)
    }

    /// Opens the repository afresh, dropping libgit2's handles on packs a repack replaced
    /// (it keeps each pack it has read open, mapped, and with a cache of delta bases: a soak
    /// reached 135 open packs, 22 of them deleted). On failure the old handle stays.
    pub(crate) fn reopen(&mut self) {
        match Repository::open(&self.root) {
            Ok(repo) => self.repo = repo,
            Err(e) => tracing::warn!(error = %e.message(), "archive not reopened after a repack"),
        }
    }

    /// The work tree root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The tree HEAD points to; `None` before the first commit.
    fn head_tree(&self) -> Result<Option<Tree<'_>>> {
        head_tree(&self.repo)
    }

    /// The committed bytes of `path` in HEAD, if it exists there.
    pub fn committed_file(&self, path: &str) -> Result<Option<Vec<u8>>> {
        let Some(tree) = self.head_tree()? else { return Ok(None) };
        let entry = match tree.get_path(Path::new(path)) {
            Ok(entry) => entry,
            Err(e) if e.code() == git2::ErrorCode::NotFound => return Ok(None),
            Err(e) => return Err(git_err("tree lookup", e)),
        };
        let blob = self.repo.find_blob(entry.id()).map_err(|e| git_err("blob", e))?;
        Ok(Some(blob.content().to_vec()))
    }

    /// Commits `files` (repo-relative path, bytes) on top of HEAD in one commit, then writes
    /// them to the work tree. Returns `None` when HEAD already holds exactly these bytes
    /// (a replay of work committed before a crash).
    pub fn commit_files(
        &mut self,
        files: &[(String, Vec<u8>)],
        message: &str,
    ) -> Result<Option<Committed>> {
        self.commit_changes(files, &[], message)
    }

    /// [`commit_files`](Self::commit_files), also taking `removals` (files' paths) out of the
    /// tree, the work tree and the index; a directory left empty goes too. A path HEAD does
    /// not hold is passed over, so a replay changes nothing.
    pub fn commit_changes(
        &mut self,
        files: &[(String, Vec<u8>)],
        removals: &[String],
        message: &str,
    ) -> Result<Option<Committed>> {
        // A message's copies share their bytes: each distinct content is hashed once, and
        // packed once. Each file's bytes are hashed once (twice with SipHash was 2 % of a
        // saturated server's samples).
        let mut distinct = Distinct::with_capacity_and_hasher(files.len(), Default::default());
        let mut blobs = Vec::with_capacity(files.len());
        for (_, bytes) in files {
            let id = match distinct.entry(bytes.as_slice()) {
                Entry::Occupied(known) => *known.get(),
                Entry::Vacant(slot) => *slot.insert(
                    Oid::hash_object(ObjectType::Blob, bytes)
                        .map_err(|e| git_err("hash blob", e))?,
                ),
            };
            blobs.push(id);
        }
        let commit_id = self.commit_blobs(files, &blobs, removals, &distinct, message)?;
        self.write_work_tree(files, &blobs)?;
        self.remove_from_work_tree(removals)?;
        Ok(commit_id)
    }

    /// Commits `files`, whose blobs are `blobs` (`distinct`: each content and its id), and
    /// `removals` on top of HEAD; `None` when HEAD is that tree already. The blobs, the new
    /// trees and the commit are written as one pack. As loose objects each would cost a file,
    /// and under a trickle of sends (a commit per message) the repacks' deletion of thousands
    /// of loose objects made every later file creation walk the freed inodes (ext4 without a
    /// journal): three quarters of the archive thread. The server caps libgit2's mappings of
    /// the packs that pile up between two repacks.
    fn commit_blobs(
        &mut self,
        files: &[(String, Vec<u8>)],
        blobs: &[Oid],
        removals: &[String],
        distinct: &Distinct<'_>,
        message: &str,
    ) -> Result<Option<Committed>> {
        let head = head_commit(&self.repo)?;
        let baseline = head.as_ref().map(git2::Commit::tree_id);
        let parents: Vec<Oid> = head.iter().map(git2::Commit::id).collect();
        let odb = self.repo.odb().map_err(|e| git_err("odb", e))?;
        let paths = files.iter().map(|(path, _)| path.as_str());
        let files = paths.zip(blobs.iter().copied());
        let removed = removals.iter().map(String::as_str);
        let trees = tree_merge::merge_changes(&odb, &self.recent_trees, baseline, files, removed)?;
        drop(odb);
        if Some(trees.root) == baseline {
            return Ok(None);
        }
        let commit = self.commit_bytes(trees.root, &parents, message)?;
        let commit_id = object_id(ObjectType::Commit, &commit)?;
        let blobs =
            distinct.iter().map(|(data, id)| PackObject { id: *id, kind: ObjectType::Blob, data });
        let new_trees = trees.new_trees.iter().map(|tree| PackObject {
            id: tree.id,
            kind: ObjectType::Tree,
            data: &tree.bytes,
        });
        let commit = PackObject { id: commit_id, kind: ObjectType::Commit, data: &commit };
        let objects: Vec<PackObject<'_>> = blobs.chain(new_trees).chain([commit]).collect();
        let pack_dir = self.repo.path().join("objects/pack");
        let pack = pack::write_pack(&pack_dir, &objects, &mut self.pack)?;
        self.move_head(commit_id, parents.first().copied(), message)?;
        self.recent_trees.replace(trees.new_trees);
        let pack = CommitPack { pack, versions: trees.versions };
        Ok(Some(Committed { id: commit_id, pack }))
    }

    /// The bytes of a commit by the archive's author, now.
    fn commit_bytes(&self, tree: Oid, parents: &[Oid], message: &str) -> Result<Vec<u8>> {
        let signature = Signature::now(&self.author.name, &self.author.email)
            .map_err(|e| git_err("signature", e))?;
        Ok(commit_object(tree, parents, &signature, message))
    }

    /// Flushes the archive's filesystem to disk, so that the commits made so far survive a
    /// power loss. Called before the queue rows they carry are deleted: the packs are synced
    /// as they are written (`pack.rs`), but libgit2 does not fsync the ref it moves, nor is
    /// the work tree synced file by file; one `syncfs` per commit costs far less.
    pub fn make_durable(&self) -> Result<()> {
        let git_dir = self.root.join(".git");
        let dir = fs::File::open(&git_dir).map_err(|e| io_err("cannot open", &git_dir, e))?;
        rustix::fs::syncfs(&dir).map_err(|e| Error::Flush { path: git_dir, source: e.into() })
    }

    /// Points the checked-out branch at `commit`, with the reflog line `git commit` writes; a
    /// detached HEAD is moved itself. Only from `parent`, the tip the commit was built on (or,
    /// for the first commit, only if the branch does not exist yet): a commit a human made in
    /// the meantime is never dropped from history; the commit fails and the writer's retry
    /// builds on the new tip.
    fn move_head(&self, commit: Oid, parent: Option<Oid>, message: &str) -> Result<()> {
        let summary = message.lines().next().unwrap_or_default();
        let head = self.repo.find_reference("HEAD").map_err(|e| git_err("HEAD", e))?;
        let name = match head.symbolic_target() {
            Ok(Some(branch)) => branch.to_string(),
            _ => "HEAD".to_string(),
        };
        match parent {
            Some(parent) => {
                let log = format!("commit: {summary}");
                self.repo.reference_matching(&name, commit, true, parent, &log)
            }
            None => {
                let log = format!("commit (initial): {summary}");
                self.repo.reference(&name, commit, false, &log)
            }
        }
        .map_err(|e| git_err("move HEAD", e))?;
        Ok(())
    }

    /// Writes the committed files to the work tree. Files with the same bytes (a message's
    /// canonical, outbox and inbox copies) share one inode through hard links: creating
    /// inodes is the dominant cost of a large batch. Files are written in place, not through
    /// a temp file: the queue rows are only cleared after this returns, so a crash mid-write
    /// is repaired by the replay, which rewrites the same bytes.
    fn write_work_tree(&mut self, files: &[(String, Vec<u8>)], blobs: &[Oid]) -> Result<()> {
        if !self.index_removals.is_empty() {
            self.index_removals.retain(|removed| !files.iter().any(|(path, _)| path == removed));
        }
        // The first copy of each content still holding it: (directory, file name).
        let mut written: FastMap<Oid, (&str, &str)> = FastMap::default();
        // What each path was last written with, in case a batch names a path twice.
        let mut holds: FastMap<&str, Oid> = FastMap::default();
        let mut directories = Directories::new(&self.root);
        for ((path, bytes), blob) in files.iter().zip(blobs) {
            self.index_pending.push((path.clone(), *blob));
            // A retired directory stays out of the work tree (its index entry follows).
            if (self.layout.written_by_owner)(path) || self.sparse.retired_dir_of(path).is_some() {
                continue;
            }
            let (dir, name) = path.rsplit_once('/').unwrap_or(("", path));
            // A path written again no longer holds its first content: later copies of that
            // content must not be linked to it.
            if let Some(previous) = holds.insert(path, *blob)
                && written.get(&previous) == Some(&(dir, name))
            {
                written.remove(&previous);
            }
            let linked = match written.get(blob) {
                Some(&(first_dir, first_name)) => {
                    let [first, target] = directories.open([first_dir, dir])?;
                    link_over(first, first_name, target, name)
                }
                None => false,
            };
            if !linked {
                let [target, _] = directories.open([dir, dir])?;
                let mut file = create_replacing(target, name)
                    .map_err(|e| io_err("cannot write", &self.root.join(path), e))?;
                file.write_all(bytes)
                    .map_err(|e| io_err("cannot write", &self.root.join(path), e))?;
                written.insert(*blob, (dir, name));
            }
        }
        Ok(())
    }

    /// Deletes the removed files from the work tree (a missing one is passed over), then
    /// each directory they leave empty, and notes them for the index.
    fn remove_from_work_tree(&mut self, removals: &[String]) -> Result<()> {
        if removals.is_empty() {
            return Ok(());
        }
        let removed: std::collections::HashSet<&String> = removals.iter().collect();
        self.index_pending.retain(|(path, _)| !removed.contains(path));
        for path in removals {
            self.index_removals.push(path.clone());
            if (self.layout.written_by_owner)(path) {
                continue;
            }
            let file = self.root.join(path);
            // What is not there as a file (gone, a directory, under a file) the commit did not
            // remove either (`tree_merge` passes over it).
            match fs::remove_file(&file) {
                Ok(()) => {}
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::NotFound
                            | std::io::ErrorKind::IsADirectory
                            | std::io::ErrorKind::NotADirectory
                    ) => {}
                Err(e) => return Err(io_err("cannot remove", &file, e)),
            }
            remove_emptied_parents(&self.root, path);
        }
        Ok(())
    }
}

fn ensure_excludes(root: &Path, excludes: &str) -> Result<()> {
    let path = root.join(".git/info/exclude");
    let current = fs::read_to_string(&path).unwrap_or_default();
    if current.contains(excludes) {
        return Ok(());
    }
    if let Some(dir) = path.parent() {
        fs::create_dir_all(dir).map_err(|e| io_err("cannot create", dir, e))?;
    }
    let mut text = current;
    if !text.is_empty() && !text.ends_with('\n') {
        text.push('\n');
    }
    text.push_str(excludes);
    fs::write(&path, text).map_err(|e| io_err("cannot write", &path, e))
}

/// A commit object's bytes as libgit2's `git_commit_create_buffer` writes them, with
/// `signature` as author and committer and `message` verbatim.
fn commit_object(tree: Oid, parents: &[Oid], signature: &Signature<'_>, message: &str) -> Vec<u8> {
    let when = signature.when();
    let offset = when.offset_minutes();
    let sign = if offset < 0 || when.sign() == '-' { '-' } else { '+' };
    let person = format!(
        "{} <{}> {} {sign}{:02}{:02}",
        String::from_utf8_lossy(signature.name_bytes()),
        String::from_utf8_lossy(signature.email_bytes()),
        when.seconds(),
        offset.abs() / 60,
        offset.abs() % 60,
    );
    let mut text = format!("tree {tree}\n");
    for parent in parents {
        text.push_str(&format!("parent {parent}\n"));
    }
    text.push_str(&format!("author {person}\ncommitter {person}\n\n{message}"));
    text.into_bytes()
}

/// The id Git gives an object of `kind` holding `bytes`, for the trees and commits the
/// archive builds itself (see `digest.rs` for why not libgit2's). Blobs, whose bytes agents
/// write, are still named by libgit2's collision-detecting SHA-1, as Git would.
pub(crate) fn object_id(kind: ObjectType, bytes: &[u8]) -> Result<Oid> {
    let header = format!("{} {}\0", kind.str(), bytes.len());
    Oid::from_bytes(&sha1(&[header.as_bytes(), bytes])).map_err(|e| git_err("object id", e))
}

/// The commit HEAD points to; `None` before the first commit (unborn branch).
fn head_commit(repo: &Repository) -> Result<Option<git2::Commit<'_>>> {
    match repo.head() {
        Ok(head) => head.peel_to_commit().map(Some).map_err(|e| git_err("HEAD commit", e)),
        Err(e) if matches!(e.code(), git2::ErrorCode::UnbornBranch | git2::ErrorCode::NotFound) => {
            Ok(None)
        }
        Err(e) => Err(git_err("HEAD", e)),
    }
}

pub(crate) fn head_tree(repo: &Repository) -> Result<Option<Tree<'_>>> {
    head_commit(repo)?.map(|c| c.tree().map_err(|e| git_err("HEAD tree", e))).transpose()
}

/// Removes the directories above `path` (repo-relative) that it left empty, up to the root;
/// the first that is not empty (or not there) stops it.
fn remove_emptied_parents(root: &Path, path: &str) {
    let mut dir = Path::new(path).parent();
    while let Some(d) = dir.filter(|d| !d.as_os_str().is_empty()) {
        if fs::remove_dir(root.join(d)).is_err() {
            break;
        }
        dir = d.parent();
    }
}

/// The directories above `path`, outermost first (`a`, `a/b` for `a/b/c`).
fn ancestors(path: &str) -> impl Iterator<Item = &str> {
    path.match_indices('/').map(|(at, _)| &path[..at])
}

/// The work tree's directories a batch writes into, each opened once: files are created
/// and linked relative to them, so the kernel walks an archive path's dozen components once
/// per directory instead of once or twice per file.
struct Directories<'r> {
    root: &'r Path,
    open: FastMap<String, OwnedFd>,
}

impl<'r> Directories<'r> {
    /// Directories held open at most (a batch rarely touches more; the descriptors are few).
    const LIMIT: usize = 64;

    fn new(root: &'r Path) -> Self {
        Self { root, open: FastMap::default() }
    }

    /// The two directories (repo-relative; `""` is the root), created when missing.
    fn open(&mut self, dirs: [&str; 2]) -> Result<[BorrowedFd<'_>; 2]> {
        if self.open.len() + 2 > Self::LIMIT {
            self.open.clear();
        }
        for dir in dirs {
            if !self.open.contains_key(dir) {
                let fd = self.open_dir(dir)?;
                self.open.insert(dir.to_string(), fd);
            }
        }
        Ok(dirs.map(|dir| self.open[dir].as_fd()))
    }

    fn open_dir(&self, dir: &str) -> Result<OwnedFd> {
        let path = self.root.join(dir);
        let open = || rustix::fs::open(&path, OFlags::DIRECTORY | OFlags::CLOEXEC, Mode::empty());
        match open() {
            Err(Errno::NOENT) => {
                fs::create_dir_all(&path).map_err(|e| io_err("cannot create", &path, e))?;
                open()
            }
            other => other,
        }
        .map_err(|e| io_err("cannot open", &path, e.into()))
    }
}

/// Replaces `name` in `dir` with a hard link to `first_name` in `first_dir`; false when
/// linking is not possible. Most targets are new: the link is tried before anything is
/// removed.
fn link_over(first_dir: BorrowedFd<'_>, first_name: &str, dir: BorrowedFd<'_>, name: &str) -> bool {
    let link = || rustix::fs::linkat(first_dir, first_name, dir, name, AtFlags::empty());
    match link() {
        Ok(()) => true,
        Err(Errno::EXIST) => {
            let _ = rustix::fs::unlinkat(dir, name, AtFlags::empty());
            link().is_ok()
        }
        Err(_) => false,
    }
}

/// A new empty file `name` in `dir`, replacing what is there. A previous hard link must not
/// be written through, so an existing file is removed, never truncated; most targets are
/// new, so the removal is only tried when the file exists.
fn create_replacing(dir: BorrowedFd<'_>, name: &str) -> std::io::Result<fs::File> {
    let flags = OFlags::WRONLY | OFlags::CREATE | OFlags::EXCL | OFlags::CLOEXEC;
    let create = || rustix::fs::openat(dir, name, flags, Mode::from_raw_mode(0o666));
    let fd = match create() {
        Err(Errno::EXIST) => {
            let _ = rustix::fs::unlinkat(dir, name, AtFlags::empty());
            create()
        }
        other => other,
    }?;
    Ok(fs::File::from(fd))
}

mod index;
mod sparse;

#[cfg(test)]
mod tests;
