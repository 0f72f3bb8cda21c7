//! The retention and quota report (`RETENTION_REPORT_ENABLED`, `QUOTA_ENABLED`): per project
//! of the archive's work tree, the message files older than `RETENTION_MAX_AGE_DAYS` (by
//! modification time), the largest inboxes and the attachments' bytes; projects over a quota
//! are logged at WARN. Nothing is deleted. Projects `RETENTION_IGNORE_PROJECT_PATTERNS` hides
//! are left out. Months retired from the work tree (`archive/work_tree.rs`) are counted from
//! HEAD, a month as old when it ended before the retention age began.

use std::path::Path;
use std::time::{Duration, SystemTime};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::model::fnmatch::fnmatch;
use crate::model::time::Timestamp;
use crate::ops::Mailroom;

/// One project's figures.
#[derive(Debug, Clone, Default, Serialize)]
pub struct ProjectRetention {
    pub project: String,
    /// Canonical message files older than the retention age.
    pub old_messages: usize,
    pub messages: usize,
    /// The agent with the most inbox files, and how many.
    pub largest_inbox: Option<(String, usize)>,
    pub attachment_bytes: u64,
    /// What exceeds a quota: `"attachments"`, `"inbox:<agent>"`.
    pub over_quota: Vec<String>,
}

/// What a retention run found.
#[derive(Debug, Clone, Default, Serialize)]
pub struct RetentionReport {
    pub max_age_days: i64,
    pub projects: Vec<ProjectRetention>,
}

/// The limits a retention run measures against (0: none).
#[derive(Debug, Clone, Copy)]
struct Quota {
    attachments_bytes: u64,
    inbox_count: usize,
}

impl Mailroom {
    /// Walks the archive's work tree of every project not hidden and reports.
    pub(super) async fn retention_report(&self) -> Result<RetentionReport> {
        let settings = self.config.upkeep.clone();
        let hidden = self.config.retention_ignore_project_patterns.clone();
        let storage_root = self.config.storage_root.clone();
        let root = storage_root.join("projects");
        let quota = Quota {
            attachments_bytes: if settings.quota_enabled {
                settings.quota_attachments_limit_bytes
            } else {
                0
            },
            inbox_count: if settings.quota_enabled { settings.quota_inbox_limit_count } else { 0 },
        };
        let projects = self.store.read(|db| db.all_projects()).await?;
        let max_age_days = settings.retention_max_age_days;
        // A thread of its own at background priority (a pooled blocking thread would keep the
        // lowered priority for the requests it serves next).
        let (done, report) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name("mailroom-retention".into())
            .spawn(move || {
                crate::background::lower_thread_priority();
                let age = Duration::from_secs(u64::try_from(max_age_days).unwrap_or(0) * 86_400);
                let cutoff = Cutoff {
                    time: SystemTime::now() - age,
                    month: Timestamp::now()
                        .plus_seconds(-i64::try_from(age.as_secs()).unwrap_or(i64::MAX))
                        .year_month(),
                };
                let retired = mailroom_git::retired_directories(&storage_root).unwrap_or_else(|e| {
                    tracing::warn!(error = %e, "retired archive months not counted");
                    Vec::new()
                });
                let shown = projects.into_iter().filter(|p| {
                    !hidden.iter().any(|pattern| fnmatch(&p.slug, pattern) || fnmatch(&p.human_key, pattern))
                });
                let projects = shown
                    .map(|p| {
                        let figures =
                            measure(&root.join(&p.slug), &p.slug, &retired, cutoff, quota);
                        for what in &figures.over_quota {
                            tracing::warn!(event = "quota_exceeded", project = %p.slug, what = %what, "over quota");
                        }
                        figures
                    })
                    .collect();
                let _ = done.send(RetentionReport { max_age_days, projects });
            })
            .map_err(|e| Error::internal(format!("cannot start the retention report: {e}")))?;
        report.await.map_err(|_| Error::internal("the retention report stopped"))
    }
}

/// Where the retention age begins: the instant, and its month (`YYYY`, `MM`).
#[derive(Debug, Clone, Copy)]
struct Cutoff {
    time: SystemTime,
    month: (i32, u32),
}

