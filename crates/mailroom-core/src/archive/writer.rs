//! The archive writer thread: waits for queued work, lets a burst gather, commits it as one
//! Git commit, then forgets the rows it carried.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use super::git::ArchiveRepo;
use super::repack::Repacker;
use super::{ArchiveSettings, Signal, locks, render};
use crate::error::Result;
use crate::store::{Reader, Store};

/// A burst is over when no new work arrived for this long; the commit then goes out at once
/// instead of waiting out the whole window (a lone message is archived in milliseconds).
/// Long enough that a steady trickle (100 messages/s arrive 10 ms apart) shares commits:
/// each commit rewrites the month directories' trees, which grow all month, so a commit per
/// message cost the archive thread milliseconds per message.
const QUIET_GAP: Duration = Duration::from_millis(12);
/// Most rows carried by one commit.
const MAX_ROWS_PER_COMMIT: i64 = 4096;
/// The index is written once the writer has been idle this long.
const INDEX_IDLE: Duration = Duration::from_millis(200);
/// A large index (every archived file has an entry) is rewritten whole, so it is written at
/// most this often; small ones are written at every idle moment.
const LARGE_INDEX_INTERVAL: Duration = Duration::from_secs(5);
const LARGE_INDEX_ENTRIES: usize = 20_000;
/// First and longest pause after a failed commit.
const RETRY_FIRST: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(10);
/// Digests kept in memory; past this many the cache starts over (it is only a shortcut).
const DIGEST_CACHE_ENTRIES: usize = 512;
/// Attempts at stop before leaving the rest to the next start's replay.
const ATTEMPTS_AT_STOP: u32 = 3;

pub(super) struct Writer {
    repo: ArchiveRepo,
    store: Store,
    reader: Reader,
    signal: Arc<Signal>,
    window: Duration,
    /// Highest queue id committed by this writer.
    last_id: i64,
    /// Thread digests as committed (never holds uncommitted text: filled after commits).
    digests: render::DigestCache,
    /// Queue rows up to this id may already be in the archive (see `render::Sources`).
    replay_horizon: i64,
    last_index_write: Instant,
    /// Packs the loose objects the commits leave behind.
    repacker: Repacker,
}

impl Writer {
    pub(super) fn new(
        repo: ArchiveRepo,
        store: Store,
        reader: Reader,
        signal: Arc<Signal>,
        settings: &ArchiveSettings,
    ) -> Self {
        let repacker = Repacker::new(repo.root());
        Self {
            repacker,
            repo,
            store,
            reader,
            signal,
            window: settings.commit_window,
            last_id: 0,
            digests: Default::default(),
            replay_horizon: i64::MAX,
            last_index_write: Instant::now(),
        }
    }

    pub(super) fn run(mut self) {
        // Rows queued before this writer started are replays; if the queue cannot be read,
        // every row is treated as one (slower, never wrong).
        self.replay_horizon =
            self.reader.read(|db| db.last_queued_archive_id()).unwrap_or(i64::MAX);
        let mut retry = RETRY_FIRST;
        let mut failures_at_stop = 0;
        loop {
            let stopping = self.wait_for_work();
            match self.drain() {
                Ok(()) => {
                    retry = RETRY_FIRST;
                    self.signal.set_last_error(None);
                }
                Err(e) => {
                    self.signal.errors.fetch_add(1, Ordering::SeqCst);
                    self.signal.set_last_error(Some(e.message.clone()));
                    tracing::error!(error = %e.message, "archive commit failed; will retry");
                    if stopping {
                        failures_at_stop += 1;
                        if failures_at_stop >= ATTEMPTS_AT_STOP {
                            tracing::error!("archive work left queued for the next start");
                            break;
                        }
                    }
                    std::thread::sleep(retry);
                    retry = (retry * 2).min(RETRY_MAX);
                    // A ref lock left by a killed process fails every commit until removed;
                    // once old enough it is removed here.
                    locks::heal_stale_ref_locks(self.repo.root());
                    self.signal.wake();
                    continue;
                }
            }
            if stopping {
                break;
            }
        }
        if let Err(e) = self.repo.sync_index() {
            tracing::warn!(error = %e.message, "archive index not written at stop");
        }
        self.repacker.finish();
    }

