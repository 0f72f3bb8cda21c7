//! The Git commit guard (docs/compat/cli.md §4): hooks that refuse a commit or a push
//! touching files another agent holds an exclusive reservation on.
//!
//! `hooks` installs and removes them: a POSIX `sh` chain-runner per hook (the reference's
//! marker, so either implementation recognises the other's) that runs `hooks.d/<hook>/*`,
//! and a plugin there that execs `mailroom guard check`, naming the repository it guards.
//! `project` finds the project an install is for, refusing one neither the database nor the
//! archive knows. `reservations` loads the project's
//! reservations in force, from the server's database when it knows the project (the archive's
//! files lag behind it) or else from the archive's reservation JSON files, and matches changed
//! paths against them; `changes` asks Git which paths a commit or a push changes. The check
//! opens the database read-only and starts no async runtime, so it works while the server is
//! down and starts fast.

pub mod changes;
pub mod hooks;
pub mod project;
pub mod reservations;

/// The Git hooks the guard installs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Hook {
    /// Checks the staged paths.
    PreCommit,
    /// Checks the paths changed by the commits being pushed.
    PrePush,
}

impl Hook {
    /// Both hooks, in the order they are reported.
    pub const ALL: [Hook; 2] = [Hook::PreCommit, Hook::PrePush];

    /// The hook's file name in the hooks directory.
    pub fn name(self) -> &'static str {
        match self {
            Hook::PreCommit => "pre-commit",
            Hook::PrePush => "pre-push",
        }
    }
}

/// The reference's truthy spellings for the gate and bypass variables (`1,true,t,yes,y`,
/// case-insensitive, surrounding whitespace ignored).
pub fn is_truthy(value: Option<&str>) -> bool {
    value.is_some_and(|v| {
        matches!(v.trim().to_ascii_lowercase().as_str(), "1" | "true" | "t" | "yes" | "y")
    })
}

/// Whether `AGENT_MAIL_GUARD_MODE` asks for advisory mode (report, never block).
pub fn is_advisory_mode(value: Option<&str>) -> bool {
    value.is_some_and(|v| {
        matches!(v.trim().to_ascii_lowercase().as_str(), "warn" | "advisory" | "adv")
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn truthy_and_advisory_spellings() {
        for (value, truthy) in [
            (Some("1"), true),
            (Some(" TRUE "), true),
            (Some("t"), true),
            (Some("Yes"), true),
            (Some("y"), true),
            (Some("0"), false),
            (Some("on"), false),
            (Some(""), false),
            (None, false),
        ] {
            assert_eq!(is_truthy(value), truthy, "{value:?}");
        }
        for (value, advisory) in [
            (Some("warn"), true),
            (Some("Advisory"), true),
            (Some(" adv"), true),
            (Some("block"), false),
            (None, false),
        ] {
            assert_eq!(is_advisory_mode(value), advisory, "{value:?}");
        }
    }
}
