//! WAL checkpoints off the writer thread.
//!
//! SQLite's automatic checkpoint runs inside the commit that crosses 1,000 WAL pages, on the
//! committing connection: every ~100th write transaction then copied the WAL into the
//! database and synced it twice before answering, which made the p99 of cheap writes
//! (`file_reservation_paths` with 1,000 reservations: p50 0.25 ms, p99 1.5–2.3 ms) a checkpoint
//! measurement. The writer connection turns that off; this thread, with its own connection,
//! runs PASSIVE checkpoints (they never block the writer or readers) after a burst of write
//! batches or half a second after the last one. It ends when the writer does. While writes go
//! on it also hands the allocator's free memory back to the system (`memory.rs`).

use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::error::{Error, Result};
use crate::memory;

/// A checkpoint at most this long after the first write batch it covers.
const INTERVAL: Duration = Duration::from_millis(500);
/// Or after this many write batches, whichever comes first.
const BATCHES_PER_CHECKPOINT: u32 = 256;

/// The running checkpointer: the writer nudges it after each commit and stops it when it
/// ends.
pub(super) struct Checkpointer {
    nudge: SyncSender<()>,
    thread: JoinHandle<()>,
}

impl Checkpointer {
    /// Starts the checkpointer on its own connection.
    pub(super) fn start(conn: Connection) -> Result<Self> {
        let (nudge, nudges) = sync_channel(64);
        let thread = std::thread::Builder::new()
            .name("mailroom-db-checkpoint".to_string())
            .spawn(move || {
                crate::background::lower_thread_priority();
                run(&conn, &nudges)
            })
            .map_err(|e| Error::internal(format!("cannot start the WAL checkpointer: {e}")))?;
        Ok(Self { nudge, thread })
    }

    /// Tells it a write batch committed.
    pub(super) fn nudge(&self) {
        // A full channel already holds enough nudges for the next checkpoint.
        let _ = self.nudge.try_send(());
    }

    /// Ends it after its checkpoint in progress, if any, so the writer's last checkpoint
    /// runs alone.
    pub(super) fn stop(self) {
        drop(self.nudge);
        if self.thread.join().is_err() {
            tracing::warn!("the WAL checkpointer panicked");
        }
    }
}

fn run(conn: &Connection, nudges: &Receiver<()>) {
    let mut last_trim = Instant::now();
    loop {
        // Idle: sleep until the first batch commits.
        if nudges.recv().is_err() {
            return;
        }
        let first_batch = Instant::now();
        let mut batches = 1_u32;
        while batches < BATCHES_PER_CHECKPOINT {
            match nudges.recv_timeout(INTERVAL.saturating_sub(first_batch.elapsed())) {
                Ok(()) => batches += 1,
                Err(RecvTimeoutError::Timeout) => break,
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
        if let Err(e) = checkpoint(conn) {
            tracing::warn!(error = %e, "WAL checkpoint failed; the next one retries");
        }
        // Writes are going on, so memory is being freed: hand it back now and then, here,
        // off the request threads.
        if last_trim.elapsed() >= memory::TRIM_INTERVAL {
            memory::release_free_memory();
            last_trim = Instant::now();
        }
    }
}

/// One PASSIVE checkpoint: copies what no reader still needs, waits for nobody.
fn checkpoint(conn: &Connection) -> rusqlite::Result<()> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
}