    /// How long the writer must idle before it writes the index.
    fn index_wait(&self) -> Duration {
        if self.repo.index_entries() < LARGE_INDEX_ENTRIES {
            return INDEX_IDLE;
        }
        INDEX_IDLE.max(LARGE_INDEX_INTERVAL.saturating_sub(self.last_index_write.elapsed()))
    }

    /// Blocks until work is rung, then lingers while more keeps arriving (up to the window).
    /// Returns whether the archive is stopping. Writes the index while idle.
    fn wait_for_work(&mut self) -> bool {
        let signal = Arc::clone(&self.signal);
        let Ok(mut bell) = signal.state.lock() else { return true };
        while !bell.rung && !bell.stopping {
            if self.repo.index_stale() {
                let Ok((guard, timeout)) = signal.bell.wait_timeout(bell, self.index_wait()) else {
                    return true;
                };
                bell = guard;
                if timeout.timed_out() && !bell.rung {
                    drop(bell);
                    if let Err(e) = self.repo.sync_index() {
                        tracing::warn!(error = %e.message, "archive index not written");
                    }
                    self.last_index_write = Instant::now();
                    let Ok(guard) = signal.state.lock() else { return true };
                    bell = guard;
                }
            } else {
                let Ok(guard) = signal.bell.wait(bell) else { return true };
                bell = guard;
            }
        }
        let started = Instant::now();
        while !bell.stopping {
            bell.rung = false;
            let remaining = self.window.saturating_sub(started.elapsed());
            if remaining.is_zero() {
                break;
            }
            let Ok((guard, _)) =
                signal
                    .bell
                    .wait_timeout_while(bell, QUIET_GAP.min(remaining), |b| !b.rung && !b.stopping)
            else {
                return true;
            };
            bell = guard;
            if !bell.rung {
                break;
            }
        }
        bell.rung = false;
        bell.stopping
    }

    /// Keeps the committed digests (moved, not copied) for the next batches.
    fn remember_digests(&mut self, files: Vec<(String, Vec<u8>)>) {
        for (path, bytes) in files {
            if path.contains("/messages/threads/") {
                if self.digests.len() >= DIGEST_CACHE_ENTRIES {
                    self.digests.clear();
                }
                self.digests.insert(path, bytes);
            }
        }
    }

    /// Commits everything queued, in commits of at most `MAX_ROWS_PER_COMMIT` rows.
    fn drain(&mut self) -> Result<()> {
        loop {
            let after = self.last_id;
            let work = self.reader.read(|db| db.queued_archive_work(after, MAX_ROWS_PER_COMMIT))?;
            let Some(last) = work.last().map(|w| w.id) else { return Ok(()) };
            // From here on these rows may reach HEAD; if this attempt fails after that, the
            // retry must treat them as replays.
            let replay_horizon = self.replay_horizon;
            self.replay_horizon = self.replay_horizon.max(last);
            let (repo, digests) = (&self.repo, &mut self.digests);
            let rendered =
                self.reader.read(|db| render::render(db, &work, repo, digests, replay_horizon))?;
            if self.repo.commit_files(&rendered.files, &rendered.message)?.is_some() {
                self.signal.commits.fetch_add(1, Ordering::SeqCst);
                if self.repacker.after_commit() {
                    self.repo.reopen();
                }
            }
            self.repo.make_durable()?;
            self.remember_digests(rendered.files);
            self.last_id = last;
            // `work` is every row from the first to the last id (ids only grow, and a row is
            // visible once its transaction commits); rows of an unknown kind stay queued for
            // the mailroom that wrote them. Losing this delete only means the rows are
            // replayed (idempotently) next start.
            let first = work.first().map_or(last, |w| w.id);
            if let Err(e) =
                self.store.write_blocking(move |db| db.complete_archive_work(first, last))
            {
                tracing::warn!(error = %e.message, "archived rows not cleared; they will replay");
            }
            self.signal.archived(work.len() as u64);
        }
    }
}
