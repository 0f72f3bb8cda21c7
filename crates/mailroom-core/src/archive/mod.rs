//! The Git archive: a human-auditable copy of every message, profile and reservation.
//!
//! SQLite stays the live state. A change that must reach the archive queues a row in
//! `archive_queue` inside its own transaction; after the commit the store rings the
//! [`Signal`], and one writer thread per archive ([`writer`]) gathers everything queued
//! within a short window into a single Git commit, written by the Git engine (`mailroom_git`),
//! then deletes the rows it carried. A crash between the two leaves the rows, which the next
//! start replays; replays are idempotent. The queue is bounded: when the writer falls behind
//! by `queue_capacity` rows, writers wait ([`Signal::admit`]).

pub mod adopt;
pub mod attachments;
pub mod browse;
pub mod build_slots;
pub mod format;
pub mod history;
pub mod lock_report;
pub mod locks;
pub mod maintenance;
pub mod python_json;
mod rebuild;
mod reconstruct;
mod render;
pub use render::{message_files, orphaned_message_files};
mod verify;
mod work_tree;
mod writer;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use mailroom_git::{ArchiveRepo, Layout};
use tokio::sync::{Notify, watch};

use crate::config::CoreConfig;
use crate::error::{Error, Result};
use crate::store::cluster::Leadership;
use crate::store::{ArchiveEvent, ArchiveHook, Reader, Store};
pub use mailroom_git::Author;

/// Longest a write waits for room in a full archive queue before failing.
const ADMIT_TIMEOUT: Duration = Duration::from_secs(30);

/// The archive's layout as the Git engine needs it: the reference's first commit, the local
/// files Git should not offer to add (lock files and their owner records, the temporary
/// files of atomic writes, build-slot leases), and the attachment files written by requests.
pub(crate) const LAYOUT: Layout = Layout {
    first_files: &[(".gitattributes", "*.json text\n*.md text\n")],
    first_message: "chore: initialize archive",
    excludes: "*.lock\n*.lock.owner.json\n.*.tmp\nprojects/*/build_slots/\n",
    written_by_owner: is_stored_attachment,
};

/// Attachment files (WebP, manifest, audit log) are written into the work tree, atomically,
/// by the request that stores the image; the writer only commits them. Rewriting them there
/// could undo an audit line appended meanwhile.
fn is_stored_attachment(path: &str) -> bool {
    path.split('/').nth(2) == Some("attachments")
}

/// How the archive writer runs.
#[derive(Debug, Clone)]
pub struct ArchiveSettings {
    /// The repository (`STORAGE_ROOT`).
    pub root: PathBuf,
    pub author: Author,
    /// Longest a change waits for company before its commit (`ARCHIVE_COMMIT_WINDOW_MS`).
    /// The writer commits sooner when the stream of changes pauses.
    pub commit_window: Duration,
    /// Rows the archive may lag behind before writers wait (`ARCHIVE_QUEUE_CAPACITY`).
    pub queue_capacity: u64,
    /// Index entries past which the oldest month leaves the work tree
    /// (`ARCHIVE_WORKTREE_MAX_FILES`; 0: no limit).
    pub worktree_max_files: usize,
    /// Open the repository when the first work arrives rather than at start (nothing queued).
    pub open_on_first_work: bool,
    /// Several servers may share the database (PostgreSQL): the archive is written by the
    /// one that leads (`store::cluster`), which takes the archive's lock when elected.
    pub shared: bool,
}

impl ArchiveSettings {
    /// The archive writer's settings, taken from the core configuration.
    pub(crate) fn from_config(config: &CoreConfig) -> Self {
        let archive = &config.archive;
        Self {
            root: config.storage_root.clone(),
            author: Author {
                name: archive.author_name.clone(),
                email: archive.author_email.clone(),
            },
            commit_window: Duration::from_millis(archive.commit_window_ms),
            queue_capacity: archive.queue_capacity,
            worktree_max_files: usize::try_from(archive.worktree_max_files).unwrap_or(usize::MAX),
            open_on_first_work: archive.open_on_first_work,
            shared: config.postgres.is_some(),
        }
    }
}

