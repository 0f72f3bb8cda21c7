//! Streamable HTTP (MCP 2025-06-18 / 2025-11-25, and 2026-07-28 beside them) with the
//! reference's stateless behaviour.
//!
//! A POST carrying the 2026-07-28 envelope (`envelope.rs`) is served on its own, as that
//! revision asks: no session, errors with their HTTP status, `subscriptions/listen` as an event
//! stream (`listen.rs`). Older POSTs follow the rules below.
//!
//! A POST without `Mcp-Session-Id` is served on its own (the reference serves everyone that
//! way: no initialize needed, JSON response). A client that initializes gets a session id and
//! the full protocol: version header checks, GET event stream, DELETE to end the session.
//! Every request first passes the Origin (403) and Host (421) checks against DNS rebinding
//! (`http/security/origin.rs`).

use std::convert::Infallible;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::extract::rejection::BytesRejection;
use axum::http::{HeaderMap, HeaderValue, Method, StatusCode, header};
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use serde_json::Value;

use super::dispatch::{self, Request};
use super::envelope::{self, Era, VERSION_HEADER};
use super::error::code;
use super::{SUPPORTED_PROTOCOL_VERSIONS, session};
use crate::http::security::origin::check_origin_and_host;
use crate::state::{AppState, until_stopping};

const SESSION_HEADER: &str = "mcp-session-id";
/// Comment lines keep idle event streams open through proxies.
pub(super) const KEEPALIVE_EVERY: Duration = Duration::from_secs(15);

/// Entry point for every method on every MCP mount path.
pub async fn endpoint(
    State(state): State<AppState>,
    method: Method,
    headers: HeaderMap,
    body: Result<Bytes, BytesRejection>,
) -> Response {
    if let Err(rejection) = check_origin_and_host(&state, &headers) {
        return *rejection;
    }
    match method {
        Method::POST => match body {
            Ok(body) => post(&state, &headers, body).await,
            // The router's body limit (ServerConfig::max_body_bytes) stopped the read.
            Err(rejection) => rpc_error(
                rejection.status(),
                code::INVALID_REQUEST,
                &format!("Request body rejected: {}", rejection.body_text()),
            ),
        },
        Method::GET => get(&state, &headers).await,
        Method::DELETE => delete(&state, &headers).await,
        _ => plain(StatusCode::METHOD_NOT_ALLOWED, "Use POST (or GET/DELETE with a session)."),
    }
}

async fn post(state: &AppState, headers: &HeaderMap, body: Bytes) -> Response {
    let message: Value = match serde_json::from_slice(&body) {
        Ok(value) => value,
        Err(e) => {
            return rpc_error(
                StatusCode::BAD_REQUEST,
                code::PARSE_ERROR,
                &format!("Parse error: {e}"),
            );
        }
    };
    let Value::Object(mut object) = message else {
        let text = if message.is_array() {
            "Batch requests are not supported: send one JSON-RPC message per POST."
        } else {
            "Invalid Request: expected a JSON-RPC object."
        };
        return rpc_error(StatusCode::BAD_REQUEST, code::INVALID_REQUEST, text);
    };
    if object.get("jsonrpc").and_then(Value::as_str) != Some("2.0") {
        return rpc_error(
            StatusCode::BAD_REQUEST,
            code::INVALID_REQUEST,
            "Invalid Request: jsonrpc must be \"2.0\".",
        );
    }
    let era = envelope::era(headers, &object);
    // A 2026-07-28 request has no session: a session id it carries is not looked at.
    let session = match era {
        Era::Modern => None,
        Era::Handshake => match session_of(state, headers).await {
            Ok(session) => session,
            Err(rejection) => return *rejection,
        },
    };
    let Some(method) = object.get("method").and_then(Value::as_str).map(str::to_string) else {
        // A response or error sent by the client (we never ask it anything): acknowledge.
        return StatusCode::ACCEPTED.into_response();
    };
    let Some(id) = object.get("id").cloned().filter(valid_id) else {
        return if object.contains_key("id") {
            rpc_error(
                StatusCode::BAD_REQUEST,
                code::INVALID_REQUEST,
                "Invalid Request: id must be a string or number.",
            )
        } else {
            StatusCode::ACCEPTED.into_response() // notification
        };
    };
    // Moved out, not cloned: the arguments travel on to the tool.
    let params = object.remove("params").unwrap_or(Value::Null);
    if era == Era::Modern {
        return modern(state, headers, Request { id, method, params }).await;
    }
    let initialize = method == "initialize";
    let mut new_session = None;
    if initialize && session.is_none() {
        let requested = params.get("protocolVersion").and_then(Value::as_str);
        let version = dispatch::negotiate_version(requested);
        let (id, evicted) = state.sessions.open(version);
        if let Some(evicted) = evicted {
            forget(state, &evicted);
        }
        // Servers sharing the database accept it too (docs/scale-out.md).
        if let Err(e) = state.core.record_mcp_session(&id, version).await {
            tracing::warn!(error = %e.message, "MCP session not shared with the other servers");
        }
        new_session = Some(id);
    }
    let session_id =
        headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()).filter(|_| session.is_some());
    let request = Request { id, method, params };
    let reply = dispatch::handle(state, request, session_id, Era::Handshake).await;
    let mut response = respond(headers, reply, StatusCode::OK);
    if let Some(id) = new_session.and_then(|id| HeaderValue::from_str(&id).ok()) {
        response.headers_mut().insert(SESSION_HEADER, id);
    }
    response
}

