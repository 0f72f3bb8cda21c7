//! The staleness heuristic of docs/compat/tools.md §6.5: may a reservation be released before
//! its TTL because its holder looks abandoned?
//!
//! Agent and mail activity come from the database; file and Git activity from the project's
//! directory (its `human_key`) when it exists on this machine. The directory walk and the Git
//! history scan touch the disk, so callers run [`workspace_activity`] on a blocking thread,
//! never inside the single writer's transaction.

use std::path::Path;

use serde::Serialize;

use crate::model::path_pattern::{PathPattern, has_glob, is_virtual, normalize};
use crate::model::time::Timestamp;

/// Most directory entries examined per pattern, so a huge workspace cannot stall a request.
const MAX_WALK_ENTRIES: usize = 20_000;

/// The thresholds (`FILE_RESERVATION_INACTIVITY_SECONDS`, `..._ACTIVITY_GRACE_SECONDS`).
#[derive(Debug, Clone, Copy)]
pub struct Thresholds {
    pub inactivity_seconds: i64,
    pub grace_seconds: i64,
}

/// Activity signals of one reservation and the verdict drawn from them.
#[derive(Debug, Clone, Serialize, PartialEq)]
pub struct Staleness {
    pub stale: bool,
    pub stale_reasons: Vec<String>,
    pub last_agent_activity_ts: Option<Timestamp>,
    pub last_mail_activity_ts: Option<Timestamp>,
    pub last_filesystem_activity_ts: Option<Timestamp>,
    pub last_git_activity_ts: Option<Timestamp>,
}

/// What the project's directory says about a pattern.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub enum Workspace {
    /// The project's directory does not exist here.
    #[default]
    Unavailable,
    /// No file or directory matches the pattern.
    Unmatched,
    /// Matching files exist; their newest mtime and newest Git commit touching them.
    Matched { filesystem: Option<Timestamp>, git: Option<Timestamp> },
}

/// The verdict for a reservation that is not released: stale when the holder is inactive and
/// no mail, file or Git activity is recent. Reasons follow the reference's order and names.
pub fn assess(
    agent_last_active: Option<Timestamp>,
    last_mail: Option<Timestamp>,
    workspace: Workspace,
    now: Timestamp,
    limits: Thresholds,
) -> Staleness {
    let (inactivity, grace) = (limits.inactivity_seconds, limits.grace_seconds);
    let inactive = agent_last_active.is_none_or(|t| t < now.plus_seconds(-inactivity));
    let recent = |t: Option<Timestamp>| t.is_some_and(|t| t >= now.plus_seconds(-grace));
    let mut reasons = vec![if inactive {
        format!("agent_inactive>{inactivity}s")
    } else {
        "agent_recently_active".to_string()
    }];
    let recent_mail = recent(last_mail);
    reasons.push(if recent_mail {
        "mail_activity_recent".to_string()
    } else {
        format!("no_recent_mail_activity>{grace}s")
    });
    let (mut filesystem, mut git) = (None, None);
    let mut recent_files = false;
    match workspace {
        Workspace::Unavailable => reasons.push("workspace_unavailable".to_string()),
        Workspace::Unmatched => reasons.push("path_pattern_unmatched".to_string()),
        Workspace::Matched { filesystem: fs, git: commit } => {
            (filesystem, git) = (fs, commit);
            let (recent_fs, recent_git) = (recent(fs), recent(commit));
            recent_files = recent_fs || recent_git;
            reasons.push(if recent_fs {
                "filesystem_activity_recent".to_string()
            } else {
                format!("no_recent_filesystem_activity>{grace}s")
            });
            reasons.push(if recent_git {
                "git_activity_recent".to_string()
            } else {
                format!("no_recent_git_activity>{grace}s")
            });
        }
    }
    Staleness {
        stale: inactive && !recent_mail && !recent_files,
        stale_reasons: reasons,
        last_agent_activity_ts: agent_last_active,
        last_mail_activity_ts: last_mail,
        last_filesystem_activity_ts: filesystem,
        last_git_activity_ts: git,
    }
}

