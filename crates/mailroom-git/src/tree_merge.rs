//! A commit's trees, built by splicing its files into the previous commit's trees.
//!
//! libgit2's `git_tree_create_updated` parses each directory a commit touches into entries,
//! inserts the new ones, sorts them all and serialises the lot again. The month directories
//! grow by every message all month, so that was over a third of the archive thread. Here
//! each touched directory's previous bytes are read once and copied through, with the new
//! entries (sorted) spliced in where they belong: one linear pass per directory.
//!
//! Format (Git's tree object): entries `<octal mode> <name>\0<20-byte id>`, ordered by name
//! bytes, a directory's name compared as if it ended in `/`.

use std::cell::RefCell;
use std::cmp::{Ordering, Reverse};
use std::collections::{BTreeMap, HashMap};

use git2::{ObjectType, Odb, OdbObject, Oid};

use crate::MMAP_THRESHOLD;
use crate::error::{Error, Result, git_err};
use crate::repo::object_id;

const DIRECTORY_MODE: &[u8] = b"40000";
const FILE_MODE: &[u8] = b"100644";
const ID_LEN: usize = 20;

/// A tree the merge produced that the object store does not hold yet.
pub(crate) struct NewTree {
    pub id: Oid,
    pub bytes: Vec<u8>,
}

/// The merge's result: the root tree's id and the trees to write (none when every file
/// already held its blob).
pub(crate) struct MergedTrees {
    pub root: Oid,
    pub new_trees: Vec<NewTree>,
    /// (new id, previous id) of each directory and file the commit changes in place: the
    /// later version of a path and the earlier one, which a roll-up stores it as a delta of
    /// (`roll_up.rs`).
    pub versions: Vec<(Oid, Oid)>,
}

/// The trees the last commit wrote, by id. The next commit's baseline trees are mostly
/// these, and reading one back from the object store inflates it again: a month directory's
/// tree is megabytes by the end of a busy month. Trees are named by their content, so an
/// entry is never stale, whatever moved HEAD meanwhile.
#[derive(Default)]
pub(crate) struct RecentTrees {
    trees: HashMap<Oid, Vec<u8>>,
    /// Emptied buffers of large trees no longer kept, for the next commits' large trees. A
    /// fresh buffer of megabytes is mapped and faulted in page by page (glibc's mmap
    /// threshold is fixed, [`MMAP_THRESHOLD`]): on a large archive, where every commit rewrites
    /// megabyte month trees, the page faults were a tenth of the server's CPU.
    spare: RefCell<Vec<Vec<u8>>>,
}

impl RecentTrees {
    /// Most bytes kept (counted by capacity). The month directories' trees grow all month (a
    /// 36,000-message month took 12 MB); past this the largest that fit are kept and the rest
    /// read from the object store, so memory stays flat however long the server runs. The
    /// spare buffers are held to the same bound.
    const MAX_BYTES: usize = 16 << 20;

    /// Trees smaller than glibc's mmap threshold ([`MMAP_THRESHOLD`]) get a fresh buffer:
    /// malloc serves them from its heap, where freed pages stay mapped.
    const SPARE_FROM: usize = MMAP_THRESHOLD;

    /// Keeps `trees` (a commit's new trees) instead of the previous commit's: the largest
    /// first (they cost the most to read back), as many as fit in `MAX_BYTES`. The buffers
    /// of the trees let go are kept as spares.
    pub fn replace(&mut self, mut trees: Vec<NewTree>) {
        let spare = self.spare.get_mut();
        spare.extend(self.trees.drain().map(|(_, bytes)| bytes));
        trees.sort_unstable_by_key(|tree| Reverse(tree.bytes.len()));
        let mut room = Self::MAX_BYTES;
        for tree in trees {
            if tree.bytes.capacity() <= room {
                room -= tree.bytes.capacity();
                self.trees.insert(tree.id, tree.bytes);
            } else {
                spare.push(tree.bytes);
            }
        }
        spare.retain(|bytes| bytes.capacity() >= Self::SPARE_FROM);
        spare.sort_unstable_by_key(|bytes| Reverse(bytes.capacity()));
        let mut room = Self::MAX_BYTES;
        spare.retain(|bytes| {
            let fits = bytes.capacity() <= room;
            room -= if fits { bytes.capacity() } else { 0 };
            fits
        });
        spare.iter_mut().for_each(Vec::clear);
    }

    fn get(&self, id: Oid) -> Option<&[u8]> {
        self.trees.get(&id).map(Vec::as_slice)
    }

