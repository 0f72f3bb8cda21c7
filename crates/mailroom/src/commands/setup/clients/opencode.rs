//! OpenCode: `~/.config/opencode/opencode.json[c]` (`$XDG_CONFIG_HOME/opencode`), JSONC,
//! its own `mcp` block: `type: "remote"` with `url` and `headers`, or `type: "local"` with
//! `command` as one array. Tokens from the environment are spelled `{env:NAME}`. A newer
//! layout (servers in `.agents/mcp.json`, `opencode mcp add --scope`) is described in
//! OpenCode's repository but in no release setup has seen: an OpenCode whose `mcp add` takes
//! `--scope` is refused rather than given a file it may not read.

use std::path::PathBuf;

use anyhow::bail;

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
        let help = home.ask("opencode", &["mcp", "add", "--help"]).unwrap_or_default();
        if help.contains("--scope") {
            bail!(
                "this OpenCode keeps servers in a layout setup does not know yet (its `mcp add` \
                 has --scope); add mailroom with `opencode mcp add`"
            );
        }
        Ok(vec![Edit::new(file(home), Format::Json, vec![server(vec!["mcp"], wiring, entry)])])
    },
    after: "`opencode mcp list` shows it connected",
    after_hooks: None,
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
