use super::*;
use crate::testing::{LAYOUT, assert_status_clean, author, git};
use std::os::unix::fs::MetadataExt;

fn packs(root: &Path) -> usize {
    fs::read_dir(root.join(".git/objects/pack"))
        .expect("pack dir")
        .filter(|e| e.as_ref().is_ok_and(|e| e.path().extension().is_some_and(|x| x == "pack")))
        .count()
}

/// Every commit, large or small, goes out as one pack and no loose object; both read
/// back through libgit2 and `git`, HEAD and its reflog move, and fsck finds nothing.
#[test]
fn commits_are_packs_whole_and_readable() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("archive");
    let mut repo = ArchiveRepo::open_or_init(&root, author(), LAYOUT).expect("init");
    assert_eq!(packs(&root), 1, "the first commit");
    let many: Vec<(String, Vec<u8>)> = (0..64)
        .flat_map(|i| {
            let bytes = format!("message {i}\n").into_bytes();
            [
                (format!("projects/p/messages/2026/11/m{i:03}.md"), bytes.clone()),
                (format!("projects/p/agents/A/inbox/2026/11/m{i:03}.md"), bytes),
            ]
        })
        .collect();
    let first = repo.commit_files(&many, "batch: many\n").expect("large commit");
    assert!(first.is_some());
    assert_eq!(packs(&root), 2);
    assert!(repo.commit_files(&many, "batch: again\n").expect("replay").is_none());
    assert_eq!(packs(&root), 2, "a replay writes nothing");

    let few = vec![("projects/p/messages/2026/11/z.md".to_string(), b"last\n".to_vec())];
    let second = repo.commit_files(&few, "mail: one\n").expect("small commit");
    assert!(second.is_some());
    assert_eq!(packs(&root), 3, "a small commit is a pack too");
    let loose = git(&root, &["count-objects", "-v"]);
    assert!(loose.starts_with("count: 0\n"), "{loose}");
    assert_eq!(
        repo.committed_file("projects/p/messages/2026/11/m007.md").expect("read"),
        Some(b"message 7\n".to_vec())
    );
    assert_eq!(
        git(&root, &["show", "HEAD:projects/p/agents/A/inbox/2026/11/m063.md"]),
        "message 63\n"
    );
    assert_eq!(git(&root, &["show", "HEAD:projects/p/messages/2026/11/z.md"]), "last\n");
    let log = git(&root, &["log", "--format=%s"]);
    assert_eq!(log, "mail: one\nbatch: many\nchore: initialize archive\n");
    let reflog = git(&root, &["reflog", "--format=%gs"]);
    assert!(reflog.starts_with("commit: mail: one\ncommit: batch: many\n"), "{reflog}");
    assert_eq!(git(&root, &["fsck", "--strict"]), "");
}

/// Trees and commits are named as libgit2 names them.
#[test]
fn object_ids_are_the_ones_libgit2_gives() {
    let bytes: Vec<u8> = (0..100_000u32).map(|i| (i % 251) as u8).collect();
    for kind in [ObjectType::Blob, ObjectType::Tree, ObjectType::Commit] {
        for data in [&bytes[..0], &bytes[..1], &bytes[..]] {
            let expected = Oid::hash_object(kind, data).expect("hash");
            assert_eq!(object_id(kind, data).expect("hash"), expected);
        }
    }
}

/// The commit bytes written by hand are libgit2's, for offsets east, west and zero.
#[test]
fn commit_objects_are_byte_identical_to_libgit2s() {
    let dir = tempfile::tempdir().expect("temp dir");
    let archive = ArchiveRepo::open_or_init(dir.path(), author(), LAYOUT).expect("init");
    let repo = &archive.repo;
    let head = head_commit(repo).expect("head").expect("first commit");
    let tree = head.tree().expect("tree");
    for offset in [-330, 0, 60, 345] {
        let when = git2::Time::new(1_763_820_000, offset);
        let signature =
            Signature::new("mailroom", "mailroom@example.com", &when).expect("signature");
        let message = "mail: BlueLake -> GreenCastle | hi\n\nbody line\n";
        let expected = repo
            .commit_create_buffer(&signature, &signature, message, &tree, &[&head])
            .expect("libgit2 buffer");
        let ours = commit_object(tree.id(), &[head.id()], &signature, message);
        assert_eq!(ours.as_slice(), &*expected, "{offset}");
    }
}

