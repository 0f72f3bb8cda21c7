//! The operator's routes: the health probes and the metrics. Liveness answers without I/O;
//! readiness makes a real database round trip; `/metrics` is `metrics.rs`'s.

use std::sync::LazyLock;

use axum::extract::State;
use axum::http::StatusCode;
use axum::middleware;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get};
use axum::{Json, Router};
use mailroom_core::model::time::Timestamp;
use serde_json::json;

use crate::state::AppState;

/// Who may use an operator's route.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Access {
    /// A probe: never authenticated or limited, and no Origin or Host check (load balancers
    /// and orchestrators call them by any name).
    Probe,
    /// Behind the request check and the Origin and Host checks, as every other read.
    Checked,
}

/// The operator's routes, by path: the one table the router and the security middleware
/// (which never authenticates or limits the probes) read.
fn routes() -> [(&'static str, Access, MethodRouter<AppState>); 6] {
    [
        ("/health", Access::Probe, get(health)),
        ("/health/liveness", Access::Probe, get(liveness)),
        ("/ready", Access::Probe, get(readiness)),
        ("/health/readiness", Access::Probe, get(readiness)),
        ("/api/health", Access::Probe, get(api_health)),
        ("/metrics", Access::Checked, get(super::metrics::scrape)),
    ]
}

/// The operator's router: the probes as they are, the other routes behind the Origin and
/// Host checks.
pub fn router(state: &AppState) -> Router<AppState> {
    let (mut probes, mut checked) = (Router::new(), Router::new());
    for (path, access, handler) in routes() {
        match access {
            Access::Probe => probes = probes.route(path, handler),
            Access::Checked => checked = checked.route(path, handler),
        }
    }
    let origin_and_host = super::security::origin::origin_and_host;
    probes
        .merge(checked.route_layer(middleware::from_fn_with_state(state.clone(), origin_and_host)))
}

/// Whether `path` is exactly a probe's.
pub fn is_probe(path: &str) -> bool {
    static PATHS: LazyLock<Vec<&'static str>> = LazyLock::new(|| {
        routes()
            .into_iter()
            .filter(|(_, access, _)| *access == Access::Probe)
            .map(|r| r.0)
            .collect()
    });
    PATHS.contains(&path)
}

/// Every operator's route's path.
pub fn paths() -> Vec<&'static str> {
    routes().into_iter().map(|(path, _, _)| path).collect()
}

/// `GET /health`: the process answers.
async fn health() -> Response {
    static BODY: &str = r#"{"status":"ok"}"#;
    ([(axum::http::header::CONTENT_TYPE, "application/json")], BODY).into_response()
}

/// `GET /health/liveness` (reference shape).
async fn liveness() -> Response {
    static BODY: &str = r#"{"status":"alive"}"#;
    ([(axum::http::header::CONTENT_TYPE, "application/json")], BODY).into_response()
}

/// `GET /api/health` (reference shape; no database access).
async fn api_health() -> Json<serde_json::Value> {
    Json(json!({ "status": "ok", "timestamp": Timestamp::now().to_iso() }))
}

/// `GET /ready` and `/health/readiness`: 200 when the database answers and the archive keeps
/// up, else 503 with why. Archive work set aside, or a writer that is failing but not yet
/// behind, is reported beside `"status": "ready"` (`archive`), since every other write goes on.
async fn readiness(State(state): State<AppState>) -> Response {
    match state.core.check_database().await.and_then(|()| state.core.check_archive()) {
        Ok(archive) if archive.set_aside == 0 && archive.last_error.is_none() => {
            Json(json!({ "status": "ready" })).into_response()
        }
        Ok(archive) => Json(json!({ "status": "ready", "archive": archive })).into_response(),
        Err(e) => {
            tracing::warn!(error = %e.message, "readiness check failed");
            (StatusCode::SERVICE_UNAVAILABLE, Json(json!({ "detail": e.message }))).into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The probes are exempt from the request check and nothing else is: `/metrics` is
    /// checked like every other read.
    #[test]
    fn only_the_probes_are_exempt() {
        for path in ["/health", "/health/liveness", "/ready", "/health/readiness", "/api/health"] {
            assert!(is_probe(path), "{path}");
        }
        assert!(paths().contains(&"/metrics"));
        for path in ["/metrics", "/metrics/", "/health/", "/mcp", "/mail"] {
            assert!(!is_probe(path), "{path}");
        }
    }
}
