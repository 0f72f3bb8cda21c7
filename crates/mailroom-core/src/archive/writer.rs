//! The archive writer thread: waits for queued work, lets a burst gather, commits it as one
//! Git commit, then forgets the rows it carried.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use mailroom_git::{ArchiveRepo, Repacker};

use super::work_tree::WorkTreeBudget;
use super::{ArchiveSettings, Signal, locks, render};
use crate::error::{Category, Error, Result};
use crate::store::cluster::Leadership;
use crate::store::db::archive_queue::{ArchiveKind, QueuedWork};
use crate::store::{Reader, Store};

/// A burst is over when no new work arrived for this long; the commit then goes out (once
/// the writer's rest is over) instead of waiting out the whole window (a lone message is
/// archived in milliseconds).
/// Long enough that a steady trickle (100 messages/s arrive 10 ms apart) shares commits:
/// each commit rewrites the month directories' trees, which grow all month, so a commit per
/// message cost the archive thread milliseconds per message.
const QUIET_GAP: Duration = Duration::from_millis(12);
/// Under sustained load the writer rests this many times as long as its last drain took
/// before it commits again, within the window: it spends at most a quarter of its time
/// committing while three drains fit in the window, and commits once per window when they
/// no longer do. Each commit rewrites the month directories' trees whole, so its
/// cost grows with the month while a busy writer's batches do not: at 200 messages/s and
/// 36,000 messages in the month, commits back to back took two thirds of a core and their
/// packs kept `git repack` busy on the other.
const REST_PER_DRAIN: u32 = 3;
/// Most rows carried by one commit.
const MAX_ROWS_PER_COMMIT: i64 = 4096;
/// The index is written once the writer has been idle this long.
const INDEX_IDLE: Duration = Duration::from_millis(200);
/// A large index (every archived file has an entry) is rewritten whole, so it is written at
/// most this often while idle (small ones at every idle moment); under unbroken load, once
/// `INDEX_BACKLOG_LIMIT` paths wait, and then no more often than this either (a human's Git
/// may hold `index.lock` for minutes, and each attempt stats every waiting path).
const LARGE_INDEX_INTERVAL: Duration = Duration::from_secs(5);
const LARGE_INDEX_ENTRIES: usize = 20_000;
/// Paths waiting for the index past which it is written even though the writer is never
/// idle: under a steady load they were the one thing that grew without bound (17 MB of
/// paths after three minutes at 200 messages/s).
const INDEX_BACKLOG_LIMIT: usize = 16_384;
/// First and longest pause after a failed commit.
const RETRY_FIRST: Duration = Duration::from_millis(100);
const RETRY_MAX: Duration = Duration::from_secs(10);
/// Digests kept in memory; past this many the cache starts over (it is only a shortcut).
const DIGEST_CACHE_ENTRIES: usize = 512;
/// Attempts at stop before leaving the rest to the next start's replay.
const ATTEMPTS_AT_STOP: u32 = 3;
/// Attempts at rendering one queued row (about 1.5 s with the retry pauses) before it is set
/// aside (`archive_set_aside`): a row the database cannot give back as it should must not hold
/// up the work behind it.
const RENDER_ATTEMPTS: u32 = 5;

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
    /// Rolls up the packs the commits leave behind.
    repacker: Repacker,
    /// When the last drain that found rows ended, and how long it took.
    last_drain: Option<(Instant, Duration)>,
    /// The queue row that failed to render at the head of the queue, and how many times.
    failing_head: Option<(i64, u32)>,
    /// Retires the oldest month from the work tree when the index is over its budget.
    budget: WorkTreeBudget,
    /// The writer runs while its server leads; it steps down, committing nothing more, once
    /// the server has lost the lease (another server takes over from the queue).
    leadership: Leadership,
    /// At a stop on a shared database, the last row queued when the stop began: the others
    /// keep queueing, and what they queue after it is left to the next leader.
    stop_at: Option<i64>,
}

