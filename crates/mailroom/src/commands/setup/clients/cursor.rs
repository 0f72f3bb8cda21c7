//! Cursor: `~/.cursor/mcp.json`, `mcpServers`: `url` and `headers` (with `type: "http"`,
//! which some Cursor versions need and none refuse), or `command` and `args`. Tokens from
//! the environment are spelled `${env:NAME}`.

use super::{Client, Edit, server};
use crate::commands::setup::edit::Format;

pub const CLIENT: Client = Client {
    id: "cursor",
    name: "Cursor",
    aliases: &["cursor-agent"],
    binary: Some("cursor-agent"),
    present: |home| home.join(".cursor").is_dir(),
    edits: |home, wiring| {
        let entry =
            wiring.typed_entry("http", "url", Some(|v| format!("${{env:{v}}}")), CLIENT.name)?;
        Ok(vec![Edit::new(
            home.join(".cursor/mcp.json"),
            Format::Json,
            vec![server(vec!["mcpServers"], wiring, entry)],
        )])
    },
    after: "Cursor lists it under Settings → MCP",
    after_hooks: None,
};
