//! `mailroom doctor repair`: what it would fix, from a [`Diagnosis`], and the fixes made in
//! the database. Safe fixes go first and need no confirmation: stale lock files whose owner
//! is gone, and expired reservations (released by the upkeep's own sweep, which the command
//! reaches through the server or the data directory). The fixes that delete rows or rebuild
//! the index follow, each confirmed by the operator.
//!
//! Those run on their own connection ([`DirectWriter`]), beside a running server if there is
//! one: each is one short `BEGIN IMMEDIATE` transaction that SQLite serialises with the
//! server's writer, and none touches what the server keeps in memory but the reservation
//! sets, which notice another connection's change. Messages deleted for want of a sender
//! queue the removal of their archive copies in the same transaction, as the web UI's
//! deletions do; the archive writer commits it with its next work (or at the next start).

use std::path::{Path, PathBuf};

use super::{Diagnosis, Scope};
use crate::error::Result;
use crate::store::DirectWriter;
use crate::store::db::archive_queue::Deletion;
use crate::store::db::doctor::Orphan;

/// One fix `doctor repair` can make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fix {
    /// Remove the stale reference-style lock files whose owner is gone.
    HealLocks,
    /// Release the reservations expired but not released.
    ReleaseExpired,
    /// Delete the orphaned rows of one kind.
    DeleteOrphans(Orphan),
    /// Empty the full-text index and index every message again.
    RebuildIndex,
}

impl Fix {
    /// Whether the operator must confirm it (it deletes rows or rebuilds an index).
    pub fn needs_confirmation(self) -> bool {
        matches!(self, Fix::DeleteOrphans(_) | Fix::RebuildIndex)
    }
}

/// A fix with what it would do, in words.
#[derive(Debug, Clone)]
pub struct PlannedFix {
    pub fix: Fix,
    pub description: String,
}

/// The fixes the diagnosis calls for, safe ones first.
pub fn plan(diagnosis: &Diagnosis) -> Vec<PlannedFix> {
    let mut fixes = Vec::new();
    let mut add = |fix, description: String| fixes.push(PlannedFix { fix, description });
    let dead = diagnosis.stale_locks.iter().filter(|l| l.owner_alive != Some(true)).count();
    let kept = diagnosis.stale_locks.len() - dead;
    if dead > 0 {
        let live = if kept > 0 {
            format!(" ({kept} old lock(s) whose owner still runs are kept)")
        } else {
            String::new()
        };
        add(Fix::HealLocks, format!("remove {dead} stale lock file(s) whose owner is gone{live}"));
    }
    let counts = &diagnosis.counts;
    if counts.expired_reservations > 0 {
        let n = counts.expired_reservations;
        add(
            Fix::ReleaseExpired,
            format!("release {n} expired reservation(s) (the upkeep's sweep)"),
        );
    }
    for (kind, n) in Orphan::ALL.into_iter().zip(counts.orphans) {
        if n > 0 {
            let extra = if kind == Orphan::MessageWithoutSender {
                " with their recipient rows and archive copies"
            } else {
                ""
            };
            add(Fix::DeleteOrphans(kind), format!("delete {n} {}{extra}", kind.label()));
        }
    }
    if counts.indexed != counts.messages {
        let (indexed, messages) = (counts.indexed, counts.messages);
        let what = format!("{indexed} indexed of {messages} messages");
        add(Fix::RebuildIndex, format!("rebuild the full-text index ({what}; whole database)"));
    }
    fixes
}

/// Removes the stale lock files (whose owner is gone) under the archive, or under the
/// project's directory; the paths removed.
pub fn heal_locks(storage_root: &Path, scope: Option<&Scope>) -> Vec<PathBuf> {
    let dir = scope.map_or(storage_root.to_path_buf(), |s| s.archive_dir(storage_root));
    crate::archive::locks::heal_stale_lock_files(&dir)
}

/// Deletes the orphaned rows of `kind` (of the scope's project only, when given) in one
/// transaction; how many. `archive_enabled`: whether deleted messages' copies are queued for
/// removal from the archive.
pub fn delete_orphans(
    database: &Path,
    archive_enabled: bool,
    kind: Orphan,
    scope: Option<&Scope>,
) -> Result<usize> {
    let project = scope.map(|s| s.project_id);
    DirectWriter::open(database, archive_enabled)?.write(|db| {
        if kind != Orphan::MessageWithoutSender {
            return db.delete_orphans(kind, project);
        }
        let ids = db.orphaned_message_ids(project)?;
        let mut paths = Vec::new();
        for &id in &ids {
            paths.extend(crate::archive::orphaned_message_files(db, id)?.unwrap_or_default());
            db.delete_message(id)?;
        }
        if !ids.is_empty() && db.archive_enabled() {
            paths.sort();
            paths.dedup();
            let deletion = Deletion { paths, via: Some("doctor repair".to_string()) };
            db.enqueue_archive_deletion(ids.len() as i64, &deletion)?;
        }
        Ok(ids.len())
    })
}

/// Rebuilds the full-text index from the messages; how many it holds.
pub fn rebuild_search_index(database: &Path) -> Result<usize> {
    DirectWriter::open(database, false)?.write(|db| db.rebuild_search_index())
}
