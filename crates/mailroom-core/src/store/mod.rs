//! Persistence: SQLite is the live state (and, from the archive issue on, the Git archive the
//! durable ledger). Only this module touches SQL.
//!
//! One writer thread owns the only read-write connection, so writers never fight over
//! SQLite's lock. It takes every job already queued (group commit): one `BEGIN IMMEDIATE`
//! transaction, one savepoint per job (a failing job rolls back alone, so each job's rows
//! land together or not at all), one commit for the batch, and only then the replies, so an
//! answer always means committed. Reads use a small pool of read-only connections on
//! blocking threads, so a slow write never stalls a read (WAL).

mod checkpointer;
pub mod cluster;
pub mod copy;
pub mod db;
pub mod import;

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;

use rusqlite::config::DbConfig;
use rusqlite::{Connection, OpenFlags, TransactionBehavior};
use tokio::sync::{Semaphore, mpsc, oneshot, watch};

use crate::error::{Error, Result};
use checkpointer::Checkpointer;
use cluster::{Heard, Leadership, Notice};
pub use db::Db;
use db::driver::{Dialect, args};
use db::postgres::{Lease, Listener, PgSession, PgSettings};

/// Bound of the write queue: senders wait (backpressure) instead of piling up work.
const WRITE_QUEUE_CAPACITY: usize = 1024;
/// Prepared statements kept per connection; covers every query the server issues.
const STATEMENT_CACHE_CAPACITY: usize = 128;

/// Most jobs committed together; bounds the latency a long batch adds to its first job.
const MAX_BATCH: usize = 256;

/// The buckets of [`Store::batch_sizes`]: powers of two up to [`MAX_BATCH`].
const BATCH_SIZE_BUCKETS: [f64; 9] = [1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0];

/// SQLite's soft heap limit, in bytes (see `Store::open`). Readers get the database's pages
/// through the memory map, so the caches mostly hold the writer's pages and WAL pages.
pub const SQLITE_HEAP_LIMIT: i64 = 24 << 20;

/// Delivers a job's outcome once the batch's commit result is known.
type Finish = Box<dyn FnOnce(Result<()>) + Send>;
/// Runs inside the batch transaction; says whether it succeeded, how many archive rows it
/// queued and how to answer.
type WriteJob = Box<dyn FnOnce(&Db<'_>) -> JobOutcome + Send>;

/// A connection of the store, to either database.
enum Backend {
    Sqlite(Connection),
    Postgres(PgSession),
}

impl Backend {
    fn db(&self, archive_enabled: bool) -> Db<'_> {
        match self {
            Backend::Sqlite(conn) => Db::new(conn, archive_enabled),
            Backend::Postgres(session) => Db::on_postgres(session, archive_enabled),
        }
    }
}

struct JobOutcome {
    succeeded: bool,
    archive_enqueued: usize,
    archive_completed: usize,
    /// The job succeeded, changed rows, and is not bookkeeping no view shows.
    changed_views: bool,
    finish: Finish,
}

/// Called by the writer thread after a commit that queued archive work, with the number of
/// rows queued; it wakes the archive writer. On PostgreSQL it also hears what other servers'
/// commits did to the archive queue, and when this server's leadership changes.
pub type ArchiveHook = Arc<dyn Fn(ArchiveEvent) + Send + Sync>;

/// What the archive hears from the store.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArchiveEvent {
    /// Rows were queued (by this server, or by another on the same database).
    Queued(usize),
    /// Rows were committed to Git by another server (the leader).
    Archived(usize),
    /// This server gained or lost the archive's leadership.
    Leadership,
}

/// Handle to the database; cheap to clone.
#[derive(Clone)]
pub struct Store {
    inner: Arc<Inner>,
}

/// Where the store's database is.
enum Location {
    Sqlite(PathBuf),
    Postgres(PgSettings),
}

/// How long [`Store::close`] waits for reads still running.
const CLOSE_WAIT: std::time::Duration = std::time::Duration::from_secs(10);

struct Inner {
    /// The SQLite database's file, or the PostgreSQL server's settings.
    location: Location,
    writer: mpsc::Sender<WriteJob>,
    /// Counts committed write batches that changed rows a view shows: a reader that watches
    /// it learns that data changed.
    changes: watch::Receiver<u64>,
    readers: Mutex<Vec<Backend>>,
    reader_permits: Semaphore,
    /// How many read connections the pool holds (one permit each).
    reader_count: u32,
    /// Set by [`Store::close`]: the writer ends after the batch it is running.
    closing: Arc<AtomicBool>,
    writer_thread: Mutex<Option<JoinHandle<()>>>,
    /// Jobs per write batch, observed by the writer thread.
    batch_sizes: prometheus::Histogram,
    /// Whether this server writes the archive and runs the upkeep.
    leadership: Leadership,
    /// Hears the other servers on a PostgreSQL database.
    _listener: Option<Listener>,
    /// The MCP sessions other servers on the database ended.
    ended_sessions: tokio::sync::broadcast::Sender<Arc<str>>,
}

