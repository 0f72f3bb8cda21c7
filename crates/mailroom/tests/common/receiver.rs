//! A webhook receiver in its own process (`tests/webhooks/receiver.py`): it checks each
//! request's Standard Webhooks signature against [`SECRET`] and logs it, one JSON line each.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

/// A fixed secret, so a receiver can start before its webhook is registered.
pub const SECRET: &str = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSwMfKQ9r8GKYqr";

/// A receiver process, killed when dropped.
pub struct Receiver {
    child: Child,
    pub port: u16,
    pub log: PathBuf,
}

impl Receiver {
    /// Starts the receiver on `port` (0: any) in `mode`, recording into `log`.
    pub fn start(port: u16, mode: &str, log: &Path) -> Receiver {
        Self::start_with(port, mode, log, &[])
    }

    /// As [`Receiver::start`], with more of the receiver's options (`--exit-after N`).
    pub fn start_with(port: u16, mode: &str, log: &Path, options: &[&str]) -> Receiver {
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/webhooks/receiver.py");
        let mut child = Command::new("python3")
            .arg(script)
            .args(["--port", &port.to_string(), "--secret", SECRET, "--mode", mode, "--log"])
            .arg(log)
            .args(options)
            .stdout(Stdio::piped())
            .spawn()
            .expect("python3 runs the receiver");
        let mut line = String::new();
        let stdout = child.stdout.take().expect("stdout");
        std::io::BufRead::read_line(&mut std::io::BufReader::new(stdout), &mut line)
            .expect("receiver's first line");
        let port = line.trim().strip_prefix("listening ").and_then(|p| p.parse().ok());
        let port = port.unwrap_or_else(|| panic!("receiver did not start: {line:?}"));
        Receiver { child, port, log: log.to_path_buf() }
    }

    pub fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    pub fn stop(mut self) -> u16 {
        let _ = self.child.kill();
        let _ = self.child.wait();
        self.port
    }
}

impl Drop for Receiver {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Every request a receiver's log recorded.
pub fn received(log: &Path) -> Vec<Value> {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    text.lines().map(|l| serde_json::from_str(l).expect("log line")).collect()
}

/// The distinct webhook-ids of the validly signed requests.
pub fn unique_ids(log: &Path) -> BTreeSet<String> {
    let requests = received(log);
    for request in &requests {
        assert_eq!(request["valid"], true, "a request failed the signature check: {request}");
    }
    requests.iter().map(|r| r["webhook_id"].as_str().expect("id").to_owned()).collect()
}
