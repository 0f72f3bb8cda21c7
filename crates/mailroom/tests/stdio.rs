//! `mailroom serve --stdio`, the built binary as a client starts it: a bridge joins the data
//! directory's running server, survives that server's restart (it starts one again and opens
//! a new session with the client's own `initialize`), carries the bearer token, and writes
//! nothing but JSON-RPC to stdout. Five SDK clients at once: `tests/clients/`.

mod common;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, Stdio};
use std::sync::mpsc::{Receiver, channel};
use std::time::Duration;

use common::{KillOnDrop, mailroom, signal_pid, start, start_with, stop};
use mailroom_testkit::tool_result;
use serde_json::{Value, json};

/// A `mailroom serve --stdio` process, spoken to line by line.
struct Bridge {
    child: Child,
    stdin: Option<ChildStdin>,
    lines: Receiver<String>,
    next_id: i64,
}

impl Bridge {
    fn start(data_dir: &Path, env: &[(&str, &str)]) -> Self {
        let mut child = mailroom()
            .args(["serve", "--stdio", "--data-dir"])
            .arg(data_dir)
            .env("HTTP_PORT", "0")
            .env("LOG_LEVEL", "warn")
            .envs(env.iter().copied())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()
            .expect("spawn the bridge");
        let stdout = child.stdout.take().expect("stdout");
        let (sender, lines) = channel();
        std::thread::spawn(move || {
            for line in BufReader::new(stdout).lines().map_while(Result::ok) {
                if sender.send(line).is_err() {
                    break;
                }
            }
        });
        let stdin = child.stdin.take();
        Self { child, stdin, lines, next_id: 0 }
    }

    fn send(&mut self, message: &Value) {
        let stdin = self.stdin.as_mut().expect("stdin open");
        writeln!(stdin, "{message}").expect("write a line");
        stdin.flush().expect("flush");
    }

    /// The next line of stdout, which must be a JSON-RPC message.
    fn answer(&self) -> Value {
        let line = self.lines.recv_timeout(Duration::from_secs(60)).expect("an answer");
        let message: Value = serde_json::from_str(&line)
            .unwrap_or_else(|e| panic!("stdout holds only JSON-RPC, got {line:?}: {e}"));
        assert_eq!(message["jsonrpc"], "2.0", "{message}");
        message
    }

    fn request(&mut self, method: &str, params: Value) -> Value {
        self.next_id += 1;
        let id = self.next_id;
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
        let answer = self.answer();
        assert_eq!(answer["id"], id, "{answer}");
        answer
    }