impl Store {
    /// Opens (creating if needed) the database at `path`, migrates it and starts the writer.
    ///
    /// With an `archive_hook`, changes queue archive work and the hook hears of each commit
    /// that queued some; without one the archive is off and nothing is queued.
    pub fn open(
        path: &Path,
        reader_connections: usize,
        archive_hook: Option<ArchiveHook>,
    ) -> Result<Self> {
        if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
            std::fs::create_dir_all(parent).map_err(|e| {
                Error::internal(format!("cannot create database directory {parent:?}: {e}"))
            })?;
        }
        let mut writer_conn = open_connection(path, false)?;
        // One bound on all of SQLite's memory in the process (it is process-wide): past it,
        // each page cache recycles its own least recently used pages instead of growing.
        // The caches' own sizes add up to 72 MB, which they filled only as the database grew,
        // so a soak's memory kept rising for hours before it levelled off.
        writer_conn
            .pragma_update(None, "soft_heap_limit", SQLITE_HEAP_LIMIT)
            .map_err(db::map_err)?;
        db::migrations::migrate(&mut writer_conn)?;
        // Messages another program's transaction left noted become searchable now, in one
        // transaction (a crash between its two statements would have left notes for
        // messages already indexed, and every later batch would then fail on them).
        let tx = writer_conn
            .transaction_with_behavior(TransactionBehavior::Immediate)
            .map_err(db::map_err)?;
        db::search::reindex_pending_messages(&Db::new(&tx, false))?;
        tx.commit().map_err(db::map_err)?;
        // Checkpoints run on their own thread (checkpointer.rs), not inside the writer's commits.
        writer_conn.pragma_update(None, "wal_autocheckpoint", 0).map_err(db::map_err)?;
        let checkpoint_conn = open_connection(path, false)?;
        // A checkpoint copies WAL frames into the database file through a buffer of its own,
        // not the page cache: the writer's 32 MB would only fill with schema pages.
        checkpoint_conn.pragma_update(None, "cache_size", -256).map_err(db::map_err)?;
        let checkpointer = Checkpointer::start(checkpoint_conn)?;
        let readers = (0..reader_connections.max(1))
            .map(|_| open_connection(path, true).map(Backend::Sqlite))
            .collect::<Result<Vec<_>>>()?;
        let location = Location::Sqlite(path.to_path_buf());
        Self::start(
            location,
            Backend::Sqlite(writer_conn),
            readers,
            Some(checkpointer),
            archive_hook,
        )
    }

    /// Opens the PostgreSQL database `settings` name, migrates it and starts the writer: the
    /// same store as [`Store::open`]'s, with `settings.pool_size` read connections.
    pub fn open_postgres(settings: PgSettings, archive_hook: Option<ArchiveHook>) -> Result<Self> {
        // A session's calls wait without a runtime (postgres.rs), so this may run anywhere.
        let writer = PgSession::connect(&settings)?;
        db::migrations::migrate_postgres(&writer)?;
        let readers = (0..settings.pool_size.max(1))
            .map(|_| PgSession::connect(&settings).map(Backend::Postgres))
            .collect::<Result<Vec<_>>>()?;
        let location = Location::Postgres(settings);
        Self::start(location, Backend::Postgres(writer), readers, None, archive_hook)
    }

    fn start(
        location: Location,
        writer_conn: Backend,
        readers: Vec<Backend>,
        checkpointer: Option<Checkpointer>,
        archive_hook: Option<ArchiveHook>,
    ) -> Result<Self> {
        let (sender, receiver) = mpsc::channel(WRITE_QUEUE_CAPACITY);
        let changed = Arc::new(watch::Sender::new(0));
        let changes = changed.subscribe();
        let closing = Arc::new(AtomicBool::new(false));
        let batch_sizes = batch_size_histogram()?;
        let ended_sessions = tokio::sync::broadcast::Sender::new(ENDED_SESSIONS_BACKLOG);
        let (instance, leadership, listener) = match &location {
            Location::Sqlite(_) => (None, Leadership::Sole, None),
            Location::Postgres(settings) => {
                let instance = cluster::new_instance_id();
                let others = Others {
                    instance,
                    changed: Arc::clone(&changed),
                    archive_hook: archive_hook.clone(),
                    ended_sessions: ended_sessions.clone(),
                };
                let listener = others.listen(settings);
                let leadership = if settings.may_lead {
                    let hook = archive_hook.clone();
                    Leadership::Lease(Lease::start(
                        settings,
                        Arc::new(move |_| {
                            if let Some(hook) = &hook {
                                hook(ArchiveEvent::Leadership);
                            }
                        }),
                    )?)
                } else {
                    Leadership::Never
                };
                (Some(instance), leadership, Some(listener))
            }
        };
        let writer = Writer {
            archive_hook,
            checkpointer,
            changed,
            closing: Arc::clone(&closing),
            batch_sizes: batch_sizes.clone(),
            instance,
        };
        let writer_thread = std::thread::Builder::new()
            .name("mailroom-db-writer".to_string())
            .spawn(move || run_writer(writer_conn, receiver, writer))
            .map_err(|e| Error::internal(format!("cannot start database writer: {e}")))?;
        let permits = readers.len();
        Ok(Self {
            inner: Arc::new(Inner {
                location,
                writer: sender,
                changes,
                readers: Mutex::new(readers),
                reader_permits: Semaphore::new(permits),
                reader_count: u32::try_from(permits).unwrap_or(u32::MAX),
                closing,
                writer_thread: Mutex::new(Some(writer_thread)),
                batch_sizes,
                leadership,
                _listener: listener,
                ended_sessions,
            }),
        })
    }

    /// The MCP sessions other servers sharing the database end from now on.
    pub fn ended_sessions(&self) -> tokio::sync::broadcast::Receiver<Arc<str>> {
        self.inner.ended_sessions.subscribe()
    }

    /// Whether this server writes the archive and runs the upkeep: always on SQLite; on
    /// PostgreSQL while it holds the lease.
    pub fn leadership(&self) -> Leadership {
        self.inner.leadership.clone()
    }

    /// The SQL dialect of the database behind the store.
    pub fn dialect(&self) -> Dialect {
        match self.inner.location {
            Location::Sqlite(_) => Dialect::Sqlite,
            Location::Postgres(_) => Dialect::Postgres,
        }
    }

    /// How many jobs each write batch committed together (group commit), as a Prometheus
    /// histogram the server's `/metrics` registers; observed once per batch by the writer.
    pub fn batch_sizes(&self) -> prometheus::Histogram {
        self.inner.batch_sizes.clone()
    }

    /// Runs `step` (which deletes at most `batch` rows and says how many) as separate write
    /// jobs until one deletes fewer than `batch`, at most `steps` times, so that a long
    /// backlog never holds the writer in one transaction; how many rows in all.
    pub async fn write_in_steps<F>(&self, batch: i64, steps: usize, step: F) -> Result<usize>
    where
        F: Fn(&Db<'_>, i64) -> Result<usize> + Clone + Send + 'static,
    {
        let mut done = 0;
        for _ in 0..steps {
            let job = step.clone();
            let rows = self.write(move |db| job(db, batch)).await?;
            done += rows;
            if i64::try_from(rows).unwrap_or(i64::MAX) < batch {
                break;
            }
        }
        Ok(done)
    }

    /// Runs `job` in one write transaction on the writer thread; commits when it returns `Ok`.
    pub async fn write<R, F>(&self, job: F) -> Result<R>
    where
        F: FnOnce(&Db<'_>) -> Result<R> + Send + 'static,
        R: Send + 'static,
    {
        self.write_seen(job, true).await
    }

    /// `write` for bookkeeping no view shows (MCP sessions): it does not move
    /// [`Self::changes`].
    pub async fn write_unseen<R, F>(&self, job: F) -> Result<R>
    where
        F: FnOnce(&Db<'_>) -> Result<R> + Send + 'static,
        R: Send + 'static,
    {
        self.write_seen(job, false).await
    }

    async fn write_seen<R, F>(&self, job: F, seen: bool) -> Result<R>
    where
        F: FnOnce(&Db<'_>) -> Result<R> + Send + 'static,
        R: Send + 'static,
    {
        let (boxed, answer) = boxed_job(job, seen);
        self.inner
            .writer
            .send(boxed)
            .await
            .map_err(|_| Error::internal("database writer has stopped"))?;
        answer.await.map_err(|_| Error::internal("database writer dropped a job"))?
    }

    /// A receiver told of every committed write batch (its value counts them), for views that
    /// update when data changes.
    pub fn changes(&self) -> watch::Receiver<u64> {
        self.inner.changes.clone()
    }

    /// `write` for plain threads, for bookkeeping no view shows (the archive writer clearing
    /// its queue): it does not move [`Self::changes`]. Must not be called on an async worker.
    pub fn write_blocking_unseen<R, F>(&self, job: F) -> Result<R>
    where
        F: FnOnce(&Db<'_>) -> Result<R> + Send + 'static,
        R: Send + 'static,
    {
        let (boxed, answer) = boxed_job(job, false);
        self.inner
            .writer
            .blocking_send(boxed)
            .map_err(|_| Error::internal("database writer has stopped"))?;
        answer.blocking_recv().map_err(|_| Error::internal("database writer dropped a job"))?
    }

    /// A read-only connection of its own, for a thread that reads continuously (the archive
    /// writer) and must not hold a pool connection.
    pub fn dedicated_reader(&self) -> Result<Reader> {
        Ok(Reader {
            conn: match &self.inner.location {
                Location::Sqlite(path) => Backend::Sqlite(open_connection(path, true)?),
                Location::Postgres(settings) => Backend::Postgres(PgSession::connect(settings)?),
            },
        })
    }

    /// Runs `job` on a pooled read-only connection on a blocking thread.
    pub async fn read<R, F>(&self, job: F) -> Result<R>
    where
        F: FnOnce(&Db<'_>) -> Result<R> + Send + 'static,
        R: Send + 'static,
    {
        let _permit = self.reader_permit().await?;
        let inner = Arc::clone(&self.inner);
        tokio::task::spawn_blocking(move || {
            let conn = Pooled::take(&inner)?;
            job(&conn.db(false))
        })
        .await
        .map_err(|e| Error::internal(format!("read task failed: {e}")))?
    }

    /// Runs a short read (a few indexed lookups and a bounded, small result) on a pooled
    /// read-only connection right here, on the calling task's thread. Handing such a read to
    /// a blocking thread and back (two wake-ups and context switches) costs more than the
    /// read itself; a read that may scan or rank many rows must use [`Store::read`] instead,
    /// so it never stalls the async workers.
    pub async fn read_short<R, F>(&self, job: F) -> Result<R>
    where
        F: FnOnce(&Db<'_>) -> Result<R> + Send + 'static,
        R: Send + 'static,
    {
        if self.dialect() == Dialect::Postgres {
            // Every PostgreSQL statement is a network round trip: never on an async worker.
            return self.read(move |db| db.read_transaction(job)).await;
        }
        let _permit = self.reader_permit().await?;
        let conn = Pooled::take(&self.inner)?;
        // One read transaction for all of the job's statements: each statement outside one
        // takes and drops the file and WAL read locks (fcntl and the shared-memory mutex)
        // by itself.
        conn.db(false).read_transaction(job)
    }

    /// A turn at the reader pool: as many holders as pooled connections.
    async fn reader_permit(&self) -> Result<tokio::sync::SemaphorePermit<'_>> {
        self.inner.reader_permits.acquire().await.map_err(|_| Error::internal("reader pool closed"))
    }

    /// Closes the database when nothing will use it any more (the server has stopped): the
    /// readers' connections, then the writer's after its last batch and a final checkpoint,
    /// so that the database file is whole and the WAL files are gone (until a read-only
    /// reader such as `check-inbox` or the guard opens it again). Waits up to ten seconds for
    /// reads still running; blocks until the writer is done.
    /// Later calls fail as with a stopped writer.
    pub fn close(&self) {
        // Reads still running (a background task's) give their connections back first; later
        // reads fail with "reader pool closed".
        let deadline = std::time::Instant::now() + CLOSE_WAIT;
        loop {
            match self.inner.reader_permits.try_acquire_many(self.inner.reader_count) {
                Ok(permits) => {
                    permits.forget();
                    break;
                }
                Err(_) if std::time::Instant::now() < deadline => {
                    std::thread::sleep(std::time::Duration::from_millis(5));
                }
                Err(_) => {
                    tracing::warn!("reads still running at close; their connections stay open");
                    break;
                }
            }
        }
        self.inner.reader_permits.close();
        if let Ok(mut readers) = self.inner.readers.lock() {
            readers.clear();
        }
        self.inner.closing.store(true, Ordering::SeqCst);
        // Wakes the writer if it waits for work (a full queue means it does not); it stops
        // after the batch it runs.
        let (wake, _) = boxed_job(|_| Ok(()), false);
        let _ = self.inner.writer.try_send(wake);
        let thread = self.inner.writer_thread.lock().ok().and_then(|mut t| t.take());
        if let Some(thread) = thread
            && thread.join().is_err()
        {
            tracing::error!("the database writer panicked");
        }
        // Another server may lead from now on.
        self.inner.leadership.release();
    }

    /// A real database round trip, for readiness probes.
    pub async fn ping(&self) -> Result<()> {
        self.read(|db| db.ping()).await
    }
}

/// A read-only connection owned by one thread.
pub struct Reader {
    conn: Backend,
}

impl Reader {
    /// A read-only connection to an existing database, outside any [`Store`]: for maintenance
    /// that must not create, migrate or lock the database, since a server may be using it.
    pub fn open(path: &Path) -> Result<Self> {
        if !path.is_file() {
            return Err(Error::internal(format!("no database at {}", path.display())));
        }
        Ok(Self { conn: Backend::Sqlite(open_connection(path, true)?) })
    }

    /// A connection to the PostgreSQL database `settings` name, outside any [`Store`].
    pub fn open_postgres(settings: &PgSettings) -> Result<Self> {
        Ok(Self { conn: Backend::Postgres(PgSession::connect(settings)?) })
    }

    /// A read-only connection to the database `config` names (SQLite's file, which must
    /// exist, or the PostgreSQL database).
    pub fn for_config(config: &crate::CoreConfig) -> Result<Self> {
        match &config.postgres {
            Some(settings) => Self::open_postgres(settings),
            None => Self::open(&config.database_path),
        }
    }

    /// Writes a consistent copy of the database to `dest` (which must not exist), while
    /// servers may go on writing it: SQLite's `VACUUM INTO`, one read snapshot, compacted.
    pub fn copy_to(&self, dest: &Path) -> Result<()> {
        if dest.exists() {
            return Err(Error::internal(format!("{} exists already", dest.display())));
        }
        let dest =
            dest.to_str().ok_or_else(|| Error::internal("the backup's path is not UTF-8"))?;
        self.conn.db(false).execute("VACUUM INTO ?1", args![dest]).map(drop)
    }

    /// Runs `job` on this connection, in one read transaction (one consistent snapshot).
    pub fn read<R>(&mut self, job: impl FnOnce(&Db<'_>) -> Result<R>) -> Result<R> {
        // A PostgreSQL connection the server closed is opened again (the archive writer
        // reads through one Reader for as long as it runs).
        if let Backend::Postgres(session) = &mut self.conn {
            session.reconnect_if_closed()?;
        }
        self.conn.db(false).read_transaction(job)
    }
}

/// A read-write connection of its own to an existing database, outside any [`Store`]: for the
/// operator's repairs (`doctor repair`, `projects adopt`), which may run beside a server.
///
/// Each job is one `BEGIN IMMEDIATE` transaction, so SQLite serialises it with the server's
/// write batches (each side waits for the other up to `busy_timeout`, a minute); what the
/// server keeps in memory about rows notices a change from another connection (the
/// reservation sets compare `data_version`). It bypasses the server's writer thread, so the
/// server's change count does not move: a web page cached before the job may be served until
/// the server's next write. The database is neither created nor migrated here.
pub struct DirectWriter {
    conn: Backend,
    archive_enabled: bool,
}

impl DirectWriter {
    /// Opens the database at `path`; `archive_enabled` says whether jobs queue archive work.
    pub fn open(path: &Path, archive_enabled: bool) -> Result<Self> {
        if !path.is_file() {
            return Err(Error::internal(format!("no database at {}", path.display())));
        }
        Ok(Self { conn: Backend::Sqlite(open_connection(path, false)?), archive_enabled })
    }

    /// Opens the database `config` names (SQLite's file, which must exist, or the PostgreSQL
    /// database, whose jobs take the writers' lock as a server's batches do).
    pub fn for_config(config: &crate::CoreConfig, archive_enabled: bool) -> Result<Self> {
        match &config.postgres {
            Some(settings) => {
                Ok(Self { conn: Backend::Postgres(PgSession::connect(settings)?), archive_enabled })
            }
            None => Self::open(&config.database_path, archive_enabled),
        }
    }

    /// Runs `job` in one write transaction and commits it when it returns `Ok`; messages the
    /// job changed are indexed for search before the commit, as the server's writer does.
    pub fn write<R>(&mut self, job: impl FnOnce(&Db<'_>) -> Result<R>) -> Result<R> {
        let db = self.conn.db(self.archive_enabled);
        db.begin_write()?;
        let outcome = job(&db).and_then(|outcome| {
            db::search::index_pending_messages(&db)?;
            db.execute("COMMIT", args![]).map(|_| outcome)
        });
        if outcome.is_err() {
            let _ = db.execute_batch("ROLLBACK");
        }
        outcome
    }
}

/// Creates the database at `path` (which must not exist yet) with the full schema, runs `job`
/// in one transaction and closes it, so the file is complete on its own when this returns.
///
/// For building a database offline (reconstruction from the archive); the schema comes from
/// the same migrations [`Store::open`] runs, so triggers and FTS tables are all there.
pub fn create_database<R>(path: &Path, job: impl FnOnce(&Db<'_>) -> Result<R>) -> Result<R> {
    if path.exists() {
        return Err(Error::internal(format!("{} exists already", path.display())));
    }
    let mut conn = open_connection(path, false)?;
    db::migrations::migrate(&mut conn)?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(db::map_err)?;
    let outcome = job(&Db::new(&tx, false))?;
    db::search::index_pending_messages(&Db::new(&tx, false))?;
    tx.commit().map_err(db::map_err)?;
    // Closing the only connection checkpoints the WAL into the file and removes it.
    conn.close().map_err(|(_, e)| db::map_err(e))?;
    Ok(outcome)
}

/// Gives the database at `path` (one no server uses: a copy about to be restored) a new
/// identity for fetch_inbox_events' cursors, so a cursor handed out by the database it
/// replaces is refused (`CURSOR_AHEAD`) instead of silently skipping what the older copy
/// never had. A database from before the cursor's migration has none yet: nothing to do.
pub fn renew_identity(path: &Path) -> Result<()> {
    let conn = open_connection(path, false)?;
    db::mailbox_events::renew_identity(&conn)?;
    conn.close().map_err(|(_, e)| db::map_err(e))
}

/// Changes a database file no server uses (a copy being saved), then compacts it: `job` runs
/// in one transaction, the full-text index is merged (so deleted messages leave no terms in
/// it) and `VACUUM` rewrites the file, so what `job` deleted is gone from its free pages too.
/// The schema is left as it is: no migration runs.
pub fn edit_database<R>(path: &Path, job: impl FnOnce(&Db<'_>) -> Result<R>) -> Result<R> {
    if !path.is_file() {
        return Err(Error::internal(format!("no database at {}", path.display())));
    }
    let mut conn = open_connection(path, false)?;
    let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate).map_err(db::map_err)?;
    let outcome = job(&Db::new(&tx, false))?;
    db::search::optimize_index(&Db::new(&tx, false))?;
    tx.commit().map_err(db::map_err)?;
    conn.execute_batch("VACUUM").map_err(db::map_err)?;
    conn.close().map_err(|(_, e)| db::map_err(e))?;
    Ok(outcome)
}

/// Wraps a typed job for the writer thread; the receiver yields its answer after commit.
fn boxed_job<R, F>(job: F, seen: bool) -> (WriteJob, oneshot::Receiver<Result<R>>)
where
    F: FnOnce(&Db<'_>) -> Result<R> + Send + 'static,
    R: Send + 'static,
{
    let (reply, answer) = oneshot::channel();
    let boxed: WriteJob = Box::new(move |db: &Db<'_>| {
        let changes_before = db.total_changes();
        let enqueued_before = db.archive_enqueued();
        let completed_before = db.archive_completed();
        let outcome = job(db);
        let succeeded = outcome.is_ok();
        let changed_views = seen && succeeded && db.total_changes() != changes_before;
        let finish: Finish = Box::new(move |committed: Result<()>| {
            let _ = reply.send(committed.and(outcome));
        });
        let archive_enqueued = db.archive_enqueued() - enqueued_before;
        let archive_completed = db.archive_completed() - completed_before;
        JobOutcome { succeeded, archive_enqueued, archive_completed, changed_views, finish }
    });
    (boxed, answer)
}

/// A read connection taken from the pool (under a permit); it goes back when dropped, even
/// when the job panics, so the pool never holds fewer connections than permits.
struct Pooled<'a> {
    inner: &'a Inner,
    conn: Option<Backend>,
}

impl<'a> Pooled<'a> {
    fn take(inner: &'a Inner) -> Result<Self> {
        let mut pool = inner.readers.lock().map_err(|_| Error::internal("reader pool poisoned"))?;
        let conn =
            pool.pop().ok_or_else(|| Error::internal("reader pool empty despite a permit"))?;
        drop(pool);
        // Taken before it may be opened again, so that a failed reconnect still gives the
        // connection back to the pool (closed: the next holder tries again).
        let mut pooled = Self { inner, conn: Some(conn) };
        if let Some(Backend::Postgres(session)) = pooled.conn.as_mut() {
            // A PostgreSQL connection the server closed (a restart, a failover).
            session.reconnect_if_closed()?;
        }
        Ok(pooled)
    }
}

impl std::ops::Deref for Pooled<'_> {
    type Target = Backend;

    fn deref(&self) -> &Backend {
        // Only `drop` takes the connection out.
        self.conn.as_ref().expect("a pooled connection until dropped")
    }
}

impl Drop for Inner {
    /// A store dropped without [`Store::close`] gives the lead up too, soon (its lease thread
    /// is told, not waited for: a drop may happen on an async thread).
    fn drop(&mut self) {
        if let Leadership::Lease(lease) = &self.leadership {
            lease.stop_soon();
        }
    }
}

impl Drop for Pooled<'_> {
    fn drop(&mut self) {
        // A job that panicked inside `read_short` left its read transaction open; the next
        // holder's BEGIN would fail.
        match self.conn.as_ref() {
            Some(Backend::Sqlite(conn)) if !conn.is_autocommit() => {
                let _ = conn.execute_batch("ROLLBACK");
            }
            Some(Backend::Postgres(session)) if std::thread::panicking() => {
                let _ = session.execute_batch("ROLLBACK");
            }
            _ => {}
        }
        if let (Some(conn), Ok(mut pool)) = (self.conn.take(), self.inner.readers.lock()) {
            pool.push(conn);
        }
    }
}

/// A committed (or failed) batch: the answers to send and the archive rows it queued.
struct BatchResult {
    committed: Result<()>,
    finishers: Vec<Finish>,
    archive_enqueued: usize,
    /// A committed job changed rows a view shows.
    changed_views: bool,
}

/// Runs a batch of jobs in one transaction, each in its own savepoint. With an `instance`
/// (PostgreSQL), the other servers on the database hear what it did when it commits.
fn run_batch(
    conn: &Backend,
    batch: Vec<WriteJob>,
    archive_enabled: bool,
    instance: Option<u64>,
) -> BatchResult {
    let mut finishers = Vec::with_capacity(batch.len());
    let mut archive_enqueued = 0;
    let mut archive_completed = 0;
    let mut changed_views = false;
    let db = conn.db(archive_enabled);
    let committed = (|| -> Result<()> {
        db.begin_write()?;
        for job in batch {
            // Cached, not parsed per job: a batch runs up to 256 of these pairs.
            db.execute("SAVEPOINT job", args![])?;
            // A panicking job is a bug, but it must cost only its own write: its caller sees
            // "writer dropped a job" and the writer thread lives on.
            let succeeded = match catch_unwind(AssertUnwindSafe(|| job(&db))) {
                Ok(outcome) => {
                    finishers.push(outcome.finish);
                    if outcome.succeeded {
                        archive_enqueued += outcome.archive_enqueued;
                        archive_completed += outcome.archive_completed;
                        changed_views |= outcome.changed_views;
                    }
                    outcome.succeeded
                }
                Err(_) => {
                    tracing::error!("a database write job panicked; its changes are rolled back");
                    false
                }
            };
            if !succeeded {
                db.execute("ROLLBACK TO job", args![])?;
            }
            db.execute("RELEASE job", args![])?;
        }
        // Outside every savepoint: FTS5 writes the whole batch as one segment.
        db::search::index_pending_messages(&db)?;
        if let Some(instance) = instance {
            let notice = Notice {
                instance,
                views: changed_views,
                queued: archive_enqueued,
                archived: archive_completed,
            };
            // Delivered by PostgreSQL when (and only if) the batch commits.
            if notice.worth_sending() {
                db.notify_others(&notice.encode())?;
            }
        }
        db.execute("COMMIT", args![]).map(drop).map_err(|e| {
            // The server may have committed before the connection went: a retry could store
            // the write twice, so the caller is not told to retry.
            if db.connection_lost() {
                Error::internal("the database connection was lost during the commit; the write may have been stored")
            } else {
                e
            }
        })
    })();
    if committed.is_err() {
        // A batch that failed part-way leaves its transaction open: the next must begin anew.
        let _ = db.execute_batch("ROLLBACK");
    }
    let (archive_enqueued, changed_views) =
        if committed.is_ok() { (archive_enqueued, changed_views) } else { (0, false) };
    BatchResult { committed, finishers, archive_enqueued, changed_views }
}

/// What the writer thread owns besides its connection and queue.
struct Writer {
    archive_hook: Option<ArchiveHook>,
    /// SQLite's checkpointer (PostgreSQL checkpoints by itself).
    checkpointer: Option<Checkpointer>,
    changed: Arc<watch::Sender<u64>>,
    closing: Arc<AtomicBool>,
    batch_sizes: prometheus::Histogram,
    /// This server's number among those on a PostgreSQL database (`cluster::Notice`).
    instance: Option<u64>,
}

/// The histogram behind [`Store::batch_sizes`].
fn batch_size_histogram() -> Result<prometheus::Histogram> {
    let options = prometheus::HistogramOpts::new(
        "mailroom_store_batch_size",
        "Write jobs the database writer committed in one transaction (group commit).",
    )
    .buckets(BATCH_SIZE_BUCKETS.to_vec());
    prometheus::Histogram::with_opts(options)
        .map_err(|e| Error::internal(format!("batch size histogram: {e}")))
}

fn run_writer(mut conn: Backend, mut jobs: mpsc::Receiver<WriteJob>, writer: Writer) {
    let Writer { archive_hook, checkpointer, changed, closing, batch_sizes, instance } = writer;
    while let Some(first) = jobs.blocking_recv() {
        let mut batch = vec![first];
        // PostgreSQL keeps 64 subtransactions (a job's savepoint each) in its cache; a batch
        // with more slows every other session.
        let most = if matches!(conn, Backend::Postgres(_)) { 64 } else { MAX_BATCH };
        while batch.len() < most {
            match jobs.try_recv() {
                Ok(job) => batch.push(job),
                Err(_) => break,
            }
        }
        batch_sizes.observe(batch.len() as f64);
        if let Backend::Postgres(session) = &mut conn {
            session.reopen_if_closed();
        }
        let result = run_batch(&conn, batch, archive_hook.is_some(), instance);
        // The archive hears of the rows before anyone hears "done", so a caller that waits
        // for the archive after its answer waits for its own rows too.
        if let Some(hook) = archive_hook.as_ref().filter(|_| result.archive_enqueued > 0) {
            hook(ArchiveEvent::Queued(result.archive_enqueued));
        }
        if let Some(checkpointer) = &checkpointer {
            checkpointer.nudge();
        }
        // A batch that changed no row a view shows (a sweep with nothing to release, the
        // archive clearing its queue) wakes no view.
        if result.changed_views {
            changed.send_modify(|count| *count = count.wrapping_add(1));
        }
        // Jobs never reached (the batch failed early) were dropped, so their callers see
        // "writer dropped a job"; jobs that ran get the commit's verdict.
        for finish in result.finishers {
            finish(result.committed.clone());
        }
        if closing.load(Ordering::SeqCst) {
            break;
        }
    }
    // Closed, or all senders are gone: stop the checkpointer, then fold the WAL back so the
    // database file is complete on its own. Dropping the connection, the last one when the
    // store was closed, lets SQLite remove the WAL and shared-memory files.
    if let Some(checkpointer) = checkpointer {
        checkpointer.stop();
    }
    if let Backend::Sqlite(conn) = conn {
        if let Err(e) = conn.execute_batch("PRAGMA wal_checkpoint(TRUNCATE);") {
            tracing::warn!(error = %e, "final WAL checkpoint failed");
        }
        if let Err((_, e)) = conn.close() {
            tracing::warn!(error = %e, "closing the database failed");
        }
    }
}

/// Session ends a listener keeps for the server while it is busy; a slower server misses
/// older ones (the session then lapses with its capacity or the week).
const ENDED_SESSIONS_BACKLOG: usize = 1024;

/// What the other servers' notices reach on this one.
struct Others {
    instance: u64,
    changed: Arc<watch::Sender<u64>>,
    archive_hook: Option<ArchiveHook>,
    ended_sessions: tokio::sync::broadcast::Sender<Arc<str>>,
}

impl Others {
    /// Starts hearing the other servers on the database: their commits move this server's
    /// change count and reach its archive as its own do; the sessions they end are ended here
    /// too. A reconnected listener may have missed notices, so it counts as a change and a
    /// ring.
    fn listen(self, settings: &PgSettings) -> Listener {
        Listener::start(settings, Arc::new(move |payload| self.heard(payload)))
    }

    fn heard(&self, payload: Option<&str>) {
        let notice = match payload.map(Heard::parse) {
            None => Notice { instance: 0, views: true, queued: 0, archived: 0 },
            Some(Some(Heard::Commit(notice))) if notice.instance != self.instance => notice,
            Some(Some(Heard::SessionEnded(id))) => {
                // Nobody listening (no server state yet) is fine.
                let _ = self.ended_sessions.send(id.into());
                return;
            }
            Some(_) => return,
        };
        if notice.views {
            self.changed.send_modify(|count| *count = count.wrapping_add(1));
        }
        if let Some(hook) = &self.archive_hook {
            if notice.queued > 0 || payload.is_none() {
                hook(ArchiveEvent::Queued(notice.queued));
            }
            if notice.archived > 0 {
                hook(ArchiveEvent::Archived(notice.archived));
            }
        }
    }
}

fn open_connection(path: &Path, read_only: bool) -> Result<Connection> {
    let flags = if read_only {
        OpenFlags::SQLITE_OPEN_READ_ONLY | OpenFlags::SQLITE_OPEN_NO_MUTEX
    } else {
        OpenFlags::SQLITE_OPEN_READ_WRITE
            | OpenFlags::SQLITE_OPEN_CREATE
            | OpenFlags::SQLITE_OPEN_NO_MUTEX
    };
    let conn = Connection::open_with_flags(path, flags)
        .map_err(|e| Error::internal(format!("cannot open database {path:?}: {e}")))?;
    if !read_only {
        // Checkpoints reuse the WAL file but never shrink it: a soak left a 51 MB WAL beside
        // a 6 MB database. When the WAL restarts after a complete checkpoint it is now cut
        // back to 16 MB.
        conn.execute_batch(
            "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;
             PRAGMA journal_size_limit=16777216;",
        )
        .map_err(db::map_err)?;
    }
    // Readers get database pages through the memory map; their page cache holds mostly WAL
    // pages, so a smaller one suffices. Each cache fills up to its size as the database and
    // its WAL grow: 32 MB on every connection let a 20-minute soak's RSS climb ~7 MB a minute.
    let cache_kib = if read_only { 8 * 1024 } else { 32 * 1024 };
    conn.execute_batch(&format!(
        "PRAGMA busy_timeout=60000; PRAGMA cache_size=-{cache_kib}; PRAGMA temp_store=MEMORY;
         PRAGMA mmap_size=268435456;"
    ))
    .map_err(db::map_err)?;
    db::reservations::register_reservation_tick(&conn)?;
    conn.set_prepared_statement_cache_capacity(STATEMENT_CACHE_CAPACITY);
    // Without the planner stability guarantee, SQLite re-plans (re-parses) a cached
    // statement whenever a bound value that could change the plan changes — every call of
    // the optional-filter queries — which made cached statements cost a full prepare.
    conn.set_db_config(DbConfig::SQLITE_DBCONFIG_ENABLE_QPSG, true).map_err(db::map_err)?;
    Ok(conn)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::time::Timestamp;

    /// A WAL grown past the limit is cut back when it restarts after a full checkpoint.
    #[test]
    fn the_wal_is_cut_back_after_a_complete_checkpoint() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("db.sqlite3");
        let conn = open_connection(&path, false).expect("open");
        let wal_size = || std::fs::metadata(dir.path().join("db.sqlite3-wal")).expect("wal").len();
        conn.execute_batch("CREATE TABLE t(b BLOB); PRAGMA wal_autocheckpoint=0;").expect("table");
        conn.execute_batch(
            "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 24)
             INSERT INTO t SELECT zeroblob(1048576) FROM n;",
        )
        .expect("24 MB written");
        assert!(wal_size() > 24 << 20, "the WAL holds the 24 MB: {}", wal_size());
        conn.execute_batch("PRAGMA wal_checkpoint(PASSIVE); INSERT INTO t VALUES (x'00');")
            .expect("checkpoint, then a write that restarts the WAL");
        assert!(wal_size() <= 16 << 20, "cut back to the limit: {}", wal_size());
    }

    /// Concurrent writes land in shared batches; a failing job rolls back only its own rows.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failing_job_rolls_back_alone_within_a_batch() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(&dir.path().join("db.sqlite3"), 2, None).expect("open");
        let writes = (0..64).map(|i| {
            let store = store.clone();
            tokio::spawn(async move {
                store
                    .write(move |db| {
                        db.insert_project_if_absent(&format!("p{i}"), "/k", Timestamp::now())?;
                        if i % 2 == 1 { Err(Error::invalid("odd jobs fail")) } else { Ok(i) }
                    })
                    .await
            })
        });
        let mut outcomes = Vec::new();
        for write in writes {
            outcomes.push(write.await.expect("task"));
        }
        for (i, outcome) in outcomes.iter().enumerate() {
            assert_eq!(outcome.is_ok(), i % 2 == 0, "job {i}: {outcome:?}");
        }
        let slugs = store.read(|db| db.project_keys()).await.expect("read");
        assert_eq!(slugs.len(), 32, "only the successful jobs' rows remain");
        assert!(slugs.iter().all(|(slug, _)| slug[1..].parse::<usize>().is_ok_and(|n| n % 2 == 0)));
        // Every job, failed or not, was in exactly one observed batch.
        let batches = store.batch_sizes();
        assert_eq!(batches.get_sample_sum(), 64.0);
        assert!((1..=64).contains(&batches.get_sample_count()), "{}", batches.get_sample_count());
    }

    /// The change count moves for a committed write that changed rows, and only then: not
    /// for a write that changed nothing, a failed one, or unseen bookkeeping.
    #[tokio::test]
    async fn the_change_count_moves_with_visible_changes_only() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(&dir.path().join("db.sqlite3"), 1, None).expect("open");
        let changes = store.changes();
        let count = || *changes.borrow();
        let now = Timestamp::now();
        store.write(move |db| db.insert_project_if_absent("p", "/p", now)).await.expect("insert");
        assert_eq!(count(), 1, "a row changed");
        store.write(|db| db.project_keys()).await.expect("nothing written");
        assert_eq!(count(), 1, "no row changed");
        let failed = store
            .write(move |db| {
                db.insert_project_if_absent("q", "/q", now)?;
                Err::<(), _>(Error::invalid("the job fails"))
            })
            .await;
        assert!(failed.is_err());
        assert_eq!(count(), 1, "a failed job's changes are rolled back");
        let unseen = store.clone();
        tokio::task::spawn_blocking(move || {
            unseen.write_blocking_unseen(move |db| db.insert_project_if_absent("r", "/r", now))
        })
        .await
        .expect("joined")
        .expect("insert");
        assert_eq!(count(), 1, "bookkeeping wakes no view");
    }

    /// A short read's job that fails or panics leaves its pooled connection usable: the
    /// read transaction around it is closed.
    #[tokio::test]
    async fn short_reads_leave_their_connection_clean() {
        let dir = tempfile::tempdir().expect("temp dir");
        let store = Store::open(&dir.path().join("db.sqlite3"), 1, None).expect("open");
        let failed = store.read_short(|_| Err::<(), _>(Error::invalid("the job fails"))).await;
        assert!(failed.is_err());
        let panicking = store.clone();
        let panicked = tokio::spawn(async move {
            panicking.read_short(|_| -> Result<()> { panic!("the job panics") }).await
        })
        .await;
        assert!(panicked.is_err(), "the task panicked");
        let keys = store
            .read_short(|db| db.project_keys())
            .await
            .expect("the one pooled connection reads again");
        assert!(keys.is_empty());
    }

    /// Notes left for messages already indexed (another program's write, cut short) are
    /// taken up at open without indexing a message twice.
    #[tokio::test]
    async fn leftover_index_notes_are_taken_up_at_open() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("db.sqlite3");
        drop(Store::open(&path, 1, None).expect("create"));
        let conn = Connection::open(&path).expect("open");
        conn.execute_batch(
            "INSERT INTO projects (id, slug, human_key, created_at) VALUES (1, 'a', '/a', 'x');
             INSERT INTO agents (id, project_id, name, program, model, inception_ts, last_active_ts)
                 VALUES (1, 1, 'BlueLake', 'p', 'm', 'x', 'x');
             INSERT INTO messages (id, project_id, sender_id, subject, body_md, created_ts)
                 VALUES (1, 1, 1, 'deploy', 'words', '2026-11-23 00:00:00.000000'),
                        (2, 1, 1, 'deploy', 'more', '2026-11-23 00:00:00.000000');
             DELETE FROM fts_pending WHERE message_id = 2;
             INSERT INTO fts_messages (rowid, message_id, subject, body, project_scope)
                 VALUES (2, 2, 'deploy', 'more', 'p1');
             INSERT INTO fts_pending (message_id) VALUES (2);",
        )
        .expect("a message noted and one indexed and noted again");
        drop(conn);

        let store = Store::open(&path, 1, None).expect("reopen");
        let (hits, notes) = store
            .read(|db| {
                let scope = db::search::SearchScope {
                    project_ids: vec![crate::records::ProjectId(1)],
                    viewer_ids: None,
                };
                let hits = db.search_fts(&scope, "deploy", 10, None)?.unwrap_or_default();
                Ok((hits.iter().map(|h| h.id).collect::<Vec<_>>(), db.pending_index_notes()?))
            })
            .await
            .expect("read");
        assert_eq!((hits.len(), notes), (2, 0), "{hits:?}");
    }

    /// The writer does not checkpoint inside its commits, so the checkpointer thread must move
    /// committed pages into the database file (otherwise the WAL would only grow).
    #[tokio::test]
    async fn committed_pages_reach_the_database_file_without_a_restart() {
        let dir = tempfile::tempdir().expect("temp dir");
        let path = dir.path().join("db.sqlite3");
        let store = Store::open(&path, 1, None).expect("open");
        let size = || std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
        let before = size();
        let key = "/k".repeat(200);
        store
            .write(move |db| {
                for i in 0..3000 {
                    db.insert_project_if_absent(&format!("p{i}"), &key, Timestamp::now())?;
                }
                Ok(())
            })
            .await
            .expect("write");
        let grown = before + 500_000;
        for _ in 0..60 {
            if size() >= grown {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("database file still {} bytes (was {before}); no checkpoint ran", size());
    }
}
