//! Shared state of every request: the core, the settings, the tool registry, MCP sessions.

use mailroom_core::records::AgentId;
use std::sync::Arc;
use std::time::Instant;

use mailroom_core::Mailroom;

use crate::config::ServerConfig;
use crate::http::metrics::Metrics;
use crate::mcp::auth::Bindings;
use crate::mcp::metrics::Instruments;
use crate::mcp::resources::Resources;
use crate::mcp::session::Sessions;
use crate::mcp::tools::Registry;

/// Cheap to clone: one shared allocation. Every request and tool call clones the state, so
/// one reference count (not one per member) keeps the two cores from trading cache lines.
#[derive(Clone)]
pub struct AppState(Arc<Shared>);

/// The members of [`AppState`], reached through it by `Deref`.
pub struct Shared {
    pub core: Mailroom,
    pub config: Arc<ServerConfig>,
    pub tools: Arc<Registry>,
    pub resources: Arc<Resources>,
    /// Per-tool counters and recent calls, recorded by the dispatcher.
    pub instruments: Arc<Instruments>,
    pub sessions: Arc<Sessions>,
    /// Agents each MCP session has authenticated as (tool authentication).
    pub bindings: Arc<Bindings>,
    /// Resource subscriptions of MCP sessions, told of messages as they commit.
    pub subscriptions: crate::mcp::subscriptions::Subscriptions,
    /// The reference's notification signal files (`NOTIFICATIONS_*`).
    pub signals: crate::signals::Signals,
    pub started: Instant,
    /// Turns true when the server starts shutting down: open event streams end, so the
    /// graceful shutdown does not wait on them.
    pub stopping: tokio::sync::watch::Sender<bool>,
    /// The web UI's rendered pages, kept between writes.
    pub pages: crate::web::PageCache,
    /// Bearer token, roles and rate-limit buckets (`http/security/`).
    pub security: crate::http::security::Security,
    /// The operator's Prometheus metrics (`http/metrics.rs`); background upkeep reports its
    /// runs here ([`Metrics::record_upkeep_run`]).
    pub metrics: Metrics,
    /// Which upkeep tasks are running now: a run never overlaps another of its task.
    pub upkeep: crate::upkeep::Running,
}

impl std::ops::Deref for AppState {
    type Target = Shared;

    fn deref(&self) -> &Shared {
        &self.0
    }
}

impl AppState {
    /// Builds the state once at start-up (tool catalog and schemas included); an error names
    /// the setting that cannot work.
    pub fn new(core: Mailroom, config: ServerConfig) -> Result<Self, String> {
        let worktrees_enabled = core.config().worktrees_enabled;
        let tools = Arc::new(Registry::build(worktrees_enabled, &config.tool_filter));
        let resources = Arc::new(Resources::build(worktrees_enabled));
        let instruments = Arc::new(Instruments::new(&tools.names()));
        let sessions = Arc::new(Sessions::new(config.max_sessions));
        let ttl = std::time::Duration::from_secs(config.session_binding_ttl_seconds);
        let bindings = Arc::new(Bindings::new(ttl));
        let security = crate::http::security::Security::new(
            config.security.clone(),
            crate::http::mcp_paths(&config.mcp_path),
            tools.names(),
        )?;
        let metrics = Metrics::new(
            crate::http::route_patterns(&config.mcp_path),
            &tools.names(),
            core.write_batch_sizes(),
        )?;
        let signals = crate::signals::Signals::new(config.signals.clone());
        Ok(Self(Arc::new(Shared {
            core,
            config: Arc::new(config),
            tools,
            resources,
            instruments,
            sessions,
            bindings,
            subscriptions: crate::mcp::subscriptions::Subscriptions::default(),
            signals,
            started: Instant::now(),
            stopping: tokio::sync::watch::Sender::new(false),
            pages: crate::web::PageCache::default(),
            security,
            metrics,
            upkeep: crate::upkeep::Running::default(),
        })))
    }

    /// The agent whose visibility limits a search or summary: the one authentication proved,
    /// so only with tool authentication on (without it the whole project is covered, as the
    /// reference does).
    pub fn authenticated_viewer(&self, agent_name: Option<String>) -> Option<String> {
        agent_name.filter(|_| self.config.tool_auth)
    }

    /// The agents this MCP session has authenticated as; none without tool authentication.
    pub fn session_agents(&self, session: Option<&str>) -> Vec<AgentId> {
        if self.config.tool_auth { self.bindings.session_agents(session) } else { Vec::new() }
    }
}

/// Resolves once the server starts shutting down (`stopping` turns true, or is dropped).
pub async fn until_stopping(mut stopping: tokio::sync::watch::Receiver<bool>) {
    loop {
        let stopping_now = *stopping.borrow_and_update();
        if stopping_now || stopping.changed().await.is_err() {
            return;
        }
    }
}
