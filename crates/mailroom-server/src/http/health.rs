//! Health probes. Liveness answers without I/O; readiness makes a real database round trip.

use std::sync::LazyLock;

use axum::extract::State;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{MethodRouter, get};
use axum::{Json, Router};
use mailroom_core::model::time::Timestamp;
use serde_json::json;

use crate::state::AppState;

/// The probes, by path: the one table the router and the security middleware (which never
/// authenticates or limits them) read.
fn routes() -> [(&'static str, MethodRouter<AppState>); 5] {
    [
        ("/health", get(health)),
        ("/health/liveness", get(liveness)),
        ("/ready", get(readiness)),
        ("/health/readiness", get(readiness)),
        ("/api/health", get(api_health)),
    ]
}

/// The probes' router.
pub fn router() -> Router<AppState> {
    routes().into_iter().fold(Router::new(), |router, (path, probe)| router.route(path, probe))
}

/// Whether `path` is exactly a probe's.
pub fn is_probe(path: &str) -> bool {
    static PATHS: LazyLock<Vec<&'static str>> =
        LazyLock::new(|| routes().into_iter().map(|(path, _)| path).collect());
    PATHS.contains(&path)
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
