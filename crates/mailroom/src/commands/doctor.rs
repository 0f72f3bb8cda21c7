//! `mailroom doctor check [--json]`: the reference's diagnostics (ops/doctor.rs), read-only and
//! safe beside a running server. Exits 1 when a check fails (a warning alone exits 0).

use anyhow::Result;
use clap::{Args, Subcommand};

use super::archive::Verdict;
use super::output::{self, fields};
use super::shared;
use super::target::Common;

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
        #[command(flatten)]
        common: Common,
    },
}

/// The checks' verdict: clean when every one passed or only warned.
pub fn run(args: DoctorArgs) -> Result<Verdict> {
    let DoctorCommand::Check { common } = args.command;
    let config = shared::core_config(&shared::data_dir(common.data_dir))?;
    if !config.database_path.is_file() {
        anyhow::bail!("{} holds no mailroom database", config.database_path.display());
    }
    let checks = mailroom_core::ops::doctor::check(&config.database_path, &config.storage_root)?;
    let value = serde_json::to_value(&checks)?;
    output::print(common.json, &value, |v| {
        let rows =
            output::items(v).iter().map(|c| fields(c, &["name", "status", "detail"])).collect();
        output::table(&["check", "status", "detail"], rows)
    });
    let failed = checks.iter().any(|c| c.status == "error");
    Ok(if failed { Verdict::Differences } else { Verdict::Clean })
}