    /// An empty buffer for a tree of at most `size` bytes. For a large tree: the smallest
    /// spare that holds it without being more than twice too big (directories are written
    /// in name order, so an agent's inbox month, smaller, comes before the messages month
    /// and must not take its buffer), or else the largest spare too small for it, grown.
    fn buffer(&self, size: usize) -> Vec<u8> {
        if size < Self::SPARE_FROM {
            return Vec::with_capacity(size);
        }
        // Exact sizes (no amortised doubling, which a doubled megabyte buffer would not fit
        // the spares' budget), with room for the next commits' entries: a month's tree
        // grows a little with each, and its buffer comes back as a spare two commits later.
        let room = size + size / 8;
        let mut spare = self.spare.borrow_mut();
        let fitting = spare
            .iter()
            .enumerate()
            .filter(|(_, bytes)| (size..=2 * room).contains(&bytes.capacity()))
            .min_by_key(|(_, bytes)| bytes.capacity());
        let growable = || {
            spare
                .iter()
                .enumerate()
                .filter(|(_, bytes)| bytes.capacity() < size)
                .max_by_key(|(_, bytes)| bytes.capacity())
        };
        match fitting.or_else(growable).map(|(at, _)| at) {
            Some(at) => {
                let mut bytes = spare.swap_remove(at);
                if bytes.capacity() < size {
                    bytes.reserve_exact(room);
                }
                bytes
            }
            None => Vec::with_capacity(room),
        }
    }

    /// Takes back a buffer from [`buffer`](Self::buffer) whose tree was not needed.
    fn give_back(&self, mut bytes: Vec<u8>) {
        if bytes.capacity() >= Self::SPARE_FROM {
            bytes.clear();
            self.spare.borrow_mut().push(bytes);
        }
    }
}

/// `baseline` (the previous root tree, `None` for the first commit) with each `(path, blob)`
/// set as a regular file (a path given twice takes its last blob), then each of `removals`
/// (a file's path) taken out: a path both written and removed is removed, a path the
/// baseline lacks (or holds as a directory, or under a file) is passed over, and a directory
/// left empty goes with its last file. Trees in `recent` are read from
/// there rather than from `odb`.
pub(crate) fn merge_changes<'p>(
    odb: &Odb<'_>,
    recent: &RecentTrees,
    baseline: Option<Oid>,
    files: impl IntoIterator<Item = (&'p str, Oid)>,
    removals: impl IntoIterator<Item = &'p str>,
) -> Result<MergedTrees> {
    let mut root = BTreeMap::new();
    for (path, blob) in files {
        insert(&mut root, path, Node::File(blob))?;
    }
    for path in removals {
        insert(&mut root, path, Node::Removed)?;
    }
    let mut merged =
        MergedTrees { root: Oid::ZERO_SHA1, new_trees: Vec::new(), versions: Vec::new() };
    let trees = Trees { odb, recent };
    merged.root = match write_directory(&trees, baseline, &root, "", &mut merged)? {
        Some(id) => id,
        // Everything removed: the root is Git's empty tree.
        None => {
            let id = object_id(ObjectType::Tree, &[])?;
            merged.new_trees.push(NewTree { id, bytes: Vec::new() });
            id
        }
    };
    Ok(merged)
}

/// Where previous trees are read from.
struct Trees<'a, 'r> {
    odb: &'a Odb<'r>,
    recent: &'a RecentTrees,
}

/// A directory's previous tree: kept from the last commit, read from the object store, or
/// none (a new directory).
enum Previous<'a> {
    Remembered(&'a [u8]),
    Stored(OdbObject<'a>),
    Absent,
}

impl Trees<'_, '_> {
    fn previous(&self, id: Option<Oid>, path: &str) -> Result<Previous<'_>> {
        let Some(id) = id else { return Ok(Previous::Absent) };
        if let Some(bytes) = self.recent.get(id) {
            return Ok(Previous::Remembered(bytes));
        }
        let object = self.odb.read(id).map_err(|e| git_err("read tree", e))?;
        if object.kind() != ObjectType::Tree {
            return Err(Error::invalid(format!("{path:?} is not a tree")));
        }
        Ok(Previous::Stored(object))
    }
}

impl Previous<'_> {
    fn bytes(&self) -> &[u8] {
        match self {
            Previous::Remembered(bytes) => bytes,
            Previous::Stored(object) => object.data(),
            Previous::Absent => &[],
        }
    }
}

/// A directory's new entries, keyed by name.
type Children<'p> = BTreeMap<&'p [u8], Node<'p>>;

enum Node<'p> {
    File(Oid),
    /// A file taken out of the tree.
    Removed,
    Directory(Children<'p>),
}

