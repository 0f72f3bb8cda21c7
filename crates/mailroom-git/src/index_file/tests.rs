use std::fs;
use std::os::unix::fs::MetadataExt;
use std::path::Path;
use std::process::Command;

use git2::{Index, IndexEntry, IndexTime, Oid, Repository};
use proptest::prelude::*;

use super::{Update, add_entries};
use crate::testing::git;

/// An entry for `path` as the archive makes them: from the file's stat data when it exists,
/// made-up stat data otherwise.
fn entry(root: &Path, path: &str, id: Oid) -> IndexEntry {
    let meta = fs::metadata(root.join(path)).ok();
    let stat = |f: fn(&fs::Metadata) -> i64| meta.as_ref().map_or(7, f);
    let time =
        IndexTime::new(stat(MetadataExt::mtime) as i32, stat(MetadataExt::mtime_nsec) as u32);
    IndexEntry {
        ctime: IndexTime::new(
            stat(MetadataExt::ctime) as i32,
            stat(MetadataExt::ctime_nsec) as u32,
        ),
        mtime: time,
        dev: stat(|m| m.dev() as i64) as u32,
        ino: stat(|m| m.ino() as i64) as u32,
        mode: 0o100644,
        uid: stat(|m| i64::from(m.uid())) as u32,
        gid: stat(|m| i64::from(m.gid())) as u32,
        file_size: stat(|m| m.size() as i64) as u32,
        id,
        flags: path.len().min(0xfff) as u16,
        flags_extended: 0,
        path: path.as_bytes().to_vec(),
    }
}

/// Every entry of the index as libgit2 reads it back (it checks the checksum).
fn listing(git_dir: &Path) -> Vec<(String, Oid, u32, u32, i32)> {
    let index = Index::open(&git_dir.join("index")).expect("libgit2 reads the index");
    index
        .iter()
        .map(|e| {
            let path = String::from_utf8(e.path).expect("utf-8");
            (path, e.id, e.file_size, e.ino, e.mtime.seconds())
        })
        .collect()
}

/// Writes `files` to the work tree and returns their entries, with blobs in `repo`.
fn write_files(repo: &Repository, files: &[(&str, &str)]) -> Vec<IndexEntry> {
    let root = repo.workdir().expect("work tree");
    files
        .iter()
        .map(|(path, text)| {
            let full = root.join(path);
            fs::create_dir_all(full.parent().expect("parent")).expect("mkdir");
            fs::write(&full, text).expect("write");
            entry(root, path, repo.blob(text.as_bytes()).expect("blob"))
        })
        .collect()
}

#[test]
fn a_new_index_is_read_by_git_and_libgit2() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = Repository::init(dir.path()).expect("init");
    let entries = write_files(&repo, &[("b/x.md", "x"), ("a.md", "a"), ("b/c/y.json", "y")]);
    assert_eq!(add_entries(repo.path(), entries).expect("written"), Update::Written(3));
    let paths: Vec<String> = listing(repo.path()).into_iter().map(|e| e.0).collect();
    assert_eq!(paths, ["a.md", "b/c/y.json", "b/x.md"]);
    git(dir.path(), &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first"]);
    assert_eq!(git(dir.path(), &["status", "--porcelain"]), "", "stat data matches the files");
    assert_eq!(git(dir.path(), &["ls-files"]), "a.md\nb/c/y.json\nb/x.md\n");
}

