//! Use-cases: one async function per tool or REST route, grouped by family.
//!
//! Each op validates its input, then runs its reads or its whole read-check-write sequence in
//! one store job, so a write never interleaves with another (the writer is single-threaded).
//! Outputs are serde structs whose JSON is the reference's result shape.

pub mod contacts;
pub mod health;
pub mod identity;
pub mod messaging;
pub mod output;
pub mod policy;
pub mod projects;
pub mod resolve;
pub mod search;

use std::sync::Arc;

use crate::config::CoreConfig;
use crate::error::Result;
use crate::store::Store;

/// The core: configuration plus storage. Cheap to clone; shared by every request.
#[derive(Clone)]
pub struct Mailroom {
    pub(crate) store: Store,
    pub(crate) config: Arc<CoreConfig>,
}

impl Mailroom {
    /// Opens the database named by `config` (creating and migrating it as needed).
    pub fn open(config: CoreConfig) -> Result<Self> {
        let store = Store::open(&config.database_path, config.reader_connections)?;
        Ok(Self { store, config: Arc::new(config) })
    }

    /// The configuration this core runs with.
    pub fn config(&self) -> &CoreConfig {
        &self.config
    }
}
