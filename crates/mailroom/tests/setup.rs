//! `mailroom setup` against temporary home directories holding each coding agent's real
//! settings files, with the user's own entries and comments: every client's file gets
//! mailroom's entry in that client's shape (read back with the format's parser), everything
//! else survives, a second run changes nothing, `--dry-run` only prints, and `uninstall`
//! leaves each file byte for byte as it was. The reminder hook it writes, run as the agent
//! would run it, is silent with no unread mail and counts after a send.
//! (tests/clients/agents.sh has the agents' own CLIs read what setup wrote.)

mod common;

use std::path::{Path, PathBuf};
use std::process::Output;

use common::{KillOnDrop, mailroom, start, stop};
use jsonc_parser::ParseOptions;
use jsonc_parser::cst::CstRootNode;
use mailroom_testkit::{SendCall, seed_pair_at};
use serde_json::{Value, json};

const URL: &str = "http://127.0.0.1:8765/mcp";
const TOKEN: &str = "tok-123";
const NAME: &str = "mcp-agent-mail";

/// A temporary home; every variable that moves a client's settings points into it or is
/// unset, and PATH holds no coding agent.
struct Home {
    dir: tempfile::TempDir,
}

impl Home {
    fn new() -> Self {
        Self { dir: tempfile::tempdir().expect("temp home") }
    }

    fn path(&self, rel: &str) -> PathBuf {
        self.dir.path().join(rel)
    }

    fn put(&self, rel: &str, text: &str) {
        let path = self.path(rel);
        std::fs::create_dir_all(path.parent().expect("parent")).expect("mkdir");
        std::fs::write(path, text).expect("write");
    }

    fn read(&self, rel: &str) -> String {
        std::fs::read_to_string(self.path(rel)).unwrap_or_else(|e| panic!("{rel}: {e}"))
    }

    fn setup(&self, args: &[&str]) -> Output {
        let empty_path = self.path(".no-agents-on-path");
        std::fs::create_dir_all(&empty_path).expect("mkdir");
        let mut command = mailroom();
        command
            .arg("setup")
            .args(args)
            .env("HOME", self.dir.path())
            .env("XDG_CONFIG_HOME", self.path(".config"))
            .env("PATH", &empty_path)
            .env("HTTP_BEARER_TOKEN", TOKEN);
        for var in [
            "CLAUDE_CONFIG_DIR",
            "CODEX_HOME",
            "GEMINI_CLI_HOME",
            "CLINE_DIR",
            "CLINE_DATA_DIR",
            "CLINE_MCP_SETTINGS_PATH",
            "HTTP_HOST",
            "HTTP_PORT",
        ] {
            command.env_remove(var);
        }
        command.output().expect("run mailroom setup")
    }

    /// `setup` that must succeed; its stdout.
    fn ok(&self, args: &[&str]) -> String {
        let output = self.setup(args);
        assert!(output.status.success(), "setup {args:?}: {}", text(&output));
        String::from_utf8_lossy(&output.stdout).into_owned()
    }