/// Counters of the archive, for health and benchmarks.
#[derive(Debug, Clone, Copy, Default, serde::Serialize)]
pub struct ArchiveStats {
    /// Rows queued since start (including the replayed backlog).
    pub enqueued: u64,
    /// Rows committed to Git since start.
    pub archived: u64,
    /// Git commits made since start.
    pub commits: u64,
    /// Failed commit attempts (retried).
    pub errors: u64,
    /// Rows set aside since start because they could not be rendered (`archive_set_aside`).
    pub set_aside: u64,
    /// Rows queued but not yet committed to Git.
    pub lag: u64,
}

/// Shared between the store (rings after commits), ops (wait for room) and the writer.
pub(crate) struct Signal {
    state: Mutex<Bell>,
    bell: Condvar,
    capacity: u64,
    /// How long a write waits for room before failing with ARCHIVE_BACKLOG.
    admit_timeout: Duration,
    enqueued: AtomicU64,
    commits: AtomicU64,
    errors: AtomicU64,
    set_aside: AtomicU64,
    /// Rows committed to Git or set aside; watchers wait for it to pass their row.
    archived: watch::Sender<u64>,
    room: Notify,
    /// Writes waiting for room take turns here, first come first served (tokio's mutex
    /// queues its waiters in order): only the first waits on the archive, so no write waits
    /// seconds while later ones pass.
    turn: tokio::sync::Mutex<()>,
    /// Writes waiting for their turn or for room: while any do, a new write queues too.
    waiting: AtomicU64,
    /// Set when the writer thread has ended: nobody waits for it any more (its queued rows
    /// stay in SQLite for the next start).
    stopped: AtomicBool,
    /// The writer's last failure, while it keeps failing (for the backpressure error).
    last_error: Mutex<Option<String>>,
}

#[derive(Default)]
struct Bell {
    rung: bool,
    stopping: bool,
}

impl Signal {
    fn new(capacity: u64, backlog: u64, admit_timeout: Duration) -> Self {
        Self {
            state: Mutex::new(Bell::default()),
            bell: Condvar::new(),
            capacity: capacity.max(1),
            admit_timeout,
            enqueued: AtomicU64::new(backlog),
            commits: AtomicU64::new(0),
            errors: AtomicU64::new(0),
            set_aside: AtomicU64::new(0),
            archived: watch::channel(0).0,
            room: Notify::new(),
            turn: tokio::sync::Mutex::new(()),
            waiting: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            last_error: Mutex::new(None),
        }
    }

    /// Called by the store writer after a commit that queued `rows`.
    fn ring(&self, rows: usize) {
        self.enqueued.fetch_add(rows as u64, Ordering::SeqCst);
        self.wake();
    }

    /// Waits for the first ring (or the stop); whether any work was queued.
    fn wait_for_first_work(&self) -> bool {
        let Ok(mut bell) = self.state.lock() else { return false };
        while !bell.rung && !bell.stopping {
            bell = match self.bell.wait(bell) {
                Ok(guard) => guard,
                Err(_) => return false,
            };
        }
        // `rung` stays set, so the writer drains at once.
        self.enqueued.load(Ordering::SeqCst) > 0
    }

    /// Waits up to `patience` for this server to lead: whether it leads, or `None` once the
    /// archive stops.
    fn wait_for_leadership(&self, leadership: &Leadership, patience: Duration) -> Option<bool> {
        let deadline = std::time::Instant::now() + patience;
        // A writer that panicked holding the bell must not leave this server leading with no
        // writer: the bell's state stays usable.
        let mut bell = self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        loop {
            if bell.stopping {
                return None;
            }
            if leadership.held() {
                return Some(true);
            }
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            if left.is_zero() {
                return Some(false);
            }
            bell = match self.bell.wait_timeout(bell, left.min(Duration::from_secs(1))) {
                Ok((guard, _)) => guard,
                Err(poisoned) => poisoned.into_inner().0,
            };
        }
    }

