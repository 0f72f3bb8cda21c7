//! VS Code with GitHub Copilot: the user profile's `mcp.json` (`~/.config/Code/User` on Linux,
//! `~/Library/Application Support/Code/User` on macOS), JSONC, top-level `servers`:
//! `type: "http"` with `url` and `headers`, or `type: "stdio"`. Tokens from the environment
//! are spelled `${env:NAME}`. Copilot's hooks read Claude Code's `~/.claude/settings.json`.

use std::path::PathBuf;

use super::{Client, Edit, Home, server};
use crate::commands::setup::edit::Format;

pub const CLIENT: Client = Client {
    id: "vscode",
    name: "VS Code (Copilot)",
    aliases: &["code", "copilot", "vs-code"],
    binary: Some("code"),
    present: |home| user_dir(home).is_dir(),
    edits: |home, wiring| {
        let entry =
            wiring.typed_entry("http", "url", Some(|v| format!("${{env:{v}}}")), CLIENT.name)?;
        Ok(vec![Edit::new(
            user_dir(home).join("mcp.json"),
            Format::Json,
            vec![server(vec!["servers"], wiring, entry)],
        )])
    },
    after: "VS Code asks once to trust the server when Copilot first starts it (MCP: List Servers)",
    after_hooks: None,
};

fn user_dir(home: &Home) -> PathBuf {
    home.app_config().join("Code/User")
}
