//! Checks the archive's tests share.

use std::path::Path;
use std::process::Command;

/// Asserts that `git fsck --strict` finds nothing wrong in the repository at `root`.
pub(super) fn assert_fsck_clean(root: &Path) {
    let fsck = Command::new("git")
        .arg("-C")
        .arg(root)
        .args(["fsck", "--strict", "--no-dangling"])
        .output()
        .expect("git fsck");
    assert!(fsck.status.success(), "{}", String::from_utf8_lossy(&fsck.stderr));
}