    /// Brings the counters of a server that does not write the archive to the queue's depth
    /// in the database, `depth` rows, where it missed notices (its listener reconnected) or
    /// was never told (rows set aside and queued again): only ever up, so no wait for rows
    /// to be archived goes back.
    /// `lag` is the lag read before the depth: a row rung in between is then counted twice
    /// for a while (the next resync corrects it), never credited as archived.
    fn resync(&self, lag: u64, depth: u64) {
        if lag > depth {
            self.archived(lag - depth);
        } else {
            self.enqueued.fetch_add(depth - lag, Ordering::SeqCst);
        }
    }

    fn wake(&self) {
        if let Ok(mut bell) = self.state.lock() {
            bell.rung = true;
        }
        self.bell.notify_one();
    }

    fn lag(&self) -> u64 {
        self.enqueued.load(Ordering::SeqCst).saturating_sub(*self.archived.borrow())
    }

    /// Waits while the archive lags by `capacity` rows or more (backpressure), in turn: writes
    /// pass in the order they arrived, and a new write queues behind waiting ones even when
    /// room has just been made. Without a running writer there is nothing to wait for: the
    /// rows wait in SQLite for a replay. A writer that cannot commit for `admit_timeout`
    /// turns the wait into a retryable error naming the cause, instead of a request that
    /// hangs.
    pub(crate) async fn admit(&self) -> Result<()> {
        let has_room = || self.lag() < self.capacity || self.stopped.load(Ordering::SeqCst);
        if self.waiting.load(Ordering::SeqCst) == 0 && has_room() {
            return Ok(());
        }
        self.waiting.fetch_add(1, Ordering::SeqCst);
        let _counted = Waiting(&self.waiting);
        let wait = async {
            let _turn = self.turn.lock().await;
            loop {
                let room = self.room.notified();
                if self.lag() < self.capacity || self.stopped.load(Ordering::SeqCst) {
                    return;
                }
                room.await;
            }
        };
        if tokio::time::timeout(self.admit_timeout, wait).await.is_ok() {
            return Ok(());
        }
        let cause = self.last_error().unwrap_or_else(|| "it is still catching up".to_string());
        Err(Error::new(
            crate::Category::Retryable,
            "ARCHIVE_BACKLOG",
            format!(
                "The Git archive is {} changes behind and not keeping up ({cause}); nothing was \
                 written. Retry later.",
                self.lag()
            ),
        ))
    }

    /// Records (or, with `None`, clears) the writer's current failure.
    fn set_last_error(&self, error: Option<String>) {
        if let Ok(mut last) = self.last_error.lock() {
            *last = error;
        }
    }

    fn last_error(&self) -> Option<String> {
        self.last_error.lock().ok().and_then(|last| last.clone())
    }

    /// Called by the writer thread as it ends; releases everyone waiting on it.
    fn writer_stopped(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        self.archived.send_modify(|_| {});
        self.room.notify_waiters();
    }

    /// Records `rows` committed to Git.
    fn archived(&self, rows: u64) {
        self.archived.send_modify(|n| *n += rows);
        self.room.notify_waiters();
    }

    /// Records `rows` set aside: no longer queued, so nobody waits for them.
    fn set_aside(&self, rows: u64) {
        self.set_aside.fetch_add(rows, Ordering::SeqCst);
        self.archived(rows);
    }

    fn stats(&self) -> ArchiveStats {
        let set_aside = self.set_aside.load(Ordering::SeqCst);
        ArchiveStats {
            enqueued: self.enqueued.load(Ordering::SeqCst),
            archived: self.archived.borrow().saturating_sub(set_aside),
            commits: self.commits.load(Ordering::SeqCst),
            errors: self.errors.load(Ordering::SeqCst),
            set_aside,
            lag: self.lag(),
        }
    }

    /// Whether writes now wait for room (the queue is full) and the writer keeps failing:
    /// the archive is not keeping up. `None` while it is.
    fn falling_behind(&self) -> Option<String> {
        let lag = self.lag();
        let error = self.last_error()?;
        (lag >= self.capacity).then(|| format!("{lag} changes behind and failing: {error}"))
    }
}

