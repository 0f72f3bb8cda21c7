use std::collections::BTreeMap;

use git2::build::TreeUpdateBuilder;
use git2::{FileMode, ObjectType, Oid, Repository, TreeWalkMode, TreeWalkResult};
use proptest::prelude::*;

use super::{MergedTrees, NewTree, RecentTrees, merge_changes};
use crate::error::Result;

/// The merge with files only, as every commit of messages makes it.
fn merge_files<'p>(
    odb: &git2::Odb<'_>,
    recent: &RecentTrees,
    baseline: Option<Oid>,
    files: impl IntoIterator<Item = (&'p str, Oid)>,
) -> Result<MergedTrees> {
    merge_changes(odb, recent, baseline, files, [])
}

fn repository() -> (tempfile::TempDir, Repository) {
    let dir = tempfile::tempdir().expect("git");
    let repo = Repository::init(dir.path()).expect("git");
    (dir, repo)
}

fn blob(repo: &Repository, text: &str) -> Oid {
    repo.blob(text.as_bytes()).expect("git")
}

/// libgit2's own answer: `baseline` with `files` upserted (libgit2 refuses a path given
/// twice; the last one is kept, as the merge does).
fn libgit2_tree(repo: &Repository, baseline: Oid, files: &[(String, Oid)]) -> Oid {
    let last: BTreeMap<&String, Oid> = files.iter().map(|(path, blob)| (path, *blob)).collect();
    let mut update = TreeUpdateBuilder::new();
    for (path, blob) in last {
        update.upsert(path.as_str(), blob, FileMode::Blob);
    }
    update.create_updated(repo, &repo.find_tree(baseline).expect("git")).expect("git")
}

fn empty_tree(repo: &Repository) -> Oid {
    repo.treebuilder(None).expect("git").write().expect("git")
}

/// Merges `files` into `baseline` and writes the new trees, as the archive does.
fn merged(repo: &Repository, baseline: Option<Oid>, files: &[(String, Oid)]) -> Oid {
    merged_remembering(repo, &mut RecentTrees::default(), baseline, files)
}

/// `merged`, reading previous trees from `recent` first and leaving the new ones there.
fn merged_remembering(
    repo: &Repository,
    recent: &mut RecentTrees,
    baseline: Option<Oid>,
    files: &[(String, Oid)],
) -> Oid {
    let odb = repo.odb().expect("git");
    let merged = merge_files(&odb, recent, baseline, files.iter().map(|(p, b)| (p.as_str(), *b)))
        .expect("git");
    for tree in &merged.new_trees {
        assert_eq!(odb.write(ObjectType::Tree, &tree.bytes).expect("git"), tree.id);
    }
    recent.replace(merged.new_trees);
    merged.root
}

fn listing(repo: &Repository, tree: Oid) -> BTreeMap<String, Oid> {
    let mut files = BTreeMap::new();
    repo.find_tree(tree)
        .expect("git")
        .walk(TreeWalkMode::PreOrder, |dir, entry| {
            if entry.kind() == Some(ObjectType::Blob) {
                files.insert(format!("{dir}{}", entry.name().expect("git")), entry.id());
            }
            TreeWalkResult::Ok
        })
        .expect("git");
    files
}

#[test]
fn files_land_in_new_and_existing_directories() {
    let (_dir, repo) = repository();
    let one = blob(&repo, "one");
    let two = blob(&repo, "two");
    let first = vec![(".gitattributes".to_string(), one)];
    let base = merged(&repo, None, &first);
    let files = vec![
        ("projects/p/messages/2026/11/b.md".to_string(), one),
        ("projects/p/messages/2026/11/a.md".to_string(), two),
        ("projects/p/agents/Blue/profile.json".to_string(), one),
    ];
    let root = merged(&repo, Some(base), &files);
    assert_eq!(root, libgit2_tree(&repo, base, &files));
    let expected: BTreeMap<String, Oid> = first.into_iter().chain(files).collect();
    assert_eq!(listing(&repo, root), expected);
}