/// File and Git activity of `pattern` inside the project directory `human_key`.
///
/// Globs are matched against the directory's files anchored at its root (like Python's
/// `Path.glob`, which the reference uses), plain paths are looked up directly; virtual
/// patterns match nothing. Git activity is the newest commit, within `grace_seconds`, that
/// changed a matching path. Blocking: run it off the async workers.
pub fn workspace_activity(
    human_key: &str,
    pattern: &str,
    now: Timestamp,
    grace_seconds: i64,
) -> Workspace {
    let root = Path::new(human_key);
    if !root.is_dir() {
        return Workspace::Unavailable;
    }
    if is_virtual(pattern) {
        return Workspace::Unmatched;
    }
    let relative = normalize(pattern.trim());
    let anchored = PathPattern::new(&format!("/{relative}"));
    let newest = if has_glob(&relative) {
        newest_glob_match(root, &anchored)
    } else {
        std::fs::metadata(root.join(&relative)).ok().map(|m| modified(&m))
    };
    let Some(filesystem) = newest else { return Workspace::Unmatched };
    let git = newest_commit_touching(root, &anchored, now.plus_seconds(-grace_seconds));
    Workspace::Matched { filesystem, git }
}

/// `None` when nothing matches; otherwise the newest mtime among the matches (itself `None`
/// when no mtime could be read).
fn newest_glob_match(root: &Path, pattern: &PathPattern) -> Option<Option<Timestamp>> {
    let mut found: Option<Option<Timestamp>> = None;
    let mut pending = vec![root.to_path_buf()];
    let mut seen = 0usize;
    while let Some(directory) = pending.pop() {
        let Ok(entries) = std::fs::read_dir(&directory) else { continue };
        for entry in entries.flatten() {
            seen += 1;
            if seen > MAX_WALK_ENTRIES {
                return found;
            }
            let path = entry.path();
            let Ok(relative) = path.strip_prefix(root) else { continue };
            let relative = relative.to_string_lossy().replace('\\', "/");
            let Ok(meta) = entry.metadata() else { continue };
            if meta.is_dir() && entry.file_name() != ".git" {
                pending.push(path.clone());
            }
            if pattern.matches(&relative) {
                let time = modified(&meta);
                found = Some(found.flatten().max(time).or(time));
            }
        }
    }
    found
}

fn modified(meta: &std::fs::Metadata) -> Option<Timestamp> {
    let since = meta.modified().ok()?.duration_since(std::time::UNIX_EPOCH).ok()?;
    Some(Timestamp::from_micros(i64::try_from(since.as_micros()).ok()?))
}