/// Counts a write among those waiting for room until dropped (also when its wait times out
/// or its request is cancelled).
struct Waiting<'a>(&'a AtomicU64);

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Marks the writer stopped when dropped.
struct WriterExit(Arc<Signal>);

impl Drop for WriterExit {
    fn drop(&mut self) {
        self.0.writer_stopped();
    }
}

/// The running archive: its signal and writer thread.
pub struct Archive {
    signal: Arc<Signal>,
    root: PathBuf,
    writer: Mutex<Option<JoinHandle<()>>>,
    /// Written by whichever of the servers sharing the database leads.
    shared: bool,
    /// The archive's lock, held for as long as the archive runs; a shared archive's leader
    /// holds it on its writer thread while it leads.
    _owner: Option<locks::OwnerLock>,
}

/// The part of the archive that exists before the store: the lock and the signal the store
/// rings. [`PreparedArchive::start`] then starts the writer on the opened store.
pub(crate) struct PreparedArchive {
    settings: ArchiveSettings,
    signal: Arc<Signal>,
    owner: Option<locks::OwnerLock>,
    /// Left for the writer when the repository is opened on first work.
    healing: Option<locks::Healing>,
}

impl PreparedArchive {
    /// Takes ownership of the archive root and clears lock files left by dead processes (a
    /// shared archive: later, by the leader).
    pub(crate) fn prepare(settings: ArchiveSettings) -> Result<Self> {
        let signal = Arc::new(Signal::new(settings.queue_capacity, 0, ADMIT_TIMEOUT));
        if settings.shared {
            return Ok(Self { settings, signal, owner: None, healing: None });
        }
        let (owner, healing) = locks::take_ownership_unhealed(&settings.root)?;
        let healing = if settings.open_on_first_work {
            Some(healing)
        } else {
            healing.heal();
            None
        };
        Ok(Self { settings, signal, owner: Some(owner), healing })
    }

    /// The hook the store calls after commits that queued archive work.
    pub(crate) fn hook(&self) -> ArchiveHook {
        let signal = Arc::clone(&self.signal);
        Arc::new(move |event| match event {
            ArchiveEvent::Queued(rows) => signal.ring(rows),
            ArchiveEvent::Archived(rows) => signal.archived(rows as u64),
            ArchiveEvent::Leadership => signal.wake(),
        })
    }

    /// Opens the repository and starts the writer, which first replays the queued backlog.
    /// The repository is opened on the writer thread (libgit2 handles stay on one thread);
    /// an error opening it is returned here.
    pub(crate) fn start(self, store: &Store) -> Result<Archive> {
        let mut reader = store.dedicated_reader()?;
        let backlog = reader.read(|db| db.archive_backlog())?;
        self.signal.enqueued.fetch_add(backlog.max(0) as u64, Ordering::SeqCst);
        if self.settings.shared {
            return self.start_shared(store, reader);
        }
        let (opened, open_result) = std::sync::mpsc::sync_channel(1);
        let settings = self.settings.clone();
        let (store, signal) = (store.clone(), Arc::clone(&self.signal));
        // With nothing to replay, a one-call command opens the repository only if it writes.
        let lazy = settings.open_on_first_work && backlog <= 0;
        let healing = self.healing;
        let handle = std::thread::Builder::new()
            .name("mailroom-archive".to_string())
            .spawn(move || {
                crate::background::lower_thread_priority();
                let _release_waiters = WriterExit(Arc::clone(&signal));
                if lazy {
                    let _ = opened.send(Ok(()));
                    if !signal.wait_for_first_work() {
                        return;
                    }
                }
                if let Some(healing) = healing {
                    healing.heal();
                }
                let author = settings.author.clone();
                let repo = match ArchiveRepo::open_or_init(&settings.root, author, LAYOUT) {
                    Ok(repo) => repo,
                    Err(e) => {
                        let e = Error::from(e);
                        // Opened late, the rows stay queued for the next start.
                        tracing::error!(error = %e.message, "cannot open the archive");
                        signal.set_last_error(Some(e.message.clone()));
                        let _ = opened.send(Err(e));
                        return;
                    }
                };
                // Lazily opened, nobody waits for this any more (the send fails quietly).
                let _ = opened.send(Ok(()));
                writer::Writer::new(repo, store, reader, signal, &settings, Leadership::Sole).run();
            })
            .map_err(|e| Error::internal(format!("cannot start archive writer: {e}")))?;
        open_result.recv().map_err(|_| {
            Error::internal("the archive writer stopped while opening the repository")
        })??;
        if backlog > 0 {
            tracing::warn!(backlog, "replaying archive work queued before the last stop");
            self.signal.wake();
        }
        Ok(Archive {
            signal: self.signal,
            root: self.settings.root,
            writer: Mutex::new(Some(handle)),
            shared: false,
            _owner: self.owner,
        })
    }
}

