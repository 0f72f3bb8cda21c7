//! One module per subcommand, and what they share.

pub mod archive;
pub mod bench;
pub mod check_inbox;
pub mod docs;
pub mod guard;
pub mod remote;
pub mod serve;
pub mod service;
pub mod setup;
pub mod shared;
pub mod stdio;
pub mod upkeep;