/// The newest commit since `cutoff` (reachable from HEAD) that changed a path the pattern
/// matches, relative to the project directory.
fn newest_commit_touching(
    root: &Path,
    pattern: &PathPattern,
    cutoff: Timestamp,
) -> Option<Timestamp> {
    let repo = git2::Repository::discover(root).ok()?;
    let workdir = repo.workdir()?.canonicalize().ok()?;
    let prefix = root.canonicalize().ok()?.strip_prefix(&workdir).ok()?.to_path_buf();
    let prefix = prefix.to_string_lossy().replace('\\', "/");
    let mut walk = repo.revwalk().ok()?;
    walk.set_sorting(git2::Sort::TIME).ok()?;
    walk.push_head().ok()?;
    for oid in walk.flatten() {
        let commit = repo.find_commit(oid).ok()?;
        let when = Timestamp::from_micros(commit.time().seconds().saturating_mul(1_000_000));
        if when < cutoff {
            return None;
        }
        let tree = commit.tree().ok()?;
        let parent = commit.parent(0).ok().and_then(|p| p.tree().ok());
        let diff = repo.diff_tree_to_tree(parent.as_ref(), Some(&tree), None).ok()?;
        let touched = diff.deltas().any(|delta| {
            [delta.new_file().path(), delta.old_file().path()].into_iter().flatten().any(|path| {
                let path = path.to_string_lossy().replace('\\', "/");
                let inside = if prefix.is_empty() {
                    Some(path.as_str())
                } else {
                    path.strip_prefix(prefix.as_str()).and_then(|p| p.strip_prefix('/'))
                };
                inside.is_some_and(|p| pattern.matches(p))
            })
        });
        if touched {
            return Some(when);
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    const LIMITS: Thresholds = Thresholds { inactivity_seconds: 1800, grace_seconds: 900 };

    #[test]
    fn an_active_agent_is_never_stale() {
        let now = Timestamp::now();
        let verdict = assess(Some(now), Some(now), Workspace::Unavailable, now, LIMITS);
        assert!(!verdict.stale);
        assert_eq!(
            verdict.stale_reasons,
            ["agent_recently_active", "mail_activity_recent", "workspace_unavailable"]
        );
    }

    #[test]
    fn an_idle_agent_without_recent_activity_is_stale() {
        let now = Timestamp::now();
        let idle = Some(now.plus_seconds(-4000));
        let verdict = assess(idle, None, Workspace::Unmatched, now, LIMITS);
        assert!(verdict.stale);
        assert_eq!(
            verdict.stale_reasons,
            ["agent_inactive>1800s", "no_recent_mail_activity>900s", "path_pattern_unmatched"]
        );
        let recent_mail =
            assess(idle, Some(now.plus_seconds(-60)), Workspace::Unmatched, now, LIMITS);
        assert!(!recent_mail.stale, "recent mail keeps it alive");
        let files = Workspace::Matched { filesystem: Some(now), git: None };
        let touched = assess(idle, None, files, now, LIMITS);
        assert!(!touched.stale, "recent file changes keep it alive");
        assert_eq!(
            touched.stale_reasons[2..],
            ["filesystem_activity_recent", "no_recent_git_activity>900s"]
        );
    }

    #[test]
    fn workspace_activity_reads_the_project_directory() {
        let dir = tempfile::tempdir().expect("temp dir");
        std::fs::create_dir_all(dir.path().join("src/sub")).expect("mkdir");
        std::fs::write(dir.path().join("src/sub/a.py"), "x").expect("write");
        let key = dir.path().to_string_lossy().into_owned();
        let now = Timestamp::now();
        assert!(matches!(
            workspace_activity(&key, "src/**", now, 900),
            Workspace::Matched { filesystem: Some(_), .. }
        ));
        assert!(matches!(
            workspace_activity(&key, "src/sub/a.py", now, 900),
            Workspace::Matched { .. }
        ));
        assert_eq!(
            workspace_activity(&key, "*.py", now, 900),
            Workspace::Unmatched,
            "anchored at the root"
        );
        assert_eq!(workspace_activity(&key, "tool://x", now, 900), Workspace::Unmatched);
        assert_eq!(
            workspace_activity("/no/such/dir/anywhere", "src/**", now, 900),
            Workspace::Unavailable
        );
    }

    #[test]
    fn git_activity_is_the_newest_commit_touching_a_match() {
        let dir = tempfile::tempdir().expect("temp dir");
        let repo = git2::Repository::init(dir.path()).expect("init");
        std::fs::create_dir_all(dir.path().join("src")).expect("mkdir");
        std::fs::write(dir.path().join("src/a.rs"), "fn main() {}").expect("write");
        std::fs::write(dir.path().join("notes.md"), "untracked").expect("write");
        let mut index = repo.index().expect("index");
        index.add_path(Path::new("src/a.rs")).expect("add");
        let tree = repo.find_tree(index.write_tree().expect("tree")).expect("tree");
        let who = git2::Signature::now("t", "t@example.com").expect("signature");
        repo.commit(Some("HEAD"), &who, &who, "add a.rs", &tree, &[]).expect("commit");
        let key = dir.path().to_string_lossy().into_owned();
        let now = Timestamp::now();
        let Workspace::Matched { git, .. } = workspace_activity(&key, "src/*.rs", now, 900) else {
            panic!("src/a.rs matches");
        };
        assert!(git.is_some(), "the commit touched src/a.rs");
        let Workspace::Matched { git, .. } = workspace_activity(&key, "notes.md", now, 900) else {
            panic!("notes.md exists");
        };
        assert_eq!(git, None, "no commit touched notes.md");
    }
}
