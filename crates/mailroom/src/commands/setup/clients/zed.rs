//! Zed: `~/.config/zed/settings.json` (`$XDG_CONFIG_HOME/zed`), JSONC, `context_servers`:
//! `url` and `headers` (no type: the shape says which), or `command`, `args` and
//! `"source": "custom"` (which mid-2025 versions require and later ones ignore).

use super::{Client, Edit, Transport, server};
use crate::commands::setup::edit::Format;
use crate::commands::setup::value::Value;

pub const CLIENT: Client = Client {
    id: "zed",
    name: "Zed",
    aliases: &[],
    binary: Some("zed"),
    present: |home| home.xdg_config().join("zed").is_dir(),
    edits: |home, wiring| {
        let mut entry = wiring.typed_entry("", "url", None, CLIENT.name)?;
        if let Transport::Stdio { .. } = wiring.transport {
            entry = Value::map([("source", Value::Str("custom".into()))]).merged(entry);
        }
        Ok(vec![Edit::new(
            home.xdg_config().join("zed/settings.json"),
            Format::Json,
            vec![server(vec!["context_servers"], wiring, entry)],
        )])
    },
    after: "Zed starts it in trusted worktrees (Agent panel → Settings shows it)",
    after_hooks: None,
};