/// One project directory's figures, with its retired months (`retired`: every retired
/// directory of the archive and the files HEAD holds in it).
fn measure(
    dir: &Path,
    slug: &str,
    retired: &[(String, usize)],
    cutoff: Cutoff,
    quota: Quota,
) -> ProjectRetention {
    let mut figures = ProjectRetention { project: slug.to_string(), ..ProjectRetention::default() };
    walk(&dir.join("messages"), &mut |path, meta| {
        if path.extension().is_some_and(|e| e == "md")
            && !path.components().any(|c| c.as_os_str() == "threads")
        {
            figures.messages += 1;
            if meta.modified().is_ok_and(|m| m < cutoff.time) {
                figures.old_messages += 1;
            }
        }
    });
    let prefix = format!("projects/{slug}/");
    let retired: Vec<(&str, usize)> = retired
        .iter()
        .filter_map(|(path, files)| Some((path.strip_prefix(&prefix)?, *files)))
        .collect();
    for (path, files) in &retired {
        // A month's thread digests (`messages/threads/YYYY/MM`) are not messages.
        let Some(month) = path.strip_prefix("messages/").filter(|m| !m.starts_with("threads/"))
        else {
            continue;
        };
        figures.messages += files;
        if month_of(month).is_some_and(|month| month < cutoff.month) {
            figures.old_messages += files;
        }
    }
    for agent in std::fs::read_dir(dir.join("agents")).into_iter().flatten().flatten() {
        let inbox = format!("agents/{}/inbox/", agent.file_name().to_string_lossy());
        let mut count: usize =
            retired.iter().filter(|(path, _)| path.starts_with(&inbox)).map(|(_, n)| n).sum();
        walk(&agent.path().join("inbox"), &mut |path, _| {
            count += usize::from(path.extension().is_some_and(|e| e == "md"))
        });
        let name = agent.file_name().to_string_lossy().into_owned();
        if quota.inbox_count > 0 && count > quota.inbox_count {
            figures.over_quota.push(format!("inbox:{name}"));
        }
        if figures.largest_inbox.as_ref().is_none_or(|(_, most)| count > *most) {
            figures.largest_inbox = Some((name, count));
        }
    }
    walk(&dir.join("attachments"), &mut |path, meta| {
        if path.extension().is_some_and(|e| e == "webp") {
            figures.attachment_bytes += meta.len();
        }
    });
    if quota.attachments_bytes > 0 && figures.attachment_bytes > quota.attachments_bytes {
        figures.over_quota.push("attachments".to_string());
    }
    figures.over_quota.sort();
    figures
}

/// The month of a `YYYY/MM` directory path.
fn month_of(path: &str) -> Option<(i32, u32)> {
    let (year, month) = path.split_once('/')?;
    Some((year.parse().ok()?, month.parse().ok()?))
}

/// Calls `visit` on every file under `dir` (symlinks not followed).
fn walk(dir: &Path, visit: &mut dyn FnMut(&Path, &std::fs::Metadata)) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let Ok(meta) = entry.metadata() else { continue };
        if meta.is_dir() {
            walk(&entry.path(), visit);
        } else if meta.is_file() {
            visit(&entry.path(), &meta);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn put(path: &Path, bytes: usize, age_days: u64) {
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, vec![b'x'; bytes]).expect("write");
        let when = SystemTime::now() - Duration::from_secs(age_days * 86_400);
        std::fs::File::options()
            .write(true)
            .open(path)
            .expect("open")
            .set_modified(when)
            .expect("mtime");
    }

    #[test]
    fn old_files_big_inboxes_and_attachments_are_counted_against_the_quotas() {
        let dir = tempfile::tempdir().expect("temp dir");
        let project = dir.path().join("p");
        put(&project.join("messages/2024/01/old__a__1.md"), 10, 400);
        put(&project.join("messages/2026/11/new__b__2.md"), 10, 1);
        put(&project.join("messages/threads/t.md"), 10, 400);
        for n in 0..3 {
            put(&project.join(format!("agents/BlueLake/inbox/2026/11/m{n}.md")), 10, 1);
        }
        put(&project.join("agents/GreenCastle/inbox/2026/11/m.md"), 10, 1);
        put(&project.join("attachments/ab/abc.webp"), 2000, 1);
        put(&project.join("attachments/_manifests/abc.json"), 5000, 1);
        let cutoff = Cutoff {
            time: SystemTime::now() - Duration::from_secs(180 * 86_400),
            month: (2026, 5),
        };

        let quota = Quota { attachments_bytes: 1000, inbox_count: 2 };
        let figures = measure(&project, "p", &[], cutoff, quota);
        assert_eq!(
            (figures.messages, figures.old_messages),
            (2, 1),
            "threads are digests, not messages"
        );
        assert_eq!(figures.largest_inbox, Some(("BlueLake".to_string(), 3)));
        assert_eq!(figures.attachment_bytes, 2000, "only the images");
        assert_eq!(figures.over_quota, ["attachments", "inbox:BlueLake"]);
        let unlimited =
            measure(&project, "p", &[], cutoff, Quota { attachments_bytes: 0, inbox_count: 0 });
        assert!(unlimited.over_quota.is_empty());

        // Months retired from the work tree count from HEAD: a month ended before the
        // retention age is old; another project's retired months are not this one's.
        let retired = [
            ("projects/p/messages/2025/12".to_string(), 40),
            ("projects/p/messages/2026/05".to_string(), 7),
            ("projects/p/agents/GreenCastle/inbox/2025/12".to_string(), 5),
            ("projects/p/messages/threads/2025/12".to_string(), 9),
            ("projects/q/messages/2025/12".to_string(), 1000),
        ];
        let figures = measure(&project, "p", &retired, cutoff, quota);
        assert_eq!((figures.messages, figures.old_messages), (2 + 47, 1 + 40));
        assert_eq!(figures.largest_inbox, Some(("GreenCastle".to_string(), 6)));
        assert_eq!(figures.over_quota, ["attachments", "inbox:BlueLake", "inbox:GreenCastle"]);
    }
}
