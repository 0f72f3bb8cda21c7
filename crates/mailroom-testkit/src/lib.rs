//! Test harness: boots a real mailroom server (real SQLite in a temp dir, or a fresh
//! PostgreSQL database with `MAILROOM_TEST_BACKEND=postgres`) on 127.0.0.1:0 and
//! talks to it over HTTP, so tests exercise exactly what clients see. The listener is bound
//! before the server task starts, so no test sleeps waiting for a port.

mod calls;
mod events;
mod fake_llm;
mod git;
mod json_server;
pub mod postgres_server;
mod redis_server;
mod sql;
pub mod tls;

use std::path::PathBuf;

use mailroom_core::{CoreConfig, Mailroom};
use mailroom_server::{AppState, ServerConfig};
use serde_json::{Value, json};
use tokio::sync::oneshot;

pub use calls::{
    AckCall, ContactRequestCall, ContactResponseCall, DeliveriesCall, EventsCall, InboxCall,
    PolicyCall, ProjectCall, ReadCall, RecentSummaryCall, RegisterCall, RegisterWebhookCall,
    ReleaseCall, RenewCall, ReplyCall, ReserveCall, SearchCall, SendCall, ThreadSummaryCall,
    WhoisCall, rpc_at, sent_message_id, tool_at, tool_result,
};
pub use events::next_event_data;
pub use fake_llm::{FakeLlm, FakeLlmMode};
pub use git::{GUARD_VARIABLES, git, git_command};
pub use json_server::JsonServer;
pub use redis_server::RedisServer;
pub use sql::{sql_quote, sql_time};

/// A 1x1 RGBA PNG, for tests that attach an image.
pub const TINY_PNG: [u8; 70] = [
    137, 80, 78, 71, 13, 10, 26, 10, 0, 0, 0, 13, 73, 72, 68, 82, 0, 0, 0, 1, 0, 0, 0, 1, 8, 6, 0,
    0, 0, 31, 21, 196, 137, 0, 0, 0, 13, 73, 68, 65, 84, 120, 218, 99, 100, 248, 207, 80, 15, 0, 3,
    134, 1, 128, 90, 52, 125, 107, 0, 0, 0, 0, 73, 69, 78, 68, 174, 66, 96, 130,
];

/// A running server and an HTTP client for it.
pub struct TestApp {
    pub base_url: String,
    pub client: reqwest::Client,
    pub data_dir: tempfile::TempDir,
    /// The server's core, for waiting on the archive (`core.archive()`).
    pub core: Mailroom,
    /// The server's state, for driving its dispatch in process (the fuzz tests).
    pub state: mailroom_server::AppState,
    stop: Option<oneshot::Sender<()>>,
    server: Option<tokio::task::JoinHandle<std::io::Result<()>>>,
}

