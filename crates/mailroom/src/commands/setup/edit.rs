//! Changing one configuration file's text: mailroom's server entry in the client's server
//! map, and its reminder hook handlers. JSON (comments and trailing commas allowed: some
//! clients read JSONC, and setup keeps what it finds) goes through a concrete syntax tree and
//! TOML through `toml_edit`, so everything else in the file — the user's entries, comments,
//! order, indentation, line endings, a byte-order mark — comes out as it went in.
//!
//! Setup owns only the keys it writes: an entry already there keeps the keys a user or the
//! client added (a timeout, auto-approvals, other headers), and `enabled`/`disabled` are set
//! only when the entry is new. A file that does not parse, whose shape is not what the client
//! reads, or that names a key setup needs twice, is refused with a message naming the file
//! and the key.

use anyhow::{Context, Result, bail};
use jsonc_parser::ParseOptions;
use jsonc_parser::cst::{CstArray, CstNode, CstObject, CstRootNode};

use super::value::{Value, toml_to_json};

/// How a file is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    Json,
    Toml,
}

/// One thing setup keeps in a file.
#[derive(Clone, Debug)]
pub enum Change {
    /// The server map at `table` (keys from the top) holds `entry` under `name`.
    Server { table: Vec<&'static str>, name: String, entry: Value },
    /// `hooks.<event>` holds a matcher group with mailroom's `handler` (the one handler whose
    /// command mentions [`HOOK_MARK`]); `None`: it holds none.
    Hook { event: &'static str, handler: Option<Value> },
}

/// Whether changes are put in or taken out.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    Install,
    Uninstall,
}

/// What every reminder hook command setup writes contains, and how its handlers are found.
pub const HOOK_MARK: &str = "check-inbox --format hook";

/// The keys of a server entry setup writes in one transport or another: those it does not
/// write this time are taken out (switching from HTTP to stdio leaves no `url` behind).
const OWNED: &[&str] = &[
    "type",
    "url",
    "serverUrl",
    "httpUrl",
    "command",
    "args",
    "source",
    "headers",
    "http_headers",
    "bearer_token_env_var",
];
/// Header maps: setup owns only their `Authorization`.
const HEADER_MAPS: &[&str] = &["headers", "http_headers"];
const AUTHORIZATION: &str = "Authorization";
/// Set when the entry is new, then the user's.
const INITIAL_ONLY: &[&str] = &["enabled", "disabled"];

/// `text` with `changes` applied (or taken out). `file` names the file in errors.
pub fn apply(
    text: &str,
    format: Format,
    changes: &[Change],
    mode: Mode,
    file: &str,
) -> Result<String> {
    let (bom, body) = match text.strip_prefix('\u{feff}') {
        Some(body) => (true, body),
        None => (false, text),
    };
    let crlf = body.contains("\r\n") && !body.replace("\r\n", "").contains('\n');
    let body = if crlf { body.replace("\r\n", "\n") } else { body.to_string() };
    let out = match format {
        Format::Json => json(&body, changes, mode, file)?,
        Format::Toml => toml(&body, changes, mode, file)?,
    };
    if out == body {
        return Ok(text.to_string());
    }
    let out = if crlf { out.replace('\n', "\r\n") } else { out };
    Ok(if bom { format!("\u{feff}{out}") } else { out })
}

/// Whether `text` holds anything of mailroom's that `changes` describe.
pub fn holds(text: &str, format: Format, changes: &[Change], file: &str) -> Result<bool> {
    Ok(apply(text, format, changes, Mode::Uninstall, file)? != text)
}

fn json(text: &str, changes: &[Change], mode: Mode, file: &str) -> Result<String> {
    let blank = text.trim().is_empty();
    if blank && mode == Mode::Uninstall {
        return Ok(text.to_string());
    }
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
                let create = mode == Mode::Install;
                let Some(servers) = json_object(&top, table, create, file)? else { continue };
                let shown = format!("{}.{name}", table.join("."));
                match (single(&servers, name, &shown, file)?, mode) {
                    (Some(prop), Mode::Install) => match prop.object_value() {
                        Some(existing) => merge_json(&existing, entry),
                        None => prop.set_value(entry.to_cst()),
                    },
                    (None, Mode::Install) => drop(servers.append(name, entry.to_cst())),
                    (Some(prop), Mode::Uninstall) => prop.remove(),
                    (None, Mode::Uninstall) => {}
                }
            }
            Change::Hook { event, handler } => {
                let handler = handler.as_ref().filter(|_| mode == Mode::Install);
                json_hook(&top, event, handler, file)?;
            }
        }
    }
    if blank && top.properties().is_empty() {
        // Nothing to keep in a file that is not there: it stays away.
        return Ok(text.to_string());
    }
    let out = root.to_string();
    Ok(if blank && !out.ends_with('\n') { format!("{out}\n") } else { out })
}