impl PreparedArchive {
    /// A shared archive's writer thread ([`SharedWriter`]); returns once the thread has opened
    /// the repository if this server leads from the start, so it serves with its archive open.
    fn start_shared(self, store: &Store, reader: Reader) -> Result<Archive> {
        let (opened, first_open) = std::sync::mpsc::sync_channel(1);
        let writer = SharedWriter {
            settings: self.settings.clone(),
            signal: Arc::clone(&self.signal),
            leadership: store.leadership(),
            store: store.clone(),
            reader: Some(reader),
            opened: Some(opened),
        };
        let handle = std::thread::Builder::new()
            .name("mailroom-archive".to_string())
            .spawn(move || writer.run())
            .map_err(|e| Error::internal(format!("cannot start archive writer: {e}")))?;
        // Bounded: an archive lock still held by a former leader must not stop the start.
        let _ = first_open.recv_timeout(Duration::from_secs(10));
        Ok(Archive {
            signal: self.signal,
            root: self.settings.root,
            writer: Mutex::new(Some(handle)),
            shared: true,
            _owner: None,
        })
    }
}

/// Terms in a row a leader fails to write the archive in before it steps aside.
const FAILED_TERMS: u32 = 3;

/// How long a leader that stepped aside leaves the lead to the others.
const STEP_ASIDE: Duration = Duration::from_secs(10);

/// The longest [`Archive::flushed`] waits on a shared archive.
const SHARED_FLUSH_WAIT: Duration = Duration::from_secs(30);

/// How often a server that does not lead sets its archive counters from the database.
const RESYNC_EVERY: Duration = Duration::from_secs(2);

/// The writer of an archive several servers share: it waits to be elected, then takes the
/// archive's lock (which a former leader still finishing its last commit holds until it is
/// done), clears what a killed leader left, replays the queue and writes until it stops
/// leading or the archive stops; then it waits again. A leader that fails [`FAILED_TERMS`]
/// terms in a row (the archive's volume is not there, the writer panicked) steps aside for
/// [`STEP_ASIDE`].
struct SharedWriter {
    settings: ArchiveSettings,
    signal: Arc<Signal>,
    leadership: Leadership,
    store: Store,
    /// The reader of the first term; later terms open their own.
    reader: Option<Reader>,
    /// Told once the first term has opened the repository, or when there is none yet.
    opened: Option<std::sync::mpsc::SyncSender<()>>,
}

