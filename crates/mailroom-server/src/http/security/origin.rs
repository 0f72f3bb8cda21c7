//! DNS-rebinding protection for every surface (MCP, REST, the web UI): a browser page of
//! another origin is refused (403) unless `HTTP_ALLOWED_ORIGINS` names it, and a `Host` that
//! is not the server's (a rebound name) is refused (421).

use axum::extract::{Request, State};
use axum::http::{HeaderMap, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use crate::state::AppState;

/// The Origin (403) and Host (421) checks as a middleware, in front of the REST routes and
/// `/metrics` (MCP and the web UI run them in their own handlers).
pub async fn origin_and_host(
    State(state): State<AppState>,
    request: Request,
    next: Next,
) -> Response {
    match check_origin_and_host(&state, request.headers()) {
        Ok(()) => next.run(request).await,
        Err(refusal) => *refusal,
    }
}

/// DNS-rebinding protection: browsers on other origins get 403; a Host that is not ours
/// (a rebound name) gets 421.
pub fn check_origin_and_host(state: &AppState, headers: &HeaderMap) -> Result<(), Box<Response>> {
    if let Some(origin) = headers.get(header::ORIGIN) {
        let origin = origin.to_str().unwrap_or("");
        let allowed = origin_host(origin).is_some_and(is_loopback_name)
            || state.config.allowed_origins.iter().any(|o| o == "*" || o == origin);
        if !allowed {
            return Err(Box::new(plain(StatusCode::FORBIDDEN, "Forbidden: Origin not allowed.")));
        }
    }
    let Some(host) = headers.get(header::HOST).and_then(|h| h.to_str().ok()) else {
        return Ok(());
    };
    let name = strip_port(host);
    let config = &state.config;
    let allowed = is_loopback_name(name)
        || name == config.host
        || is_wildcard(&config.host) && config.allowed_hosts.is_empty()
        || config.allowed_hosts.iter().any(|h| h == "*" || h == name || h == host);
    if allowed {
        Ok(())
    } else {
        Err(Box::new(plain(
            StatusCode::MISDIRECTED_REQUEST,
            "Misdirected Request: Host not allowed.",
        )))
    }
}

fn is_wildcard(host: &str) -> bool {
    host == "0.0.0.0" || host == "::" || host == "[::]"
}

/// Whether the request comes from a page of another site: an `Origin` whose host is not a
/// loopback name (a browser sends it with every cross-site POST).
pub fn has_foreign_origin(headers: &HeaderMap) -> bool {
    headers.get(header::ORIGIN).is_some_and(|origin| {
        !origin.to_str().ok().and_then(origin_host).is_some_and(is_loopback_name)
    })
}

fn origin_host(origin: &str) -> Option<&str> {
    let rest = origin.split_once("://")?.1;
    Some(strip_port(rest.split('/').next().unwrap_or(rest)))
}

fn strip_port(host: &str) -> &str {
    if let Some(rest) = host.strip_prefix('[') {
        return rest.split(']').next().unwrap_or(rest);
    }
    host.rsplit_once(':').map_or(host, |(name, port)| {
        if port.chars().all(|c| c.is_ascii_digit()) { name } else { host }
    })
}

fn is_loopback_name(name: &str) -> bool {
    matches!(name, "localhost" | "127.0.0.1" | "::1") || name.ends_with(".localhost")
}

fn plain(status: StatusCode, text: &'static str) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(input: &str, expected: &str) {
        assert_eq!(strip_port(input), expected, "{input}");
    }

    #[test]
    fn hosts_lose_their_ports() {
        check("127.0.0.1:8765", "127.0.0.1");
        check("localhost", "localhost");
        check("[::1]:80", "::1");
        check("example.com:x", "example.com:x");
    }

    #[test]
    fn origins_are_reduced_to_hosts() {
        assert_eq!(origin_host("http://localhost:3000"), Some("localhost"));
        assert_eq!(origin_host("https://evil.example/path"), Some("evil.example"));
        assert_eq!(origin_host("null"), None);
    }
}