/// A 2026-07-28 request: its envelope checked (a refusal answers with the request's id and a
/// 400), then dispatched statelessly, or served as a listen stream; an error's HTTP status
/// follows its code (`envelope::status_of`).
async fn modern(state: &AppState, headers: &HeaderMap, request: Request) -> Response {
    let listen = request.method == "subscriptions/listen";
    if listen && !accepts(headers, "text/event-stream") {
        return plain(
            StatusCode::NOT_ACCEPTABLE,
            "subscriptions/listen answers with an event stream: send Accept: text/event-stream.",
        );
    }
    if let Err(rejection) = envelope::check(headers, &request.method, &request.params) {
        let reply = match rejection.data {
            Some(data) => {
                dispatch::error_with_data(&request.id, rejection.code, &rejection.message, data)
            }
            None => dispatch::error(&request.id, rejection.code, &rejection.message),
        };
        return respond(headers, reply, envelope::status_of(rejection.code));
    }
    if listen {
        return super::listen::listen(state, request.id, &request.params).await;
    }
    let reply = dispatch::handle(state, request, None, Era::Modern).await;
    let status = reply.error_code().map_or(StatusCode::OK, envelope::status_of);
    respond(headers, reply, status)
}

fn accepts(headers: &HeaderMap, media: &str) -> bool {
    headers
        .get_all(header::ACCEPT)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .any(|v| v.contains(media) || v.contains("*/*"))
}

fn valid_id(id: &Value) -> bool {
    id.is_string() || id.is_i64() || id.is_u64()
}

/// JSON by default (as the reference); an event stream when the client accepts only that.
fn respond(headers: &HeaderMap, reply: dispatch::Response, status: StatusCode) -> Response {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    let wants_sse_only = accept.contains("text/event-stream")
        && !accept.contains("application/json")
        && !accept.contains("*/*");
    if wants_sse_only {
        let event = Body::new(reply.into_parts("event: message\ndata: ", "\n\n"));
        return (
            status,
            [(header::CONTENT_TYPE, "text/event-stream"), (header::CACHE_CONTROL, "no-cache")],
            event,
        )
            .into_response();
    }
    (status, [(header::CONTENT_TYPE, "application/json")], Body::new(reply.into_parts("", "")))
        .into_response()
}

/// The session named by the request, if any. Unknown ids get 404 (the client must
/// re-initialize); unsupported protocol versions get 400. Servers sharing a database look an
/// id they do not know up there: another server may have opened it.
async fn session_of(
    state: &AppState,
    headers: &HeaderMap,
) -> Result<Option<session::Session>, Box<Response>> {
    if let Some(version) = headers.get(VERSION_HEADER).and_then(|v| v.to_str().ok())
        && !SUPPORTED_PROTOCOL_VERSIONS.contains(&version)
    {
        return Err(Box::new(rpc_error(
            StatusCode::BAD_REQUEST,
            code::INVALID_REQUEST,
            &format!(
                "Unsupported MCP-Protocol-Version '{version}'; supported: {}.",
                envelope::supported_versions().join(", ")
            ),
        )));
    }
    let Some(id) = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) else {
        return Ok(None);
    };
    if let Some(session) = state.sessions.touch(id) {
        if state.sessions.due_for_record(id)
            && let Err(e) = state.core.touch_mcp_session(id).await
        {
            tracing::warn!(error = %e.message, "MCP session's use not recorded");
        }
        return Ok(Some(session));
    }
    if session::has_issued_form(id) {
        match state.core.mcp_session_version(id).await {
            Ok(Some(version)) => {
                if let Some(evicted) = state.sessions.adopt(id, &version) {
                    forget(state, &evicted);
                }
                if let Err(e) = state.core.touch_mcp_session(id).await {
                    tracing::warn!(error = %e.message, "MCP session's use not recorded");
                }
                return Ok(state.sessions.touch(id));
            }
            Ok(None) => {}
            Err(e) => {
                return Err(Box::new(rpc_error(
                    StatusCode::SERVICE_UNAVAILABLE,
                    code::INTERNAL_ERROR,
                    &format!("Cannot look the session up: {}", e.message),
                )));
            }
        }
    }
    Err(Box::new(rpc_error(
        StatusCode::NOT_FOUND,
        code::INVALID_REQUEST,
        "Session not found or expired; initialize a new session.",
    )))
}