#[test]
fn entries_merge_into_an_index_git_wrote() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = Repository::init(dir.path()).expect("init");
    write_files(&repo, &[("m/1.md", "one"), ("m/3.md", "three"), ("z.md", "z")]);
    git(dir.path(), &["add", "."]);
    // A commit leaves Git's cached-tree extension in the index; it is dropped, not copied.
    git(dir.path(), &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "first"]);
    let entries = write_files(&repo, &[("m/2.md", "two"), ("m/3.md", "THREE"), ("a.md", "a")]);
    assert_eq!(add_entries(repo.path(), entries).expect("written"), Update::Written(5));
    let listed = listing(repo.path());
    let paths: Vec<&str> = listed.iter().map(|e| e.0.as_str()).collect();
    assert_eq!(paths, ["a.md", "m/1.md", "m/2.md", "m/3.md", "z.md"]);
    assert_eq!(listed[3].1, repo.blob(b"THREE").expect("blob"), "the new entry replaced the old");
    git(dir.path(), &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "second"]);
    assert_eq!(git(dir.path(), &["status", "--porcelain"]), "");
    git(dir.path(), &["fsck", "--strict", "--no-progress"]);
}

#[test]
fn a_held_lock_writes_nothing() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = Repository::init(dir.path()).expect("init");
    let entries = write_files(&repo, &[("a.md", "a")]);
    fs::write(repo.path().join("index.lock"), "a human's git").expect("lock");
    assert_eq!(add_entries(repo.path(), entries).expect("no error"), Update::Busy);
    assert!(!repo.path().join("index").exists());
    assert_eq!(fs::read(repo.path().join("index.lock")).expect("kept"), b"a human's git");
}

#[test]
fn indexes_of_other_forms_are_left_alone() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = Repository::init(dir.path()).expect("init");
    write_files(&repo, &[("a.md", "a")]);
    git(dir.path(), &["add", "."]);
    git(dir.path(), &["update-index", "--index-version", "4"]);
    let before = fs::read(repo.path().join("index")).expect("index");
    let entries = write_files(&repo, &[("b.md", "b")]);
    assert_eq!(add_entries(repo.path(), entries).expect("no error"), Update::Unsupported);
    assert_eq!(fs::read(repo.path().join("index")).expect("index"), before);
    assert!(!repo.path().join("index.lock").exists());
}

#[test]
fn a_damaged_index_is_reported_and_stays_as_it_was() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = Repository::init(dir.path()).expect("init");
    let files = [("a.md", "a"), ("b.md", "b")];
    add_entries(repo.path(), write_files(&repo, &files)).expect("written");
    let entries = write_files(&repo, &files);
    let mut bytes = fs::read(repo.path().join("index")).expect("index");
    let middle = bytes.len() / 2;
    bytes[middle] ^= 0x20;
    fs::write(repo.path().join("index"), &bytes).expect("damage");
    let update = add_entries(repo.path(), entries).expect("no error");
    assert!(matches!(update, Update::Damaged(_)), "{update:?}");
    assert_eq!(fs::read(repo.path().join("index")).expect("index"), bytes);
    assert!(!repo.path().join("index.lock").exists());
}

/// Paths whose directories and files have different names (Git's index refuses a path that
/// is also another's directory), ordered around `/` as the merge must get right: `a.md` and
/// `a0` sort on either side of the directory `a/`.
/// Git with `index.skipHash` writes no checksum (zeros); such an index is still merged, and
/// Git reads the result.
#[test]
fn an_index_without_a_checksum_is_merged() {
    let dir = tempfile::tempdir().expect("tempdir");
    let repo = Repository::init(dir.path()).expect("init");
    write_files(&repo, &[("a.md", "a")]);
    git(dir.path(), &["add", "."]);
    // As Git 2.40+ writes it with the setting (the machine's Git may be older).
    let mut bytes = fs::read(repo.path().join("index")).expect("index");
    let checksum = bytes.len() - 20;
    bytes[checksum..].fill(0);
    fs::write(repo.path().join("index"), &bytes).expect("index");
    let entries = write_files(&repo, &[("b.md", "b")]);
    assert_eq!(add_entries(repo.path(), entries).expect("written"), Update::Written(2));
    assert_eq!(git(dir.path(), &["ls-files"]), "a.md\nb.md\n");
}

