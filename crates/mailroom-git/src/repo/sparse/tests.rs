use std::fs;
use std::path::{Path, PathBuf};

use tempfile::TempDir;

use crate::ArchiveRepo;
use crate::testing::{LAYOUT, assert_fsck_clean, assert_status_clean, author, git};

fn files(paths: &[&str]) -> Vec<(String, Vec<u8>)> {
    paths.iter().map(|p| (p.to_string(), format!("{p}\n").into_bytes())).collect()
}

const JANUARY: &str = "projects/p/messages/2026/01";
const INBOX_JANUARY: &str = "projects/p/agents/A/inbox/2026/01";

/// An archive of two months, January's message in the canonical and an inbox directory, at
/// `archive` in a new temporary directory; the directory, the archive's root and the archive.
fn two_months() -> (TempDir, PathBuf, ArchiveRepo) {
    let dir = tempfile::tempdir().expect("temp dir");
    let root = dir.path().join("archive");
    let mut repo = ArchiveRepo::open_or_init(&root, author(), LAYOUT).expect("init");
    let mail = files(&[
        "projects/p/messages/2026/01/a.md",
        "projects/p/messages/2026/02/b.md",
        "projects/p/messages/threads/t.md",
        "projects/p/agents/A/profile.json",
        "projects/p/agents/A/inbox/2026/01/a.md",
        "projects/p/agents/A/inbox/2026/02/b.md",
        "projects/p/file_reservations/r.json",
    ]);
    repo.commit_files(&mail, "mail\n").expect("commit");
    repo.sync_index().expect("index");
    (dir, root, repo)
}

/// [`two_months`] with January's two directories retired.
fn january_retired() -> (TempDir, PathBuf, ArchiveRepo) {
    let (dir, root, mut repo) = two_months();
    repo.retire_directories(&[JANUARY.to_string(), INBOX_JANUARY.to_string()]).expect("retire");
    (dir, root, repo)
}

fn sparse_listing(root: &Path) -> String {
    git(root, &["ls-files", "--sparse"])
}

/// Retired directories leave the work tree and the index (one sparse entry each, which Git
/// reads as its own), but not the commits; `git status` stays clean and fsck finds nothing.
#[test]
fn retired_directories_leave_the_work_tree_and_the_index_but_not_the_commits() {
    let (_dir, root, mut repo) = two_months();
    assert_eq!(repo.index_entries(), 8);
    let retired = repo
        .retire_directories(&[JANUARY.to_string(), INBOX_JANUARY.to_string(), "nowhere".into()])
        .expect("retire");
    assert_eq!(retired, 2, "a directory HEAD lacks is passed over");
    assert!(!root.join(JANUARY).exists() && !root.join(INBOX_JANUARY).exists());
    assert!(root.join("projects/p/messages/2026/02/b.md").exists());
    assert!(root.join("projects/p/agents/A/profile.json").exists());
    assert_eq!(repo.index_entries(), 8, "two files each became one sparse entry");
    assert_status_clean(&root);
    let listing = sparse_listing(&root);
    assert!(listing.contains("projects/p/messages/2026/01/\n"), "{listing}");
    assert!(listing.contains("projects/p/agents/A/inbox/2026/01/\n"), "{listing}");
    assert!(!listing.contains("2026/01/a.md"), "{listing}");
    assert_eq!(
        git(&root, &["show", "HEAD:projects/p/messages/2026/01/a.md"]),
        "projects/p/messages/2026/01/a.md\n"
    );
    let cone = git(&root, &["sparse-checkout", "list"]);
    assert!(cone.contains("projects/p/messages/2026/02\n"), "{cone}");
    assert!(!cone.contains("2026/01"), "{cone}");
    assert_eq!(repo.retired_directories().collect::<Vec<_>>(), [INBOX_JANUARY, JANUARY]);
    assert_eq!(repo.retire_directories(&[JANUARY.to_string()]).expect("again"), 0);
    assert_fsck_clean(&root);
}

/// Later commits keep the sparse index right: a new month and a new agent join the cone, a
/// late file in a retired directory and a removal there change only its sparse entry, and
/// nothing of it comes back into the work tree.
#[test]
fn commits_after_a_retirement_keep_git_status_clean() {
    let (_dir, root, mut repo) = january_retired();
    // A human's Git may expand the sparse entries into their files (skip-worktree each).
    git(&root, &["sparse-checkout", "reapply", "--no-sparse-index"]);
    assert!(git(&root, &["ls-files", "--sparse"]).contains("2026/01/a.md"));
    let later = files(&[
        "projects/p/messages/2026/03/c.md",
        "projects/p/agents/B/inbox/2026/03/c.md",
        "projects/p/messages/2026/01/late.md",
    ]);
    repo.commit_files(&later, "later\n").expect("commit");
    repo.sync_index().expect("index");
    assert!(!root.join(JANUARY).exists(), "a late file stays out of the work tree");
    assert!(root.join("projects/p/messages/2026/03/c.md").exists());
    assert_status_clean(&root);
    let cone = git(&root, &["sparse-checkout", "list"]);
    assert!(cone.contains("projects/p/messages/2026/03\n"), "{cone}");
    assert!(cone.contains("projects/p/agents/B\n"), "{cone}");
    let listing = sparse_listing(&root);
    assert!(listing.contains(&format!("{JANUARY}/\n")), "collapsed again: {listing}");
    assert!(!listing.contains("messages/2026/01/a.md"), "{listing}");
    repo.commit_changes(&[], &["projects/p/messages/2026/01/a.md".to_string()], "delete\n")
        .expect("removal");
    repo.sync_index().expect("index");
    assert_status_clean(&root);
    let january = git(&root, &["ls-tree", "--name-only", "HEAD", &format!("{JANUARY}/")]);
    assert_eq!(january, "projects/p/messages/2026/01/late.md\n");
    assert_fsck_clean(&root);
}