impl SharedWriter {
    fn run(mut self) {
        crate::background::lower_thread_priority();
        let _release_waiters = WriterExit(Arc::clone(&self.signal));
        if !self.leadership.held() {
            self.started();
        }
        let mut failed_terms = 0;
        // Whether the wait for a former leader's lock was logged (once per wait).
        let mut waiting_logged = false;
        while let Some(leads) = self.signal.wait_for_leadership(&self.leadership, RESYNC_EVERY) {
            if !leads {
                self.resync();
                continue;
            }
            // A term that panicked is a failed term: the lease must not stay with a writer
            // that is gone.
            let term = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| self.lead()));
            let error = match term {
                Ok(Ok(())) => {
                    (failed_terms, waiting_logged) = (0, false);
                    continue;
                }
                // A former leader still finishing its commit: waited for, not a failure.
                Ok(Err(e)) if e.kind == locks::ARCHIVE_IN_USE => {
                    self.started();
                    if !waiting_logged {
                        tracing::info!(reason = %e.message, "elected; waiting for the archive");
                        waiting_logged = true;
                    }
                    std::thread::sleep(Duration::from_millis(500));
                    continue;
                }
                Ok(Err(e)) => e.message,
                Err(_) => "the archive writer panicked".to_string(),
            };
            self.started();
            self.signal.set_last_error(Some(error.clone()));
            failed_terms += 1;
            if failed_terms < FAILED_TERMS {
                tracing::warn!(%error, "elected, but not writing the archive yet");
                std::thread::sleep(Duration::from_millis(500));
            } else {
                // Another server may reach the archive where this one cannot.
                tracing::error!(%error, "cannot write the archive: stepping aside");
                self.leadership.step_aside(STEP_ASIDE);
                failed_terms = 0;
            }
        }
        self.started();
    }

    /// One term as the writer: until the lease is lost or the archive stops.
    fn lead(&mut self) -> Result<()> {
        let (_owner, healing) = locks::take_ownership_unhealed(&self.settings.root)?;
        healing.heal();
        let reader = match self.reader.take() {
            Some(reader) => reader,
            None => self.store.dedicated_reader()?,
        };
        let author = self.settings.author.clone();
        let repo = ArchiveRepo::open_or_init(&self.settings.root, author, LAYOUT)?;
        self.started();
        tracing::info!("leading: writing the archive");
        let signal = Arc::clone(&self.signal);
        let store = self.store.clone();
        writer::Writer::new(repo, store, reader, signal, &self.settings, self.leadership.clone())
            .run();
        Ok(())
    }

    /// While another server writes: this one's counters from the queue in the database.
    fn resync(&mut self) {
        if self.reader.is_none() {
            self.reader = self.store.dedicated_reader().ok();
        }
        let Some(reader) = self.reader.as_mut() else { return };
        let lag = self.signal.lag();
        match reader.read(|db| db.archive_backlog()) {
            Ok(depth) => self.signal.resync(lag, u64::try_from(depth).unwrap_or(0)),
            // A reader whose connection went is opened again next time.
            Err(_) => self.reader = None,
        }
    }

    fn started(&mut self) {
        if let Some(opened) = self.opened.take() {
            let _ = opened.send(());
        }
    }
}

impl Drop for Archive {
    /// Without `close`, the writer is told to finish and exit on its own (nobody waits).
    fn drop(&mut self) {
        if let Ok(mut bell) = self.signal.state.lock() {
            bell.stopping = true;
        }
        self.signal.bell.notify_one();
    }
}

impl Archive {
    /// The repository root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// Waits until the archive has room for more work (see [`Signal::admit`]).
    pub(crate) async fn admit(&self) -> Result<()> {
        self.signal.admit().await
    }

    /// Counters since start.
    pub fn stats(&self) -> ArchiveStats {
        self.signal.stats()
    }

    /// Why the archive is not keeping up (the queue is full and the writer keeps failing),
    /// or why it stopped; `None` while it keeps up.
    pub fn trouble(&self) -> Option<String> {
        if self.signal.stopped.load(Ordering::SeqCst) {
            return Some("the archive writer has stopped".to_string());
        }
        self.signal.falling_behind()
    }

    /// The writer's latest failure, while it keeps failing.
    pub fn last_error(&self) -> Option<String> {
        self.signal.last_error()
    }

    /// Told of every batch committed to Git (its value counts the rows): what the web UI's
    /// archive pages wait on.
    pub fn progress(&self) -> watch::Receiver<u64> {
        self.signal.archived.subscribe()
    }

    /// Waits until every row queued so far is committed to Git, or the writer has stopped;
    /// on a shared archive, at most [`SHARED_FLUSH_WAIT`] (its leader may be gone, or this
    /// server's counts behind). Whether the wait ended without that limit.
    pub async fn flushed(&self) -> bool {
        let target = self.signal.enqueued.load(Ordering::SeqCst);
        let mut archived = self.signal.archived.subscribe();
        let stopped = &self.signal.stopped;
        let done = archived.wait_for(|n| *n >= target || stopped.load(Ordering::SeqCst));
        if self.shared {
            tokio::time::timeout(SHARED_FLUSH_WAIT, done).await.is_ok()
        } else {
            let _ = done.await;
            true
        }
    }