#[test]
fn files_that_hold_their_blobs_already_write_nothing() {
    let (_dir, repo) = repository();
    let files = vec![("a/b/c.md".to_string(), blob(&repo, "c"))];
    let base = merged(&repo, None, &files);
    let odb = repo.odb().expect("git");
    let files = files.iter().map(|(p, b)| (p.as_str(), *b));
    let again = merge_files(&odb, &RecentTrees::default(), Some(base), files).expect("git");
    assert_eq!(again.root, base);
    assert!(again.new_trees.is_empty());
}

#[test]
fn a_path_given_twice_takes_its_last_blob() {
    let (_dir, repo) = repository();
    let (one, two) = (blob(&repo, "one"), blob(&repo, "two"));
    let files = vec![("t/x.md".to_string(), one), ("t/x.md".to_string(), two)];
    let root = merged(&repo, None, &files);
    assert_eq!(listing(&repo, root), BTreeMap::from([("t/x.md".to_string(), two)]));
}

#[test]
fn a_name_cannot_become_both_file_and_directory() {
    let (_dir, repo) = repository();
    let id = blob(&repo, "x");
    let base = merged(&repo, None, &[("d/f".to_string(), id)]);
    let odb = repo.odb().expect("git");
    let error = |files: &[(&str, Oid)], baseline| {
        let recent = RecentTrees::default();
        let merge = merge_files(&odb, &recent, baseline, files.iter().copied());
        merge.err().expect("refused").to_string()
    };
    // A file over a directory, a directory over a file, and both in one commit.
    assert!(error(&[("d", id)], Some(base)).contains("\"d\" would be both"));
    assert!(error(&[("d/f/g", id)], Some(base)).contains("\"d/f\" would be both"));
    assert!(error(&[("x/y", id), ("x", id)], None).contains("a directory of the same commit"));
    assert!(error(&[("x", id), ("x/y", id)], None).contains("a file of the same commit"));
    for bad in ["", "a//b", "/a", "a/", "a/../b", "./a", ".git/config", "a/.GIT/b", "a\0b"] {
        assert!(error(&[(bad, id)], None).contains("cannot commit"), "{bad:?}");
    }
}

#[test]
fn the_last_commits_trees_are_read_from_memory() {
    let (_dir, repo) = repository();
    let one = blob(&repo, "one");
    let first = vec![("p/messages/2026/11/a.md".to_string(), one), ("p/x".to_string(), one)];
    let mut recent = RecentTrees::default();
    let base = merged_remembering(&repo, &mut recent, None, &first);
    let update = vec![("p/messages/2026/11/b.md".to_string(), one)];
    let expected = libgit2_tree(&repo, base, &update);
    // A repository that holds none of the baseline's trees: only memory can supply them.
    let (_other_dir, other) = repository();
    let odb = other.odb().expect("git");
    let files = update.iter().map(|(p, b)| (p.as_str(), *b));
    let merged = merge_files(&odb, &recent, Some(base), files.clone()).expect("from memory");
    assert_eq!(merged.root, expected);
    let forgotten = merge_files(&odb, &RecentTrees::default(), Some(base), files);
    assert!(forgotten.err().expect("not in this repository").to_string().contains("read tree"));
}

#[test]
fn past_its_budget_memory_keeps_the_largest_trees_that_fit() {
    let tree = |fill: u8, len: usize| NewTree {
        id: Oid::from_bytes(&[fill; 20]).expect("id"),
        bytes: vec![fill; len],
    };
    let budget = RecentTrees::MAX_BYTES;
    let mut recent = RecentTrees::default();
    recent.replace(vec![tree(1, 1024), tree(2, budget / 2 + 1), tree(3, budget / 2)]);
    let kept = |recent: &RecentTrees, fill: u8| {
        recent.get(Oid::from_bytes(&[fill; 20]).expect("id")).is_some()
    };
    assert!(kept(&recent, 2), "the largest tree is kept");
    assert!(!kept(&recent, 3), "the next one no longer fits");
    assert!(kept(&recent, 1), "a small one still fits after it");
    recent.replace(vec![tree(4, budget + 1)]);
    assert!(!(1..=4).any(|fill| kept(&recent, fill)), "a tree past the budget is never kept");
}