/// Copies with the same bytes share an inode; a later commit replaces a file with a
/// new inode rather than writing through the link, so the other copies keep their bytes.
#[test]
fn work_tree_copies_are_linked_and_replaced_not_written_through() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("archive");
    let mut repo = ArchiveRepo::open_or_init(&root, author(), LAYOUT).expect("init");
    let (outbox, inbox) = ("p/agents/A/outbox/m.md", "p/agents/B/inbox/m.md");
    let copies = |text: &str| -> Vec<(String, Vec<u8>)> {
        [outbox, inbox].iter().map(|p| (p.to_string(), text.as_bytes().to_vec())).collect()
    };
    repo.commit_files(&copies("first\n"), "mail: one\n").expect("commit");
    let inode = |path: &str| fs::metadata(root.join(path)).expect("written").ino();
    assert_eq!(inode(outbox), inode(inbox));
    assert_eq!(fs::metadata(root.join(inbox)).expect("written").nlink(), 2);

    // A replay finds both files there and writes them again, still linked.
    assert!(repo.commit_files(&copies("first\n"), "mail: again\n").expect("replay").is_none());
    assert_eq!(inode(outbox), inode(inbox));

    let changed = vec![(inbox.to_string(), b"second\n".to_vec())];
    repo.commit_files(&changed, "mail: two\n").expect("commit");
    assert_eq!(fs::read_to_string(root.join(inbox)).expect("read"), "second\n");
    assert_eq!(fs::read_to_string(root.join(outbox)).expect("read"), "first\n");
    assert_ne!(inode(outbox), inode(inbox));
    repo.sync_index().expect("index");
    // The index's stat data is each file's own: `diff-files` lists a file whose stat data
    // differs without refreshing the index (`status` would refresh it), so it goes first.
    assert_eq!(git(&root, &["diff-files", "--name-only"]), "");
    assert_status_clean(&root);

    // Copies linked in one batch, whose first path a later batch rewrites (with another
    // size) before the index is written: the other copy keeps stat data of its own.
    repo.commit_files(&copies("linked, then split\n"), "mail: three\n").expect("commit");
    let rewritten = vec![(outbox.to_string(), b"rewritten\n".to_vec())];
    repo.commit_files(&rewritten, "mail: four\n").expect("commit");
    repo.sync_index().expect("index");
    assert_eq!(git(&root, &["diff-files", "--name-only"]), "");
    assert_status_clean(&root);

    // A batch that names a path twice: its later copies of the first content are not
    // linked to the path that no longer holds it.
    let twice = vec![
        ("p/x.md".to_string(), b"one\n".to_vec()),
        ("p/x.md".to_string(), b"two\n".to_vec()),
        ("p/y.md".to_string(), b"one\n".to_vec()),
    ];
    repo.commit_files(&twice, "mail: twice\n").expect("commit");
    assert_eq!(fs::read_to_string(root.join("p/x.md")).expect("read"), "two\n");
    assert_eq!(fs::read_to_string(root.join("p/y.md")).expect("read"), "one\n");
    repo.sync_index().expect("index");
    assert_eq!(git(&root, &["diff-files", "--name-only"]), "");
    assert_status_clean(&root);
}

/// The layout makes the first commit, its excludes are written once, and a file its owner
/// writes is committed but left as the owner wrote it.
#[test]
fn the_layout_shapes_the_first_commit_the_excludes_and_the_work_tree() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("archive");
    let layout = Layout { written_by_owner: |path| path.starts_with("owned/"), ..LAYOUT };
    let mut repo = ArchiveRepo::open_or_init(&root, author(), layout).expect("init");
    assert_eq!(git(&root, &["show", "HEAD:.gitattributes"]), "*.json text\n*.md text\n");
    fs::create_dir_all(root.join("owned")).expect("directory");
    fs::write(root.join("owned/a.md"), "as the owner wrote it\n").expect("write");
    let files = vec![
        ("owned/a.md".to_string(), b"committed\n".to_vec()),
        ("b.md".to_string(), b"b\n".to_vec()),
    ];
    repo.commit_files(&files, "mail: two\n").expect("commit");
    assert_eq!(git(&root, &["show", "HEAD:owned/a.md"]), "committed\n");
    let read = |path: &str| fs::read_to_string(root.join(path)).expect("read");
    assert_eq!(read("owned/a.md"), "as the owner wrote it\n");
    assert_eq!(read("b.md"), "b\n");
    drop(repo);
    ArchiveRepo::open_or_init(&root, author(), layout).expect("reopen");
    let excludes = read(".git/info/exclude");
    assert_eq!(excludes.matches(LAYOUT.excludes).count(), 1, "{excludes}");
}

