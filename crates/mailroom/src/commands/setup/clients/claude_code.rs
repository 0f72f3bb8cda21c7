//! Claude Code: servers in `~/.claude.json` (`$CLAUDE_CONFIG_DIR/.claude.json`) under the
//! top-level `mcpServers` (user scope, every project); hooks in `~/.claude/settings.json`
//! (`$CLAUDE_CONFIG_DIR/settings.json`), which VS Code's Copilot reads too. `${VAR}` in
//! headers is expanded from 2.1.119 on.

use std::path::PathBuf;

use anyhow::bail;

use super::{Auth, Client, Edit, Home, Transport, server};
use crate::commands::setup::edit::Format;

pub const CLIENT: Client = Client {
    id: "claude-code",
    name: "Claude Code",
    aliases: &["claude"],
    binary: Some("claude"),
    present: |home| state_file(home).is_file() || settings_dir(home).is_dir(),
    edits: |home, wiring| {
        if let Transport::Http { auth: Auth::Env(_), .. } = wiring.transport
            && let Some(version) = home.semver_of("claude").filter(|v| *v < (2, 1, 119))
        {
            bail!(
                "Claude Code {}.{}.{} sends ${{VAR}} in headers as it is (2.1.119 expands \
                     it); update it, or drop --token-env",
                version.0,
                version.1,
                version.2
            );
        }
        let entry =
            wiring.typed_entry("http", "url", Some(|v| format!("${{{v}}}")), CLIENT.name)?;
        let servers = vec![server(vec!["mcpServers"], wiring, entry)];
        let hooks = wiring.hooks("PostToolUse", 10, false);
        Ok(vec![
            Edit::new(state_file(home), Format::Json, servers),
            Edit::new(settings_dir(home).join("settings.json"), Format::Json, hooks),
        ])
    },
    after: "`claude mcp list` shows it connected",
    after_hooks: Some("its hooks run in folders whose trust you accepted"),
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
