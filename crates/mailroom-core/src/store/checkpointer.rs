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
//!
//! The WAL starts over from its beginning only when a write begins with every frame copied
//! and no reader in it. Under writes that never pause, a PASSIVE checkpoint never catches up
//! with them, so the WAL grew without end: a 10-minute mixed overload soak filled the disk
//! with a 21 GB WAL beside a 257 MB database. Past `RESTART_FRAMES` a RESTART checkpoint
//! follows: it holds new writes back (readers go on) until the readers still in the WAL
//! have left it, at most `RESTART_WAIT`, so that the next write starts the WAL over, cut
//! back to `journal_size_limit`.

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
/// WAL frames (pages) past which the WAL is made to start over: 64 MB of 4 KB pages.
const RESTART_FRAMES: i64 = 16 * 1024;
/// Longest a RESTART checkpoint waits for readers (and holds writes back); when they have
/// not left by then, the next checkpoint tries again.
const RESTART_WAIT: Duration = Duration::from_millis(250);

/// The running checkpointer: the writer nudges it after each commit and stops it when it
/// ends.
pub(super) struct Checkpointer {
    nudge: SyncSender<()>,
    thread: JoinHandle<()>,
}

impl Checkpointer {
    /// Starts the checkpointer on its own connection.
    pub(super) fn start(conn: Connection) -> Result<Self> {
        conn.busy_timeout(RESTART_WAIT)
            .map_err(|e| Error::internal(format!("busy timeout: {e}")))?;
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
        if let Err(e) = checkpoint(conn, RESTART_FRAMES) {
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

/// One PASSIVE checkpoint: copies what no reader still needs, waits for nobody; then, if the
/// WAL holds more than `restart_frames`, a RESTART checkpoint (see the module's text). A
/// RESTART that the readers outlast leaves things as they were.
fn checkpoint(conn: &Connection, restart_frames: i64) -> rusqlite::Result<()> {
    let frames: i64 = conn.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| row.get(1))?;
    if frames > restart_frames {
        conn.query_row("PRAGMA wal_checkpoint(RESTART)", [], |_| Ok(()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Writes that land while a reader holds an older snapshot keep every PASSIVE checkpoint
    /// short of the WAL's end, and the WAL grows; past the frame limit the RESTART that
    /// follows lets the next write start it over, cut back to the limit.
    #[test]
    fn a_wal_outgrowing_passive_checkpoints_is_restarted() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("db.sqlite3");
        let writer = super::super::open_connection(&path, false).expect("writer");
        writer.execute_batch("CREATE TABLE t(b BLOB); PRAGMA wal_autocheckpoint=0;").expect("t");
        let reader = super::super::open_connection(&path, true).expect("reader");
        let checkpointer = super::super::open_connection(&path, false).expect("checkpointer");
        checkpointer.busy_timeout(RESTART_WAIT).expect("busy timeout");
        let wal_size = || std::fs::metadata(dir.path().join("db.sqlite3-wal")).expect("wal").len();
        let write_4_mb = || {
            writer
                .execute_batch(
                    "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 4)
                     INSERT INTO t SELECT zeroblob(1048576) FROM n;",
                )
                .expect("4 MB written");
        };
        let round = |restart_frames: i64| {
            reader.execute_batch("BEGIN; SELECT count(*) FROM t;").expect("a snapshot");
            write_4_mb();
            checkpoint(&checkpointer, restart_frames).expect("checkpoint");
            reader.execute_batch("COMMIT;").expect("snapshot left");
        };
        for _ in 0..6 {
            round(i64::MAX);
        }
        assert!(wal_size() > 20 << 20, "PASSIVE alone never caught up: {}", wal_size());
        // The reader has left: the RESTART completes, and the next write starts over.
        checkpoint(&checkpointer, 1).expect("restart");
        write_4_mb();
        assert!(wal_size() <= 16 << 20, "cut back to the limit: {}", wal_size());
        // A reader that stays past the wait only makes the RESTART give up.
        round(1);
        reader.execute_batch("BEGIN; SELECT count(*) FROM t;").expect("a snapshot");
        write_4_mb();
        checkpoint(&checkpointer, 1).expect("a RESTART the reader outlasts is no error");
        reader.execute_batch("COMMIT;").expect("snapshot left");
        write_4_mb();
    }
}
