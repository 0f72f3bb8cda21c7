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
