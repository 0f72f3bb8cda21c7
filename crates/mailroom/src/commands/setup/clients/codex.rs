//! Codex CLI: `~/.codex/config.toml` (`$CODEX_HOME/config.toml`), table
//! `[mcp_servers.<name>]`: `url` with `http_headers` (an inline `bearer_token` is fatal to
//! Codex) or `bearer_token_env_var`; or `command` and `args`. Hooks in `hooks.json` beside
//! it, in Claude Code's shape; Codex runs them once the user has reviewed them in `/hooks`.

use std::path::PathBuf;

use super::{Auth, Client, Edit, Home, Transport, authorization, server};
use crate::commands::setup::edit::Format;
use crate::commands::setup::value::Value;

pub const CLIENT: Client = Client {
    id: "codex",
    name: "Codex CLI",
    aliases: &["codex-cli"],
    binary: Some("codex"),
    present: |home| dir(home).is_dir(),
    edits: |home, wiring| {
        let entry = match &wiring.transport {
            Transport::Http { url, auth } => {
                let entry = Value::map([("url", Value::Str(url.clone()))]);
                match auth {
                    Auth::None => entry,
                    Auth::Token(token) => {
                        entry.with("http_headers", authorization(format!("Bearer {token}")))
                    }
                    Auth::Env(name) => entry.with("bearer_token_env_var", Value::Str(name.clone())),
                }
            }
            Transport::Stdio { command, args } => Value::map([
                ("command", Value::Str(command.clone())),
                ("args", Value::strings(args)),
            ]),
        };
        let servers = vec![server(vec!["mcp_servers"], wiring, entry)];
        let hooks = wiring.hooks("PostToolUse", 10, false);
        Ok(vec![
            Edit::new(dir(home).join("config.toml"), Format::Toml, servers),
            Edit::new(dir(home).join("hooks.json"), Format::Json, hooks),
        ])
    },
    after: "`codex mcp list` shows it (Codex does not probe servers)",
    after_hooks: Some("review and trust the reminder hook once in Codex's /hooks"),
};

/// `$CODEX_HOME`, else `~/.codex`.
fn dir(home: &Home) -> PathBuf {
    home.var_path("CODEX_HOME").unwrap_or_else(|| home.join(".codex"))
}
