//! `mailroom serve --stdio` (also `mailroom serve-stdio`): MCP over stdin/stdout, for clients
//! that start their server as a command.
//!
//! One server per data directory, whoever starts it. The stdio process is a bridge: it finds
//! the data directory's running server (its lock held, `server.json` naming the pid that holds
//! it, the liveness probe answering) or starts `mailroom serve` on the same flags in the
//! background, in a process group of its own and logging to `DIR/server.log`, which outlives
//! the bridge (bridges starting together take turns on `DIR/server.start.lock`: one starts
//! the server, the others find it). It then forwards each JSON-RPC line of stdin to the server's `/mcp` and writes
//! each answer to stdout as one line. So any number of agents, each with its own stdio
//! process, share one database writer and one archive writer, and HTTP clients meet them at
//! the same server. Only JSON-RPC goes to stdout; logs go to stderr. Should the server stop,
//! the next request starts one again and the bridge opens a new session with the client's
//! own `initialize`.

use std::path::{Path, PathBuf};
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use reqwest::StatusCode;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::mpsc;

use super::serve::ServeArgs;
use super::shared::{self, ServerAddress};

/// How long a bridge waits for a server it started to listen (a large archive replays first).
const START_TIMEOUT: Duration = Duration::from_secs(120);
/// How often it looks while waiting.
const POLL_EVERY: Duration = Duration::from_millis(50);
const SESSION_HEADER: &str = "mcp-session-id";
const VERSION_HEADER: &str = "mcp-protocol-version";
/// The JSON-RPC error code of an answer the bridge makes up itself (the server is unreachable).
const SERVER_ERROR: i64 = -32603;

/// Bridges stdin/stdout to the data directory's server until stdin ends.
pub fn run(args: &ServeArgs) -> Result<()> {
    let data_dir = std::path::absolute(args.data_dir()).context("cannot resolve --data-dir")?;
    shared::use_dotenv(shared::operator_dir(&data_dir))?;
    shared::init_logging()?;
    let starter = Starter { data_dir, flags: args.listener_flags() };
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(async move {
        let http = reqwest::Client::builder().no_proxy().build().context("HTTP client")?;
        let url = starter.find_or_start(&http).await?;
        let bridge = Arc::new(Bridge {
            http,
            starter,
            token: shared::env("HTTP_BEARER_TOKEN"),
            state: Mutex::new(Connection {
                url,
                session: None,
                protocol: None,
                initialize: None,
                generation: 0,
            }),
            reconnecting: tokio::sync::Mutex::new(()),
        });
        bridge.run().await
    })
}

/// Finds the data directory's server, or starts one.
struct Starter {
    data_dir: PathBuf,
    /// `--host`, `--port`, `--path` as given to the bridge, passed on to a server it starts.
    flags: Vec<String>,
}

