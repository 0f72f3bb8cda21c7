//! `mailroom doctor check [--json]`: the reference's diagnostics (ops/doctor.rs), read-only and
//! safe beside a running server. Exits 1 when a check fails (a warning alone exits 0).

use anyhow::Result;
use clap::{Args, Subcommand};

use super::output::{self, cell};
use super::shared;

/// `mailroom doctor`.
#[derive(Args, Debug)]
pub struct DoctorArgs {
    #[command(subcommand)]
    command: DoctorCommand,
}

#[derive(Subcommand, Debug)]
enum DoctorCommand {
    /// Stale locks, database integrity, orphaned rows, the full-text index, expired
    /// reservations, the write-ahead log
    Check {
        /// Directory for the database and the archive [default: ./mailroom-data]
        #[arg(long, value_name = "DIR")]
        data_dir: Option<std::path::PathBuf>,
        /// One JSON array of checks
        #[arg(long)]
        json: bool,
    },
}

/// The checks' verdict: whether every one passed or only warned.
pub fn run(args: DoctorArgs) -> Result<bool> {
    let DoctorCommand::Check { data_dir, json } = args.command;
    let config = shared::core_config(&shared::data_dir(data_dir))?;
    if !config.database_path.is_file() {
        anyhow::bail!("{} holds no mailroom database", config.database_path.display());
    }
    let checks = mailroom_core::ops::doctor::check(&config.database_path, &config.storage_root)
        .map_err(|e| anyhow::anyhow!(e.message))?;
    let value = serde_json::to_value(&checks)?;
    output::print(json, &value, |v| {
        let rows = output::items(v)
            .iter()
            .map(|c| vec![cell(&c["name"]), cell(&c["status"]), cell(&c["detail"])])
            .collect();
        output::table(&["check", "status", "detail"], rows)
    });
    Ok(checks.iter().all(|c| c.status != "error"))
}
