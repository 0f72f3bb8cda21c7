//! Helpers shared by the binary's test files: start the built `mailroom`, signal it, call
//! its tools over MCP, read the archive with the `git` command line.
//!
//! Each test file is its own crate and uses a subset of these.
#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Command, Stdio};

use serde_json::{Value, json};

/// The built binary.
pub fn mailroom() -> Command {
    Command::new(env!("CARGO_BIN_EXE_mailroom"))
}

/// Starts `mailroom serve` on a free port and returns it with the URL it printed.
pub fn start(data_dir: &Path) -> (Child, String) {
    start_with(data_dir, &[])
}

/// [`start`] with extra environment variables for the server.
pub fn start_with(data_dir: &Path, env: &[(&str, &str)]) -> (Child, String) {
    let mut child = mailroom()
        .args(["serve", "--port", "0", "--data-dir"])
        .arg(data_dir)
        .env("LOG_LEVEL", "warn")
        .envs(env.iter().copied())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn mailroom");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("line");
    let url = line
        .split_whitespace()
        .find(|w| w.starts_with("http://"))
        .unwrap_or_else(|| panic!("no URL in {line:?}"))
        .to_string();
    (child, url)
}

/// A server that is killed if the test panics before stopping it, so that it never outlives
/// the test (and its temporary data directory).
pub struct KillOnDrop(pub Option<Child>);

impl KillOnDrop {
    /// The server, no longer killed on drop.
    pub fn take(mut self) -> Child {
        self.0.take().expect("server taken once")
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(child) = &mut self.0 {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

/// Sends a signal (`-TERM`, `-KILL`) to the server.
pub fn signal(child: &Child, name: &str) {
    let sent = Command::new("kill").args([name, &child.id().to_string()]).status().expect("kill");
    assert!(sent.success(), "kill {name}");
}

/// SIGTERM: a graceful stop commits all queued archive work before exiting 0.
pub fn stop(mut server: Child) {
    signal(&server, "-TERM");
    assert!(server.wait().expect("wait").success(), "graceful stop exits 0");
}

/// Calls a tool over MCP (`POST /mcp`, no session) and returns its parsed JSON result.
pub async fn tool(url: &str, name: &str, arguments: Value) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": name, "arguments": arguments}});
    let response: Value = reqwest::Client::new()
        .post(format!("{url}/mcp"))
        .json(&body)
        .send()
        .await
        .expect("rpc")
        .json()
        .await
        .expect("json");
    let text = response["result"]["content"][0]["text"].as_str().expect("text");
    assert_ne!(response["result"]["isError"], true, "{name}: {text}");
    serde_json::from_str(text).expect("tool JSON")
}

/// Runs `git -C root args…` (with a committer identity, for tests that damage the archive)
/// and returns its standard output; fails the test on error.
pub fn git(root: &Path, args: &[&str]) -> String {
    let output = Command::new("git")
        .args(["-c", "user.name=Test", "-c", "user.email=test@example.com", "-C"])
        .arg(root)
        .args(args)
        .output()
        .expect("git");
    assert!(output.status.success(), "git {args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}