impl Node<'_> {
    fn is_directory(&self) -> bool {
        matches!(self, Node::Directory(_))
    }

    /// Whether the node only takes files out (a removal, or a directory of removals).
    fn only_removes(&self) -> bool {
        match self {
            Node::File(_) => false,
            Node::Removed => true,
            Node::Directory(children) => children.values().all(Node::only_removes),
        }
    }
}

fn insert<'p>(root: &mut Children<'p>, path: &'p str, leaf: Node<'p>) -> Result<()> {
    let invalid = |why: &str| Error::invalid(format!("cannot commit {path:?}: {why}"));
    let mut components = path.split('/').peekable();
    let mut directory = root;
    while let Some(name) = components.next() {
        if name.is_empty() || name == "." || name == ".." || name.eq_ignore_ascii_case(".git") {
            return Err(invalid("empty, `.`, `..` or `.git` path component"));
        }
        if name.contains('\0') {
            return Err(invalid("NUL in a path component"));
        }
        if components.peek().is_none() {
            if matches!(directory.get(name.as_bytes()), Some(Node::Directory(_))) {
                // Removing a name the commit uses as a directory removes nothing.
                if matches!(leaf, Node::Removed) {
                    return Ok(());
                }
                return Err(invalid("a directory of the same commit has this name"));
            }
            directory.insert(name.as_bytes(), leaf);
            return Ok(());
        }
        let node =
            directory.entry(name.as_bytes()).or_insert_with(|| Node::Directory(BTreeMap::new()));
        // A removal of what is a directory here removes nothing: the directory replaces it.
        if matches!(node, Node::Removed) {
            *node = Node::Directory(BTreeMap::new());
        }
        directory = match node {
            Node::Directory(children) => children,
            Node::File(_) | Node::Removed => {
                return Err(invalid("a file of the same commit has this name"));
            }
        };
    }
    Err(invalid("empty path"))
}

/// One entry of a tree's bytes, borrowed.
pub(crate) struct Entry<'b> {
    pub raw: &'b [u8],
    pub name: &'b [u8],
    pub id: &'b [u8],
    pub is_directory: bool,
}

/// The entries of a tree's bytes, in order; an entry that does not parse is an error.
pub(crate) fn entries(bytes: &[u8]) -> impl Iterator<Item = Result<Entry<'_>>> {
    let mut rest = bytes;
    std::iter::from_fn(move || {
        if rest.is_empty() {
            return None;
        }
        let parsed = parse_entry(rest);
        match parsed {
            Some((entry, tail)) => {
                rest = tail;
                Some(Ok(entry))
            }
            None => {
                rest = &[];
                Some(Err(Error::invalid("a tree of the archive does not parse")))
            }
        }
    })
}

fn parse_entry(bytes: &[u8]) -> Option<(Entry<'_>, &[u8])> {
    let space = bytes.iter().position(|&b| b == b' ')?;
    let nul = space + 1 + bytes[space + 1..].iter().position(|&b| b == 0)?;
    let end = nul + 1 + ID_LEN;
    if end > bytes.len() {
        return None;
    }
    let entry = Entry {
        raw: &bytes[..end],
        name: &bytes[space + 1..nul],
        id: &bytes[nul + 1..end],
        is_directory: &bytes[..space] == DIRECTORY_MODE,
    };
    Some((entry, &bytes[end..]))
}

/// Git's order of tree entries: by name, a directory's name read as if it ended in `/`.
pub(crate) fn git_order(
    a: &[u8],
    a_is_directory: bool,
    b: &[u8],
    b_is_directory: bool,
) -> Ordering {
    let common = a.len().min(b.len());
    match a[..common].cmp(&b[..common]) {
        Ordering::Equal => {}
        unequal => return unequal,
    }
    let next = |name: &[u8], is_directory: bool| match name.get(common) {
        Some(&byte) => byte,
        None if is_directory => b'/',
        None => 0,
    };
    next(a, a_is_directory).cmp(&next(b, b_is_directory))
}

/// A new entry in its final form: name, kind and id (`None`: the entry goes).
struct Spliced<'p> {
    name: &'p [u8],
    is_directory: bool,
    id: Option<Oid>,
}

fn push_entry(out: &mut Vec<u8>, entry: &Spliced<'_>) {
    let Some(id) = entry.id else { return };
    out.extend_from_slice(if entry.is_directory { DIRECTORY_MODE } else { FILE_MODE });
    out.push(b' ');
    out.extend_from_slice(entry.name);
    out.push(0);
    out.extend_from_slice(id.as_bytes());
}