    /// Every file under the home (but the empty PATH dir), with its bytes.
    fn snapshot(&self) -> Vec<(PathBuf, Vec<u8>)> {
        fn walk(dir: &Path, out: &mut Vec<(PathBuf, Vec<u8>)>) {
            let mut entries: Vec<_> = std::fs::read_dir(dir)
                .expect("read dir")
                .map(|e| e.expect("entry").path())
                .collect();
            entries.sort();
            for path in entries {
                if path.ends_with(".no-agents-on-path") {
                    continue;
                }
                if path.is_dir() {
                    out.push((path.clone(), Vec::new()));
                    walk(&path, out);
                } else {
                    out.push((path.clone(), std::fs::read(&path).expect("read")));
                }
            }
        }
        let mut out = Vec::new();
        walk(self.dir.path(), &mut out);
        out
    }
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

/// JSON with comments, as the JSONC clients read it.
fn jsonc(text: &str) -> Value {
    let root = CstRootNode::parse(text, &ParseOptions::default()).expect("JSONC");
    root.value().and_then(|v| v.to_serde_value()).expect("a value")
}

/// JSON as the strict clients read it.
fn json(text: &str) -> Value {
    serde_json::from_str(text).unwrap_or_else(|e| panic!("strict JSON: {e}\n{text}"))
}

/// A TOML file read into JSON.
fn toml(text: &str) -> Value {
    fn item(node: &toml_edit::Item) -> Value {
        match node {
            toml_edit::Item::Value(v) => value(v),
            toml_edit::Item::Table(t) => {
                Value::Object(t.iter().map(|(k, v)| (k.to_string(), item(v))).collect())
            }
            _ => Value::Null,
        }
    }
    fn value(v: &toml_edit::Value) -> Value {
        match v {
            toml_edit::Value::String(s) => json!(s.value()),
            toml_edit::Value::Integer(n) => json!(n.value()),
            toml_edit::Value::Boolean(b) => json!(b.value()),
            toml_edit::Value::Array(a) => Value::Array(a.iter().map(value).collect()),
            toml_edit::Value::InlineTable(t) => {
                Value::Object(t.iter().map(|(k, v)| (k.to_string(), value(v))).collect())
            }
            other => json!(other.to_string()),
        }
    }
    let doc: toml_edit::DocumentMut = text.parse().unwrap_or_else(|e| panic!("TOML: {e}\n{text}"));
    item(doc.as_item())
}

/// One client's settings before setup, how to read the file, where mailroom's entry goes and
/// what it must be.
struct Case {
    client: &'static str,
    file: &'static str,
    before: &'static str,
    read: fn(&str) -> Value,
    pointer: &'static str,
    entry: Value,
    /// What of the user's must still be there (a JSON pointer and its value).
    kept: (&'static str, Value),
    /// Text of the user's (a comment) that must survive.
    comment: Option<&'static str>,
}

fn bearer() -> Value {
    json!({"Authorization": format!("Bearer {TOKEN}")})
}

fn cases() -> Vec<Case> {
    vec![
        Case {
            client: "claude-code",
            file: ".claude.json",
            before: "{\n  \"numStartups\": 4,\n  \"mcpServers\": {\n    \"github\": {\"type\": \"http\", \"url\": \"https://example.com/mcp\"}\n  },\n  \"projects\": {\"/work/app\": {\"allowedTools\": []}}\n}\n",
            read: json,
            pointer: "/mcpServers/mcp-agent-mail",
            entry: json!({"type": "http", "url": URL, "headers": bearer()}),
            kept: ("/mcpServers/github/url", json!("https://example.com/mcp")),
            comment: None,
        },
        Case {
            client: "codex",
            file: ".codex/config.toml",
            before: "# my Codex settings\nmodel = \"gpt-5\"\n\n[mcp_servers.docs]\ncommand = \"docs-mcp\" # the docs server\nargs = [\"--stdio\"]\n\n[projects.\"/work/app\"]\ntrust_level = \"trusted\"\n",
            read: toml,
            pointer: "/mcp_servers/mcp-agent-mail",
            entry: json!({"url": URL, "http_headers": bearer()}),
            kept: ("/mcp_servers/docs/command", json!("docs-mcp")),
            comment: Some("# the docs server"),
        },
        Case {
            client: "gemini",
            file: ".gemini/settings.json",
            before: "{\n  // signed in with Google\n  \"security\": {\"auth\": {\"selectedType\": \"oauth-personal\"}},\n  \"mcpServers\": {\"fs\": {\"command\": \"fs-mcp\"}},\n}\n",
            read: jsonc,
            pointer: "/mcpServers/mcp-agent-mail",
            entry: json!({"url": URL, "type": "http", "headers": bearer()}),
            kept: ("/mcpServers/fs/command", json!("fs-mcp")),
            comment: Some("// signed in with Google"),
        },
        Case {
            client: "opencode",
            file: ".config/opencode/opencode.jsonc",
            before: "{\n  \"$schema\": \"https://opencode.ai/config.json\",\n  // local tools\n  \"mcp\": {\n    \"fs\": {\"type\": \"local\", \"command\": [\"fs-mcp\"]},\n  },\n}\n",
            read: jsonc,
            pointer: "/mcp/mcp-agent-mail",
            entry: json!({"type": "remote", "url": URL, "enabled": true, "headers": bearer()}),
            kept: ("/mcp/fs/command/0", json!("fs-mcp")),
            comment: Some("// local tools"),
        },
        Case {
            client: "cursor",
            file: ".cursor/mcp.json",
            before: "{\"mcpServers\": {\"linear\": {\"url\": \"https://mcp.linear.app/mcp\"}}}\n",
            read: json,
            pointer: "/mcpServers/mcp-agent-mail",
            entry: json!({"type": "http", "url": URL, "headers": bearer()}),
            kept: ("/mcpServers/linear/url", json!("https://mcp.linear.app/mcp")),
            comment: None,
        },
        Case {
            client: "vscode",
            file: ".config/Code/User/mcp.json",
            before: "{\n  // servers for Copilot\n  \"servers\": {\"gh\": {\"type\": \"http\", \"url\": \"https://example.com\"}},\n  \"inputs\": []\n}\n",
            read: jsonc,
            pointer: "/servers/mcp-agent-mail",
            entry: json!({"type": "http", "url": URL, "headers": bearer()}),
            kept: ("/servers/gh/url", json!("https://example.com")),
            comment: Some("// servers for Copilot"),
        },
        Case {
            client: "windsurf",
            file: ".codeium/windsurf/mcp_config.json",
            before: "{\"mcpServers\": {\"x\": {\"serverUrl\": \"https://x.example/mcp\"}}}",
            read: json,
            pointer: "/mcpServers/mcp-agent-mail",
            entry: json!({"serverUrl": URL, "headers": bearer()}),
            kept: ("/mcpServers/x/serverUrl", json!("https://x.example/mcp")),
            comment: None,
        },
        Case {
            client: "cline",
            file: ".cline/data/settings/cline_mcp_settings.json",
            before: "{\n  \"mcpServers\": {\n    \"fs\": {\"type\": \"stdio\", \"command\": \"fs-mcp\", \"args\": []}\n  }\n}\n",
            read: json,
            pointer: "/mcpServers/mcp-agent-mail",
            entry: json!({"type": "streamableHttp", "url": URL, "headers": bearer(), "disabled": false}),
            kept: ("/mcpServers/fs/command", json!("fs-mcp")),
            comment: None,
        },
        Case {
            client: "droid",
            file: ".factory/mcp.json",
            before: "{\"mcpServers\": {\"fs\": {\"type\": \"stdio\", \"command\": \"fs-mcp\", \"disabled\": true}}}\n",
            read: json,
            pointer: "/mcpServers/mcp-agent-mail",
            entry: json!({"type": "http", "url": URL, "headers": bearer(), "disabled": false}),
            kept: ("/mcpServers/fs/disabled", json!(true)),
            comment: None,
        },
        Case {
            client: "antigravity",
            file: ".gemini/antigravity/mcp_config.json",
            before: "{\n    \"mcpServers\": {\n        \"x\": {\"command\": \"x\"}\n    }\n}\n",
            read: json,
            pointer: "/mcpServers/mcp-agent-mail",
            entry: json!({"serverUrl": URL, "headers": bearer()}),
            kept: ("/mcpServers/x/command", json!("x")),
            comment: None,
        },
        Case {
            client: "zed",
            file: ".config/zed/settings.json",
            before: "// Zed settings\n{\n  \"theme\": \"One Dark\", // dark\n  \"context_servers\": {\n    \"other\": {\"command\": \"x\", \"args\": []},\n  },\n}\n",
            read: jsonc,
            pointer: "/context_servers/mcp-agent-mail",
            entry: json!({"url": URL, "headers": bearer()}),
            kept: ("/theme", json!("One Dark")),
            comment: Some("// dark"),
        },
    ]
}

#[test]
fn each_client_gets_its_own_shape_and_uninstall_restores_every_byte() {
    for case in cases() {
        let home = Home::new();
        home.put(case.file, case.before);
        let original = home.snapshot();
        let args = ["install", "--client", case.client, "--url", URL, "--no-hooks"];

        let dry = home.ok(&[&args[..], &["--dry-run"]].concat());
        assert!(
            dry.contains(&format!("+++ {}", home.path(case.file).display())),
            "{}: {dry}",
            case.client
        );
        assert!(
            dry.contains("Bearer <token>") && !dry.contains(TOKEN),
            "{}: the token is masked: {dry}",
            case.client
        );
        assert_eq!(home.snapshot(), original, "{}: a dry run writes nothing", case.client);

        home.ok(&args);
        let written = home.read(case.file);
        let value = (case.read)(&written);
        assert_eq!(value.pointer(case.pointer), Some(&case.entry), "{}:\n{written}", case.client);
        assert_eq!(
            value.pointer(case.kept.0),
            Some(&case.kept.1),
            "{}: the user's entry:\n{written}",
            case.client
        );
        if let Some(comment) = case.comment {
            assert!(written.contains(comment), "{}: the comment survives:\n{written}", case.client);
        }
        let backup = home.path(&format!("{}.mailroom-backup", case.file));
        assert_eq!(
            std::fs::read_to_string(&backup).expect("backup"),
            case.before,
            "{}",
            case.client
        );

        let after_first = home.snapshot();
        let again = home.ok(&args);
        assert!(again.contains("already set up"), "{}: {again}", case.client);
        assert_eq!(home.snapshot(), after_first, "{}: a second run changes nothing", case.client);

        let status = home.ok(&["status", "--json"]);
        let line: Value = status
            .lines()
            .map(|l| serde_json::from_str::<Value>(l).expect("status JSON"))
            .find(|v| v["client"] == case.client)
            .expect("the client in status");
        assert_eq!(line["files"][0]["state"], "set up", "{}: {status}", case.client);

        let out = home.ok(&["uninstall", "--client", case.client]);
        assert!(out.contains("restored as it was before setup"), "{}: {out}", case.client);
        assert_eq!(home.snapshot(), original, "{}: uninstall restores every byte", case.client);
    }
}

#[test]
fn stdio_entries_start_this_binary_on_the_data_directory() {
    let home = Home::new();
    let data = home.path("agent data");
    let data_arg = data.to_string_lossy().into_owned();
    home.ok(&[
        "install",
        "--transport",
        "stdio",
        "--data-dir",
        &data_arg,
        "--no-hooks",
        "--client",
        "claude-code",
        "--client",
        "codex",
        "--client",
        "opencode",
        "--client",
        "zed",
    ]);
    let exe = std::fs::canonicalize(env!("CARGO_BIN_EXE_mailroom")).expect("exe");
    let exe = exe.to_string_lossy().into_owned();
    let args = json!(["serve", "--stdio", "--data-dir", data_arg]);
    let claude = json(&home.read(".claude.json"));
    assert_eq!(claude["mcpServers"][NAME], json!({"type": "stdio", "command": exe, "args": args}));
    let codex = toml(&home.read(".codex/config.toml"));
    assert_eq!(codex["mcp_servers"][NAME], json!({"command": exe, "args": args}));
    let opencode = jsonc(&home.read(".config/opencode/opencode.json"));
    assert_eq!(
        opencode["mcp"][NAME],
        json!({"type": "local", "command": [exe, "serve", "--stdio", "--data-dir", data_arg], "enabled": true})
    );
    let zed = jsonc(&home.read(".config/zed/settings.json"));
    assert_eq!(
        zed["context_servers"][NAME],
        json!({"source": "custom", "command": exe, "args": args})
    );
    // Files setup created, and the directories it made for them, go again.
    home.ok(&["uninstall"]);
    let left: Vec<_> = home.snapshot().into_iter().map(|(p, _)| p).collect();
    assert!(left.is_empty(), "left behind: {left:?}");
}

#[test]
fn tokens_from_the_environment_use_each_clients_own_syntax() {
    let home = Home::new();
    home.ok(&[
        "install",
        "--url",
        URL,
        "--token-env",
        "MAIL_TOKEN",
        "--no-hooks",
        "--client",
        "claude",
        "--client",
        "codex",
        "--client",
        "opencode",
        "--client",
        "vscode",
    ]);
    let claude = json(&home.read(".claude.json"));
    assert_eq!(claude["mcpServers"][NAME]["headers"]["Authorization"], "Bearer ${MAIL_TOKEN}");
    let codex = toml(&home.read(".codex/config.toml"));
    assert_eq!(
        codex["mcp_servers"][NAME],
        json!({"url": URL, "bearer_token_env_var": "MAIL_TOKEN"})
    );
    let opencode = jsonc(&home.read(".config/opencode/opencode.json"));
    assert_eq!(opencode["mcp"][NAME]["headers"]["Authorization"], "Bearer {env:MAIL_TOKEN}");
    let vscode = jsonc(&home.read(".config/Code/User/mcp.json"));
    assert_eq!(vscode["servers"][NAME]["headers"]["Authorization"], "Bearer ${env:MAIL_TOKEN}");
    // A client with no variable syntax is refused by name, and nothing of it is written.
    let zed =
        home.setup(&["install", "--url", URL, "--token-env", "MAIL_TOKEN", "--client", "zed"]);
    assert_eq!(zed.status.code(), Some(1), "{}", text(&zed));
    assert!(text(&zed).contains("Zed cannot read a token from the environment"), "{}", text(&zed));
    assert!(!home.path(".config/zed/settings.json").exists());
}

#[test]
fn a_file_it_cannot_read_is_refused_and_the_others_are_still_set_up() {
    let home = Home::new();
    let broken = "{\n  \"mcpServers\": {\n    \"github\": {\"url\": \n}\n";
    home.put(".claude.json", broken);
    home.put(".cursor/mcp.json", "{\"mcpServers\": [\"not\", \"a\", \"map\"]}");
    home.put(".codex/config.toml", "# fine\n");
    let output = home.setup(&["install", "--url", URL]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    let said = text(&output);
    assert!(said.contains(".claude.json is not JSON setup can read"), "{said}");
    assert!(said.contains("`mcpServers` is not an object"), "{said}");
    assert!(said.contains("not done for: Claude Code, Cursor"), "{said}");
    assert_eq!(home.read(".claude.json"), broken, "a file it cannot read is left alone");
    assert!(!home.path(".claude.json.mailroom-backup").exists());
    let codex = toml(&home.read(".codex/config.toml"));
    assert_eq!(codex["mcp_servers"][NAME]["url"], URL, "the other clients are set up");
    // Only the clients found here: Codex's directory, Claude's file, Cursor's directory.
    assert!(!home.path(".gemini").exists() && !home.path(".config/zed").exists());
}

#[test]
fn uninstall_after_the_user_edited_keeps_their_edits() {
    let home = Home::new();
    let before =
        "{\n  \"mcpServers\": {\n    \"github\": {\"url\": \"https://example.com\"}\n  }\n}\n";
    home.put(".cursor/mcp.json", before);
    home.ok(&["install", "--client", "cursor", "--url", URL]);
    // The user adds a server of their own after setup ran.
    let edited = home.read(".cursor/mcp.json").replacen(
        "\"github\"",
        "\"linear\": {\"url\": \"https://l.example\"},\n    \"github\"",
        1,
    );
    home.put(".cursor/mcp.json", &edited);
    let out = home.ok(&["uninstall"]);
    assert!(out.contains("cleared of mailroom's entries"), "{out}");
    let after = json(&home.read(".cursor/mcp.json"));
    assert_eq!(after["mcpServers"]["linear"]["url"], "https://l.example", "the user's edit stays");
    assert!(after["mcpServers"].get(NAME).is_none());
    assert_eq!(
        home.read(".cursor/mcp.json.mailroom-backup"),
        before,
        "the original stays beside it"
    );
}

#[test]
fn a_symlinked_settings_file_stays_a_link() {
    let home = Home::new();
    home.put("dotfiles/claude.json", "{\"mcpServers\": {}}\n");
    std::os::unix::fs::symlink(home.path("dotfiles/claude.json"), home.path(".claude.json"))
        .expect("link");
    home.ok(&["install", "--client", "claude-code", "--url", URL, "--no-hooks"]);
    assert!(
        std::fs::symlink_metadata(home.path(".claude.json"))
            .expect("meta")
            .file_type()
            .is_symlink()
    );
    let target = json(&home.read("dotfiles/claude.json"));
    assert_eq!(target["mcpServers"][NAME]["url"], URL);
}

#[test]
fn nothing_found_and_bad_flags_are_clear_errors() {
    let home = Home::new();
    let none = home.setup(&["install"]);
    assert_eq!(none.status.code(), Some(1));
    assert!(text(&none).contains("no coding agent found"), "{}", text(&none));
    for (args, says) in [
        (vec!["install", "--client", "emacs"], "no coding agent called \"emacs\""),
        (vec!["install", "--client", "codex", "--url", "ftp://x"], "--url"),
        (vec!["install", "--client", "codex", "--name", "a b"], "--name"),
        (vec!["install", "--client", "codex", "--token-env", "1X"], "--token-env"),
        (
            vec!["install", "--client", "codex", "--transport", "stdio", "--url", URL],
            "--url and --token-env",
        ),
    ] {
        let output = home.setup(&args);
        assert_eq!(output.status.code(), Some(1), "{args:?}");
        assert!(text(&output).contains(says), "{args:?}: {}", text(&output));
    }
    assert!(home.snapshot().is_empty(), "errors write nothing");
}

/// Runs a hook command line as the coding agent would: through the shell, the hook's JSON
/// on stdin.
fn run_hook(command: &str, input: &Value, agent: &str) -> String {
    use std::io::Write as _;
    let mut child = std::process::Command::new("sh")
        .args(["-c", command])
        .env("AGENT_NAME", agent)
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .expect("sh");
    child.stdin.take().expect("stdin").write_all(input.to_string().as_bytes()).expect("input");
    let output = child.wait_with_output().expect("hook");
    assert!(output.status.success(), "hook failed: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_hooks_it_writes_are_silent_until_mail_arrives() {
    let home = Home::new();
    let data = home.path("data");
    let data_arg = data.to_string_lossy().into_owned();
    home.put(".claude/settings.json", "{\n  \"permissions\": {\"allow\": [\"Bash(ls)\"]},\n  \"hooks\": {\"PostToolUse\": [{\"matcher\": \"Edit\", \"hooks\": [{\"type\": \"command\", \"command\": \"make lint\"}]}]}\n}\n");
    home.put(".gemini/settings.json", "{}\n");
    home.ok(&[
        "install",
        "--url",
        URL,
        "--data-dir",
        &data_arg,
        "--client",
        "claude-code",
        "--client",
        "gemini",
        "--client",
        "codex",
        "--client",
        "droid",
    ]);

    let claude = json(&home.read(".claude/settings.json"));
    assert_eq!(claude["permissions"]["allow"][0], "Bash(ls)");
    let post = claude["hooks"]["PostToolUse"].as_array().expect("PostToolUse");
    assert_eq!(post.len(), 2, "the user's hook and ours: {post:?}");
    assert_eq!(post[0]["hooks"][0]["command"], "make lint");
    let command = post[1]["hooks"][0]["command"].as_str().expect("our command").to_string();
    assert!(command.contains("check-inbox --format hook --data-dir"), "{command}");
    assert!(claude["hooks"]["SessionStart"][0]["hooks"][0]["command"].is_string());
    let gemini = jsonc(&home.read(".gemini/settings.json"));
    assert_eq!(gemini["hooks"]["AfterTool"][0]["hooks"][0]["timeout"], 5000, "Gemini counts ms");
    for file in [".codex/hooks.json", ".factory/hooks.json"] {
        let hooks = json(&home.read(file));
        assert_eq!(
            hooks["hooks"]["PostToolUse"][0]["hooks"][0]["command"],
            command.as_str(),
            "{file}"
        );
    }

    let project = "/work/hooked";
    let (server, url) = start(&data);
    let server = KillOnDrop(Some(server));
    seed_pair_at(&url, project, "BlueLake", "GreenCastle").await;
    let input = json!({"hook_event_name": "PostToolUse", "cwd": project, "tool_name": "Edit"});
    assert_eq!(run_hook(&command, &input, "GreenCastle"), "", "no unread mail: silent");
    SendCall::new(project, "BlueLake", "GreenCastle", "ready").ok_at(&url).await;
    SendCall::new(project, "BlueLake", "GreenCastle", "now").importance("urgent").ok_at(&url).await;
    let answer: Value =
        serde_json::from_str(&run_hook(&command, &input, "GreenCastle")).expect("JSON answer");
    let context = answer["hookSpecificOutput"]["additionalContext"].as_str().expect("context");
    assert!(context.contains("2 unread messages (1 urgent)"), "{context}");
    assert_eq!(run_hook(&command, &input, "BlueLake"), "", "the sender has nothing unread");
    stop(server.take());

    // Uninstall takes out our groups and leaves the user's hook.
    home.ok(&["uninstall"]);
    let claude = json(&home.read(".claude/settings.json"));
    assert_eq!(claude["hooks"]["PostToolUse"].as_array().map(Vec::len), Some(1));
    assert!(!home.path(".codex/hooks.json").exists() && !home.path(".factory").exists());
}

#[test]
fn reinstalling_after_the_client_rewrote_the_file_loses_nothing() {
    let home = Home::new();
    let before =
        "{\n  \"mcpServers\": {\n    \"github\": {\"url\": \"https://example.com\"}\n  }\n}\n";
    home.put(".cursor/mcp.json", before);
    home.ok(&["install", "--client", "cursor", "--url", URL]);
    // The client rewrites the file its own way and the user adds a server…
    let mut rewritten = json(&home.read(".cursor/mcp.json"));
    rewritten["mcpServers"]["linear"] = json!({"url": "https://l.example"});
    rewritten["mcpServers"][NAME]["timeout"] = json!(90);
    home.put(".cursor/mcp.json", &serde_json::to_string_pretty(&rewritten).expect("json"));
    // …then setup runs again, for another server.
    home.ok(&["install", "--client", "cursor", "--url", "http://127.0.0.1:9999/mcp"]);
    let again = json(&home.read(".cursor/mcp.json"));
    assert_eq!(again["mcpServers"][NAME]["url"], "http://127.0.0.1:9999/mcp");
    assert_eq!(again["mcpServers"][NAME]["timeout"], 90, "a key added to the entry stays");
    assert_eq!(home.read(".cursor/mcp.json.mailroom-backup"), before, "the first backup stays");

    let out = home.ok(&["uninstall"]);
    assert!(
        out.contains("cleared of mailroom's entries"),
        "not a restore over newer content: {out}"
    );
    assert!(out.contains("the file before setup is ~/.cursor/mcp.json.mailroom-backup"), "{out}");
    let after = json(&home.read(".cursor/mcp.json"));
    assert_eq!(
        after["mcpServers"]["linear"]["url"], "https://l.example",
        "the user's server stays"
    );
    assert!(after["mcpServers"].get(NAME).is_none(), "{after}");
}

#[test]
fn an_entry_setup_did_not_write_is_left_alone_without_force() {
    let home = Home::new();
    // The reference's installer wrote this one.
    let before = "{\"mcpServers\": {\"mcp-agent-mail\": {\"type\": \"http\", \"url\": \"http://127.0.0.1:8765/mcp/\"}}}\n";
    home.put(".claude.json", before);
    let out = home.ok(&["uninstall"]);
    assert!(out.contains("setup did not write; left alone"), "{out}");
    assert_eq!(home.read(".claude.json"), before);
    home.ok(&["uninstall", "--force"]);
    assert!(json(&home.read(".claude.json"))["mcpServers"].get(NAME).is_none());

    // Installed over it, the entry becomes mailroom's; uninstall puts the reference's back.
    home.put(".claude.json", before);
    home.ok(&["install", "--client", "claude-code", "--url", URL, "--no-hooks"]);
    assert_eq!(json(&home.read(".claude.json"))["mcpServers"][NAME]["url"], URL);
    home.ok(&["uninstall"]);
    assert_eq!(home.read(".claude.json"), before);
}

#[test]
fn no_hooks_takes_out_hooks_an_earlier_run_wrote() {
    let home = Home::new();
    home.ok(&["install", "--client", "claude-code", "--url", URL]);
    assert!(home.read(".claude/settings.json").contains("check-inbox --format hook"));
    let out = home.ok(&["install", "--client", "claude-code", "--url", URL, "--no-hooks"]);
    assert!(out.contains("settings.json: updated"), "{out}");
    assert!(
        !home.read(".claude/settings.json").contains("check-inbox"),
        "{}",
        home.read(".claude/settings.json")
    );
    // And with no file of hooks there, --no-hooks creates none.
    let fresh = Home::new();
    fresh.ok(&["install", "--client", "codex", "--url", URL, "--no-hooks"]);
    assert!(!fresh.path(".codex/hooks.json").exists());
}

#[test]
fn a_failed_write_keeps_the_record_of_what_was_written() {
    let home = Home::new();
    let before = "{\"mcpServers\": {}}\n";
    home.put(".claude.json", before);
    std::fs::create_dir_all(home.path(".codex")).expect("mkdir");
    std::os::unix::fs::symlink(home.path("nowhere/config.toml"), home.path(".codex/config.toml"))
        .expect("link");
    let output = home.setup(&["install", "--url", URL]);
    assert_eq!(output.status.code(), Some(1), "{}", text(&output));
    assert!(text(&output).contains("symlink to nowhere"), "{}", text(&output));
    assert!(json(&home.read(".claude.json"))["mcpServers"].get(NAME).is_some());
    home.ok(&["uninstall", "--client", "claude-code"]);
    assert_eq!(home.read(".claude.json"), before, "restored: the record was kept");
}

#[test]
fn a_file_in_windows_line_endings_stays_so_and_untouched_files_stay_untouched() {
    let home = Home::new();
    let before = "# settings\r\nmodel = \"o3\"\r\n";
    home.put(".codex/config.toml", before);
    let status = home.ok(&["status", "--json"]);
    assert!(status.contains(r#""state":"not set up""#), "{status}");
    home.ok(&["uninstall"]);
    assert_eq!(home.read(".codex/config.toml"), before);
    home.ok(&["install", "--client", "codex", "--url", URL, "--no-hooks"]);
    let written = home.read(".codex/config.toml");
    assert!(
        written.starts_with(before) && !written.replace("\r\n", "").contains('\n'),
        "{written:?}"
    );
    home.ok(&["uninstall"]);
    assert_eq!(home.read(".codex/config.toml"), before);
}

#[test]
fn an_old_backup_is_never_overwritten() {
    let home = Home::new();
    home.put(".cursor/mcp.json", "{\"a\": 1}\n");
    home.put(".cursor/mcp.json.mailroom-backup", "an older backup\n");
    home.ok(&["install", "--client", "cursor", "--url", URL]);
    assert_eq!(home.read(".cursor/mcp.json.mailroom-backup"), "an older backup\n");
    assert_eq!(home.read(".cursor/mcp.json.mailroom-backup.2"), "{\"a\": 1}\n");
    home.ok(&["uninstall"]);
    assert_eq!(home.read(".cursor/mcp.json"), "{\"a\": 1}\n");
    assert!(!home.path(".cursor/mcp.json.mailroom-backup.2").exists());
}

/// A stand-in for a client's command: prints `version` for `--version` and `help` otherwise.
fn fake_client(home: &Home, name: &str, version: &str, help: &str) {
    use std::os::unix::fs::PermissionsExt as _;
    let path = home.path(&format!(".no-agents-on-path/{name}"));
    std::fs::create_dir_all(path.parent().expect("dir")).expect("mkdir");
    let script = format!(
        "#!/bin/sh\nif [ \"$1\" = --version ]; then echo '{version}'; else echo '{help}'; fi\n"
    );
    std::fs::write(&path, script).expect("script");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).expect("chmod");
}

#[test]
fn the_installed_version_decides_what_is_written() {
    let home = Home::new();
    fake_client(&home, "gemini", "0.20.3", "");
    home.ok(&["install", "--url", URL, "--no-hooks"]);
    let gemini = jsonc(&home.read(".gemini/settings.json"));
    assert_eq!(
        gemini["mcpServers"][NAME],
        json!({"httpUrl": URL, "headers": bearer()}),
        "before 0.21"
    );

    fake_client(&home, "opencode", "3.0.0", "--scope  where to add it");
    let refused = home.setup(&["install", "--url", URL, "--client", "opencode"]);
    assert_eq!(refused.status.code(), Some(1));
    assert!(text(&refused).contains("add mailroom with `opencode mcp add`"), "{}", text(&refused));
    assert!(!home.path(".config/opencode").exists());
}

#[test]
fn variables_that_move_a_clients_settings_are_followed() {
    let home = Home::new();
    let mut command = mailroom();
    command
        .args([
            "setup",
            "install",
            "--url",
            URL,
            "--no-hooks",
            "--client",
            "claude-code",
            "--client",
            "codex",
        ])
        .env("HOME", home.path(""))
        .env("XDG_CONFIG_HOME", home.path(".config"))
        .env("PATH", "/nonexistent")
        .env("CLAUDE_CONFIG_DIR", home.path("cc"))
        .env("CODEX_HOME", home.path("cx"))
        .env_remove("HTTP_BEARER_TOKEN");
    let output = command.output().expect("setup");
    assert!(output.status.success(), "{}", text(&output));
    assert_eq!(
        json(&home.read("cc/.claude.json"))["mcpServers"][NAME],
        json!({"type": "http", "url": URL})
    );
    assert_eq!(toml(&home.read("cx/config.toml"))["mcp_servers"][NAME], json!({"url": URL}));
    assert!(!home.path(".claude.json").exists() && !home.path(".codex").exists());
}
