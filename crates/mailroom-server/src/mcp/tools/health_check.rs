//! health_check: a readiness probe an agent calls before anything else.
//!
//! The reference's five keys (status, environment, http_host, http_port, database_url) come
//! first; mailroom adds honest figures of its own (database round trip, uptime, sessions,
//! archive queue).

use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use mailroom_core::archive::ArchiveStats;

use super::Tool;
use crate::state::AppState;

const DESCRIPTION: &str = "Check that the Agent Mail server is up and its database answers. \
     Returns status, environment, the HTTP host/port and the database URL.";

/// Arguments of health_check.
#[derive(Debug, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
struct Args {
    /// Output format: "json" (default) or "toon".
    #[serde(default, rename = "format")]
    _format: Option<String>,
}

#[derive(Debug, Serialize)]
struct Health {
    status: &'static str,
    environment: String,
    http_host: String,
    http_port: u16,
    database_url: String,
    database: DatabaseHealth,
    uptime_seconds: u64,
    mcp_sessions: usize,
    /// The Git archive's counters since start; `null` when the archive is disabled.
    archive: Option<ArchiveHealth>,
}

#[derive(Debug, Serialize)]
struct ArchiveHealth {
    storage_root: String,
    #[serde(flatten)]
    stats: ArchiveStats,
}

#[derive(Debug, Serialize)]
struct DatabaseHealth {
    reachable: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    error: Option<String>,
}

pub fn tool() -> Tool {
    Tool::new("health_check", DESCRIPTION, |state: AppState, _args: Args| async move {
        let database = match state.core.check_database().await {
            Ok(()) => DatabaseHealth { reachable: true, error: None },
            Err(e) => DatabaseHealth { reachable: false, error: Some(e.message) },
        };
        let core = state.core.config();
        Ok(Health {
            status: if database.reachable { "ok" } else { "degraded" },
            environment: core.environment.clone(),
            http_host: state.config.host.clone(),
            http_port: state.config.port,
            database_url: core.database_url.clone(),
            database,
            uptime_seconds: state.started.elapsed().as_secs(),
            mcp_sessions: state.sessions.len(),
            archive: state.core.archive().map(|archive| ArchiveHealth {
                storage_root: archive.root().display().to_string(),
                stats: archive.stats(),
            }),
        })
    })
}
