//! One module per subcommand, and what they share.

pub mod archive;
pub mod bench;
pub mod serve;
pub mod setup;