impl Writer {
    pub(super) fn new(
        repo: ArchiveRepo,
        store: Store,
        reader: Reader,
        signal: Arc<Signal>,
        settings: &ArchiveSettings,
        leadership: Leadership,
    ) -> Self {
        let repacker = Repacker::new(repo.root(), crate::background::lower_thread_priority);
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
            last_drain: None,
            failing_head: None,
            budget: WorkTreeBudget::new(settings.worktree_max_files),
            leadership,
            stop_at: None,
        }
    }

    pub(super) fn run(mut self) {
        self.retry_set_aside();
        // Rows queued before this writer started are replays; if the queue cannot be read,
        // every row is treated as one (slower, never wrong).
        self.replay_horizon =
            self.reader.read(|db| db.last_queued_archive_id()).unwrap_or(i64::MAX);
        let mut retry = RETRY_FIRST;
        let mut failures_at_stop = 0;
        loop {
            let stopping = self.wait_for_work();
            if !self.leadership.held() {
                tracing::warn!("no longer leading: the archive writer steps down");
                break;
            }
            if stopping && self.stop_at.is_none() && self.leadership.shared() {
                let last = self.reader.read(|db| db.last_queued_archive_id());
                self.stop_at = Some(last.unwrap_or(i64::MAX));
            }
            let drain_started = Instant::now();
            match self.drain(stopping) {
                Ok(found_rows) => {
                    // A drain that found nothing (a late ring for rows already taken) says
                    // nothing of what a commit costs.
                    if found_rows {
                        self.last_drain = Some((Instant::now(), drain_started.elapsed()));
                    }
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
                    // The wait ends early once another server may have taken over.
                    let until = Instant::now() + retry;
                    while Instant::now() < until && self.leadership.held() {
                        std::thread::sleep(Duration::from_millis(50).min(retry));
                    }
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
            if self.repo.index_backlog() >= INDEX_BACKLOG_LIMIT
                && self.last_index_write.elapsed() >= LARGE_INDEX_INTERVAL
            {
                self.write_index();
            }
        }
        if let Err(e) = self.repo.sync_index() {
            tracing::warn!(error = %Error::from(e), "archive index not written at stop");
        }
        self.repacker.finish();
    }

    /// Work set aside before gets one more try at each start: a row repaired since (by a
    /// migration, or by hand) is archived now.
    fn retry_set_aside(&self) {
        match self.store.write_blocking_unseen(|db| db.requeue_set_aside_archive_work()) {
            Ok(0) => {}
            Ok(retried) => {
                self.signal.ring(retried);
                tracing::warn!(retried, "archive work set aside before is queued again");
            }
            Err(e) => tracing::warn!(error = %e.message, "set-aside archive work not retried"),
        }
    }

    /// How long the writer must idle before it writes the index.
    fn index_wait(&self) -> Duration {
        if self.repo.index_entries() < LARGE_INDEX_ENTRIES {
            return INDEX_IDLE;
        }
        INDEX_IDLE.max(LARGE_INDEX_INTERVAL.saturating_sub(self.last_index_write.elapsed()))
    }

    /// Blocks until work is rung, then lingers while more keeps arriving, and at least for its
    /// rest after the last drain (`REST_PER_DRAIN`), up to the window.
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
                    self.write_index();
                    let Ok(guard) = signal.state.lock() else { return true };
                    bell = guard;
                }
            } else {
                let Ok(guard) = signal.bell.wait(bell) else { return true };
                bell = guard;
            }
        }
        let started = Instant::now();
        let deadline = started + self.window;
        let rest_until = self
            .last_drain
            .map_or(started, |(ended, took)| ended + took * REST_PER_DRAIN)
            .min(deadline);
        while !bell.stopping {
            bell.rung = false;
            let now = Instant::now();
            if now >= deadline {
                break;
            }
            let wait = if now < rest_until { rest_until - now } else { QUIET_GAP };
            let Ok((guard, _)) =
                signal
                    .bell
                    .wait_timeout_while(bell, wait.min(deadline - now), |b| !b.rung && !b.stopping)
            else {
                return true;
            };
            bell = guard;
            if !bell.rung && Instant::now() >= rest_until {
                break;
            }
        }
        bell.rung = false;
        bell.stopping
    }

    fn write_index(&mut self) {
        if let Err(e) = self.repo.sync_index() {
            tracing::warn!(error = %Error::from(e), "archive index not written");
        }
        self.last_index_write = Instant::now();
        self.budget.keep(&mut self.repo);
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

    /// Commits what is queued, in commits of at most `MAX_ROWS_PER_COMMIT` rows, until a
    /// commit carries fewer (the queue was empty when it was read) or, `until_empty`, until
    /// nothing is left. Says whether it found any rows.
    fn drain(&mut self, until_empty: bool) -> Result<bool> {
        let mut found_rows = false;
        loop {
            // A backlog's commits stop as soon as another server may have taken over, and
            // at a shared stop, once what was queued when it began is committed.
            if !self.leadership.held() || self.stop_at.is_some_and(|last| self.last_id >= last) {
                return Ok(found_rows);
            }
            let after = self.last_id;
            let mut work =
                self.reader.read(|db| db.queued_archive_work(after, MAX_ROWS_PER_COMMIT))?;
            // A deletion is a commit of its own (`delete: N message(s) via web UI`): the work
            // before it goes first, then it alone, then what follows.
            let cut = deletion_cut(&work);
            let mut split = cut < work.len();
            work.truncate(cut);
            let Some(last) = work.last().map(|w| w.id) else { return Ok(found_rows) };
            found_rows = true;
            // From here on these rows may reach HEAD; if this attempt fails after that, the
            // retry must treat them as replays.
            let replay_horizon = self.replay_horizon;
            self.replay_horizon = self.replay_horizon.max(last);
            let Some(rendered) = self.render_leading(&mut work, replay_horizon)? else {
                continue;
            };
            split |= work.len() < cut;
            self.failing_head = None;
            let last = work.last().map_or(last, |w| w.id);
            let (files, removals) = (&rendered.files, &rendered.removals);
            if let Some(committed) = self.repo.commit_changes(files, removals, &rendered.message)? {
                self.signal.commits.fetch_add(1, Ordering::SeqCst);
                self.repacker.after_commit(&mut self.repo, committed);
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
                self.store.write_blocking_unseen(move |db| db.complete_archive_work(first, last))
            {
                tracing::warn!(error = %e.message, "archived rows not cleared; they will replay");
            }
            self.signal.archived(work.len() as u64);
            // A short batch means the queue was drained when it was read: what arrived since
            // rang the bell and waits for the next batch, after the writer's rest. A full one
            // means a backlog, committed at once; so is everything at stop.
            if !until_empty && !split && (work.len() as i64) < MAX_ROWS_PER_COMMIT {
                return Ok(true);
            }
        }
    }
}

impl Writer {
    /// Renders `work`, or as much of it as renders: when an item fails, the items before it
    /// (`work` is truncated to them) are rendered for this commit and the failing one heads
    /// the next batch. `None` when the first item itself fails ([`Self::head_failed`] has
    /// dealt with it).
    fn render_leading(
        &mut self,
        work: &mut Vec<QueuedWork>,
        replay_horizon: i64,
    ) -> Result<Option<render::Rendered>> {
        loop {
            let (repo, digests) = (&self.repo, &mut self.digests);
            let rendered =
                self.reader.read(|db| render::render(db, work, repo, digests, replay_horizon))?;
            match rendered {
                Ok(rendered) => return Ok(Some(rendered)),
                Err(failure) if failure.index > 0 => work.truncate(failure.index),
                Err(failure) => {
                    self.head_failed(work[0], failure.error)?;
                    return Ok(None);
                }
            }
        }
    }

    /// The row at the head of the queue failed to render: an error for the writer to retry,
    /// until it has failed [`RENDER_ATTEMPTS`] times; then it is set aside with its error and
    /// the queue moves on.
    fn head_failed(&mut self, head: QueuedWork, error: Error) -> Result<()> {
        let attempts = match self.failing_head {
            Some((id, attempts)) if id == head.id => attempts + 1,
            _ => 1,
        };
        self.failing_head = Some((head.id, attempts));
        // The Git engine's errors (reading a digest from HEAD) and full or read-only storage
        // are the archive's faults, not the row's: retried, never set aside.
        let the_rows_fault = !matches!(error.category, Category::Storage(_) | Category::Archive);
        if attempts < RENDER_ATTEMPTS || !the_rows_fault {
            return Err(Error::internal(format!(
                "archive work {} ({:?} {}) cannot be rendered: {}",
                head.id, head.kind, head.ref_id, error.message
            )));
        }
        let text = error.message.clone();
        self.store.write_blocking_unseen(move |db| db.set_aside_archive_row(head.id, &text))?;
        tracing::error!(
            queue_id = head.id,
            kind = ?head.kind,
            ref_id = head.ref_id,
            error = %error.message,
            "archive work set aside: it cannot be rendered; the queue moves on"
        );
        self.failing_head = None;
        self.last_id = head.id;
        self.signal.set_aside(1);
        Ok(())
    }
}

/// How much of `work` (oldest first) one commit takes: everything up to the first deletion,
/// or the deletion alone when it comes first.
fn deletion_cut(work: &[QueuedWork]) -> usize {
    match work.iter().position(|w| w.kind == ArchiveKind::Deletion) {
        Some(0) => 1,
        Some(at) => at,
        None => work.len(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_deletion_is_a_commit_of_its_own() {
        let row = |id, kind| QueuedWork { id, kind, ref_id: id };
        let (m, d) = (ArchiveKind::Message, ArchiveKind::Deletion);
        assert_eq!(deletion_cut(&[row(1, m), row(2, m)]), 2, "no deletion: all of it");
        assert_eq!(deletion_cut(&[row(1, m), row(2, d), row(3, m)]), 1, "the work before it");
        assert_eq!(deletion_cut(&[row(2, d), row(3, m)]), 1, "then it alone");
        assert_eq!(deletion_cut(&[]), 0);
    }
}