/// GET opens the server-to-client event stream of a session: the session's resource
/// subscriptions are notified there (`mcp/subscriptions.rs`), between keep-alive comments. The
/// stream ends when the client disconnects or the server shuts down.
async fn get(state: &AppState, headers: &HeaderMap) -> Response {
    let accept = headers.get(header::ACCEPT).and_then(|v| v.to_str().ok()).unwrap_or("");
    if !accept.contains("text/event-stream") {
        return plain(StatusCode::METHOD_NOT_ALLOWED, "GET needs Accept: text/event-stream.");
    }
    let version = headers.get(VERSION_HEADER).and_then(|v| v.to_str().ok());
    if version.is_some_and(|v| envelope::MODERN_PROTOCOL_VERSIONS.contains(&v)) {
        return plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "Protocol 2026-07-28 has no GET stream: POST subscriptions/listen instead.",
        );
    }
    let Some(id) = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) else {
        return plain(
            StatusCode::METHOD_NOT_ALLOWED,
            "GET needs an Mcp-Session-Id from initialize.",
        );
    };
    match session_of(state, headers).await {
        Err(rejection) => *rejection,
        Ok(None) => {
            plain(StatusCode::METHOD_NOT_ALLOWED, "GET needs an Mcp-Session-Id from initialize.")
        }
        Ok(Some(_)) => {
            let notifications =
                stream::unfold(state.subscriptions.open_stream(id), |mut rx| async move {
                    rx.recv().await.map(|event| (Ok::<_, Infallible>(event), rx))
                });
            let ticks = stream::unfold((), |()| async {
                tokio::time::sleep(KEEPALIVE_EVERY).await;
                Some((Ok::<_, Infallible>(Bytes::from_static(b": keep-alive\n\n")), ()))
            });
            let first = stream::once(async {
                Ok::<_, Infallible>(Bytes::from_static(b": stream open\n\n"))
            });
            // The stream ends when the server shuts down, so the graceful shutdown does not
            // wait on it.
            let stopping = Box::pin(until_stopping(state.stopping.subscribe()));
            let events =
                futures_util::StreamExt::chain(first, stream::select(notifications, ticks));
            let body = Body::from_stream(futures_util::StreamExt::take_until(events, stopping));
            (
                [(header::CONTENT_TYPE, "text/event-stream"), (header::CACHE_CONTROL, "no-cache")],
                body,
            )
                .into_response()
        }
    }
}

async fn delete(state: &AppState, headers: &HeaderMap) -> Response {
    let Some(id) = headers.get(SESSION_HEADER).and_then(|v| v.to_str().ok()) else {
        return plain(StatusCode::BAD_REQUEST, "DELETE needs the Mcp-Session-Id to end.");
    };
    let mut ended = state.sessions.close(id);
    if session::has_issued_form(id) {
        match state.core.end_mcp_session(id).await {
            Ok(recorded) => ended |= recorded,
            Err(e) => {
                // Still recorded, so another server would adopt it: the client is to try
                // again (this server has already dropped it).
                tracing::warn!(error = %e.message, "MCP session not ended in the database");
                forget(state, id);
                return plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "The session could not be ended everywhere; try again.",
                );
            }
        }
    }
    if ended {
        forget(state, id);
        StatusCode::NO_CONTENT.into_response()
    } else {
        plain(StatusCode::NOT_FOUND, "Session not found.")
    }
}

/// Drops the sessions other servers sharing the database end (`DELETE` reached one of them),
/// with what they leave behind, until the server stops.
pub async fn drop_sessions_ended_elsewhere(state: AppState) {
    let mut ended = state.core.ended_mcp_sessions();
    let stopping = until_stopping(state.stopping.subscribe());
    tokio::pin!(stopping);
    loop {
        let id = tokio::select! {
            () = &mut stopping => return,
            id = ended.recv() => id,
        };
        match id {
            Ok(id) => {
                if state.sessions.close(&id) {
                    forget(&state, &id);
                }
            }
            Err(tokio::sync::broadcast::error::RecvError::Lagged(missed)) => {
                tracing::warn!(missed, "missed sessions ended on other servers");
            }
            Err(tokio::sync::broadcast::error::RecvError::Closed) => return,
        }
    }
}

/// What a session that ended leaves behind: its bindings and subscriptions.
fn forget(state: &AppState, id: &str) {
    state.bindings.forget(id);
    state.subscriptions.forget(id);
}

fn plain(status: StatusCode, text: &'static str) -> Response {
    (status, [(header::CONTENT_TYPE, "text/plain; charset=utf-8")], text).into_response()
}

fn rpc_error(status: StatusCode, code: i64, message: &str) -> Response {
    rpc_error_for(&Value::Null, code, message, status)
}

/// A JSON-RPC error answering the request `id`, as JSON with `status`.
pub(super) fn rpc_error_for(id: &Value, code: i64, message: &str, status: StatusCode) -> Response {
    let body = Body::new(dispatch::error(id, code, message).into_parts("", ""));
    (status, [(header::CONTENT_TYPE, "application/json")], body).into_response()
}