#[test]
fn large_trees_reuse_the_buffers_of_the_trees_they_replace() {
    let (_dir, repo) = repository();
    let one = blob(&repo, "one");
    let name = |i: usize| format!("p/messages/2026/11/2026-11-23T07-58-01Z__subject__{i:06}.md");
    // About 1.4 MB of tree, past glibc's mmap threshold: a month directory of 20,000
    // messages. A small directory is written before it each round, as an agent's inbox is.
    let month: Vec<_> = (0..20_000).map(|i| (name(i), one)).collect();
    let mut recent = RecentTrees::default();
    let mut tree = merged_remembering(&repo, &mut recent, None, &month);
    for round in 0..3 {
        let spares: Vec<*const u8> = recent.spare.borrow().iter().map(|b| b.as_ptr()).collect();
        let mut files: Vec<_> = (0..50).map(|i| (name(30_000 + round * 50 + i), one)).collect();
        files.push((format!("p/agents/A/inbox/2026/11/m{round}.md"), one));
        let expected = libgit2_tree(&repo, tree, &files);
        tree = merged_remembering(&repo, &mut recent, Some(tree), &files);
        assert_eq!(tree, expected, "round {round}");
        let kept = recent.trees.values().max_by_key(|bytes| bytes.len()).expect("month kept");
        // The first merge had no spare yet; from then on the one it let go is there.
        assert_eq!(spares.contains(&kept.as_ptr()), round > 0, "round {round}");
    }
}

#[test]
fn spare_buffers_are_held_to_the_budget() {
    let budget = RecentTrees::MAX_BYTES;
    let tree = |fill: u8| NewTree {
        id: Oid::from_bytes(&[fill; 20]).expect("id"),
        bytes: Vec::with_capacity(budget / 3 + 1),
    };
    let mut recent = RecentTrees::default();
    recent.replace((1..=4).map(tree).collect());
    recent.replace((5..=8).map(tree).collect());
    let kept: usize = recent.trees.values().map(Vec::capacity).sum();
    let spare: usize = recent.spare.borrow().iter().map(Vec::capacity).sum();
    assert!(kept <= budget && spare <= budget, "kept {kept}, spare {spare}");
    assert_eq!(recent.spare.borrow().len(), 2, "the spares that fit");
}

/// Names around `/` in Git's order: a file `a.md` sorts before the directory `a`, `a0` after.
fn directory_name() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["a", "ab", "m"])
}

fn file_name() -> impl Strategy<Value = &'static str> {
    prop::sample::select(vec!["a.md", "a0", "a-b", "ab.json", "ab0", "b", "m.x", "z"])
}