impl Starter {
    /// The URL of the running server, starting one (and waiting for it) when none runs.
    async fn find_or_start(&self, http: &reqwest::Client) -> Result<String> {
        if let Some(url) = self.running(http).await {
            return Ok(url);
        }
        // One bridge starts the server; the others wait for it and then find it.
        let deadline = Instant::now() + START_TIMEOUT;
        let _starting = self.starter_lock(deadline).await?;
        if let Some(url) = self.running(http).await {
            return Ok(url);
        }
        let mut child = self.start()?;
        loop {
            if let Some(url) = self.running(http).await {
                return Ok(url);
            }
            // A server that found another holding the lock exits at once; that one is awaited.
            let ended = child.try_wait().ok().flatten();
            if ended.is_some_and(|status| !status.success())
                && !shared::data_dir_in_use(&self.data_dir)
            {
                bail!(
                    "the server started for {} stopped: {}",
                    self.data_dir.display(),
                    log_tail(&self.data_dir.join(shared::LOG_FILE))
                );
            }
            if Instant::now() > deadline {
                bail!(
                    "no server answered for {} within {} s; see {}",
                    self.data_dir.display(),
                    START_TIMEOUT.as_secs(),
                    self.data_dir.join(shared::LOG_FILE).display()
                );
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
    }

    /// Holds `DIR/server.start.lock`, taken by the bridge that starts the server while it does.
    async fn starter_lock(&self, deadline: Instant) -> Result<std::fs::File> {
        std::fs::create_dir_all(&self.data_dir)
            .with_context(|| format!("cannot create {}", self.data_dir.display()))?;
        let path = self.data_dir.join("server.start.lock");
        let lock = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .with_context(|| format!("cannot open {}", path.display()))?;
        while lock.try_lock().is_err() {
            if Instant::now() > deadline {
                bail!(
                    "another process has been starting the server for {} s",
                    START_TIMEOUT.as_secs()
                );
            }
            tokio::time::sleep(POLL_EVERY).await;
        }
        Ok(lock)
    }

    /// The URL of the server that holds the data directory's lock, if it answers there.
    async fn running(&self, http: &reqwest::Client) -> Option<String> {
        if !shared::data_dir_in_use(&self.data_dir) {
            return None;
        }
        let address = ServerAddress::read(&self.data_dir)?;
        if shared::server_pid(&self.data_dir)? != address.pid {
            return None;
        }
        let probe = http
            .get(format!("{}/health/liveness", address.url))
            .timeout(Duration::from_secs(5))
            .send()
            .await
            .ok()?;
        probe.status().is_success().then_some(address.url)
    }

    /// Starts `mailroom serve` for the data directory in the background: its own process
    /// group (a signal to the client's group does not reach it), stdin and stdout closed,
    /// stderr appended to `DIR/server.log`.
    fn start(&self) -> Result<Child> {
        let log_path = self.data_dir.join(shared::LOG_FILE);
        let log = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(&log_path)
            .with_context(|| format!("cannot open {}", log_path.display()))?;
        let exe = std::env::current_exe().context("cannot find this program's path")?;
        tracing::info!(data_dir = %self.data_dir.display(), "starting a server in the background");
        let mut command = std::process::Command::new(exe);
        command
            // Where it reads its `.env`: beside the data directory, not in the agent's project.
            .current_dir(shared::operator_dir(&self.data_dir))
            .arg("serve")
            .arg("--data-dir")
            .arg(&self.data_dir)
            .args(&self.flags)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(log);
        #[cfg(unix)]
        std::os::unix::process::CommandExt::process_group(&mut command, 0);
        command.spawn().context("cannot start the server")
    }
}

/// The last lines of a log, for an error message.
fn log_tail(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_default();
    let lines: Vec<&str> = text.lines().rev().take(3).collect();
    lines.into_iter().rev().collect::<Vec<_>>().join(" | ")
}

/// The server a bridge talks to and its MCP session.
struct Connection {
    url: String,
    session: Option<String>,
    protocol: Option<String>,
    /// The client's `initialize` line, replayed to open a session on a restarted server.
    initialize: Option<String>,
    /// How many times the bridge has reconnected: a request that failed on an earlier
    /// connection does not reconnect again.
    generation: u64,
}

struct Bridge {
    http: reqwest::Client,
    starter: Starter,
    token: Option<String>,
    state: Mutex<Connection>,
    /// Held while reconnecting, so requests failing together reconnect once.
    reconnecting: tokio::sync::Mutex<()>,
}

/// What became of one forwarded message.
enum Outcome {
    /// The server answered (or had nothing to answer: a notification).
    Answered(Vec<String>),
    /// Nothing was delivered (no server listened, or it no longer knows the session): safe
    /// to send again after reconnecting.
    NotDelivered(String),
    /// Sent, but the answer was lost: not sent again, since it may have been carried out.
    Lost(String),
}

impl Bridge {
    async fn run(self: Arc<Self>) -> Result<()> {
        let (out, mut lines_out) = mpsc::unbounded_channel::<String>();
        let writer = tokio::spawn(async move {
            let mut stdout = tokio::io::stdout();
            while let Some(line) = lines_out.recv().await {
                stdout.write_all(line.as_bytes()).await?;
                stdout.write_all(b"\n").await?;
                stdout.flush().await?;
            }
            std::io::Result::Ok(())
        });
        let mut input = BufReader::new(tokio::io::stdin()).lines();
        let mut tasks = tokio::task::JoinSet::new();
        while let Some(line) = input.next_line().await.context("cannot read stdin")? {
            if line.trim().is_empty() {
                continue;
            }
            let message: Value = match serde_json::from_str(&line) {
                Ok(message) => message,
                Err(e) => {
                    let error = rpc_error(&Value::Null, -32700, &format!("Parse error: {e}"));
                    let _ = out.send(error);
                    continue;
                }
            };
            let initialize = message.get("method").and_then(Value::as_str) == Some("initialize");
            let bridge = Arc::clone(&self);
            let out = out.clone();
            let forward = async move {
                for line in bridge.forward(&message, line).await {
                    let _ = out.send(line);
                }
            };
            // The session must exist before anything else is sent; the rest run side by side.
            if initialize {
                forward.await;
            } else {
                tasks.spawn(forward);
            }
        }
        while tasks.join_next().await.is_some() {}
        self.end_session().await;
        drop(out);
        writer.await.context("stdout writer")?.context("cannot write stdout")?;
        Ok(())
    }

    /// Sends one message (`line`, as the client wrote it) to the server, once more after
    /// reconnecting when it was not delivered, and returns the lines to write.
    async fn forward(&self, message: &Value, line: String) -> Vec<String> {
        let initialize = message.get("method").and_then(Value::as_str) == Some("initialize");
        if initialize {
            self.state().initialize = Some(line.clone());
        }
        let id = message.get("id");
        let (outcome, generation) = self.send(&line, id, initialize).await;
        let outcome = match outcome {
            Outcome::NotDelivered(_) => match self.reconnect(generation).await {
                Ok(()) => self.send(&line, id, initialize).await.0,
                Err(e) => Outcome::NotDelivered(format!("{e:#}")),
            },
            other => other,
        };
        let why = match outcome {
            Outcome::Answered(lines) => return lines,
            Outcome::NotDelivered(why) | Outcome::Lost(why) => why,
        };
        match message.get("id") {
            Some(id) => vec![rpc_error(id, SERVER_ERROR, &format!("mailroom server: {why}"))],
            None => Vec::new(),
        }
    }

    fn state(&self) -> std::sync::MutexGuard<'_, Connection> {
        self.state.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// Posts `body` (a request with `id`, or a notification) on the current connection;
    /// what became of it, and the connection's generation.
    async fn send(&self, body: &str, id: Option<&Value>, initialize: bool) -> (Outcome, u64) {
        let (url, session, protocol, generation) = {
            let state = self.state();
            (state.url.clone(), state.session.clone(), state.protocol.clone(), state.generation)
        };
        (self.post(&url, body, id, session, protocol, initialize).await, generation)
    }

    async fn post(
        &self,
        url: &str,
        body: &str,
        id: Option<&Value>,
        session: Option<String>,
        protocol: Option<String>,
        initialize: bool,
    ) -> Outcome {
        let mut request = self
            .http
            .post(format!("{url}/mcp"))
            .header(CONTENT_TYPE, "application/json")
            .header(ACCEPT, "application/json, text/event-stream")
            .body(body.to_string());
        if let Some(token) = &self.token {
            request = request.header(AUTHORIZATION, format!("Bearer {token}"));
        }
        let sent_session = session.is_some() && !initialize;
        if let (Some(session), false) = (&session, initialize) {
            request = request.header(SESSION_HEADER, session);
        }
        if let (Some(protocol), false) = (&protocol, initialize) {
            request = request.header(VERSION_HEADER, protocol);
        }
        let response = match request.send().await {
            Ok(response) => response,
            Err(e) if e.is_connect() => return Outcome::NotDelivered(e.to_string()),
            Err(e) => return Outcome::Lost(e.to_string()),
        };
        let status = response.status();
        if status == StatusCode::NOT_FOUND && sent_session {
            return Outcome::NotDelivered("the server no longer knows this session".to_string());
        }
        let headers = response.headers().clone();
        let body = match response.bytes().await {
            Ok(body) => body,
            Err(e) => return Outcome::Lost(format!("reading the answer: {e}")),
        };
        let mut lines = answer_lines(&headers, &body);
        if !status.is_success() {
            // A refusal before MCP (401, 403, 413…) is the HTTP layer's JSON, not JSON-RPC.
            lines.retain(|line| is_json_rpc(line));
        }
        if initialize {
            self.remember_session(&headers, &lines);
        }
        if let Some(id) = id.filter(|_| lines.is_empty() && !status.is_success()) {
            let text = String::from_utf8_lossy(&body);
            let why = format!("HTTP {status}: {}", text.trim());
            return Outcome::Answered(vec![rpc_error(id, SERVER_ERROR, &why)]);
        }
        Outcome::Answered(lines)
    }

    /// Keeps the session id and protocol version an `initialize` answer names.
    fn remember_session(&self, headers: &HeaderMap, lines: &[String]) {
        let mut state = self.state();
        state.session =
            headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()).map(str::to_string);
        state.protocol = lines
            .iter()
            .filter_map(|line| serde_json::from_str::<Value>(line).ok())
            .find_map(|answer| answer["result"]["protocolVersion"].as_str().map(str::to_string));
    }

    /// Finds (or starts) the server again and, when the client had initialized, opens a new
    /// session with the client's own `initialize` (its answer is not passed on: the client
    /// has had one). Only once for the requests that failed on connection `generation`.
    async fn reconnect(&self, generation: u64) -> Result<()> {
        let _one_at_a_time = self.reconnecting.lock().await;
        if self.state().generation != generation {
            return Ok(());
        }
        let url = self.starter.find_or_start(&self.http).await?;
        let initialize = {
            let mut state = self.state();
            state.url = url;
            state.session = None;
            state.initialize.clone()
        };
        if let Some(initialize) = initialize {
            let (outcome, _) = self.send(&initialize, None, true).await;
            if let Outcome::NotDelivered(why) | Outcome::Lost(why) = outcome {
                bail!("{why}");
            }
            let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
            self.send(&initialized.to_string(), None, false).await;
        }
        self.state().generation += 1;
        Ok(())
    }

    /// Ends the MCP session, if one was opened (best effort: the server drops idle ones).
    async fn end_session(&self) {
        let (url, session) = {
            let state = self.state();
            (state.url.clone(), state.session.clone())
        };
        let Some(session) = session else { return };
        let _ = self
            .http
            .delete(format!("{url}/mcp"))
            .header(SESSION_HEADER, session)
            .timeout(Duration::from_secs(5))
            .send()
            .await;
    }
}

/// The JSON-RPC messages of an answer, one line each: a JSON body as it is (re-encoded if
/// it spans lines), or the `data` of each event of an event stream.
fn answer_lines(headers: &HeaderMap, body: &[u8]) -> Vec<String> {
    let event_stream = headers
        .get(CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/event-stream"));
    let text = String::from_utf8_lossy(body);
    let messages: Vec<String> = if event_stream {
        text.split("\n\n")
            .map(|event| {
                event
                    .lines()
                    .filter_map(|line| line.strip_prefix("data:"))
                    .map(|data| data.strip_prefix(' ').unwrap_or(data))
                    .collect::<Vec<_>>()
                    .join("\n")
            })
            .filter(|data| !data.trim().is_empty())
            .collect()
    } else if text.trim().is_empty() {
        Vec::new()
    } else {
        vec![text.into_owned()]
    };
    messages.into_iter().filter_map(|message| one_line(&message)).collect()
}

/// A JSON message on one line (`None` when it is not JSON).
fn one_line(message: &str) -> Option<String> {
    let message = message.trim();
    if !message.contains('\n') {
        return serde_json::from_str::<serde::de::IgnoredAny>(message)
            .is_ok()
            .then(|| message.to_string());
    }
    serde_json::from_str::<Value>(message).ok().map(|value| value.to_string())
}

fn is_json_rpc(line: &str) -> bool {
    serde_json::from_str::<Value>(line).is_ok_and(|message| message.get("jsonrpc").is_some())
}

fn rpc_error(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

#[cfg(test)]
mod tests {
    use reqwest::header::HeaderValue;

    use super::*;

    fn headers(content_type: &str) -> HeaderMap {
        let mut headers = HeaderMap::new();
        headers.insert(CONTENT_TYPE, HeaderValue::from_str(content_type).expect("header"));
        headers
    }

    #[test]
    fn json_answers_become_one_line() {
        let json = headers("application/json");
        assert_eq!(answer_lines(&json, br#"{"id":1}"#), [r#"{"id":1}"#]);
        assert_eq!(answer_lines(&json, b"{\n  \"id\": 1\n}\n"), [r#"{"id":1}"#]);
        assert!(answer_lines(&json, b"").is_empty(), "a notification's 202 has no body");
        assert!(answer_lines(&json, b"Session not found.").is_empty(), "not JSON-RPC");
    }

    #[test]
    fn event_streams_give_each_events_data() {
        let stream = headers("text/event-stream");
        let body =
            b": keep-alive\n\nevent: message\ndata: {\"id\":1}\n\ndata: {\"method\":\"x\"}\n\n";
        assert_eq!(answer_lines(&stream, body), [r#"{"id":1}"#, r#"{"method":"x"}"#]);
    }

    #[test]
    fn made_up_errors_are_json_rpc() {
        let error: Value =
            serde_json::from_str(&rpc_error(&json!(7), SERVER_ERROR, "down")).expect("json");
        assert_eq!(error["id"], 7);
        assert_eq!(error["error"]["code"], SERVER_ERROR);
    }
}