/// Knobs for [`TestApp::start_with`].
#[derive(Debug, Clone, Default)]
pub struct TestOptions {
    /// Enable the worktree-gated features (identity fields, products, build slots).
    pub worktrees_enabled: bool,
    /// Port reported by health_check (the conformance fixture recorded 8765).
    pub reported_port: Option<u16>,
    /// Enable the LLM against this OpenAI-compatible base URL (e.g. [`FakeLlm::base_url`]).
    pub llm_base_url: Option<String>,
    /// Require registration tokens on tool calls (`MAILROOM_TOOL_AUTH`).
    pub tool_auth: bool,
    /// The server's window identity (`MCP_AGENT_MAIL_WINDOW_ID`).
    pub window_id: Option<String>,
    /// Register only the tools this filter keeps (`TOOLS_FILTER_*`).
    pub tool_filter: Option<mailroom_server::mcp::catalog::ToolFilter>,
    /// The MCP path reported by resource://config/environment (`HTTP_PATH`).
    pub mcp_path: Option<String>,
    /// `FILE_RESERVATION_INACTIVITY_SECONDS` and `FILE_RESERVATION_ACTIVITY_GRACE_SECONDS`
    /// (defaults 1800 and 900), to make reservations go stale in a test.
    pub reservation_staleness: Option<(i64, i64)>,
    /// `FILE_RESERVATIONS_ENFORCEMENT_ENABLED=false`: reservations on mail-archive paths do
    /// not block deliveries.
    pub reservations_enforcement_off: bool,
    /// Environment variables of the HTTP front (`HTTP_BEARER_TOKEN`, `HTTP_RBAC_*`,
    /// `HTTP_RATE_LIMIT_*`, `HTTP_CORS_*`, …), as `mailroom serve` reads them; the options
    /// above apply on top.
    pub server_env: Vec<(&'static str, String)>,
    /// The background upkeep's schedules; `None` (the default) runs none, so that no sweep
    /// changes a test's data behind its back.
    pub upkeep: Option<mailroom_core::ops::upkeep::UpkeepConfig>,
}

impl TestOptions {
    /// The reference's signal files on (`NOTIFICATIONS_*`), written under `dir` for every
    /// message (no debounce).
    pub fn signals(dir: &std::path::Path) -> Self {
        Self {
            server_env: vec![
                ("NOTIFICATIONS_ENABLED", "true".to_string()),
                ("NOTIFICATIONS_SIGNALS_DIR", dir.to_string_lossy().into_owned()),
                ("NOTIFICATIONS_DEBOUNCE_MS", "0".to_string()),
            ],
            ..Self::default()
        }
    }
}

impl TestApp {
    /// Starts a server with default settings.
    pub async fn start() -> Self {
        Self::start_with(TestOptions::default()).await
    }

    /// Starts a server with the given options.
    pub async fn start_with(options: TestOptions) -> Self {
        let data_dir = tempfile::tempdir().expect("temp dir");
        let mut core_config = CoreConfig::for_data_dir(data_dir.path());
        if postgres_server::enabled() {
            core_config.postgres = Some(mailroom_core::PgSettings {
                url: postgres_server::fresh_database_url().await,
                pool_size: 4,
                statement_timeout_ms: 30_000,
                connect_timeout: std::time::Duration::from_secs(10),
                may_lead: true,
            });
        }
        core_config.worktrees_enabled = options.worktrees_enabled;
        core_config.window_id = options.window_id;
        core_config.reservations_enforcement_enabled = !options.reservations_enforcement_off;
        core_config.upkeep =
            options.upkeep.unwrap_or_else(|| mailroom_core::ops::upkeep::UpkeepConfig {
                retire_enabled: false,
                reservations_enabled: false,
                acks_enabled: false,
                ..Default::default()
            });
        if let Some(base_url) = options.llm_base_url {
            core_config.llm.enabled = true;
            core_config.llm.base_url = base_url;
            core_config.llm.api_key = Some(fake_llm::API_KEY.to_string());
        }
        if let Some((inactivity, grace)) = options.reservation_staleness {
            core_config.reservation_inactivity_seconds = inactivity;
            core_config.reservation_grace_seconds = grace;
        }
        let core = Mailroom::open(core_config).expect("open core");
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        let env = options.server_env;
        let mut server_config = ServerConfig::default();
        server_config
            .apply_env(&|name| env.iter().find(|(k, _)| *k == name).map(|(_, v)| v.clone()))
            .expect("valid server settings");
        server_config.port = options.reported_port.unwrap_or(address.port());
        server_config.tool_auth |= options.tool_auth;
        if let Some(filter) = options.tool_filter {
            server_config.tool_filter = filter;
        }
        if let Some(path) = options.mcp_path {
            server_config.mcp_path = path;
        }
        let state = AppState::new(core.clone(), server_config).expect("valid server state");
        let kept = state.clone();
        let (stop, stopped) = oneshot::channel::<()>();
        let server = tokio::spawn(mailroom_server::serve(listener, state, async move {
            let _ = stopped.await;
        }));
        Self {
            base_url: format!("http://{address}"),
            client: reqwest::Client::new(),
            data_dir,
            core,
            state: kept,
            stop: Some(stop),
            server: Some(server),
        }
    }