/// The one property `name` of `object`: a key written twice is refused (clients read the
/// last, an editor the first).
fn single(
    object: &CstObject,
    name: &str,
    shown: &str,
    file: &str,
) -> Result<Option<jsonc_parser::cst::CstObjectProp>> {
    let count =
        object.properties().iter().filter(|p| p.decoded_name().as_deref() == Some(name)).count();
    if count > 1 {
        bail!("{file}: `{shown}` is written {count} times; keep one, then run setup again");
    }
    Ok(object.get(name))
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
        object = match single(&object, key, &shown, file)? {
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

/// Sets the keys of `entry` in the existing entry `object`, keeping the others (see the
/// module's comment).
fn merge_json(object: &CstObject, entry: &Value) {
    let Value::Map(wanted) = entry else { return };
    for (key, value) in wanted {
        match (object.get(key), value) {
            (Some(_), _) if INITIAL_ONLY.contains(&key.as_str()) => {}
            (Some(prop), Value::Map(_)) if HEADER_MAPS.contains(&key.as_str()) => {
                match prop.object_value() {
                    Some(headers) => merge_json(&headers, value),
                    None => prop.set_value(value.to_cst()),
                }
            }
            (Some(prop), _) => {
                if prop.value().and_then(|v| v.to_serde_value()) != Some(value.to_json()) {
                    prop.set_value(value.to_cst());
                }
            }
            (None, _) => drop(object.append(key, value.to_cst())),
        }
    }
    let written = |key: &str| wanted.iter().any(|(k, _)| k == key);
    for key in OWNED.iter().copied().filter(|k| !written(k)) {
        let Some(prop) = object.get(key) else { continue };
        match prop.object_value() {
            Some(headers) if HEADER_MAPS.contains(&key) => {
                if let Some(auth) = headers.get(AUTHORIZATION) {
                    auth.remove();
                }
                if headers.properties().is_empty() {
                    prop.remove();
                }
            }
            _ => prop.remove(),
        }
    }
}

/// Makes `hooks.<event>` hold `handler` (in a group of its own when new), or no handler of
/// mailroom's when `None`; a group left empty goes, and so do an event and `hooks` left empty.
fn json_hook(top: &CstObject, event: &str, handler: Option<&Value>, file: &str) -> Result<()> {
    let Some(hooks) = json_object(top, &["hooks"], handler.is_some(), file)? else {
        return Ok(());
    };
    let groups = match single(&hooks, event, &format!("hooks.{event}"), file)? {
        Some(prop) => prop
            .array_value()
            .with_context(|| format!("{file}: `hooks.{event}` is not a list; not changing it"))?,
        None if handler.is_some() => hooks
            .array_value_or_create(event)
            .with_context(|| format!("{file}: cannot add `hooks.{event}`"))?,
        None => return Ok(()),
    };
    let mut ours = our_handlers(&groups).into_iter();
    match (handler, ours.next()) {
        (Some(wanted), Some(first)) => {
            if first.to_serde_value() != Some(wanted.to_json())
                && let Some(object) = first.as_object()
            {
                object.replace_with(wanted.to_cst());
            }
        }
        (Some(wanted), None) => {
            let group = Value::map([("hooks", Value::List(vec![wanted.clone()]))]);
            groups.append(group.to_cst());
        }
        (None, Some(first)) => remove_handler(first),
        (None, None) => {}
    }
    // A second handler of ours (written by hand, or by an old version) would remind twice.
    ours.for_each(remove_handler);
    if groups.elements().is_empty() {
        if let Some(prop) = hooks.get(event) {
            prop.remove();
        }
        if hooks.properties().is_empty()
            && let Some(prop) = top.get("hooks")
        {
            prop.remove();
        }
    }
    Ok(())
}

/// Mailroom's handlers in a hook event's groups.
fn our_handlers(groups: &CstArray) -> Vec<CstNode> {
    let handlers =
        groups.elements().into_iter().filter_map(|group| group.as_object()?.array_value("hooks"));
    handlers
        .flat_map(|list| list.elements())
        .filter(|h| {
            h.to_serde_value()
                .is_some_and(|v| v["command"].as_str().is_some_and(|c| c.contains(HOOK_MARK)))
        })
        .collect()
}

/// Removes a handler, and its group when nothing but a matcher is left in it.
fn remove_handler(handler: CstNode) {
    let list = handler.parent();
    handler.remove();
    let Some(list) = list.and_then(|l| l.as_array()) else { return };
    if !list.elements().is_empty() {
        return;
    }
    let group = list.parent().and_then(|prop| prop.parent()).and_then(|g| g.as_object());
    if let Some(group) = group {
        let names: Vec<_> = group.properties().iter().filter_map(|p| p.decoded_name()).collect();
        if names.iter().all(|n| n == "hooks" || n == "matcher") {
            group.remove();
        }
    }
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
        Mode::Uninstall => drop(servers.remove(name)),
        Mode::Install => match servers.get_mut(name).and_then(toml_edit::Item::as_table_like_mut) {
            Some(existing) => merge_toml(existing, entry),
            None => {
                let mut new = toml_edit::Table::new();
                merge_toml(&mut new, entry);
                servers.insert(name, toml_edit::Item::Table(new));
            }
        },
    }
    Ok(())
}

/// [`merge_json`] for a TOML table (or inline table).
fn merge_toml(table: &mut dyn toml_edit::TableLike, entry: &Value) {
    let Value::Map(wanted) = entry else { return };
    for (key, value) in wanted {
        let exists = table.contains_key(key);
        if exists && INITIAL_ONLY.contains(&key.as_str()) {
            continue;
        }
        if let (true, Value::Map(_)) = (HEADER_MAPS.contains(&key.as_str()), value)
            && let Some(headers) = table.get_mut(key).and_then(toml_edit::Item::as_table_like_mut)
        {
            merge_toml(headers, value);
            continue;
        }
        if table.get(key).and_then(toml_to_json) != Some(value.to_json()) {
            table.insert(key, toml_edit::Item::Value(value.to_toml()));
        }
    }
    let written = |key: &str| wanted.iter().any(|(k, _)| k == key);
    for key in OWNED.iter().copied().filter(|k| !written(k)) {
        if HEADER_MAPS.contains(&key)
            && let Some(headers) = table.get_mut(key).and_then(toml_edit::Item::as_table_like_mut)
        {
            headers.remove(AUTHORIZATION);
            if !headers.is_empty() {
                continue;
            }
        }
        table.remove(key);
    }
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
                ("headers", Value::map([(AUTHORIZATION, Value::Str("Bearer t".into()))])),
                ("disabled", Value::Bool(false)),
            ]),
        }
    }

    fn parse(text: &str) -> serde_json::Value {
        let root = CstRootNode::parse(text, &ParseOptions::default()).expect("JSONC");
        root.value().and_then(|v| v.to_serde_value()).expect("a value")
    }

    #[test]
    fn json_keeps_comments_and_other_entries_and_is_idempotent() {
        let text = "{\n  // mine\n  \"theme\": \"dark\",\n  \"mcpServers\": {\n    \"other\": {\"command\": \"x\"} // keep\n  }\n}\n";
        let changes = [server("mcp-agent-mail")];
        let once = apply(text, Format::Json, &changes, Mode::Install, "f").expect("ok");
        assert!(once.contains("// mine") && once.contains("// keep"), "{once}");
        let parsed = parse(&once);
        assert_eq!(parsed["mcpServers"]["mcp-agent-mail"]["type"], "http");
        assert_eq!(parsed["mcpServers"]["other"]["command"], "x");
        assert_eq!(apply(&once, Format::Json, &changes, Mode::Install, "f").expect("ok"), once);
        let back = apply(&once, Format::Json, &changes, Mode::Uninstall, "f").expect("ok");
        assert!(!back.contains("mcp-agent-mail") && back.contains("// keep"), "{back}");
    }

    #[test]
    fn keys_the_user_added_to_the_entry_stay() {
        let text = r#"{"mcpServers": {"m": {"type": "sse", "url": "http://old/sse", "timeout": 60, "autoApprove": ["send_message"], "disabled": true, "headers": {"X-Team": "a", "Authorization": "Bearer old"}}}}"#;
        let out = apply(text, Format::Json, &[server("m")], Mode::Install, "f").expect("ok");
        let entry = &parse(&out)["mcpServers"]["m"];
        assert_eq!(entry["type"], "http");
        assert_eq!(entry["url"], "http://127.0.0.1:8765/mcp");
        assert_eq!(entry["timeout"], 60);
        assert_eq!(entry["autoApprove"][0], "send_message");
        assert_eq!(entry["disabled"], true, "the user's choice to disable it stands");
        assert_eq!(
            entry["headers"],
            serde_json::json!({"X-Team": "a", "Authorization": "Bearer t"})
        );
        // Switching to stdio takes out what belonged to HTTP, and only that.
        let stdio = Change::Server {
            table: vec!["mcpServers"],
            name: "m".into(),
            entry: Value::map([("command", Value::Str("/bin/mailroom".into()))]),
        };
        let out = apply(&out, Format::Json, &[stdio], Mode::Install, "f").expect("ok");
        let entry = &parse(&out)["mcpServers"]["m"];
        assert!(entry.get("url").is_none() && entry.get("type").is_none(), "{entry}");
        assert_eq!(entry["headers"], serde_json::json!({"X-Team": "a"}));
        assert_eq!(entry["timeout"], 60);
    }

    #[test]
    fn a_blank_file_becomes_an_object_and_a_wrong_shape_is_refused() {
        let out = apply("", Format::Json, &[server("m")], Mode::Install, "f").expect("ok");
        let parsed: serde_json::Value = serde_json::from_str(&out).expect("strict JSON");
        assert_eq!(parsed["mcpServers"]["m"]["url"], "http://127.0.0.1:8765/mcp");
        assert!(out.ends_with('\n'));
        for (text, says) in [
            ("{\"mcpServers\": []}", "`mcpServers` is not an object"),
            ("{\"a\": ", "not JSON setup can read"),
            ("[1]", "top level is not an object"),
            ("{\"mcpServers\": {}, \"mcpServers\": {}}", "`mcpServers` is written 2 times"),
            ("{\"mcpServers\": {\"m\": {}, \"m\": {}}}", "`mcpServers.m` is written 2 times"),
        ] {
            let error =
                apply(text, Format::Json, &[server("m")], Mode::Install, "f").expect_err("refused");
            assert!(error.to_string().contains(says), "{text}: {error}");
        }
    }

    #[test]
    fn line_endings_and_a_byte_order_mark_stay() {
        let text = "\u{feff}{\r\n  \"a\": 1\r\n}\r\n";
        let out = apply(text, Format::Json, &[server("m")], Mode::Install, "f").expect("ok");
        assert!(out.starts_with('\u{feff}') && !out.replace("\r\n", "").contains('\n'), "{out:?}");
        let back = apply(&out, Format::Json, &[server("m")], Mode::Uninstall, "f").expect("ok");
        assert!(back.starts_with('\u{feff}') && !back.contains("\"m\""), "{back:?}");
        let toml_text = "# c\r\nmodel = \"o3\"\r\n";
        assert!(
            !holds(toml_text, Format::Toml, &[server("m")], "f").expect("ok"),
            "nothing of ours"
        );
    }

    fn hook(command: &str) -> Change {
        Change::Hook {
            event: "PostToolUse",
            handler: Some(Value::map([
                ("type", Value::Str("command".into())),
                ("command", Value::Str(command.into())),
            ])),
        }
    }

    #[test]
    fn hooks_are_one_handler_of_ours_beside_the_users() {
        let text =
            r#"{"hooks": {"PostToolUse": [{"hooks": [{"type": "command", "command": "lint"}]}]}}"#;
        let once = apply(
            text,
            Format::Json,
            &[hook(&format!("/bin/mailroom {HOOK_MARK} --agent A"))],
            Mode::Install,
            "f",
        )
        .expect("ok");
        let again = apply(
            &once,
            Format::Json,
            &[hook(&format!("/bin/mailroom {HOOK_MARK} --agent B"))],
            Mode::Install,
            "f",
        )
        .expect("ok");
        let groups = parse(&again)["hooks"]["PostToolUse"].clone();
        assert_eq!(groups.as_array().map(Vec::len), Some(2), "{again}");
        assert_eq!(groups[0]["hooks"][0]["command"], "lint");
        assert!(groups[1]["hooks"][0]["command"].as_str().expect("command").ends_with("--agent B"));
        let removed = Change::Hook { event: "PostToolUse", handler: None };
        let back = apply(&again, Format::Json, &[removed], Mode::Install, "f").expect("ok");
        assert_eq!(parse(&back), parse(text));
    }

    #[test]
    fn a_users_handler_in_our_group_stays() {
        let text = format!(
            r#"{{"hooks": {{"PostToolUse": [{{"matcher": "*", "hooks": [{{"type": "command", "command": "/bin/mailroom {HOOK_MARK}"}}, {{"type": "command", "command": "lint"}}]}}]}}}}"#
        );
        let back =
            apply(&text, Format::Json, &[hook(&format!("x {HOOK_MARK}"))], Mode::Uninstall, "f")
                .expect("ok");
        let groups = parse(&back)["hooks"]["PostToolUse"].clone();
        assert_eq!(
            groups[0]["hooks"],
            serde_json::json!([{"type": "command", "command": "lint"}]),
            "{back}"
        );
        assert_eq!(groups[0]["matcher"], "*");
    }

    #[test]
    fn toml_keeps_comments_tables_and_the_users_keys() {
        let text = "# my settings\nmodel = \"o3\"\n\n[mcp_servers.other]\ncommand = \"x\" # keep\n";
        let changes = [Change::Server {
            table: vec!["mcp_servers"],
            name: "mcp-agent-mail".into(),
            entry: Value::map([
                ("url", Value::Str("http://127.0.0.1:8765/mcp".into())),
                ("http_headers", Value::map([(AUTHORIZATION, Value::Str("Bearer t".into()))])),
            ]),
        }];
        let once = apply(text, Format::Toml, &changes, Mode::Install, "f").expect("ok");
        assert!(once.starts_with(text), "{once}");
        assert!(once.contains("[mcp_servers.mcp-agent-mail]"), "{once}");
        assert_eq!(apply(&once, Format::Toml, &changes, Mode::Install, "f").expect("ok"), once);
        assert_eq!(apply(&once, Format::Toml, &changes, Mode::Uninstall, "f").expect("ok"), text);
        let tuned = format!("{once}tool_timeout_sec = 120 # slow network\n");
        let again = apply(&tuned, Format::Toml, &changes, Mode::Install, "f").expect("ok");
        assert_eq!(again, tuned, "the user's key and comment in our table stay");
        let error = apply("mcp_servers = 3\n", Format::Toml, &changes, Mode::Install, "f")
            .expect_err("refused");
        assert!(error.to_string().contains("`mcp_servers` is not a table"), "{error}");
    }
}
