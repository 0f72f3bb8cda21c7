//! WAL checkpoints off the writer thread.
//!
//! SQLite's automatic checkpoint runs inside the commit that crosses 1,000 WAL pages, on the
//! committing connection: every ~100th write transaction then copied the WAL into the
//! database and synced it twice before answering, which made the p99 of cheap writes
//! (`file_reservation_paths` with 1,000 reservations: p50 0.25 ms, p99 1.5–2.3 ms) a checkpoint
//! measurement. The writer connection turns that off; this thread, with its own connection,
//! runs PASSIVE checkpoints (they never block the writer or readers) after a burst of write
//! batches or half a second after the last one. It ends when the writer does.

use std::sync::mpsc::{Receiver, RecvTimeoutError, SyncSender, sync_channel};
use std::time::{Duration, Instant};

use rusqlite::Connection;

use crate::error::{Error, Result};

/// A checkpoint at most this long after the first write batch it covers.
const INTERVAL: Duration = Duration::from_millis(500);
/// Or after this many write batches, whichever comes first.
const BATCHES_PER_CHECKPOINT: u32 = 256;

/// Starts the checkpointer on its own connection; the writer sends `()` after each commit and
/// drops the sender when it ends.
pub(super) fn start(conn: Connection) -> Result<SyncSender<()>> {
    let (nudge, nudges) = sync_channel(64);
    std::thread::Builder::new()
        .name("mailroom-db-checkpoint".to_string())
        .spawn(move || run(&conn, &nudges))
        .map_err(|e| Error::internal(format!("cannot start the WAL checkpointer: {e}")))?;
    Ok(nudge)
}

fn run(conn: &Connection, nudges: &Receiver<()>) {
    let mut batches = 0_u32;
    let mut first_batch = Instant::now();
    loop {
        let wait =
            if batches == 0 { INTERVAL } else { INTERVAL.saturating_sub(first_batch.elapsed()) };
        match nudges.recv_timeout(wait) {
            Ok(()) => {
                if batches == 0 {
                    first_batch = Instant::now();
                }
                batches += 1;
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => return,
        }
        if batches > 0 && (batches >= BATCHES_PER_CHECKPOINT || first_batch.elapsed() >= INTERVAL) {
            if let Err(e) = checkpoint(conn) {
                tracing::warn!(error = %e, "WAL checkpoint failed; the next one retries");
            }
            batches = 0;
        }
    }
}

/// One PASSIVE checkpoint: copies what no reader still needs, waits for nobody.
fn checkpoint(conn: &Connection) -> rusqlite::Result<()> {
    conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()))
}
