//! What the engine's tests share.

use std::path::{Path, PathBuf};
use std::process::Command;

use crate::{Author, Layout};

/// A layout like the archive's: `.gitattributes` first, lock files excluded, every file
/// written by the engine.
pub(crate) const LAYOUT: Layout = Layout {
    first_files: &[(".gitattributes", "*.json text\n*.md text\n")],
    first_message: "chore: initialize archive",
    excludes: "*.lock\n",
    written_by_owner: |_| false,
};

/// The author of the tests' archive commits.
pub(crate) fn author() -> Author {
    Author { name: "mailroom".to_string(), email: "mailroom@example.com".to_string() }
}

/// Asserts that `git status` finds the work tree and index of `root` as HEAD has them.
pub(crate) fn assert_status_clean(root: &Path) {
    assert_eq!(git(root, &["status", "--porcelain"]), "", "git status in {}", root.display());
}

/// Runs `git -C root args…` and returns its standard output (lossy UTF-8); fails the test,
/// with git's standard error, when git fails.
pub(crate) fn git(root: &Path, args: &[&str]) -> String {
    let output = Command::new("git").arg("-C").arg(root).args(args).output().expect("run git");
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// Asserts that `git fsck --strict` finds nothing wrong in the repository at `root`.
pub(crate) fn assert_fsck_clean(root: &Path) {
    let fsck = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["fsck", "--strict", "--no-dangling"])
        .output()
        .expect("git fsck");
    assert!(fsck.status.success(), "{}", String::from_utf8_lossy(&fsck.stderr));
}

/// `dir` (absolute) as a path relative to the working directory, as the server's default
/// data dir is.
pub(crate) fn relative(dir: &Path) -> PathBuf {
    let here = std::env::current_dir().expect("working dir");
    let up = here.components().count() - 1;
    let mut path: PathBuf = std::iter::repeat_n("..", up).collect();
    path.push(dir.strip_prefix("/").expect("absolute temp dir"));
    path
}

/// The packs of the repository at `root` (none kept by a `.keep` file), sorted.
pub(crate) fn pack_files(root: &Path) -> Vec<PathBuf> {
    let mut packs =
        crate::full_pack::packs_without_keep(&root.join(".git/objects/pack")).expect("packs");
    packs.sort();
    packs
}

/// The bytes of [`pack_files`].
pub(crate) fn pack_bytes(root: &Path) -> u64 {
    pack_files(root).iter().map(|p| std::fs::metadata(p).expect("size").len()).sum()
}

/// Copies `pack` and its index to `copy` (a `.pack` path), as a second pack of the same
/// objects.
pub(crate) fn copy_pack(pack: &Path, copy: &Path) {
    std::fs::copy(pack, copy).expect("copy pack");
    std::fs::copy(pack.with_extension("idx"), copy.with_extension("idx")).expect("copy index");
}
