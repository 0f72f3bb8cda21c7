//! How much of the archive the work tree holds. Every archived file has an entry in Git's
//! index, which the writer rewrites (streamed) as commits land, and a file in the work tree;
//! left alone both grow with the archive without end (about four files per message). Past
//! `ARCHIVE_WORKTREE_MAX_FILES` index entries the oldest month leaves the work tree: every
//! `messages/YYYY/MM`, `messages/threads/YYYY/MM` and `agents/<Name>/{inbox,outbox}/YYYY/MM`
//! directory of that month, in every project, is retired (`mailroom_git`'s sparse checkout: one index entry each, no
//! files), one month per look, down to the current month if the budget demands it. The
//! commits keep every file (`git show HEAD:<path>`, `git log`, the web UI and `archive
//! verify` read them there); `git sparse-checkout add <dir>` brings a directory back.
//! Profiles, the reference's flat thread digests, reservation artifacts and attachments
//! never leave.

use std::collections::BTreeMap;
use std::time::{Duration, Instant};

use mailroom_git::ArchiveRepo;

use crate::error::{Error, Result};

/// How often the writer looks, at most, while the index is over its budget.
const LOOK_INTERVAL: Duration = Duration::from_secs(10);

/// The writer's keeper of the work tree's budget.
pub(super) struct WorkTreeBudget {
    /// Index entries past which a month is retired; 0: no limit.
    max_files: usize,
    last_look: Option<Instant>,
    /// The index's entries when a look last found no month to retire (said once): the next
    /// look waits until a tenth of the budget more has been written, rather than walking
    /// every mailbox's months each interval for nothing.
    full_at: Option<usize>,
}

impl WorkTreeBudget {
    pub(super) fn new(max_files: usize) -> Self {
        Self { max_files, last_look: None, full_at: None }
    }

    /// Retires the oldest month still in the work tree when the index is over budget (at
    /// most once per `LOOK_INTERVAL`). A failure is logged: the work tree only stays larger.
    pub(super) fn keep(&mut self, repo: &mut ArchiveRepo) {
        // While changes wait for the index (a human's Git holding it), its count is stale.
        if self.max_files == 0 || repo.index_entries() <= self.max_files || repo.index_stale() {
            return;
        }
        if self.last_look.is_some_and(|at| at.elapsed() < LOOK_INTERVAL)
            || self.full_at.is_some_and(|at| repo.index_entries() < at + self.max_files / 10)
        {
            return;
        }
        self.last_look = Some(Instant::now());
        match retire_oldest_month(repo) {
            Ok(Some((month, directories))) => {
                self.full_at = None;
                tracing::info!(
                    month = %month,
                    directories,
                    index_entries = repo.index_entries(),
                    budget = self.max_files,
                    "an archive month left the work tree (ARCHIVE_WORKTREE_MAX_FILES); Git \
                     keeps it"
                );
            }
            Ok(None) => {
                if self.full_at.is_none() {
                    tracing::warn!(
                        index_entries = repo.index_entries(),
                        budget = self.max_files,
                        "the archive's work tree is over ARCHIVE_WORKTREE_MAX_FILES with no \
                         month left to retire"
                    );
                }
                self.full_at = Some(repo.index_entries());
            }
            Err(e) => tracing::warn!(error = %e.message, "no archive month retired"),
        }
    }
}

/// Retires every directory of the oldest month still in the work tree; the month (`YYYY/MM`)
/// and how many directories, or `None` when no month directory is left.
fn retire_oldest_month(repo: &mut ArchiveRepo) -> Result<Option<(String, usize)>> {
    let months = month_directories(repo)?;
    let Some((month, directories)) = months.into_iter().next() else { return Ok(None) };
    let retired = repo.retire_directories(&directories).map_err(Error::from)?;
    Ok(Some((month, retired)))
}

/// The month directories of HEAD not yet retired, by month (`YYYY/MM`, oldest first).
fn month_directories(repo: &ArchiveRepo) -> Result<BTreeMap<String, Vec<String>>> {
    let retired: Vec<&str> = repo.retired_directories().collect();
    let mut months: BTreeMap<String, Vec<String>> = BTreeMap::new();
    let mut add_months_of = |base: String| -> Result<()> {
        for year in repo.directories_in(&base)?.into_iter().filter(|y| is_number(y, 4)) {
            for month in repo.directories_in(&format!("{base}/{year}"))? {
                let dir = format!("{base}/{year}/{month}");
                if is_number(&month, 2) && !retired.contains(&dir.as_str()) {
                    months.entry(format!("{year}/{month}")).or_default().push(dir);
                }
            }
        }
        Ok(())
    };
    for project in repo.directories_in("projects")? {
        let base = format!("projects/{project}");
        add_months_of(format!("{base}/messages"))?;
        add_months_of(format!("{base}/messages/threads"))?;
        for agent in repo.directories_in(&format!("{base}/agents"))? {
            for mailbox in ["inbox", "outbox"] {
                add_months_of(format!("{base}/agents/{agent}/{mailbox}"))?;
            }
        }
    }
    Ok(months)
}

fn is_number(name: &str, digits: usize) -> bool {
    name.len() == digits && name.bytes().all(|b| b.is_ascii_digit())
}

#[cfg(test)]
mod tests;
