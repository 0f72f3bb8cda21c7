//! Changing one configuration file's text: mailroom's server entry in the client's server
//! map, and its reminder hook groups. JSON and JSONC go through a concrete syntax tree and
//! TOML through `toml_edit`, so everything else in the file — the user's entries, comments,
//! order, indentation — comes out as it went in. A file that does not parse, or whose shape
//! is not what the client reads (a server map that is not a map), is refused with a message
//! naming the file and the key; nothing is written then.

use anyhow::{Context, Result, bail};
use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstObject, CstRootNode};

use super::value::{Value, toml_to_json};

/// How a file is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// JSON the client parses strictly (no comments of ours are ever added; the user's stay).
    Json,
    /// JSON with comments and trailing commas.
    Jsonc,
    Toml,
}

/// One thing setup keeps in a file.
#[derive(Clone, Debug)]
pub enum Change {
    /// The server map at `table` (keys from the top) holds `entry` under `name`.
    Server { table: Vec<&'static str>, name: String, entry: Value },
    /// `hooks.<event>` holds `group`, a matcher group whose command runs the reminder.
    /// Mailroom's group is the one whose command mentions [`HOOK_MARK`].
    Hook { event: &'static str, group: Value },
}

/// Whether changes are put in or taken out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Install,
    Uninstall,
}

/// What every reminder hook command setup writes contains, and how its groups are found again.
pub const HOOK_MARK: &str = "check-inbox --format hook";

/// `text` with `changes` applied (or taken out). `file` names the file in errors.
pub fn apply(
    text: &str,
    format: Format,
    changes: &[Change],
    mode: Mode,
    file: &str,
) -> Result<String> {
    match format {
        Format::Json | Format::Jsonc => json(text, changes, mode, file),
        Format::Toml => toml(text, changes, mode, file),
    }
}

/// Whether `text` holds anything of mailroom's that `changes` describe.
pub fn holds(text: &str, format: Format, changes: &[Change], file: &str) -> Result<bool> {
    Ok(apply(text, format, changes, Mode::Uninstall, file)? != text)
}

fn json(text: &str, changes: &[Change], mode: Mode, file: &str) -> Result<String> {
    let blank = text.trim().is_empty();
    let source = if blank { "{}\n" } else { text };
    let root = CstRootNode::parse(source, &ParseOptions::default())
        .map_err(|e| anyhow::anyhow!("{file} is not JSON setup can read ({e}); not changing it"))?;
    let top = match root.value() {
        None => root.object_value_or_set(),
        Some(_) => root
            .object_value()
            .with_context(|| format!("{file}: the top level is not an object; not changing it"))?,
    };
    for change in changes {
        match change {
            Change::Server { table, name, entry } => {
                json_server(&top, table, name, entry, mode, file)?;
            }
            Change::Hook { event, group } => json_hook(&top, event, group, mode, file)?,
        }
    }
    let out = root.to_string();
    if blank && mode == Mode::Uninstall {
        return Ok(text.to_string());
    }
    Ok(if out.ends_with('\n') || !blank { out } else { format!("{out}\n") })
}

/// The object at `path` under `top`: created when missing (`create`), `None` when missing
/// otherwise; an error when something else stands there.
fn json_object(
    top: &CstObject,
    path: &[&str],
    create: bool,
    file: &str,
) -> Result<Option<CstObject>> {
    let mut object = top.clone();
    for (depth, key) in path.iter().enumerate() {
        let shown = path[..=depth].join(".");
        object = match object.get(key) {
            Some(prop) => prop
                .object_value()
                .with_context(|| format!("{file}: `{shown}` is not an object; not changing it"))?,
            None if create => object
                .object_value_or_create(key)
                .with_context(|| format!("{file}: cannot add `{shown}`"))?,
            None => return Ok(None),
        };
    }
    Ok(Some(object))
}

fn json_server(
    top: &CstObject,
    table: &[&str],
    name: &str,
    entry: &Value,
    mode: Mode,
    file: &str,
) -> Result<()> {
    let Some(servers) = json_object(top, table, mode == Mode::Install, file)? else {
        return Ok(());
    };
    match (servers.get(name), mode) {
        (Some(prop), Mode::Install) => {
            let same = prop.value().and_then(|v| v.to_serde_value()) == Some(entry.to_json());
            if !same {
                prop.set_value(entry.to_cst());
            }
        }
        (None, Mode::Install) => {
            servers.append(name, entry.to_cst());
        }
        (Some(prop), Mode::Uninstall) => prop.remove(),
        (None, Mode::Uninstall) => {}
    }
    Ok(())
}

fn json_hook(top: &CstObject, event: &str, group: &Value, mode: Mode, file: &str) -> Result<()> {
    let Some(hooks) = json_object(top, &["hooks"], mode == Mode::Install, file)? else {
        return Ok(());
    };
    let groups = match hooks.get(event) {
        Some(prop) => prop
            .array_value()
            .with_context(|| format!("{file}: `hooks.{event}` is not a list; not changing it"))?,
        None if mode == Mode::Install => hooks
            .array_value_or_create(event)
            .with_context(|| format!("{file}: cannot add `hooks.{event}`"))?,
        None => return Ok(()),
    };
    let ours: Vec<_> = groups
        .elements()
        .into_iter()
        .filter(|element| element.to_serde_value().is_some_and(|v| is_our_group(&v)))
        .collect();
    match mode {
        Mode::Install => {
            let wanted = group.to_json();
            let mut ours = ours.into_iter();
            match ours.next() {
                Some(first) if first.to_serde_value() == Some(wanted) => {}
                Some(first) => {
                    let index = first.element_index().unwrap_or(0);
                    first.remove();
                    groups.insert(index, group.to_cst());
                }
                None => {
                    groups.append(group.to_cst());
                }
            }
            // A second group of ours (written by hand, or by an old version) would remind twice.
            ours.for_each(jsonc_parser::cst::CstNode::remove);
        }
        Mode::Uninstall => ours.into_iter().for_each(jsonc_parser::cst::CstNode::remove),
    }
    Ok(())
}

/// A hook matcher group whose commands include mailroom's reminder.
fn is_our_group(group: &serde_json::Value) -> bool {
    group["hooks"].as_array().is_some_and(|hooks| {
        hooks.iter().any(|h| h["command"].as_str().is_some_and(|c| c.contains(HOOK_MARK)))
    })
}

fn toml(text: &str, changes: &[Change], mode: Mode, file: &str) -> Result<String> {
    let mut doc: toml_edit::DocumentMut = text
        .parse()
        .map_err(|e| anyhow::anyhow!("{file} is not TOML setup can read ({e}); not changing it"))?;
    for change in changes {
        let Change::Server { table, name, entry } = change else {
            bail!("{file}: setup writes hooks only to JSON files");
        };
        toml_server(&mut doc, table, name, entry, mode, file)?;
    }
    Ok(doc.to_string())
}

fn toml_server(
    doc: &mut toml_edit::DocumentMut,
    table: &[&str],
    name: &str,
    entry: &Value,
    mode: Mode,
    file: &str,
) -> Result<()> {
    let mut servers = doc.as_table_mut();
    for (depth, key) in table.iter().enumerate() {
        let shown = table[..=depth].join(".");
        if !servers.contains_key(key) {
            if mode == Mode::Uninstall {
                return Ok(());
            }
            let mut new = toml_edit::Table::new();
            new.set_implicit(true);
            servers.insert(key, toml_edit::Item::Table(new));
        }
        servers = servers
            .get_mut(key)
            .and_then(toml_edit::Item::as_table_mut)
            .with_context(|| format!("{file}: `{shown}` is not a table; not changing it"))?;
    }
    match mode {
        Mode::Install => {
            if servers.get(name).and_then(toml_to_json) == Some(entry.to_json()) {
                return Ok(());
            }
            let Value::Map(pairs) = entry else {
                bail!("a server entry is a table");
            };
            let mut new = toml_edit::Table::new();
            for (key, value) in pairs {
                new.insert(key, toml_edit::Item::Value(value.to_toml()));
            }
            servers.insert(name, toml_edit::Item::Table(new));
        }
        Mode::Uninstall => {
            servers.remove(name);
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn server(name: &str) -> Change {
        Change::Server {
            table: vec!["mcpServers"],
            name: name.into(),
            entry: Value::map([
                ("type", Value::Str("http".into())),
                ("url", Value::Str("http://127.0.0.1:8765/mcp".into())),
            ]),
        }
    }

    #[test]
    fn json_keeps_comments_and_other_entries_and_is_idempotent() {
        let text = "{\n  // mine\n  \"theme\": \"dark\",\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\"} // keep\n  }\n}\n";
        let changes = [server("mcp-agent-mail")];
        let once = apply(text, Format::Jsonc, &changes, Mode::Install, "f").expect("ok");
        assert!(once.contains("// mine") && once.contains("// keep"), "{once}");
        let root = CstRootNode::parse(&once, &ParseOptions::default()).expect("ok");
        let parsed = root.value().and_then(|v| v.to_serde_value()).expect("ok");
        assert_eq!(parsed["mcpServers"]["mcp-agent-mail"]["type"], "http");
        assert_eq!(parsed["mcpServers"]["other"]["command"], "x");
        assert_eq!(apply(&once, Format::Jsonc, &changes, Mode::Install, "f").expect("ok"), once);
        let back = apply(&once, Format::Jsonc, &changes, Mode::Uninstall, "f").expect("ok");
        assert!(!back.contains("mcp-agent-mail") && back.contains("// keep"), "{back}");
    }

    #[test]
    fn a_blank_file_becomes_an_object_and_a_wrong_shape_is_refused() {
        let out = apply("", Format::Json, &[server("m")], Mode::Install, "f").expect("ok");
        let parsed: serde_json::Value = serde_json::from_str(&out).expect("ok");
        assert_eq!(parsed["mcpServers"]["m"]["url"], "http://127.0.0.1:8765/mcp");
        assert!(out.ends_with('\n'));
        let error = apply("{\"mcpServers\": []}", Format::Json, &[server("m")], Mode::Install, "f")
            .expect_err("refused")
            .to_string();
        assert!(error.contains("`mcpServers` is not an object"), "{error}");
        let error = apply("{\"a\": ", Format::Json, &[server("m")], Mode::Install, "f")
            .expect_err("refused")
            .to_string();
        assert!(error.contains("not JSON setup can read"), "{error}");
        let error = apply("[1]", Format::Json, &[server("m")], Mode::Install, "f")
            .expect_err("refused")
            .to_string();
        assert!(error.contains("top level is not an object"), "{error}");
    }

    #[test]
    fn hooks_are_one_group_of_ours_beside_the_users() {
        let text =
            r#"{"hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": "lint"}]}]}}"#;
        let group = |agent: &str| Change::Hook {
            event: "PostToolUse",
            group: Value::map([(
                "hooks",
                Value::List(vec![Value::map([
                    ("type", Value::Str("command".into())),
                    ("command", Value::Str(format!("/bin/mailroom {HOOK_MARK} --agent {agent}"))),
                ])]),
            )]),
        };
        let once = apply(text, Format::Json, &[group("A")], Mode::Install, "f").expect("ok");
        let again = apply(&once, Format::Json, &[group("B")], Mode::Install, "f").expect("ok");
        let parsed: serde_json::Value = serde_json::from_str(&again).expect("ok");
        let groups = parsed["hooks"]["PostToolUse"].as_array().expect("ok");
        assert_eq!(groups.len(), 2, "{again}");
        assert_eq!(groups[0]["hooks"][0]["command"], "lint");
        assert!(groups[1]["hooks"][0]["command"].as_str().expect("ok").ends_with("--agent B"));
        let back = apply(&again, Format::Json, &[group("B")], Mode::Uninstall, "f").expect("ok");
        let parsed: serde_json::Value = serde_json::from_str(&back).expect("ok");
        assert_eq!(parsed["hooks"]["PostToolUse"].as_array().expect("ok").len(), 1);
    }

    #[test]
    fn toml_keeps_comments_and_tables_and_is_idempotent() {
        let text = "# my settings\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\" # keep\n";
        let changes = [Change::Server {
            table: vec!["mcp_servers"],
            name: "mcp-agent-mail".into(),
            entry: Value::map([
                ("url", Value::Str("http://127.0.0.1:8765/mcp".into())),
                ("http_headers", Value::map([("Authorization", Value::Str("Bearer t".into()))])),
            ]),
        }];
        let once = apply(text, Format::Toml, &changes, Mode::Install, "f").expect("ok");
        assert!(once.starts_with(text), "{once}");
        assert!(once.contains("[mcp_servers.mcp-agent-mail]"), "{once}");
        assert_eq!(apply(&once, Format::Toml, &changes, Mode::Install, "f").expect("ok"), once);
        assert_eq!(apply(&once, Format::Toml, &changes, Mode::Uninstall, "f").expect("ok"), text);
        let error = apply("mcp_servers = 3\n", Format::Toml, &changes, Mode::Install, "f")
            .expect_err("refused")
            .to_string();
        assert!(error.contains("`mcp_servers` is not a table"), "{error}");
    }
}
