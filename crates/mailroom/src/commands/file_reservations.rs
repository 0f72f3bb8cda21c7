//! `mailroom file-reservations list | active | soon PROJECT`: a project's file reservations
//! (resource://file_reservations, which sweeps first), as the reference's commands.

use anyhow::Result;
use clap::{Args, Subcommand};
use mailroom_core::model::time::Timestamp;
use serde_json::Value;

use super::backend::Backend;
use super::mail::encode;
use super::output::{self, cell, fields, items};
use super::target::Common;

/// `mailroom file-reservations`.
#[derive(Args, Debug)]
pub struct FileReservationsArgs {
    #[command(subcommand)]
    command: Command,
    #[command(flatten)]
    common: Common,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// The reservations in force (with --no-active-only, every one ever made)
    List {
        project: String,
        #[arg(long, alias = "active_only", overrides_with = "no_active_only")]
        active_only: bool,
        #[arg(long, alias = "no_active_only")]
        no_active_only: bool,
    },
    /// The reservations in force, with the time each has left
    Active {
        project: String,
        #[arg(long, default_value_t = 100)]
        limit: usize,
    },
    /// Those in force that expire within --minutes
    Soon {
        project: String,
        #[arg(long, default_value_t = 30)]
        minutes: i64,
    },
}

pub fn run(args: FileReservationsArgs) -> Result<()> {
    let backend = args.common.backend()?;
    let (listed, active_only) = match &args.command {
        Command::List { project, no_active_only, .. } => {
            (read(&backend, project, !no_active_only)?, !no_active_only)
        }
        Command::Active { project, limit } => {
            let mut all = read(&backend, project, true)?;
            if let Some(rows) = all.as_array_mut() {
                rows.truncate(*limit);
            }
            (all, true)
        }
        Command::Soon { project, minutes } => {
            let horizon = Timestamp::now().plus_seconds(minutes.saturating_mul(60));
            let all = read(&backend, project, true)?;
            let soon: Vec<Value> = items(&all)
                .iter()
                .filter(|r| {
                    r["expires_ts"]
                        .as_str()
                        .and_then(Timestamp::parse_iso)
                        .is_some_and(|t| t <= horizon)
                })
                .cloned()
                .collect();
            (Value::Array(soon), true)
        }
    };
    output::print(args.common.json, &listed, |v| table(v, active_only));
    Ok(())
}

/// The project's reservations; `project` may be a key or a slug. Expired and stale ones
/// are released first (the resource sweeps), which `doctor repair` relies on.
pub fn read(backend: &Backend, project: &str, active_only: bool) -> Result<Value> {
    let project = encode(project);
    backend
        .read_resource(&format!("resource://file_reservations/{project}?active_only={active_only}"))
}

fn table(rows: &Value, active_only: bool) -> String {
    let now = Timestamp::now();
    let rows = items(rows)
        .iter()
        .map(|r| {
            let left = r["expires_ts"]
                .as_str()
                .and_then(Timestamp::parse_iso)
                .map(|t| minutes_left(now, t))
                .unwrap_or_default();
            let exclusive =
                if r["exclusive"].as_bool() == Some(true) { "exclusive" } else { "shared" };
            let state = if r["released_ts"].is_string() {
                "released".to_string()
            } else if r["stale"].as_bool() == Some(true) {
                "stale".to_string()
            } else {
                left
            };
            let mut row = fields(r, &["id", "agent", "path_pattern"]);
            row.extend([exclusive.to_string(), state, cell(&r["reason"])]);
            row
        })
        .collect();
    let state = if active_only { "left" } else { "state" };
    output::table(&["id", "agent", "pattern", "", state, "reason"], rows)
}

/// "12 min" until `at`, "expired" when past.
fn minutes_left(now: Timestamp, at: Timestamp) -> String {
    let seconds = (at.as_micros() - now.as_micros()) / 1_000_000;
    if seconds <= 0 { "expired".to_string() } else { format!("{} min", (seconds + 59) / 60) }
}
