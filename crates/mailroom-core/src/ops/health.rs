//! Liveness and readiness facts about the core.

use super::Mailroom;
use crate::error::Result;

impl Mailroom {
    /// Makes a real database round trip; an error says why the database is unusable.
    pub async fn check_database(&self) -> Result<()> {
        self.store.ping().await
    }
}
