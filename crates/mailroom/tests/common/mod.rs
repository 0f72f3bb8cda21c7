//! Helpers shared by the binary's test files: start the built `mailroom`, signal it, run its
//! commands on a data directory. Tool calls (`tool_at`, `SendCall`) and `git` come from
//! mailroom-testkit.
//!
//! Each test file is its own crate and uses a subset of these.
#![allow(dead_code)]

pub mod receiver;

use std::io::{BufRead, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};

use serde_json::Value;

/// The built binary, or the one `MAILROOM_TEST_BINARY` names: where several worktrees share
/// one target directory, another build may replace `target/debug/mailroom` while a test runs,
/// and the copy cargo keeps under `target/debug/deps/` is this worktree's own.
pub fn mailroom() -> Command {
    let binary = std::env::var_os("MAILROOM_TEST_BINARY");
    Command::new(binary.unwrap_or_else(|| env!("CARGO_BIN_EXE_mailroom").into()))
}

/// Runs `mailroom ARGS --data-dir DATA REST` with `stdin` piped in (so never a terminal) and
/// `AGENT_NAME` unset; its output.
pub fn run_on(data: &Path, args: &[&str], rest: &[&str], stdin: &str) -> Output {
    let mut child = mailroom()
        .args(args)
        .arg("--data-dir")
        .arg(data)
        .args(rest)
        .env_remove("AGENT_NAME")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    child.stdin.take().expect("stdin").write_all(stdin.as_bytes()).expect("write");
    child.wait_with_output().expect("wait")
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
    assert!(signal_pid(child.id(), name), "kill {name}");
}

/// Sends a signal to a process by pid; whether it was delivered (the process exists).
pub fn signal_pid(pid: u32, name: &str) -> bool {
    Command::new("kill")
        .args([name, &pid.to_string()])
        .stderr(Stdio::null())
        .status()
        .is_ok_and(|status| status.success())
}

/// SIGTERM: a graceful stop commits all queued archive work before exiting 0.
pub fn stop(mut server: Child) {
    signal(&server, "-TERM");
    assert!(server.wait().expect("wait").success(), "graceful stop exits 0");
}

/// Runs `mailroom ARGS --data-dir DATA` with `stdin` (the flag before a `--`); its output.
pub fn run(data: &Path, args: &[&str], stdin: &str) -> Output {
    let split = args.iter().position(|a| *a == "--").unwrap_or(args.len());
    run_on(data, &args[..split], &args[split..], stdin)
}

/// Runs a command that must succeed; its stdout.
pub fn ok(data: &Path, args: &[&str]) -> String {
    let output = run(data, args, "");
    assert!(output.status.success(), "{args:?}: {}", String::from_utf8_lossy(&output.stderr));
    String::from_utf8_lossy(&output.stdout).into_owned()
}

/// [`ok`] with `--json`: its stdout parsed.
pub fn json(data: &Path, args: &[&str]) -> Value {
    serde_json::from_str(&ok(data, &[args, &["--json"]].concat())).expect("JSON")
}

/// The reference mailbox (tests/reference-mailbox, made by scripts/reference-mailbox after a
/// session with every kind of record): its data directory (`storage.sqlite3`, `archive/`)
/// unpacked under `dir`.
pub fn unpack_reference_mailbox(dir: &Path) -> PathBuf {
    const FIXTURE: &str =
        concat!(env!("CARGO_MANIFEST_DIR"), "/../../tests/reference-mailbox/mailbox.tar.gz");
    let reference = dir.join("reference");
    std::fs::create_dir_all(&reference).expect("mkdir");
    let status =
        Command::new("tar").args(["-xzf", FIXTURE, "-C"]).arg(&reference).status().expect("tar");
    assert!(status.success(), "unpack {FIXTURE}");
    reference
}