fn path() -> impl Strategy<Value = String> {
    (prop::collection::vec(directory_name(), 0..3), file_name()).prop_map(|(dirs, file)| {
        let mut path: Vec<&str> = dirs;
        path.push(file);
        path.join("/")
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// The spliced trees are byte for byte the ones libgit2 builds.
    #[test]
    fn merging_matches_libgit2(
        base in prop::collection::vec((path(), 0u8..4), 0..24),
        update in prop::collection::vec((path(), 0u8..4), 1..24),
    ) {
        let (_dir, repo) = repository();
        let blobs: Vec<Oid> = (0..4).map(|i| blob(&repo, &format!("blob {i}"))).collect();
        let named = |files: Vec<(String, u8)>| -> Vec<(String, Oid)> {
            files.into_iter().map(|(p, i)| (p, blobs[usize::from(i)])).collect()
        };
        let (base, update) = (named(base), named(update));
        let empty = empty_tree(&repo);
        let baseline = libgit2_tree(&repo, empty, &base);
        // The second merge reads the trees the first one wrote from memory.
        let mut recent = RecentTrees::default();
        prop_assert_eq!(merged_remembering(&repo, &mut recent, Some(empty), &base), baseline);
        let expected = libgit2_tree(&repo, baseline, &update);
        prop_assert_eq!(merged_remembering(&repo, &mut recent, Some(baseline), &update), expected);
        let mut files: BTreeMap<String, Oid> = base.into_iter().collect();
        files.extend(update);
        prop_assert_eq!(listing(&repo, expected), files);
    }

    /// Removals too: libgit2 takes the files out and drops the directories left empty.
    #[test]
    fn removing_matches_libgit2(
        base in prop::collection::vec((path(), 0u8..4), 1..24),
        update in prop::collection::vec((path(), 0u8..4), 0..6),
        removed in prop::collection::vec(path(), 1..12),
    ) {
        let (_dir, repo) = repository();
        let blobs: Vec<Oid> = (0..4).map(|i| blob(&repo, &format!("blob {i}"))).collect();
        let base: Vec<(String, Oid)> =
            base.into_iter().map(|(p, i)| (p, blobs[usize::from(i)])).collect();
        let update: Vec<(String, Oid)> =
            update.into_iter().map(|(p, i)| (p, blobs[usize::from(i)])).collect();
        let baseline = libgit2_tree(&repo, empty_tree(&repo), &base);
        // What libgit2 builds: the files upserted, then the removals (of files it holds).
        let written = libgit2_tree(&repo, baseline, &update);
        let holds = listing(&repo, written);
        let mut removal = TreeUpdateBuilder::new();
        let distinct: std::collections::BTreeSet<&String> = removed.iter().collect();
        for path in distinct.into_iter().filter(|p| holds.contains_key(*p)) {
            removal.remove(path.as_str());
        }
        let expected =
            removal.create_updated(&repo, &repo.find_tree(written).expect("git")).expect("git");
        let odb = repo.odb().expect("git");
        let files = update.iter().map(|(p, b)| (p.as_str(), *b));
        let merge = merge_changes(
            &odb,
            &RecentTrees::default(),
            Some(baseline),
            files,
            removed.iter().map(String::as_str),
        );
        let merge = merge.expect("merged");
        for tree in &merge.new_trees {
            prop_assert_eq!(odb.write(ObjectType::Tree, &tree.bytes).expect("git"), tree.id);
        }
        prop_assert_eq!(merge.root, expected);
    }
}

#[test]
fn removing_the_last_file_of_a_directory_removes_the_directory() {
    let (_dir, repo) = repository();
    let one = blob(&repo, "one");
    let files = vec![
        ("p/messages/2026/11/a.md".to_string(), one),
        ("p/agents/Blue/inbox/2026/11/a.md".to_string(), one),
        ("p/agents/Blue/profile.json".to_string(), one),
    ];
    let base = merged(&repo, None, &files);
    let odb = repo.odb().expect("git");
    let removed = ["p/messages/2026/11/a.md", "p/agents/Blue/inbox/2026/11/a.md", "p/gone.md"];
    let merge =
        merge_changes(&odb, &RecentTrees::default(), Some(base), [], removed).expect("merged");
    for tree in &merge.new_trees {
        odb.write(ObjectType::Tree, &tree.bytes).expect("git");
    }
    let expected = BTreeMap::from([("p/agents/Blue/profile.json".to_string(), one)]);
    assert_eq!(listing(&repo, merge.root), expected);
    let root = repo.find_tree(merge.root).expect("git");
    assert!(root.get_path(std::path::Path::new("p/messages")).is_err(), "empty directory gone");
    // Removals naming a directory, or a path under a file, are passed over.
    let odd = merge_changes(
        &odb,
        &RecentTrees::default(),
        Some(merge.root),
        [],
        ["p/agents", "p/agents/Blue/profile.json/x"],
    )
    .expect("passed over");
    assert_eq!(odd.root, merge.root);
    // Everything removed: Git's empty tree.
    let all = merge_changes(
        &odb,
        &RecentTrees::default(),
        Some(merge.root),
        [],
        ["p/agents/Blue/profile.json"],
    )
    .expect("merged");
    assert_eq!(all.root, empty_tree(&repo));
}
