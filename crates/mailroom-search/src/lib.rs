//! mailroom's search: FTS5's query grammar ([`fts5`]) and an index of the messages outside the
//! database ([`SearchIndex`]) that returns a query's best matches without ranking every match.
//!
//! The index ranks as SQLite's FTS5 `bm25()` ranks the reference's `fts_messages` table: the
//! same words (`unicode61`'s letter-and-digit runs, folded to lower-case ASCII), the same
//! formula (k1 1.2, b 0.75, FTS5's idf), a message's length its words in subject and body, and
//! the average over every message indexed. Where it differs: lengths above 40 words are
//! rounded (Tantivy keeps a length in one byte), scores are `f32`, and a word's rarity is
//! counted in the searched projects rather than the whole server. Each project's words are
//! its own terms (`<project>:<word>`), so a search within a project walks that project's
//! postings alone and block-max top-k skips what cannot reach the best `limit`.
//!
//! What the index cannot rank as FTS5 does (prefixes, `NEAR`, `^`, column filters) it leaves
//! to the caller ([`Snapshot::search`] answers `None`), which asks the database.

pub mod fts5;
mod index;
mod query;
mod words;

pub use index::{NewDoc, SearchIndex, Snapshot};
pub use query::{Hit, Scope, TailDoc};
pub use tantivy::TantivyError as Error;

/// Results of the index's operations.
pub type Result<T> = std::result::Result<T, Error>;