/// HEAD moves only from the tip a commit was built on: a human's commit made meanwhile
/// stays, and the next commit builds on it.
#[test]
fn a_commit_made_meanwhile_is_never_dropped() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("archive");
    let mut repo = ArchiveRepo::open_or_init(&root, author(), LAYOUT).expect("init");
    let files = vec![("a.md".to_string(), b"a\n".to_vec())];
    let ours = repo.commit_files(&files, "mail: a\n").expect("commit").expect("new").id;
    let human = ["-c", "user.name=h", "-c", "user.email=h@example.com"];
    git(&root, &[&human[..], &["commit", "--allow-empty", "-q", "-m", "human"]].concat());
    let tip = git(&root, &["rev-parse", "HEAD"]);
    assert!(repo.move_head(ours, Some(ours), "mail: stale\n").is_err());
    assert_eq!(git(&root, &["rev-parse", "HEAD"]), tip);
    let files = vec![("b.md".to_string(), b"b\n".to_vec())];
    repo.commit_files(&files, "mail: b\n").expect("commit on the human's");
    let log = git(&root, &["log", "--format=%s"]);
    assert_eq!(log, "mail: b\nhuman\nmail: a\nchore: initialize archive\n");
    let reflog = git(&root, &["reflog", "--format=%gs"]);
    assert!(reflog.ends_with("commit (initial): chore: initialize archive\n"), "{reflog}");
}

/// Removed files leave the commit's tree, the work tree (with the directories they leave
/// empty) and the index, in one pack; `git status` is clean, fsck finds nothing, and a replay
/// commits nothing.
#[test]
fn removals_leave_tree_work_tree_and_index() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("archive");
    let mut repo = ArchiveRepo::open_or_init(&root, author(), LAYOUT).expect("init");
    let files: Vec<(String, Vec<u8>)> = ["m1", "m2"]
        .iter()
        .flat_map(|m| {
            let bytes = format!("{m}\n").into_bytes();
            [
                (format!("projects/p/messages/2026/11/{m}.md"), bytes.clone()),
                (format!("projects/p/agents/A/inbox/2026/11/{m}.md"), bytes),
            ]
        })
        .collect();
    repo.commit_files(&files, "mail: two\n").expect("commit");
    repo.sync_index().expect("index");
    let gone = vec![
        "projects/p/messages/2026/11/m1.md".to_string(),
        "projects/p/agents/A/inbox/2026/11/m1.md".to_string(),
        "projects/p/agents/A/inbox/2026/11/m2.md".to_string(),
        "projects/p/never/there.md".to_string(),
        // A directory, and a path under a file: nothing to remove, in the tree or on disk.
        "projects/p/messages".to_string(),
        "projects/p/messages/2026/11/m2.md/x".to_string(),
    ];
    let packs_before = packs(&root);
    let removed = repo.commit_changes(&[], &gone, "delete: 1 message(s)\n").expect("commit");
    assert!(removed.is_some());
    assert_eq!(packs(&root), packs_before + 1, "a removal commit is one pack");
    repo.sync_index().expect("index");
    assert!(!repo.index_stale());
    let listed = git(&root, &["ls-tree", "-r", "--name-only", "HEAD", "projects"]);
    assert_eq!(listed, "projects/p/messages/2026/11/m2.md\n");
    assert!(!root.join("projects/p/messages/2026/11/m1.md").exists());
    assert!(!root.join("projects/p/agents").exists(), "emptied directories go too");
    assert!(root.join("projects/p/messages/2026/11/m2.md").exists());
    assert_status_clean(&root);
    assert_eq!(git(&root, &["log", "-1", "--format=%s"]), "delete: 1 message(s)\n");
    git(&root, &["fsck", "--strict"]);
    let again = repo.commit_changes(&[], &gone, "delete: again\n").expect("replay");
    assert!(again.is_none(), "a replay changes nothing");
}

