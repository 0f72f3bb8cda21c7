//! The lifecycle of a project (docs/compat/tools.md §2.5–2.6, §4.8, HEAD only):
//! archive_project, unarchive_project (also by id, the web UI's buttons), hard_delete_project
//! and purge_old_messages; and what both hard deletes share (`agents/lifecycle.rs` deletes an
//! agent).
//!
//! Hard deletes remove the database rows in one transaction, then remove the project's (or
//! agent's) directory from the archive's work tree, as the reference does, without a Git
//! commit: the history keeps every file, and HEAD keeps them too until a later commit.

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::{Error, Result};
use crate::model::bounds;
use crate::model::time::Timestamp;
use crate::ops::{Mailroom, resolve};
use crate::records::ProjectId;
use crate::store::db::lifecycle::ProjectDeletion;

/// The confirmation phrase hard deletes require, verbatim.
pub const HARD_DELETE_CONFIRMATION: &str = "I UNDERSTAND";

/// Default age of purge_old_messages (`RETENTION_MAX_AGE_DAYS`).
pub const DEFAULT_RETENTION_DAYS: i64 = 180;

/// Result of archive_project / unarchive_project.
#[derive(Debug, Clone, Serialize)]
pub struct ProjectStatus {
    pub status: &'static str,
    pub project_key: String,
    pub slug: String,
}

/// What a hard delete removed from the archive's work tree.
#[derive(Debug, Clone, Default, Serialize)]
pub struct Removal {
    pub archive_files_removed: usize,
    pub archive_dirs_removed: usize,
    #[serde(skip)]
    pub errors: Vec<String>,
}

/// `deleted_counts` of hard_delete_project.
#[derive(Debug, Clone, Serialize)]
pub struct ProjectCounts {
    /// The rows removed, per table.
    #[serde(flatten)]
    pub rows: ProjectDeletion,
    pub archive_files_removed: usize,
    pub archive_dirs_removed: usize,
}

/// Result of hard_delete_project.
#[derive(Debug, Clone, Serialize)]
pub struct ProjectDeleted {
    pub status: &'static str,
    pub project_key: String,
    pub slug: String,
    pub deleted_counts: ProjectCounts,
    pub filesystem_errors: Vec<String>,
}

/// Result of purge_old_messages.
#[derive(Debug, Clone, Serialize)]
pub struct Purge {
    pub status: &'static str,
    pub messages_affected: usize,
    pub cutoff_date: Timestamp,
    pub max_age_days: i64,
}

impl Mailroom {
    /// Flags a project archived (`archived = true`) or active again. Archived projects keep
    /// working; only their outputs show `archived_at`.
    pub async fn set_project_archived(
        &self,
        project_key: String,
        archived: bool,
    ) -> Result<ProjectStatus> {
        self.store
            .write(move |db| {
                let project = resolve::project(db, &project_key)?;
                db.set_project_archived(project.id, archived.then(Timestamp::now))?;
                let status = if archived { "archived" } else { "active" };
                Ok(ProjectStatus { status, project_key, slug: project.slug })
            })
            .await
    }

    /// Archives a project named by id, or makes it active again.
    pub async fn set_project_archived_by_id(
        &self,
        project_id: ProjectId,
        archived: bool,
    ) -> Result<ProjectStatus> {
        let slug = self
            .store
            .read(move |db| {
                db.project_by_id(project_id)?.map(|p| p.slug).ok_or_else(|| {
                    Error::not_found(format!("project_id: no project {project_id}."))
                })
            })
            .await?;
        self.set_project_archived(slug, archived).await
    }

    /// Deletes a project and everything in it (one transaction), then its archive directory.
    pub async fn hard_delete_project(
        &self,
        project_key: String,
        confirmation: String,
    ) -> Result<ProjectDeleted> {
        check_confirmation(&confirmation)?;
        let key = project_key.clone();
        let (slug, deleted) = self
            .store
            .write(move |db| {
                let project = resolve::project(db, &key)?;
                Ok((project.slug.clone(), db.hard_delete_project(project.id)?))
            })
            .await?;
        let removal = self.remove_archive_dir(Path::new("projects").join(&slug)).await;
        Ok(ProjectDeleted {
            status: "hard_deleted",
            project_key,
            slug,
            deleted_counts: ProjectCounts {
                rows: deleted,
                archive_files_removed: removal.archive_files_removed,
                archive_dirs_removed: removal.archive_dirs_removed,
            },
            filesystem_errors: removal.errors,
        })
    }

