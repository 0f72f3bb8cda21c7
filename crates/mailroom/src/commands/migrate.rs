//! `mailroom migrate`: brings the data directory's database to the current schema (creating it
//! when there is none), as the reference's `migrate`. With a server running there, the server
//! already did at its start.

use anyhow::Result;
use clap::Args;

use super::backend::Backend;
use super::shared;

/// `mailroom migrate`.
#[derive(Args, Debug)]
pub struct MigrateArgs {
    /// Directory for the database and the archive [default: ./mailroom-data]
    #[arg(long, value_name = "DIR")]
    data_dir: Option<std::path::PathBuf>,
}

pub fn run(args: MigrateArgs) -> Result<()> {
    let data_dir = shared::data_dir(args.data_dir);
    let database = mailroom_core::DatabaseAt::of(&shared::core_config(&data_dir)?).describe();
    match Backend::open(&data_dir, true)? {
        Backend::Server(_) => println!("{database}: migrated by the server running on it"),
        Backend::Local(_) => println!("{database}: up to date"),
    }
    Ok(())
}
