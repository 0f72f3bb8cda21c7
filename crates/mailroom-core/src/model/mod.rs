//! Pure domain rules shared by every use-case: agent names, project slugs, thread ids, search
//! query sanitation, timestamps, fuzzy matching, heuristic thread summaries and the TOON encoding.
//!
//! Nothing in this tree touches the database, the Git archive, the clock (except
//! [`time::Timestamp::now`]) or the network, so every rule can be tested as a plain function and
//! reused by both the MCP tools and the REST routes without pulling in any transport.

pub mod bounds;
pub mod fnmatch;
pub mod names;
pub mod path_pattern;
pub mod search_query;
pub mod sha1;
pub mod siblings;
pub mod similarity;
pub mod slug;
pub mod summary;
pub mod summary_refine;
pub mod thread_id;
pub mod time;
pub mod toon;
pub mod tsquery;