    /// The data directory of this server.
    pub fn data_path(&self) -> PathBuf {
        self.data_dir.path().to_path_buf()
    }

    /// Opens the GET event stream of the MCP session `session`.
    pub async fn event_stream(&self, session: &str) -> reqwest::Response {
        self.client
            .get(format!("{}/mcp", self.base_url))
            .header("accept", "text/event-stream")
            .header("mcp-session-id", session)
            .send()
            .await
            .expect("GET the event stream")
    }

    /// POSTs a JSON-RPC message to `/mcp` and returns the parsed JSON response.
    pub async fn rpc(&self, method: &str, params: Value) -> Value {
        rpc_at(&self.client, &self.base_url, method, params).await
    }

    /// Calls a tool and returns the JSON-RPC `result` (content, structuredContent, isError).
    pub async fn call_tool_raw(&self, name: &str, arguments: Value) -> Value {
        let response = self.rpc("tools/call", json!({"name": name, "arguments": arguments})).await;
        response.get("result").cloned().unwrap_or_else(|| panic!("no result: {response}"))
    }

    /// Calls a tool: `Ok(parsed text content)` or `Err(error text)` when `isError`.
    pub async fn call_tool(&self, name: &str, arguments: Value) -> Result<Value, String> {
        calls::tool_result(&self.call_tool_raw(name, arguments).await)
    }

    /// Reads a resource: `Ok(parsed JSON text)` or `Err((code, message))` of the JSON-RPC error.
    pub async fn read_resource(&self, uri: &str) -> Result<Value, (i64, String)> {
        let response = self.rpc("resources/read", json!({ "uri": uri })).await;
        if let Some(error) = response.get("error") {
            let message = error["message"].as_str().unwrap_or_default().to_string();
            return Err((error["code"].as_i64().unwrap_or_default(), message));
        }
        let text = response["result"]["contents"][0]["text"].as_str().unwrap_or_default();
        Ok(serde_json::from_str(text)
            .unwrap_or_else(|e| panic!("resource text is not JSON ({e}): {text}")))
    }

    /// Calls a tool that must succeed.
    pub async fn tool_ok(&self, name: &str, arguments: Value) -> Value {
        self.call_tool(name, arguments).await.unwrap_or_else(|e| panic!("{name} failed: {e}"))
    }

    /// POSTs JSON to a REST path; returns status and parsed body.
    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let response = self
            .client
            .post(format!("{}{path}", self.base_url))
            .json(&body)
            .send()
            .await
            .expect("post");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    /// GETs a path; returns status and body text.
    pub async fn get(&self, path: &str) -> (u16, String) {
        let response =
            self.client.get(format!("{}{path}", self.base_url)).send().await.expect("get");
        (response.status().as_u16(), response.text().await.unwrap_or_default())
    }

    /// Creates a project and two agents that may message each other ([`seed_pair_at`] on
    /// this server); returns the slug.
    pub async fn seed_pair(&self, path: &str, sender: &str, recipient: &str) -> String {
        seed_pair_at(&self.base_url, path, sender, recipient).await
    }

    /// The archive repository root.
    pub fn archive_root(&self) -> PathBuf {
        self.data_dir.path().join("archive")
    }

    /// Waits until everything written so far is committed to the archive.
    pub async fn archive_flushed(&self) {
        if let Some(archive) = self.core.archive() {
            archive.flushed().await;
        }
    }

