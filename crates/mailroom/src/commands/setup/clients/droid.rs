//! Factory Droid: `~/.factory/mcp.json`, `mcpServers`: `type: "http"` with `url` and
//! `headers`, or `type: "stdio"`; hooks in `~/.factory/hooks.json`, Claude Code's shape.

use super::{Client, Edit, server};
use crate::commands::setup::edit::Format;

pub const CLIENT: Client = Client {
    id: "droid",
    name: "Factory Droid",
    aliases: &["factory"],
    binary: Some("droid"),
    present: |home| home.join(".factory").is_dir(),
    edits: |home, wiring| {
        let entry = wiring
            .typed_entry("http", "url", None, CLIENT.name)?
            .with("disabled", crate::commands::setup::value::Value::Bool(false));
        let mut edits = vec![Edit::new(
            home.join(".factory/mcp.json"),
            Format::Json,
            vec![server(vec!["mcpServers"], wiring, entry)],
        )];
        let hooks = wiring.claude_style_hooks("PostToolUse", 10, false);
        if !hooks.is_empty() {
            edits.push(Edit::new(home.join(".factory/hooks.json"), Format::Json, hooks));
        }
        Ok(edits)
    },
    after: Some("`droid mcp list` shows it"),
};
