//! The axum router: health probes and metrics, REST routes, MCP mount points, OAuth-discovery
//! stubs; around it, the metrics and CORS.

pub mod cors;
pub mod error;
pub mod health;
pub mod metrics;
pub mod rest;
pub mod security;

use axum::Router;
use axum::extract::DefaultBodyLimit;
use axum::http::StatusCode;
use axum::middleware;
use axum::routing::{any, get};
use serde_json::json;

use crate::mcp::transport;
use crate::state::AppState;

/// The whole application: the router behind the metrics (which count every answer it gives),
/// behind CORS (outermost, so that a preflight is answered before any token is asked for).
pub fn app(state: AppState) -> cors::CorsForOrigins<metrics::Tracked<Router>> {
    let cors = state.config.cors.as_ref().map(|c| c.layer(&state.config.allowed_origins));
    cors::CorsForOrigins::new(cors, metrics::Tracked::new(router(state.clone()), state))
}

/// The router: every route and the middleware in front of them. A route added here, outside
/// the tables [`route_patterns`] reads, must be added there too, or metrics count it as
/// `unmatched`.
fn router(state: AppState) -> Router {
    let mut router = health::router(&state).merge(rest::router(&state));
    for path in mcp_paths(&state.config.mcp_path) {
        router = router.route(&path, any(transport::endpoint));
    }
    for path in oauth_discovery_paths(&state.config.mcp_path) {
        router = router.route(&path, get(oauth_disabled));
    }
    let mut router = router.merge(crate::web::router(state.clone()));
    if state.security.is_active() {
        router =
            router.layer(middleware::from_fn_with_state(state.clone(), security::check_request));
    }
    let body_limit = DefaultBodyLimit::max(state.config.max_body_bytes);
    router.layer(body_limit).with_state(state)
}

/// Every route's pattern, from the tables [`router`] is built from: the routes metrics count
/// requests by.
pub(crate) fn route_patterns(mcp_path: &str) -> Vec<String> {
    let mut patterns: Vec<String> = health::paths().into_iter().map(String::from).collect();
    patterns.extend(rest::table().into_iter().map(|route| route.path.to_string()));
    patterns.extend(mcp_paths(mcp_path));
    patterns.extend(oauth_discovery_paths(mcp_path));
    patterns.extend(crate::web::patterns().into_iter().map(String::from));
    patterns
}

/// `/mcp`, `/api` and HTTP_PATH, each with and without the trailing slash.
pub(crate) fn mcp_paths(configured: &str) -> Vec<String> {
    let mut paths = Vec::new();
    for base in ["/mcp", "/api", configured.trim_end_matches('/')] {
        if base.is_empty() {
            continue;
        }
        for path in [base.to_string(), format!("{base}/")] {
            if !paths.contains(&path) {
                paths.push(path);
            }
        }
    }
    paths
}

/// The reference answers OAuth discovery with a 404 saying OAuth is off, so MCP clients do not
/// start an authorization flow.
fn oauth_discovery_paths(configured: &str) -> Vec<String> {
    let well_known = "/.well-known/oauth-authorization-server";
    let mut paths = vec![well_known.to_string(), format!("{well_known}/mcp")];
    for base in ["/mcp", "/api", configured.trim_end_matches('/')] {
        if !base.is_empty() {
            paths.push(format!("{base}{well_known}"));
            paths.push(format!("{well_known}{base}"));
        }
    }
    let mut all: Vec<String> = paths.iter().flat_map(|p| [p.clone(), format!("{p}/")]).collect();
    all.sort();
    all.dedup();
    all
}

async fn oauth_disabled() -> (StatusCode, axum::Json<serde_json::Value>) {
    (StatusCode::NOT_FOUND, axum::Json(json!({ "mcp_oauth": false })))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mcp_paths_cover_aliases_once() {
        assert_eq!(mcp_paths("/api/"), ["/mcp", "/mcp/", "/api", "/api/"]);
        assert_eq!(
            mcp_paths("/agent-mail"),
            ["/mcp", "/mcp/", "/api", "/api/", "/agent-mail", "/agent-mail/"]
        );
    }
}