    /// What a hostile test ends with (STYLE.md, tests 7): the server still serves everyone
    /// else. In a project of its own: a normal send reaches its recipient's inbox, a
    /// reservation is granted and released; then the archive catches up with nothing set
    /// aside, `archive verify` finds no difference and `/ready` says ready. `context` names
    /// what came before, for the failure message.
    pub async fn assert_serves_everyone(&self, context: &str) {
        const PROJECT: &str = "/work/health-check";
        let (sender, recipient) = ("RedStone", "GoldFox");
        let slug = self.seed_pair(PROJECT, sender, recipient).await;
        let subject =
            format!("still serving after {}", context.chars().take(60).collect::<String>());
        let sent =
            SendCall::new(&slug, sender, recipient, &subject).body("health check").call(self).await;
        assert!(sent.is_ok(), "a normal send fails after {context}: {sent:?}");
        let inbox = InboxCall::new(&slug, recipient).limit(5).ok(self).await;
        let delivered = inbox.as_array().is_some_and(|m| m.iter().any(|m| m["subject"] == subject));
        assert!(delivered, "the send is not in the inbox after {context}: {inbox}");
        let granted = ReserveCall::new(&slug, sender, &["health/**"]).call(self).await;
        let granted_one =
            granted.as_ref().is_ok_and(|g| g["granted"].as_array().is_some_and(|g| g.len() == 1));
        assert!(granted_one, "a reservation is not granted after {context}: {granted:?}");
        let released = ReleaseCall::new(&slug, sender).paths(&["health/**"]).call(self).await;
        assert!(
            released.as_ref().is_ok_and(|r| r["released"] == 1),
            "a reservation is not released after {context}: {released:?}"
        );
        self.assert_archive_sound(context).await;
        let (status, body) = self.get("/ready").await;
        assert_eq!(
            (status, body.as_str()),
            (200, r#"{"status":"ready"}"#),
            "/ready after {context}"
        );
    }

    /// Waits until the background sibling scorer (which `serve` starts, and which writes a
    /// second after projects change) has scored every pair, so that no write of its lands in
    /// a test's comparison of the store's change count. Fails after a minute.
    pub async fn siblings_scored(&self) {
        for _ in 0..1200 {
            if self.core.siblings_scored().await.expect("read the sibling pairs") {
                return;
            }
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
        panic!("the sibling scorer did not finish within a minute");
    }

    /// The archive has caught up with everything written, set nothing aside, and `archive
    /// verify` finds no difference.
    async fn assert_archive_sound(&self, context: &str) {
        let Some(archive) = self.core.archive() else { return };
        let flushed = tokio::time::timeout(std::time::Duration::from_secs(120), archive.flushed());
        assert!(flushed.await.is_ok(), "the archive does not catch up after {context}");
        let stats = archive.stats();
        assert_eq!((stats.lag, stats.set_aside), (0, 0), "archive after {context}: {stats:?}");
        assert_eq!(archive.trouble(), None, "archive after {context}");
        let config = self.core.config().clone();
        let report = tokio::task::spawn_blocking(move || {
            mailroom_core::archive::maintenance::verify(&config)
        })
        .await
        .expect("verify ran")
        .expect("verify");
        let differences: Vec<String> = report.differences.iter().map(ToString::to_string).collect();
        assert!(differences.is_empty(), "archive verify after {context}: {differences:#?}");
    }

    /// Stops the server gracefully and waits for it.
    pub async fn stop(mut self) {
        self.shutdown().await;
    }

    async fn shutdown(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        if let Some(server) = self.server.take() {
            let _ = server.await;
        }
    }
}

/// Creates, on the server at `base_url`, the project of the directory `path` and two agents
/// (program `codex-cli`, model `gpt-5`) that may message each other: the recipient's contact
/// policy is `open`. Returns the slug. [`TestApp::seed_pair`] is this for its own server.
pub async fn seed_pair_at(base_url: &str, path: &str, sender: &str, recipient: &str) -> String {
    let project = ProjectCall::new(path).ok_at(base_url).await;
    let slug = project["slug"].as_str().expect("slug").to_string();
    for name in [sender, recipient] {
        RegisterCall::new(&slug, name).ok_at(base_url).await;
    }
    PolicyCall::new(&slug, recipient, "open").ok_at(base_url).await;
    slug
}

impl Drop for TestApp {
    fn drop(&mut self) {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
    }
}
