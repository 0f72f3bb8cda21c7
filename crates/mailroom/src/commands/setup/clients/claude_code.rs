//! Claude Code: servers in `~/.claude.json` (`$CLAUDE_CONFIG_DIR/.claude.json`) under the
//! top-level `mcpServers` (user scope, every project); hooks in `~/.claude/settings.json`
//! (`$CLAUDE_CONFIG_DIR/settings.json`), which VS Code's Copilot reads too.

use std::path::PathBuf;

use super::{Client, Edit, Home, server};
use crate::commands::setup::edit::Format;

pub const CLIENT: Client = Client {
    id: "claude-code",
    name: "Claude Code",
    aliases: &["claude"],
    binary: Some("claude"),
    present: |home| state_file(home).is_file() || settings_dir(home).is_dir(),
    edits: |home, wiring| {
        let entry =
            wiring.typed_entry("http", "url", Some(|v| format!("${{{v}}}")), CLIENT.name)?;
        let mut edits = vec![Edit::new(
            state_file(home),
            Format::Json,
            vec![server(vec!["mcpServers"], wiring, entry)],
        )];
        let hooks = wiring.claude_style_hooks("PostToolUse", 10, false);
        if !hooks.is_empty() {
            edits.push(Edit::new(settings_dir(home).join("settings.json"), Format::Json, hooks));
        }
        Ok(edits)
    },
    after: Some("`claude mcp list` shows it; hooks run once the project's folder is trusted"),
};

/// `$CLAUDE_CONFIG_DIR`, else `~/.claude`.
fn settings_dir(home: &Home) -> PathBuf {
    home.var_path("CLAUDE_CONFIG_DIR").unwrap_or_else(|| home.join(".claude"))
}

/// `$CLAUDE_CONFIG_DIR/.claude.json`, else `~/.claude.json`.
fn state_file(home: &Home) -> PathBuf {
    match home.var_path("CLAUDE_CONFIG_DIR") {
        Some(dir) => dir.join(".claude.json"),
        None => home.join(".claude.json"),
    }
}
