//! One module per subcommand, and what they share.

pub mod acks;
pub mod agents;
pub mod am_run;
pub mod amctl;
pub mod archive;
pub mod backend;
pub mod bench;
pub mod check_inbox;
pub mod config;
pub mod contacts;
pub mod docs;
pub mod file_reservations;
pub mod guard;
pub mod hard_delete;
pub mod list_projects;
pub mod mail;
pub mod migrate;
pub mod output;
pub mod remote;
pub mod serve;
pub mod service;
pub mod setup;
pub mod shared;
pub mod stdio;
pub mod target;
pub mod upkeep;