/// Reopened, a sparse archive keeps its index (the marker names HEAD); without its index it
/// is rebuilt sparse; a directory brought back by `git sparse-checkout add` is no longer
/// retired, and `disable` brings back every one.
#[test]
fn a_sparse_archive_reopens_rebuilds_and_follows_gits_sparse_checkout() {
    let (_dir, root, repo) = january_retired();
    drop(repo);
    let repo = ArchiveRepo::open_or_init(&root, author(), LAYOUT).expect("reopen");
    assert!(!repo.index_stale(), "in step: nothing to catch up");

    drop(repo);
    fs::remove_file(root.join(".git/index")).expect("no index");
    let mut repo = ArchiveRepo::open_or_init(&root, author(), LAYOUT).expect("reopen");
    repo.sync_index().expect("rebuild");
    assert_status_clean(&root);
    assert!(sparse_listing(&root).contains("projects/p/messages/2026/01/\n"));
    assert!(!root.join(JANUARY).exists());

    drop(repo);
    git(&root, &["sparse-checkout", "add", JANUARY]);
    assert!(root.join(JANUARY).join("a.md").exists(), "Git checked it out");
    let mut repo = ArchiveRepo::open_or_init(&root, author(), LAYOUT).expect("reopen");
    assert_eq!(repo.retired_directories().collect::<Vec<_>>(), [INBOX_JANUARY]);
    repo.sync_index().expect("rebuild");
    assert_status_clean(&root);
    repo.commit_files(&files(&["projects/p/messages/2026/01/z.md"]), "z\n").expect("commit");
    repo.sync_index().expect("index");
    assert!(root.join(JANUARY).join("z.md").exists());
    assert_status_clean(&root);

    drop(repo);
    git(&root, &["sparse-checkout", "disable"]);
    let mut repo = ArchiveRepo::open_or_init(&root, author(), LAYOUT).expect("reopen");
    assert_eq!(repo.retired_directories().count(), 0);
    repo.sync_index().expect("rebuild");
    assert!(root.join(INBOX_JANUARY).join("a.md").exists());
    assert_status_clean(&root);
    assert_fsck_clean(&root);
}

/// An index a human's Git wrote in a form the merge does not take (version 4 here) is
/// written anew from HEAD, the retired directories still sparse; the retirement is not lost.
#[test]
fn an_index_of_another_form_is_rebuilt_with_its_retired_directories() {
    let (_dir, root, mut repo) = two_months();
    repo.retire_directories(&[JANUARY.to_string()]).expect("retire");
    git(&root, &["update-index", "--index-version", "4"]);
    repo.commit_files(&files(&["projects/p/messages/2026/01/late.md"]), "late\n").expect("commit");
    repo.retire_directories(&[INBOX_JANUARY.to_string()]).expect("retire");
    assert!(!repo.index_stale());
    assert_status_clean(&root);
    let listing = sparse_listing(&root);
    assert!(listing.contains(&format!("{JANUARY}/\n")), "{listing}");
    assert!(listing.contains(&format!("{INBOX_JANUARY}/\n")), "{listing}");
    assert!(!listing.contains("late.md"), "{listing}");
    assert!(!root.join(INBOX_JANUARY).exists());
}

/// Directories given together or one after the other, one under the other, end as one
/// sparse entry: the outermost.
#[test]
fn nested_directories_retire_as_the_outermost() {
    let inbox = "projects/p/agents/A/inbox";
    for order in [[INBOX_JANUARY, inbox], [inbox, INBOX_JANUARY]] {
        let (_dir, root, mut repo) = two_months();
        let given: Vec<String> = order.iter().map(|d| d.to_string()).collect();
        assert_eq!(repo.retire_directories(&given).expect("retire"), 1, "{order:?}");
        assert_eq!(repo.retired_directories().collect::<Vec<_>>(), [inbox]);
        let listing = sparse_listing(&root);
        assert!(listing.contains(&format!("{inbox}/\n")), "{listing}");
        assert!(!listing.contains("inbox/2026"), "{listing}");
        assert_status_clean(&root);
    }
    let (_dir, root, mut repo) = two_months();
    repo.retire_directories(&[INBOX_JANUARY.to_string()]).expect("retire");
    repo.retire_directories(&[inbox.to_string()]).expect("retire the parent");
    assert_eq!(repo.retired_directories().collect::<Vec<_>>(), [inbox]);
    assert!(!sparse_listing(&root).contains("inbox/2026"));
    assert_status_clean(&root);
    assert_fsck_clean(&root);
}

/// A human's own sparse checkout of the archive, over a directory the archive then commits
/// into, never leaves a file twice in the index: the index is written anew from HEAD.
#[test]
fn a_humans_sparse_entry_over_a_committed_file_is_settled_by_a_rebuild() {
    let (_dir, root, mut repo) = two_months();
    git(&root, &["sparse-checkout", "set", "--cone", "--sparse-index", "projects/p/messages"]);
    assert!(sparse_listing(&root).contains("projects/p/agents/\n"));
    let late = "projects/p/agents/A/inbox/2026/02/late.md";
    repo.commit_files(&files(&[late]), "late\n").expect("commit");
    repo.sync_index().expect("index");
    let listing = git(&root, &["ls-files"]);
    let mut paths: Vec<&str> = listing.lines().collect();
    let count = paths.len();
    paths.dedup();
    assert_eq!(paths.len(), count, "no path twice: {listing}");
    assert!(listing.contains(late), "{listing}");
    git(&root, &["sparse-checkout", "reapply"]);
    assert_status_clean(&root);
    assert_fsck_clean(&root);
}
