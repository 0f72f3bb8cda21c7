//! The `git` command line in tests: reading the archive as a person would, and making the
//! code repositories the commit guard is installed into.

use std::path::Path;
use std::process::{Command, Stdio};

/// The environment variables the commit guard reads (`docs/compat/cli.md` §4.2). A test sets
/// the ones it means; [`git_command`] removes the rest, so the test runner's own values never
/// reach an installed hook.
pub const GUARD_VARIABLES: [&str; 5] = [
    "WORKTREES_ENABLED",
    "GIT_IDENTITY_ENABLED",
    "AGENT_MAIL_GUARD_MODE",
    "AGENT_MAIL_BYPASS",
    "AGENT_NAME",
];

/// `git -C dir args…`, not yet run: isolated from the user's and the system's configuration,
/// committing as `Test <test@example.com>`, without standard input and without the
/// [`GUARD_VARIABLES`]. Add to it (an `AGENT_NAME`, …) and run it when the test looks at
/// the exit status or at bytes; otherwise use [`git`].
pub fn git_command(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new("git");
    command
        .arg("-C")
        .arg(dir)
        .args(args)
        .env("GIT_CONFIG_GLOBAL", "/dev/null")
        .env("GIT_CONFIG_NOSYSTEM", "1")
        .env("GIT_AUTHOR_NAME", "Test")
        .env("GIT_AUTHOR_EMAIL", "test@example.com")
        .env("GIT_COMMITTER_NAME", "Test")
        .env("GIT_COMMITTER_EMAIL", "test@example.com")
        .stdin(Stdio::null());
    for name in GUARD_VARIABLES {
        command.env_remove(name);
    }
    command
}

/// Runs `git -C dir args…` as [`git_command`] builds it and returns its standard output
/// (lossy UTF-8); fails the test, with git's standard error, when git fails.
pub fn git(dir: &Path, args: &[&str]) -> String {
    let output = git_command(dir, args).output().expect("run git");
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}
