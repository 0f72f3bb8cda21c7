//! OpenCode: `~/.config/opencode/opencode.json[c]` (`$XDG_CONFIG_HOME/opencode`), JSONC,
//! its own `mcp` block: `type: "remote"` with `url` and `headers`, or `type: "local"` with
//! `command` as one array. Version 1 keeps servers directly under `mcp`; from version 2 they
//! sit under `mcp.servers`, so the installed version decides. Tokens from the environment are
//! spelled `{env:NAME}`.

use std::path::PathBuf;

use super::{Auth, Client, Edit, Home, Transport, authorization, server};
use crate::commands::setup::edit::Format;
use crate::commands::setup::value::Value;

pub const CLIENT: Client = Client {
    id: "opencode",
    name: "OpenCode",
    aliases: &[],
    binary: Some("opencode"),
    present: |home| dir(home).is_dir(),
    edits: |home, wiring| {
        let entry = match &wiring.transport {
            Transport::Http { url, auth } => {
                let entry = Value::map([
                    ("type", Value::Str("remote".into())),
                    ("url", Value::Str(url.clone())),
                    ("enabled", Value::Bool(true)),
                ]);
                match auth {
                    Auth::None => entry,
                    Auth::Token(token) => {
                        entry.with("headers", authorization(format!("Bearer {token}")))
                    }
                    Auth::Env(name) => {
                        entry.with("headers", authorization(format!("Bearer {{env:{name}}}")))
                    }
                }
            }
            Transport::Stdio { command, args } => {
                let mut argv = vec![command.clone()];
                argv.extend(args.iter().cloned());
                Value::map([
                    ("type", Value::Str("local".into())),
                    ("command", Value::strings(&argv)),
                    ("enabled", Value::Bool(true)),
                ])
            }
        };
        let table = if home.semver_of("opencode").is_some_and(|v| v.0 >= 2) {
            vec!["mcp", "servers"]
        } else {
            vec!["mcp"]
        };
        Ok(vec![Edit::new(file(home), Format::Jsonc, vec![server(table, wiring, entry)])])
    },
    after: Some("`opencode mcp list` shows it"),
};

fn dir(home: &Home) -> PathBuf {
    home.xdg_config().join("opencode")
}

/// The settings file OpenCode already has (`opencode.jsonc` first, which `opencode mcp add`
/// writes), else a new `opencode.json`.
fn file(home: &Home) -> PathBuf {
    let dir = dir(home);
    ["opencode.jsonc", "opencode.json"]
        .iter()
        .map(|name| dir.join(name))
        .find(|path| path.is_file())
        .unwrap_or_else(|| dir.join("opencode.json"))
}