/// Version 3 entries (extended flags: `git add -N`'s intent-to-add) are copied through, and
/// a conflicted path's three stages give way to the new entry.
#[test]
fn extended_entries_and_conflict_stages_are_handled() {
    let dir = tempfile::tempdir().expect("tempdir");
    let root = dir.path();
    let repo = Repository::init(root).expect("init");
    let commit = |message: &str| {
        git(root, &["-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qam", message]);
    };
    write_files(&repo, &[("c.md", "base"), ("x.md", "x")]);
    git(root, &["add", "."]);
    commit("base");
    let main = git(root, &["branch", "--show-current"]);
    git(root, &["checkout", "-qb", "other"]);
    write_files(&repo, &[("c.md", "theirs")]);
    commit("theirs");
    git(root, &["checkout", "-q", main.trim()]);
    write_files(&repo, &[("c.md", "ours")]);
    commit("ours");
    let merge = Command::new("git").arg("-C").arg(root).args(["merge", "-q", "other"]).output();
    assert!(!merge.expect("git runs").status.success(), "the merge conflicts");
    write_files(&repo, &[("n.md", "new")]);
    git(root, &["add", "-N", "n.md"]);
    let stages = git(root, &["ls-files", "--stage"]);
    assert_eq!(stages.lines().count(), 5, "three stages of c.md, n.md, x.md: {stages}");

    let entries = write_files(&repo, &[("c.md", "resolved")]);
    assert_eq!(add_entries(repo.path(), entries).expect("written"), Update::Written(3));
    let stages = git(root, &["ls-files", "--stage"]);
    let resolved = repo.blob(b"resolved").expect("blob");
    assert!(stages.starts_with(&format!("100644 {resolved} 0\tc.md\n")), "{stages}");
    assert_eq!(git(root, &["ls-files", "--unmerged"]), "");
    // The intent-to-add entry kept its flag: still listed as a new, unstaged file.
    assert!(git(root, &["status", "--porcelain"]).contains(" A n.md"));
}

fn path() -> impl Strategy<Value = String> {
    let directory = prop::sample::select(vec!["a", "ab", "m"]);
    let file = prop::sample::select(vec!["a.md", "a0", "a-b", "b.json", "z-"]);
    (prop::collection::vec(directory, 0..3), file).prop_map(|(mut parts, file)| {
        parts.push(file);
        parts.join("/")
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// The streamed merge leaves the entries libgit2's own `add` and `write` leave.
    #[test]
    fn merging_matches_libgit2(
        before in prop::collection::vec((path(), 0u8..3), 0..20),
        added in prop::collection::vec((path(), 0u8..3), 1..20),
    ) {
        let dir = tempfile::tempdir().expect("tempdir");
        let repo = Repository::init(dir.path()).expect("init");
        let root = dir.path();
        let blobs: Vec<Oid> = (0..3).map(|i| repo.blob(&[i]).expect("blob")).collect();
        let make = |files: &[(String, u8)]| -> Vec<IndexEntry> {
            files.iter().map(|(p, b)| entry(root, p, blobs[usize::from(*b)])).collect()
        };

        let mut theirs = Index::open(&repo.path().join("theirs")).expect("index");
        for e in make(&before) {
            theirs.add(&e).expect("add");
        }
        theirs.write().expect("write");
        fs::copy(repo.path().join("theirs"), repo.path().join("index")).expect("copy");
        for e in make(&added) {
            theirs.add(&e).expect("add");
        }
        theirs.write().expect("write");

        let written = add_entries(repo.path(), make(&added)).expect("merged");
        prop_assert_eq!(written, Update::Written(theirs.len()));
        let ours = listing(repo.path());
        let expected: Vec<_> = theirs
            .iter()
            .map(|e| (String::from_utf8(e.path).expect("utf-8"), e.id, e.file_size, e.ino, e.mtime.seconds()))
            .collect();
        prop_assert_eq!(ours, expected);
    }
}
