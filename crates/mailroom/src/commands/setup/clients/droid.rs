//! Factory Droid: `~/.factory/mcp.json`, `mcpServers`: `type: "http"` with `url` and
//! `headers`, or `type: "stdio"`; hooks in `~/.factory/hooks.json`, Claude Code's shape.

use super::{Client, Edit, server};
use crate::commands::setup::edit::Format;
use crate::commands::setup::value::Value;

pub const CLIENT: Client = Client {
    id: "droid",
    name: "Factory Droid",
    aliases: &["factory"],
    binary: Some("droid"),
    present: |home| home.join(".factory").is_dir(),
    edits: |home, wiring| {
        let entry = wiring.typed_entry("http", "url", None, CLIENT.name)?;
        let entry = entry.with("disabled", Value::Bool(false));
        let servers = vec![server(vec!["mcpServers"], wiring, entry)];
        let hooks = wiring.hooks("PostToolUse", 10, false);
        Ok(vec![
            Edit::new(home.join(".factory/mcp.json"), Format::Json, servers),
            Edit::new(home.join(".factory/hooks.json"), Format::Json, hooks),
        ])
    },
    after: "`droid mcp list` shows it connected",
    after_hooks: Some("its hooks run in every session"),
};
