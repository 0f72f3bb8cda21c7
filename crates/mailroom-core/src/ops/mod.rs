//! Use-cases: one async function per tool or REST route, one folder per domain (`agents`,
//! `projects`, `messaging`, `contacts`, `reservations`, `search`; `products`, `build_slots`
//! and `archive_views` are one file each). `macros` composes ops; `conventions`, `resolve`
//! and `output` are the pieces every domain shares; `health` serves the probes.
//!
//! Each op validates its input, then runs its reads or its whole read-check-write sequence in
//! one store job, so a write never interleaves with another (the writer is single-threaded).
//! Outputs are serde structs whose JSON is the reference's result shape.

pub mod agents;
pub mod archive_views;
pub mod backups;
pub mod build_slots;
pub mod contacts;
pub mod conventions;
pub mod doctor;
pub mod health;
pub mod import;
pub mod macros;
pub mod messaging;
pub mod output;
pub mod products;
pub mod projects;
pub mod push;
pub mod reservations;
pub mod resolve;
pub mod search;
pub mod sessions;
pub mod upkeep;
pub mod webhooks;

use std::sync::Arc;

use crate::archive::{Archive, ArchiveSettings, PreparedArchive};
use crate::config::CoreConfig;
use crate::error::Result;
use crate::llm::LlmClient;
use crate::store::Store;

/// The core: configuration, storage and the archive. Cheap to clone; shared by every request.
#[derive(Clone)]
pub struct Mailroom {
    pub(crate) store: Store,
    pub(crate) config: Arc<CoreConfig>,
    pub(crate) archive: Option<Arc<Archive>>,
    /// The LLM used to refine summaries; `None` when disabled.
    pub(crate) llm: Option<Arc<LlmClient>>,
    /// Serialises build-slot read-modify-write sequences (their files are not in the DB).
    pub(crate) build_slots_lock: Arc<std::sync::Mutex<()>>,
    /// The reservations in force per project, mirrored from the database.
    pub(crate) active_reservations: Arc<reservations::active::ActiveReservations>,
    /// The search index beside the database; `None`: searches ask the database.
    pub(crate) search: Option<Arc<crate::search_index::SearchIndexer>>,
}

impl Mailroom {
    /// Opens the database named by `config` (creating and migrating it as needed) and, unless
    /// disabled, the Git archive, whose writer first replays work queued before a crash.
    pub fn open(config: CoreConfig) -> Result<Self> {
        let prepared = if config.archive.enabled {
            Some(PreparedArchive::prepare(ArchiveSettings::from_config(&config))?)
        } else {
            None
        };
        let hook = prepared.as_ref().map(PreparedArchive::hook);
        let store = match &config.postgres {
            Some(settings) => Store::open_postgres(settings.clone(), hook)?,
            None => Store::open(&config.database_path, config.reader_connections, hook)?,
        };
        let archive = prepared.map(|p| p.start(&store)).transpose()?.map(Arc::new);
        let search = crate::search_index::SearchIndexer::open(&config.search_index, &store);
        let llm = LlmClient::from_config(&config.llm).map(Arc::new);
        Ok(Self {
            store,
            config: Arc::new(config),
            archive,
            llm,
            build_slots_lock: Arc::default(),
            active_reservations: Arc::new(reservations::active::ActiveReservations::new()),
            search,
        })
    }

    /// The Git archive, unless disabled.
    pub fn archive(&self) -> Option<&Archive> {
        self.archive.as_deref()
    }

    /// Commits all queued archive work and stops the archive writer, then closes the
    /// database (its WAL folded back into the file); blocks until done. Call once, when no
    /// request can arrive any more.
    pub fn close(&self) {
        if let Some(search) = &self.search {
            search.close();
        }
        if let Some(archive) = &self.archive {
            archive.close();
        }
        // Another server may lead while this one's store finishes.
        self.store.leadership().release();
        self.store.close();
    }

    /// Waits while the archive lags too far behind (backpressure for writes that queue
    /// archive work).
    pub(crate) async fn admit_archive_work(&self) -> Result<()> {
        match &self.archive {
            Some(archive) => archive.admit().await,
            None => Ok(()),
        }
    }

    /// Whether this server writes the archive and runs the scheduled upkeep: always on
    /// SQLite; on PostgreSQL, the one server of those sharing the database that holds the
    /// lease (docs/scale-out.md).
    pub fn leads(&self) -> bool {
        self.store.leadership().held()
    }

    /// Whether other servers may share this one's database (PostgreSQL).
    pub fn shares_database(&self) -> bool {
        self.store.leadership().shared()
    }

    /// The configuration this core runs with.
    pub fn config(&self) -> &CoreConfig {
        &self.config
    }

    /// Told of every committed write (its value counts them): what live views wait on.
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.store.changes()
    }
}
