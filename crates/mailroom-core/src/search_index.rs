//! The search index beside the database (`mailroom-search`), in `<data dir>/search-index`.
//!
//! A server's thread of its own feeds it from the database: new messages by id, then the
//! messages `search_changes` names (deleted or edited, migration 0017), committing at most five
//! times a second. Each commit's payload says how far the index reaches ([`Position`]); a search
//! scores the scope's messages past that point itself (the tail), so a message is found as soon
//! as its send has answered. An index that is missing, of another version, or not this
//! database's (its last message differs, the change log went back or was trimmed past it) is
//! rebuilt, while searches ask the database. On PostgreSQL each server keeps its own index.
//! A one-call command only reads the index, and only if the server keeps one.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use mailroom_search::{NewDoc, SearchIndex, Snapshot};
use serde::{Deserialize, Serialize};

use crate::config::SearchIndexConfig;
use crate::error::{Error, Result};
use crate::store::Store;
use crate::store::db::search::FeedMessage;

/// The payload of every commit: how far the index reaches.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub(crate) struct Position {
    /// The feed's version: another rebuilds the index.
    version: u32,
    /// Every message up to this id is in (0: none).
    pub(crate) messages: i64,
    /// Every change up to this `seq` is applied.
    changes: i64,
    /// The `created_ts` of message `messages`, to tell this database from another.
    last_created: String,
}

const FEED_VERSION: u32 = 1;

impl Position {
    fn parse(payload: &str) -> Option<Self> {
        serde_json::from_str::<Self>(payload).ok().filter(|p| p.version == FEED_VERSION)
    }
}

/// What a search reads: the snapshot and how far it reaches; `None` while the index has no
/// commit of this version.
pub(crate) fn searchable(index: &SearchIndex) -> Option<(Arc<Snapshot>, Position)> {
    let snapshot = match index.snapshot() {
        Ok(snapshot) => snapshot,
        Err(e) => {
            tracing::warn!(error = %e, "cannot read the search index; searching the database");
            return None;
        }
    };
    let position = Position::parse(snapshot.payload()?)?;
    Some((snapshot, position))
}

/// Messages read from the database per step.
const BATCH: i64 = 5_000;
/// Messages added between commits while catching up (a rebuild keeps its progress).
const COMMIT_EVERY: usize = 50_000;
/// The least time between two rounds that committed (Tantivy writes a segment per commit).
const ROUND_SPACING: Duration = Duration::from_millis(200);
/// The longest a round waits when nothing is heard (another server's writes are not heard).
const IDLE_ROUND: Duration = Duration::from_secs(1);
/// How often old changes are trimmed.
const TRIM_EVERY: Duration = Duration::from_secs(3600);

/// The index and, in a server, the thread that feeds it.
pub struct SearchIndexer {
    index: Arc<SearchIndex>,
    feeder: Mutex<Option<(Arc<AtomicBool>, JoinHandle<()>)>>,
}

impl SearchIndexer {
    /// Opens the index `config` names: to write it and feed it from `store` when `config`
    /// says this process writes, else to read it (when there is one). `None` when disabled or
    /// when it cannot be opened (logged): searches then ask the database.
    pub fn open(config: &SearchIndexConfig, store: &Store) -> Option<Arc<Self>> {
        let dir = config.dir.as_ref()?;
        let opened = if config.writes {
            Self::open_and_feed(dir, store)
        } else {
            SearchIndex::open_read_only(dir).map(|index| {
                index.map(|index| {
                    Arc::new(Self { index: Arc::new(index), feeder: Mutex::new(None) })
                })
            })
        };
        opened.unwrap_or_else(|e| {
            tracing::warn!(dir = %dir.display(), error = %e, "cannot open the search index; searching the database");
            None
        })
    }

    /// Opens the index to write it on the feeder's own thread, at background priority: the
    /// threads Tantivy starts for its writer (indexing, merging) inherit that priority, so
    /// they never hold a core a request waits for.
    fn open_and_feed(
        dir: &std::path::Path,
        store: &Store,
    ) -> mailroom_search::Result<Option<Arc<Self>>> {
        let (opened, receive) = std::sync::mpsc::channel();
        let stop = Arc::new(AtomicBool::new(false));
        let (dir, store, stopping) = (dir.to_path_buf(), store.clone(), Arc::clone(&stop));
        let spawned =
            std::thread::Builder::new().name("mailroom-search-index".into()).spawn(move || {
                crate::background::lower_thread_priority();
                match SearchIndex::open_writable(&dir) {
                    Ok(index) => {
                        let index = Arc::new(index);
                        let _ = opened.send(Ok(Arc::clone(&index)));
                        Feeder { index, store, stop: stopping }.run();
                    }
                    Err(e) => {
                        let _ = opened.send(Err(e));
                    }
                }
            });
        let thread = match spawned {
            Ok(thread) => thread,
            Err(e) => return Err(mailroom_search::Error::from(e)),
        };
        let index = receive.recv().map_err(|_| {
            mailroom_search::Error::InternalError("the search index's thread ended".into())
        })??;
        Ok(Some(Arc::new(Self { index, feeder: Mutex::new(Some((stop, thread))) })))
    }

    /// The index, for searches.
    pub fn index(&self) -> &SearchIndex {
        &self.index
    }

    /// Stops the feeder (after the step it runs); the index keeps its last commit.
    pub fn close(&self) {
        let feeder = self.feeder.lock().unwrap_or_else(PoisonError::into_inner).take();
        if let Some((stop, thread)) = feeder {
            stop.store(true, Ordering::SeqCst);
            let _ = thread.join();
        }
    }
}

