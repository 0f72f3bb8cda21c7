//! Windsurf: `~/.codeium/windsurf/mcp_config.json`, `mcpServers`: remote servers by
//! `serverUrl` and `headers`, or `command` and `args`. Tokens from the environment are
//! spelled `${env:NAME}`.

use super::{Client, Edit, server};
use crate::commands::setup::edit::Format;

pub const CLIENT: Client = Client {
    id: "windsurf",
    name: "Windsurf",
    aliases: &[],
    binary: Some("windsurf"),
    present: |home| home.join(".codeium/windsurf").is_dir(),
    edits: |home, wiring| {
        let entry =
            wiring.typed_entry("", "serverUrl", Some(|v| format!("${{env:{v}}}")), CLIENT.name)?;
        Ok(vec![Edit::new(
            home.join(".codeium/windsurf/mcp_config.json"),
            Format::Json,
            vec![server(vec!["mcpServers"], wiring, entry)],
        )])
    },
    after: "refresh Windsurf's MCP servers (Cascade → MCP) to load it",
    after_hooks: None,
};
