//! `mailroom archive list`: the saved states of the data directory, newest first.

use std::path::Path;

use anyhow::{Context, Result};
use clap::Args;
use mailroom_core::model::time::Timestamp;
use serde_json::{Value, json};

use super::states;
use crate::commands::output;
use crate::commands::shared;
use crate::commands::target::Common;

/// Flags of `mailroom archive list`.
#[derive(Args, Debug)]
pub struct ListArgs {
    /// Show at most this many (the newest) [default: all]
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    #[command(flatten)]
    common: Common,
}

pub fn run(args: ListArgs) -> Result<()> {
    let data_dir = shared::data_dir(args.common.data_dir.clone());
    let mut saved = list(&states::states_dir(&data_dir))?;
    saved.truncate(args.limit.unwrap_or(usize::MAX));
    output::print(args.common.json, &Value::from(saved), table);
    Ok(())
}

/// Every `*.zip` of `dir`, described by its metadata (a file that cannot be read says why in
/// `error`), newest first.
fn list(dir: &Path) -> Result<Vec<Value>> {
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(e).with_context(|| format!("cannot list {}", dir.display())),
    };
    let mut saved = Vec::new();
    for entry in entries {
        let path = entry?.path();
        if path.is_file() && path.extension().is_some_and(|e| e == "zip") {
            saved.push(describe(&path));
        }
    }
    // Newest first by the time the metadata gives; unreadable files last, by name.
    let key = |state: &Value| state["created_at"].as_str().and_then(Timestamp::parse_iso);
    saved.sort_by(|a, b| {
        key(b).cmp(&key(a)).then_with(|| b["file"].as_str().cmp(&a["file"].as_str()))
    });
    Ok(saved)
}

/// One saved state as `list` shows it.
fn describe(path: &Path) -> Value {
    let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
    let mut state = json!({
        "file": path.file_name().map(|n| n.to_string_lossy()),
        "path": path,
        "size_bytes": size,
    });
    match states::open_zip(path).and_then(|mut zip| states::read_metadata(&mut zip)) {
        Ok(metadata) => {
            let slugs: Vec<&Value> =
                output::items(&metadata["projects_included"]).iter().map(|p| &p["slug"]).collect();
            state["created_at"] = metadata["created_at"].clone();
            state["label"] = metadata["label"].clone();
            state["projects"] = json!(slugs);
            state["git_head"] = metadata["storage"]["git_head"].clone();
        }
        Err(e) => state["error"] = json!(format!("{e:#}")),
    }
    state
}

fn table(saved: &Value) -> String {
    let rows = output::items(saved)
        .iter()
        .map(|state| {
            let projects: Vec<String> =
                output::items(&state["projects"]).iter().map(output::cell).collect();
            let size = states::human_size(state["size_bytes"].as_u64().unwrap_or(0));
            let mut row = output::fields(state, &["file", "created_at", "label"]);
            row.push(size);
            row.push(match state["error"].as_str() {
                Some(error) => format!("unreadable: {error}"),
                None => projects.join(", "),
            });
            row
        })
        .collect();
    output::table(&["file", "created", "label", "size", "projects"], rows)
}
