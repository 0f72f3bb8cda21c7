//! Gemini CLI: `~/.gemini/settings.json` (under `$GEMINI_CLI_HOME` when set), JSON with
//! comments, `mcpServers`: `url` with `type: "http"` from 0.21 on, `httpUrl` before (where a
//! bare `url` meant SSE). Its hooks live in the same file: `SessionStart` and `AfterTool`,
//! timeouts in milliseconds. Gemini disables every server in a folder it does not trust.

use std::path::PathBuf;

use super::{Client, Edit, Home, Transport, server};
use crate::commands::setup::edit::Format;
use crate::commands::setup::value::Value;

pub const CLIENT: Client = Client {
    id: "gemini",
    name: "Gemini CLI",
    aliases: &["gemini-cli"],
    binary: Some("gemini"),
    present: |home| {
        dir(home).join("settings.json").is_file() || dir(home).join("oauth_creds.json").is_file()
    },
    edits: |home, wiring| {
        let reference = Some((|v: &str| format!("${{{v}}}")) as fn(&str) -> String);
        let entry = match wiring.transport {
            Transport::Http { .. } if home.semver_of("gemini").is_some_and(|v| v < (0, 21, 0)) => {
                wiring.typed_entry("", "httpUrl", reference, CLIENT.name)?
            }
            Transport::Http { .. } => wiring
                .typed_entry("", "url", reference, CLIENT.name)?
                .with("type", Value::Str("http".into())),
            Transport::Stdio { .. } => wiring.typed_entry("", "url", reference, CLIENT.name)?,
        };
        let mut changes = vec![server(vec!["mcpServers"], wiring, entry)];
        changes.extend(wiring.hooks("AfterTool", 5000, true));
        Ok(vec![Edit::new(dir(home).join("settings.json"), Format::Json, changes)])
    },
    after: "`gemini mcp list` shows it connected in folders Gemini trusts (elsewhere it disables every server)",
    after_hooks: Some("its hooks run from 0.28 on (0.24 to 0.27 need `tools.enableHooks: true`)"),
};

/// `$GEMINI_CLI_HOME/.gemini`, else `~/.gemini`.
fn dir(home: &Home) -> PathBuf {
    match home.var_path("GEMINI_CLI_HOME") {
        Some(base) => base.join(".gemini"),
        None => home.join(".gemini"),
    }
}
