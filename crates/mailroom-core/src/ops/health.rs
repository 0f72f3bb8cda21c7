//! Liveness and readiness facts about the core.

use super::Mailroom;
use crate::error::{Error, Result};

impl Mailroom {
    /// Makes a real database round trip, and checks the database file is still where it was
    /// opened: a data directory deleted under a running server would otherwise keep
    /// "working" on an unlinked file and lose everything at the next start.
    pub async fn check_database(&self) -> Result<()> {
        let path = &self.config.database_path;
        if let Err(e) = std::fs::metadata(path) {
            return Err(Error::internal(format!(
                "database file {} is unavailable: {e}",
                path.display()
            )));
        }
        self.store.ping().await
    }
}

/// What readiness says of the archive beside a working database.
#[derive(Debug, Clone, Default, serde::Serialize)]
pub struct ArchiveHealth {
    /// Work set aside because it could not be rendered (`mailroom archive verify` lists it).
    pub set_aside: u64,
    /// The writer's latest failure while it keeps failing.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub last_error: Option<String>,
}

impl Mailroom {
    /// Readiness beyond the database: an archive that is not keeping up (writes wait and
    /// then fail) is an error; work set aside is reported, not fatal (everything else keeps
    /// being archived).
    pub fn check_archive(&self) -> Result<ArchiveHealth> {
        let Some(archive) = self.archive() else { return Ok(ArchiveHealth::default()) };
        if let Some(trouble) = archive.trouble() {
            return Err(Error::new(
                crate::Category::Retryable,
                "ARCHIVE_BACKLOG",
                format!("the Git archive is not keeping up: {trouble}"),
            ));
        }
        // Each start queues the rows set aside before again, so the rows set aside since are
        // all there are: counted in memory, no query on the probe's path.
        // The writer clears its last error at its next success.
        Ok(ArchiveHealth { set_aside: archive.stats().set_aside, last_error: archive.last_error() })
    }
}

impl Mailroom {
    /// The lock files under the storage root (resource://tooling/locks); empty without an
    /// archive.
    pub async fn archive_locks(&self) -> Result<crate::archive::lock_report::LockReport> {
        let root = self.config.storage_root.clone();
        tokio::task::spawn_blocking(move || crate::archive::lock_report::scan(&root))
            .await
            .map_err(|e| Error::internal(format!("lock scan failed: {e}")))
    }
}