    /// Counts (dry run) or deletes a project's messages older than `max_age_days` (default
    /// `RETENTION_MAX_AGE_DAYS`). Database only: the archive keeps its files.
    pub async fn purge_old_messages(
        &self,
        project_key: String,
        max_age_days: Option<i64>,
        dry_run: bool,
    ) -> Result<Purge> {
        let days = max_age_days.unwrap_or(DEFAULT_RETENTION_DAYS);
        if days < 0 {
            return Err(Error::invalid(format!("max_age_days must be zero or more (got {days}).")));
        }
        bounds::days("max_age_days", days, 0)?;
        let cutoff = Timestamp::now().plus_seconds(-days.saturating_mul(86_400));
        let job = move |db: &crate::store::Db<'_>| {
            let project = resolve::project(db, &project_key)?;
            if dry_run {
                db.count_messages_before(project.id, cutoff)
            } else {
                db.purge_messages_before(project.id, cutoff)
            }
        };
        let messages_affected =
            if dry_run { self.store.read(job).await? } else { self.store.write(job).await? };
        Ok(Purge {
            status: if dry_run { "dry_run" } else { "purged" },
            messages_affected,
            cutoff_date: cutoff,
            max_age_days: days,
        })
    }

    /// Removes a directory of the archive's work tree (best effort). Waits for the archive
    /// writer first, so that work it had queued (which renders nothing once the rows are
    /// gone) cannot write into the directory after it is removed; on a shared archive whose
    /// leader does not catch up in time, the directory is left and the error says so.
    pub(crate) async fn remove_archive_dir(&self, relative: PathBuf) -> Removal {
        let Some(archive) = &self.archive else { return Removal::default() };
        let dir = archive.root().join(relative);
        if !archive.flushed().await {
            // Of several servers, the leader may still be writing there: its files stay.
            let error = format!(
                "{} was left in place: the archive's leader has not yet committed the work \
                 queued before the delete (remove it once `mailroom archive verify` shows \
                 nothing queued)",
                dir.display()
            );
            return Removal { errors: vec![error], ..Removal::default() };
        }
        tokio::task::spawn_blocking(move || remove_tree(&dir)).await.unwrap_or_else(|e| Removal {
            errors: vec![format!("removal task failed: {e}")],
            ..Removal::default()
        })
    }
}

pub(crate) fn check_confirmation(confirmation: &str) -> Result<()> {
    if confirmation == HARD_DELETE_CONFIRMATION {
        return Ok(());
    }
    Err(Error::invalid(format!(
        "confirmation must be exactly '{HARD_DELETE_CONFIRMATION}' to hard delete; nothing \
         was deleted."
    )))
}

/// Removes `dir` and everything under it, counting files and directories; errors are
/// collected (the database rows are already gone, so the delete itself has succeeded).
fn remove_tree(dir: &Path) -> Removal {
    let mut removal = Removal::default();
    if !dir.exists() {
        return removal;
    }
    count_tree(dir, &mut removal);
    if let Err(e) = std::fs::remove_dir_all(dir) {
        removal.errors.push(format!("{}: {e}", dir.display()));
    }
    removal
}

fn count_tree(dir: &Path, removal: &mut Removal) {
    removal.archive_dirs_removed += 1;
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) => {
            removal.errors.push(format!("{}: {e}", dir.display()));
            return;
        }
    };
    for entry in entries.flatten() {
        match entry.file_type() {
            Ok(kind) if kind.is_dir() => count_tree(&entry.path(), removal),
            Ok(_) => removal.archive_files_removed += 1,
            Err(e) => removal.errors.push(format!("{}: {e}", entry.path().display())),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn confirmation_must_be_exact() {
        assert!(check_confirmation("I UNDERSTAND").is_ok());
        for wrong in ["i understand", "I UNDERSTAND ", "", "yes"] {
            assert!(check_confirmation(wrong).is_err(), "{wrong:?}");
        }
    }

    #[test]
    fn removing_a_tree_counts_files_and_directories() {
        let root = tempfile::tempdir().expect("temp dir");
        let dir = root.path().join("p");
        std::fs::create_dir_all(dir.join("agents/BlueLake")).expect("dirs");
        std::fs::write(dir.join("agents/BlueLake/profile.json"), "{}").expect("file");
        std::fs::write(dir.join("a.md"), "x").expect("file");
        let removal = remove_tree(&dir);
        assert_eq!((removal.archive_files_removed, removal.archive_dirs_removed), (2, 3));
        assert!(removal.errors.is_empty());
        assert!(!dir.exists());
        assert_eq!(remove_tree(&dir).archive_dirs_removed, 0, "a missing tree removes nothing");
    }
}
