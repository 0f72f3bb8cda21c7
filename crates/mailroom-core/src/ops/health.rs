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
