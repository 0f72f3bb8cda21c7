//! `mailroom copy-database --to URL`: every row of the data directory's database (SQLite, or
//! PostgreSQL when `DATABASE_URL` names it) copied into a new database of the other kind or
//! the same, ids and all, in one transaction; the source is left as it was. The archive stays
//! where it is: a server started with `DATABASE_URL=URL` on this data directory serves the
//! copy with the same archive (`mailroom archive verify` compares the two).

use anyhow::{Context, Result, bail};
use clap::Args;
use mailroom_core::{DatabaseAt, copy_database};

use super::remote::Remote;
use super::shared;
use super::target::Common;

/// `mailroom copy-database`.
#[derive(Args, Debug)]
pub struct CopyDatabaseArgs {
    /// The new database: `postgres://user:password@host:5432/db` (an empty database) or
    /// `sqlite:////absolute/path.sqlite3` (a file that does not exist yet)
    #[arg(long, value_name = "DATABASE_URL")]
    to: String,
    #[command(flatten)]
    common: Common,
}

pub fn run(args: CopyDatabaseArgs) -> Result<()> {
    let data_dir = shared::data_dir(args.common.data_dir.clone());
    let config = shared::core_config(&data_dir)?;
    let target = DatabaseAt::from_url(&args.to).map_err(|e| anyhow::anyhow!("--to: {e}"))?;
    // Nothing may change the source while it is copied: no server, no other command.
    let _lock =
        match shared::wait_for_data_dir(&data_dir, || Remote::find(&data_dir).ok().flatten())? {
            Ok(lock) => lock,
            Err(_) => bail!(
                "a server is running on {}; stop it first, so nothing changes while the copy runs",
                data_dir.display()
            ),
        };
    let source = DatabaseAt::of(&config);
    let report = copy_database(&source, &target).context("copying the database")?;
    if args.common.json {
        let tables: serde_json::Map<String, serde_json::Value> =
            report.tables.iter().map(|(t, n)| (t.clone(), (*n).into())).collect();
        println!("{}", serde_json::json!({ "to": config_url(&args.to), "tables": tables }));
    } else {
        for (table, rows) in &report.tables {
            println!("{table:<28} {rows:>10}");
        }
        println!(
            "copied into {}; serve it with: DATABASE_URL='{}' mailroom serve --data-dir {}",
            config_url(&args.to),
            args.to,
            data_dir.display()
        );
    }
    Ok(())
}

/// The URL as reports show it (no password).
fn config_url(url: &str) -> String {
    mailroom_core::config::without_password(url)
}
