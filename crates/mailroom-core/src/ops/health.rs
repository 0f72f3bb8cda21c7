//! Liveness and readiness facts about the core, and the storage facts the operator's
//! metrics report.

use std::time::Duration;

use super::Mailroom;
use crate::error::{Error, Result};
use crate::model::time::Timestamp;

impl Mailroom {
    /// Makes a real database round trip, and (SQLite) checks the database file is still where
    /// it was opened: a data directory deleted under a running server would otherwise keep
    /// "working" on an unlinked file and lose everything at the next start.
    pub async fn check_database(&self) -> Result<()> {
        let path = &self.config.database_path;
        if self.config.postgres.is_some() {
            return self.store.ping().await;
        }
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

/// What the operator's metrics report of storage, read when they are scraped.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct StorageFacts {
    /// Bytes of the database file (PostgreSQL: of the database, `pg_database_size`).
    pub database_bytes: u64,
    /// Bytes of its write-ahead log (0 when there is none, and on PostgreSQL).
    pub wal_bytes: u64,
    /// Archive rows queued and not yet committed to Git (0 without an archive).
    pub archive_queue: u64,
    /// How long the oldest of them has waited; `None` when none waits.
    pub archive_oldest_wait: Option<Duration>,
}

impl Mailroom {
    /// The database's size on disk and the archive's backlog: the queue's length from the
    /// archive's counters (servers sharing a database: counted there), the oldest row's age
    /// from one indexed read.
    pub async fn storage_facts(&self) -> Result<StorageFacts> {
        let path = &self.config.database_path;
        let size = |path: &std::path::Path| std::fs::metadata(path).map_or(0, |m| m.len());
        let mut wal = path.clone().into_os_string();
        wal.push("-wal");
        let mut facts = if self.config.postgres.is_some() {
            // The server's files are its own: the database's size as PostgreSQL counts it.
            let bytes = self.store.read(|db| db.database_size()).await?;
            StorageFacts { database_bytes: bytes, ..StorageFacts::default() }
        } else {
            StorageFacts {
                database_bytes: size(path),
                wal_bytes: size(wal.as_ref()),
                ..StorageFacts::default()
            }
        };
        if let Some(archive) = self.archive() {
            // Of several servers, only the database knows the whole queue.
            facts.archive_queue = if self.shares_database() {
                let rows = self.store.read_short(|db| db.archive_backlog()).await?;
                u64::try_from(rows).unwrap_or(0)
            } else {
                archive.stats().lag
            };
            let oldest = self.store.read_short(|db| db.oldest_queued_archive_ts()).await?;
            facts.archive_oldest_wait = oldest.as_deref().and_then(Timestamp::parse_db).map(|at| {
                let waited = Timestamp::now().as_micros().saturating_sub(at.as_micros());
                Duration::from_micros(u64::try_from(waited).unwrap_or(0))
            });
        }
        Ok(facts)
    }

    /// Jobs per database write batch (group commit), observed by the writer thread: the
    /// histogram the server's `/metrics` registers.
    pub fn write_batch_sizes(&self) -> prometheus::Histogram {
        self.store.batch_sizes()
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
