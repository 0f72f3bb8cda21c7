//! Antigravity (Google's editor): `~/.gemini/antigravity/mcp_config.json`, `mcpServers`:
//! remote servers by `serverUrl` and `headers`, or `command` and `args`. No variable syntax
//! is documented, so the token is written as is. Found by its directory only: the `agy`
//! command line reads another file, which no source agrees on.

use super::{Client, Edit, server};
use crate::commands::setup::edit::Format;

pub const CLIENT: Client = Client {
    id: "antigravity",
    name: "Antigravity",
    aliases: &[],
    binary: None,
    present: |home| home.join(".gemini/antigravity").is_dir(),
    edits: |home, wiring| {
        let entry = wiring.typed_entry("", "serverUrl", None, CLIENT.name)?;
        Ok(vec![Edit::new(
            home.join(".gemini/antigravity/mcp_config.json"),
            Format::Json,
            vec![server(vec!["mcpServers"], wiring, entry)],
        )])
    },
    after: "Antigravity lists it under Manage MCP Servers",
    after_hooks: None,
};