    fn initialize(&mut self) {
        let answer = self.request(
            "initialize",
            json!({"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "stdio-test", "version": "1"}}),
        );
        assert!(answer["result"]["protocolVersion"].is_string(), "{answer}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    /// A tool's parsed result; fails the test on an error.
    fn tool(&mut self, name: &str, arguments: Value) -> Value {
        let answer = self.request("tools/call", json!({"name": name, "arguments": arguments}));
        assert!(answer["result"].is_object(), "{name}: no result in {answer}");
        tool_result(&answer["result"]).unwrap_or_else(|e| panic!("{name}: {e}"))
    }

    /// Closes stdin and waits for the bridge to exit (at most a minute: then it is killed and
    /// the test fails); it must exit 0 and print nothing more.
    fn finish(mut self) {
        drop(self.stdin.take());
        let status = wait_at_most(&mut self.child, Duration::from_secs(60));
        let status = status.unwrap_or_else(|| {
            let _ = self.child.kill();
            panic!("the bridge did not exit when its input ended")
        });
        assert!(status.success(), "the bridge exits 0 when its input ends: {status}");
        assert!(self.lines.recv_timeout(Duration::from_secs(5)).is_err(), "nothing after the end");
    }
}

fn wait_at_most(child: &mut Child, limit: Duration) -> Option<std::process::ExitStatus> {
    let deadline = std::time::Instant::now() + limit;
    loop {
        if let Some(status) = child.try_wait().expect("try_wait") {
            return Some(status);
        }
        if std::time::Instant::now() > deadline {
            return None;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// The server a bridge started in the background, stopped when the test ends (panics
/// included): the one `server.json` names, if it still holds the data directory (its pid is
/// `server.pid`'s); TERM, then KILL after ten seconds.
struct Background<'a>(&'a Path);

impl Drop for Background<'_> {
    fn drop(&mut self) {
        let read = |file: &str| std::fs::read_to_string(self.0.join(file)).unwrap_or_default();
        let Ok(record) = serde_json::from_str::<Value>(&read("server.json")) else { return };
        let Some(pid) = record["pid"].as_u64().and_then(|p| u32::try_from(p).ok()) else { return };
        if read("server.pid").trim() != pid.to_string() || !signal_pid(pid, "-TERM") {
            return;
        }
        for _ in 0..500 {
            if !signal_pid(pid, "-0") {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        signal_pid(pid, "-KILL");
    }
}

#[test]
fn a_bridge_joins_the_running_server_and_outlives_its_restart() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let (server, _url) = start(&data);
    let server = KillOnDrop(Some(server));
    let _background = Background(&data);

    let mut bridge = Bridge::start(&data, &[]);
    bridge.initialize();
    let project = bridge.tool("ensure_project", json!({"human_key": "/tmp/stdio-restart"}));
    assert_eq!(project["slug"], "tmp-stdio-restart");
    assert!(!data.join("server.log").exists(), "the bridge joined the running server");

    stop(server.take());
    assert!(!data.join("server.json").exists(), "a stopped server takes its address back");
    // The next call finds no server: the bridge starts one and opens a new session.
    let agent = bridge.tool(
        "register_agent",
        json!({"project_key": "/tmp/stdio-restart", "program": "test", "model": "m"}),
    );
    assert!(agent["name"].is_string(), "{agent}");
    assert!(data.join("server.log").exists(), "the bridge started a server in the background");
    let agents = bridge.tool("list_agents", json!({"project_key": "/tmp/stdio-restart"}));
    assert_eq!(agents["agents"][0]["name"], agent["name"], "the data survived the restart");
    bridge.finish();

    // The background server outlived the bridge; a new bridge joins it.
    let mut again = Bridge::start(&data, &[]);
    again.initialize();
    let agents = again.tool("list_agents", json!({"project_key": "/tmp/stdio-restart"}));
    assert_eq!(agents["agents"][0]["name"], agent["name"]);
    again.finish();
}

#[test]
fn the_bearer_token_travels_with_every_request() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let locked = [
        ("HTTP_BEARER_TOKEN", "stdio-secret"),
        ("HTTP_ALLOW_LOCALHOST_UNAUTHENTICATED", "false"),
        // A static token's role is the default role (reader unless set).
        ("HTTP_RBAC_DEFAULT_ROLE", "writer"),
    ];
    let (server, _url) = start_with(&data, &locked);
    let server = KillOnDrop(Some(server));

    let mut bridge = Bridge::start(&data, &locked);
    bridge.initialize();
    bridge.tool("ensure_project", json!({"human_key": "/tmp/stdio-token"}));
    bridge.finish();

    let mut stranger = Bridge::start(&data, &[("HTTP_ALLOW_LOCALHOST_UNAUTHENTICATED", "false")]);
    let refused = stranger.request("tools/list", json!({}));
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(message.contains("HTTP 401"), "without the token: {refused}");
    stranger.finish();
    stop(server.take());
}

#[test]
fn lines_that_are_not_json_get_a_parse_error_and_the_bridge_goes_on() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let (server, _url) = start(&data);
    let server = KillOnDrop(Some(server));
    let mut bridge = Bridge::start(&data, &[]);
    bridge.stdin.as_mut().map(|stdin| writeln!(stdin, "not json")).expect("stdin").expect("line");
    let error = bridge.answer();
    assert_eq!(error["error"]["code"], -32700, "{error}");
    assert_eq!(error["id"], Value::Null);
    bridge.initialize();
    bridge.tool("ensure_project", json!({"human_key": "/tmp/stdio-garbage"}));
    bridge.finish();
    stop(server.take());
}