/// Writes the directory at `path` whose previous tree was `previous`, with `children`
/// spliced in; its new subtrees first. Returns its id, and records it in `out` if new (with
/// the versions it replaces); `None` when it is left empty.
fn write_directory(
    trees: &Trees<'_, '_>,
    previous: Option<Oid>,
    children: &Children<'_>,
    path: &str,
    out: &mut MergedTrees,
) -> Result<Option<Oid>> {
    let previous_tree = trees.previous(previous, path)?;
    let previous_bytes = previous_tree.bytes();
    let previous_subtrees = previous_subtrees(previous_bytes, children, path)?;

    let mut spliced = Vec::with_capacity(children.len());
    for (name, node) in children {
        let id = match node {
            Node::File(blob) => Some(*blob),
            Node::Removed => None,
            Node::Directory(grandchildren) => {
                let child_path = join(path, name);
                let previous = previous_subtrees.get(name).copied();
                write_directory(trees, previous, grandchildren, &child_path, out)?
            }
        };
        spliced.push(Spliced { name, is_directory: node.is_directory(), id });
    }
    spliced.sort_by(|a, b| git_order(a.name, a.is_directory, b.name, b.is_directory));

    // At most the previous tree and every new entry: the buffer never grows while written.
    let added: usize = spliced.iter().map(|entry| FILE_MODE.len() + entry.name.len() + 22).sum();
    let mut bytes = trees.recent.buffer(previous_bytes.len() + added);
    let mut pending = spliced.iter().peekable();
    for entry in entries(previous_bytes) {
        let entry = entry?;
        // A file replacing a directory would leave both names: refused, like the reverse
        // (found in `previous_subtrees`).
        if entry.is_directory && matches!(children.get(entry.name), Some(Node::File(_))) {
            return Err(kind_conflict(path, entry.name));
        }
        let mut replaced = false;
        while let Some(new) = pending.peek() {
            match git_order(new.name, new.is_directory, entry.name, entry.is_directory) {
                Ordering::Less => push_entry(&mut bytes, new),
                Ordering::Equal => {
                    push_entry(&mut bytes, new);
                    replaced = true;
                    if let Some(id) =
                        new.id.filter(|id| !new.is_directory && id.as_bytes() != entry.id)
                    {
                        let old =
                            Oid::from_bytes(entry.id).map_err(|e| git_err("tree entry", e))?;
                        out.versions.push((id, old));
                    }
                }
                Ordering::Greater => break,
            }
            pending.next();
            if replaced {
                break;
            }
        }
        if !replaced {
            bytes.extend_from_slice(entry.raw);
        }
    }
    for new in pending {
        push_entry(&mut bytes, new);
    }
    if let Some(id) = previous.filter(|_| bytes == previous_bytes) {
        trees.recent.give_back(bytes);
        return Ok(Some(id));
    }
    if bytes.is_empty() {
        trees.recent.give_back(bytes);
        return Ok(None);
    }
    let id = object_id(ObjectType::Tree, &bytes)?;
    out.new_trees.push(NewTree { id, bytes });
    if let Some(previous) = previous {
        out.versions.push((id, previous));
    }
    Ok(Some(id))
}

/// The previous ids of the subdirectories `children` writes into, found in one pass over
/// the previous tree. Skipped (no pass) when only files are written, as in the month
/// directories, which are the large ones.
fn previous_subtrees<'p>(
    previous_bytes: &[u8],
    children: &Children<'p>,
    path: &str,
) -> Result<BTreeMap<&'p [u8], Oid>> {
    let mut found = BTreeMap::new();
    if !children.values().any(Node::is_directory) {
        return Ok(found);
    }
    for entry in entries(previous_bytes) {
        let entry = entry?;
        let Some((name, node @ Node::Directory(_))) = children.get_key_value(entry.name) else {
            continue;
        };
        if !entry.is_directory {
            // Removals under a name that is a file remove nothing: passed over.
            if node.only_removes() {
                continue;
            }
            return Err(kind_conflict(path, entry.name));
        }
        let id = Oid::from_bytes(entry.id).map_err(|e| git_err("tree entry id", e))?;
        found.insert(*name, id);
    }
    Ok(found)
}

fn kind_conflict(path: &str, name: &[u8]) -> Error {
    Error::invalid(format!("{:?} would be both a file and a directory", join(path, name)))
}

fn join(path: &str, name: &[u8]) -> String {
    let name = String::from_utf8_lossy(name);
    if path.is_empty() { name.into_owned() } else { format!("{path}/{name}") }
}

#[cfg(test)]
mod tests;