/// Files of `names` in the canonical and an inbox directory, each holding its name.
fn mail(names: &[&str]) -> Vec<(String, Vec<u8>)> {
    names
        .iter()
        .flat_map(|m| {
            let bytes = format!("{m}\n").into_bytes();
            [
                (format!("projects/p/messages/2026/11/{m}.md"), bytes.clone()),
                (format!("projects/p/agents/A/inbox/2026/11/{m}.md"), bytes),
            ]
        })
        .collect()
}

fn marker(root: &Path) -> String {
    fs::read_to_string(root.join(".git/mailroom-index")).expect("marker")
}

/// Commits made but never synced to the index (the server killed between the two) are
/// found at the next open from the marker, without the index being read: they wait for the
/// first sync like a commit's files, and `git status` is clean after it. A human's staged
/// file survives the restart (the index is not reset to HEAD).
#[test]
fn commits_the_index_missed_are_caught_up_from_its_marker() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("archive");
    let mut repo = ArchiveRepo::open_or_init(&root, author(), LAYOUT).expect("init");
    repo.commit_files(&mail(&["m1", "m2"]), "mail: two\n").expect("commit");
    repo.sync_index().expect("index");
    let synced = git(&root, &["rev-parse", "HEAD"]);
    assert_eq!(marker(&root), synced);
    fs::write(root.join("notes.txt"), "a human's file\n").expect("write");
    git(&root, &["add", "notes.txt"]);
    repo.commit_files(&mail(&["m3"]), "mail: three\n").expect("commit");
    repo.commit_changes(&[], &["projects/p/messages/2026/11/m1.md".to_string()], "delete\n")
        .expect("removal");
    drop(repo);
    assert_eq!(marker(&root), synced, "nothing synced since");

    let mut repo = ArchiveRepo::open_or_init(&root, author(), LAYOUT).expect("reopen");
    assert_eq!(repo.index_backlog(), 3, "m3's two files and m1's removal, from the tree diff");
    assert!(!repo.index_rebuild);
    assert_eq!(repo.index_entries(), 6, "the header's count: .gitattributes, m1, m2, notes");
    repo.sync_index().expect("index");
    assert_eq!(git(&root, &["status", "--porcelain"]), "A  notes.txt\n");
    assert_eq!(marker(&root), git(&root, &["rev-parse", "HEAD"]));
    let staged = git(&root, &["diff", "--cached", "--name-only"]);
    assert_eq!(staged, "notes.txt\n", "only the human's file differs from HEAD");
}

/// An archive from before the marker (or whose index was removed) gets its index rebuilt
/// from HEAD at the first sync, not at open, and is marked after it.
#[test]
fn an_index_without_a_marker_is_rebuilt_at_the_first_sync() {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("archive");
    let mut repo = ArchiveRepo::open_or_init(&root, author(), LAYOUT).expect("init");
    repo.commit_files(&mail(&["m1", "m2"]), "mail: two\n").expect("commit");
    // Names whose tree order and path order could differ if walked wrongly.
    let tricky: Vec<(String, Vec<u8>)> = ["t/a.b", "t/a/x", "t/a0", "t/a-b/y", "t/a/x.y/z"]
        .iter()
        .map(|p| (p.to_string(), p.as_bytes().to_vec()))
        .collect();
    repo.commit_files(&tricky, "tricky\n").expect("commit");
    drop(repo);
    fs::remove_file(root.join(".git/mailroom-index")).expect("no marker");
    fs::remove_file(root.join(".git/index")).expect("no index");

    let mut repo = ArchiveRepo::open_or_init(&root, author(), LAYOUT).expect("reopen");
    assert!(repo.index_rebuild);
    assert!(!root.join(".git/index").exists(), "open leaves the index to the sync");
    repo.sync_index().expect("index");
    assert!(!repo.index_rebuild);
    assert_status_clean(&root);
    assert_eq!(repo.index_entries(), 10);
    assert_eq!(marker(&root), git(&root, &["rev-parse", "HEAD"]));
    // Entry for entry what Git's own `read-tree` writes (mode, blob, path, in its order).
    let ours = git(&root, &["ls-files", "-s"]);
    git(&root, &["read-tree", "HEAD"]);
    assert_eq!(ours, git(&root, &["ls-files", "-s"]));
}
