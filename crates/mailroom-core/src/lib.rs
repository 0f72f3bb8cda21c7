//! mailroom-core: the domain of the mailroom coordination server.
//!
//! `model` holds pure rules (names, slugs, timestamps, query sanitising, summaries), `ops` the
//! use-cases the transports call (one function per tool or route), `store` the only code that
//! touches SQL. This crate knows nothing of HTTP or JSON-RPC.

pub mod archive;
mod background;
pub mod config;
pub mod database_files;
mod env_value;
pub mod error;
pub mod guard;
pub mod llm;
mod memory;
pub mod model;
pub mod ops;
pub mod records;
mod search_index;
mod store;

pub use config::CoreConfig;
pub use error::{Category, Error, Result, StorageFault};
pub use memory::{fix_mmap_threshold, limit_git_mappings, sqlite_memory_used};
pub use ops::Mailroom;
pub use store::SQLITE_HEAP_LIMIT;
pub use store::copy::{CopyReport, DatabaseAt, copy_database};
pub use store::db::postgres::PgSettings;
