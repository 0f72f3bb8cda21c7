//! Cline: `~/.cline/data/settings/cline_mcp_settings.json` (moved by `CLINE_MCP_SETTINGS_PATH`,
//! `CLINE_DATA_DIR` or `CLINE_DIR`), read by the CLI and the extension's new bundle, and the
//! VS Code extension's own copy in its global storage when that exists. `mcpServers`:
//! `type: "streamableHttp"` (a URL without a type would mean SSE) with `url` and `headers`,
//! or `type: "stdio"`.

use std::path::PathBuf;

use super::{Client, Edit, Home, server};
use crate::commands::setup::edit::Format;
use crate::commands::setup::value::Value;

pub const CLIENT: Client = Client {
    id: "cline",
    name: "Cline",
    aliases: &[],
    binary: Some("cline"),
    present: |home| home.join(".cline").is_dir() || extension_dir(home).is_dir(),
    edits: |home, wiring| {
        let entry = wiring
            .typed_entry("streamableHttp", "url", None, CLIENT.name)?
            .with("disabled", Value::Bool(false));
        let change = server(vec!["mcpServers"], wiring, entry);
        let mut edits = vec![Edit::new(shared_file(home), Format::Json, vec![change.clone()])];
        if extension_dir(home).is_dir() {
            let file = extension_dir(home).join("settings/cline_mcp_settings.json");
            edits.push(Edit::new(file, Format::Json, vec![change]));
        }
        Ok(edits)
    },
    after: "`cline config mcp --json` lists it; the VS Code extension shows it under MCP Servers",
    after_hooks: None,
};

fn shared_file(home: &Home) -> PathBuf {
    if let Some(file) = home.var_path("CLINE_MCP_SETTINGS_PATH") {
        return file;
    }
    let data = home
        .var_path("CLINE_DATA_DIR")
        .or_else(|| home.var_path("CLINE_DIR").map(|dir| dir.join("data")))
        .unwrap_or_else(|| home.join(".cline/data"));
    data.join("settings/cline_mcp_settings.json")
}

/// The VS Code extension's global storage.
fn extension_dir(home: &Home) -> PathBuf {
    home.app_config().join("Code/User/globalStorage/saoudrizwan.claude-dev")
}