impl Drop for SearchIndexer {
    /// A server dropped without [`SearchIndexer::close`] (a test's) stops its feeder soon,
    /// which lets the store it holds go (not waited for: a drop may run on an async thread).
    fn drop(&mut self) {
        if let Some((stop, _)) = self.feeder.lock().unwrap_or_else(PoisonError::into_inner).as_ref()
        {
            stop.store(true, Ordering::SeqCst);
        }
    }
}

/// The feeding thread's state.
struct Feeder {
    index: Arc<SearchIndex>,
    store: Store,
    stop: Arc<AtomicBool>,
}

impl Feeder {
    fn run(self) {
        let mut changes = self.store.changes();
        let mut reader = None;
        let mut trimmed = Instant::now();
        let mut failing = false;
        while !self.stop.load(Ordering::SeqCst) {
            let started = Instant::now();
            let outcome = self.round(&mut reader);
            match &outcome {
                Ok(_) => failing = false,
                Err(e) => {
                    if !failing {
                        tracing::warn!(error = %e, "the search index cannot catch up; retrying");
                    }
                    failing = true;
                    reader = None;
                }
            }
            if trimmed.elapsed() >= TRIM_EVERY {
                trimmed = Instant::now();
                if let Err(e) = self.store.write_blocking_unseen(|db| db.trim_search_changes()) {
                    tracing::warn!(error = %e, "cannot trim the search index's change log");
                }
            }
            let committed = matches!(outcome, Ok(true));
            let earliest = started + if committed { ROUND_SPACING } else { Duration::ZERO };
            let latest = started + IDLE_ROUND;
            loop {
                if self.stop.load(Ordering::SeqCst) {
                    return;
                }
                let now = Instant::now();
                if now >= latest || (now >= earliest && changes.has_changed().unwrap_or(true)) {
                    changes.mark_unchanged();
                    break;
                }
                std::thread::sleep(Duration::from_millis(10));
            }
        }
    }

    /// Brings the index up to the database; whether it committed.
    fn round(&self, reader: &mut Option<crate::store::Reader>) -> Result<bool> {
        let reader = match reader {
            Some(reader) => reader,
            None => reader.insert(self.store.dedicated_reader()?),
        };
        let snapshot = self.index.snapshot().map_err(index_error)?;
        let ends = reader.read(|db| db.search_feed_ends())?;
        let known = snapshot.payload().and_then(Position::parse);
        let stale = match &known {
            Some(position) => is_stale(position, ends, reader)?,
            None => true,
        };
        let mut position = match known {
            Some(position) if !stale => position,
            _ => {
                tracing::info!(messages = ends.last_message, "building the search index");
                self.index.delete_all().map_err(index_error)?;
                Position {
                    version: FEED_VERSION,
                    messages: 0,
                    changes: ends.last_change,
                    last_created: String::new(),
                }
            }
        };
        let mut dirty = stale;
        loop {
            let changes = reader.read(|db| db.search_feed_changes(position.changes, BATCH))?;
            let Some(&(last, _)) = changes.last() else { break };
            let mut ids: Vec<i64> =
                changes.iter().map(|c| c.1).filter(|id| *id <= position.messages).collect();
            ids.sort_unstable();
            ids.dedup();
            let unsigned: Vec<u64> =
                ids.iter().map(|id| u64::try_from(*id).unwrap_or_default()).collect();
            self.index.delete(&unsigned).map_err(index_error)?;
            let again = reader.read(|db| db.search_feed_messages_by_id(&ids))?;
            self.add(&again)?;
            position.changes = last;
            dirty = true;
        }
        let mut added = 0;
        while !self.stop.load(Ordering::SeqCst) {
            let batch = reader.read(|db| db.search_feed_messages(position.messages, BATCH))?;
            let Some(last) = batch.last() else { break };
            self.add(&batch)?;
            position.messages = last.id;
            position.last_created.clone_from(&last.created_ts);
            added += batch.len();
            dirty = true;
            if added >= COMMIT_EVERY {
                self.commit(&position)?;
                tracing::info!(
                    through = position.messages,
                    of = ends.last_message,
                    "search index catching up"
                );
                added = 0;
            }
        }
        if dirty {
            self.commit(&position)?;
        }
        Ok(dirty)
    }

    fn add(&self, messages: &[FeedMessage]) -> Result<()> {
        let docs: Vec<NewDoc<'_>> = messages
            .iter()
            .map(|m| NewDoc {
                id: u64::try_from(m.id).unwrap_or_default(),
                project: u64::try_from(m.project_id).unwrap_or_default(),
                subject: &m.subject,
                body: &m.body,
                who: &m.who,
            })
            .collect();
        self.index.add(&docs).map_err(index_error)
    }

    fn commit(&self, position: &Position) -> Result<()> {
        let payload =
            serde_json::to_string(position).map_err(|e| Error::internal(e.to_string()))?;
        self.index.commit(&payload).map_err(index_error)
    }
}

/// Whether the index was made from another database, or from this one before changes it
/// can no longer read.
fn is_stale(
    position: &Position,
    ends: crate::store::db::search::FeedEnds,
    reader: &mut crate::store::Reader,
) -> Result<bool> {
    if ends.trimmed_through > position.changes || ends.last_change < position.changes {
        return Ok(true);
    }
    if position.messages == 0 {
        return Ok(false);
    }
    let id = position.messages;
    Ok(match reader.read(|db| db.search_feed_created(id))? {
        Some(created) => created != position.last_created,
        // Gone: the change log must say so.
        None => ends.last_change == position.changes,
    })
}

fn index_error(e: mailroom_search::Error) -> Error {
    Error::internal(format!("search index: {e}"))
}

#[cfg(test)]
mod tests;