    /// Stops the writer after it has committed everything queued; blocks until then.
    pub fn close(&self) {
        if let Ok(mut bell) = self.signal.state.lock() {
            bell.stopping = true;
            bell.rung = true;
        }
        self.signal.bell.notify_one();
        let handle = self.writer.lock().ok().and_then(|mut w| w.take());
        if let Some(handle) = handle
            && handle.join().is_err()
        {
            tracing::error!("the archive writer panicked");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A follower's counts follow the database's queue both ways, and a wait for rows to be
    /// archived that it counted but missed the end of (a missed notice) is released.
    #[tokio::test]
    async fn a_followers_counts_are_brought_to_the_queue_in_the_database() {
        let signal = Signal::new(100, 0, Duration::from_millis(20));
        signal.ring(10);
        let mut archived = signal.archived.subscribe();
        let waiter = tokio::spawn(async move {
            let _ = archived.wait_for(|n| *n >= 10).await;
        });
        // The leader archived 7 of them, and this server missed the notice.
        signal.resync(signal.lag(), 3);
        assert_eq!((signal.stats().enqueued, signal.stats().lag), (10, 3));
        // Others queued 5 more, unheard.
        signal.resync(signal.lag(), 8);
        assert_eq!((signal.stats().enqueued, signal.stats().lag), (15, 8));
        signal.resync(signal.lag(), 0);
        assert_eq!(signal.stats().lag, 0);
        tokio::time::timeout(Duration::from_secs(5), waiter).await.expect("released").expect("ok");
    }

    /// A writer that cannot keep up turns a full queue into a clear error, not a hang; room
    /// made by the writer lets the next write in.
    #[tokio::test]
    async fn a_full_queue_fails_with_the_writers_error_and_admits_again_once_drained() {
        let signal = Signal::new(2, 0, Duration::from_millis(20));
        signal.ring(2);
        signal.set_last_error(Some("archive: commit: disk full".to_string()));
        let refused = signal.admit().await.expect_err("no room");
        assert_eq!(refused.kind, "ARCHIVE_BACKLOG");
        assert!(refused.message.contains("2 changes behind"), "{}", refused.message);
        assert!(refused.message.contains("disk full"), "{}", refused.message);
        signal.archived(1);
        signal.admit().await.expect("room again");
    }

    /// Writes held by a full queue pass in the order they came, and one arriving as room is
    /// made queues behind them rather than passing first.
    #[tokio::test]
    async fn waiting_writes_pass_in_the_order_they_came() {
        let signal = Arc::new(Signal::new(1, 0, Duration::from_secs(3600)));
        signal.ring(1);
        let passed = Arc::new(Mutex::new(Vec::new()));
        let admit = |n: usize| {
            let (signal, passed) = (Arc::clone(&signal), Arc::clone(&passed));
            tokio::spawn(async move {
                signal.admit().await.expect("room");
                passed.lock().expect("lock").push(n);
            })
        };
        let mut tasks = Vec::new();
        for n in 0..3 {
            tasks.push(admit(n));
            tokio::task::yield_now().await;
        }
        assert!(passed.lock().expect("lock").is_empty(), "the queue is full");
        signal.archived(1);
        tasks.push(admit(3));
        for task in tasks {
            task.await.expect("task");
        }
        assert_eq!(*passed.lock().expect("lock"), [0, 1, 2, 3]);
        assert_eq!(signal.waiting.load(Ordering::SeqCst), 0);
    }

    #[tokio::test]
    async fn nothing_waits_on_a_stopped_writer() {
        let signal = Arc::new(Signal::new(1, 0, Duration::from_secs(3600)));
        signal.ring(5);
        signal.writer_stopped();
        signal.admit().await.expect("a stopped writer does not block writes");
    }
}
