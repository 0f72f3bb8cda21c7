//! `subscriptions/listen` (MCP 2026-07-28): one request whose response is an event stream.
//! Its first event acknowledges what the server will send (`notifications/subscriptions/
//! acknowledged`, the honored subset of the client's filter), then each change to a
//! subscribed resource is a `notifications/resources/updated`, every event stamped with the
//! request's id in `_meta`. The stream ends with the request's result when the server shuts
//! down (a graceful close); a client that goes away ends it too, and its subscriptions with it
//! (docs/compat/http.md §2.1).

use axum::body::{Body, Bytes};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use serde_json::{Value, json};
use std::convert::Infallible;
use tokio::sync::{mpsc, watch};

use super::envelope::{self, SERVER_INFO_KEY, SUBSCRIPTION_ID_KEY};
use super::error::code;
use super::subscriptions::{self, PER_SESSION, Watched, event};
use super::transport::KEEPALIVE_EVERY;
use crate::state::{AppState, until_stopping};

/// Serves one `subscriptions/listen` request (its envelope already checked): the event
/// stream, or a JSON-RPC error (400) for a filter that cannot be honored.
pub async fn listen(state: &AppState, id: Value, params: &Value) -> Response {
    let watched = match resolve_filter(state, params).await {
        Ok(watched) => watched,
        Err(message) => return refuse(&id, code::INVALID_PARAMS, &message),
    };
    let honored_uris: Vec<&str> = watched.iter().map(|(uri, _)| uri.as_str()).collect();
    // Only resource subscriptions are honored: mailroom's lists of tools, prompts and
    // resources never change while it runs, so their list-changed kinds are left out of the
    // acknowledgement, as the revision asks for kinds a server does not send.
    let honored = if honored_uris.is_empty() {
        json!({})
    } else {
        json!({ "resourceSubscriptions": honored_uris })
    };
    let ack =
        event(&json!({ "jsonrpc": "2.0", "method": "notifications/subscriptions/acknowledged",
        "params": { "notifications": honored, "_meta": { SUBSCRIPTION_ID_KEY: id } } }));
    let Some((key, notes)) =
        state.subscriptions.open_listen(id.clone(), watched, state.config.max_sessions)
    else {
        return refuse(&id, code::INTERNAL_ERROR, "Too many listen streams are open; retry later.");
    };
    let closing = event(&json!({ "jsonrpc": "2.0", "id": id, "result": {
        "_meta": { SUBSCRIPTION_ID_KEY: id, SERVER_INFO_KEY: envelope::server_info() },
        "resultType": "complete" } }));
    let open = Open {
        notes,
        stopping: state.stopping.subscribe(),
        closing,
        _forget: Forget { state: state.clone(), key },
    };
    let first = stream::once(async move { Ok::<_, Infallible>(ack) });
    let events = futures_util::StreamExt::chain(first, stream::unfold(Some(open), next_event));
    (
        [(header::CONTENT_TYPE, "text/event-stream"), (header::CACHE_CONTROL, "no-cache")],
        Body::from_stream(events),
    )
        .into_response()
}

/// The client's filter, resolved: each subscribed URI and what it watches. An error names
/// the field at fault.
async fn resolve_filter(
    state: &AppState,
    params: &Value,
) -> Result<Vec<(String, Watched)>, String> {
    let Some(filter) = params.get("notifications").and_then(Value::as_object) else {
        return Err("params.notifications must be an object (a SubscriptionFilter).".to_string());
    };
    let uris = match filter.get("resourceSubscriptions") {
        None | Some(Value::Null) => Vec::new(),
        Some(Value::Array(uris)) => uris.clone(),
        Some(_) => {
            return Err(
                "params.notifications.resourceSubscriptions must be an array of URIs.".to_string()
            );
        }
    };
    if uris.len() > PER_SESSION {
        return Err(format!(
            "params.notifications.resourceSubscriptions holds at most {PER_SESSION} URIs."
        ));
    }
    let mut watched: Vec<(String, Watched)> = Vec::with_capacity(uris.len());
    for (i, uri) in uris.iter().enumerate() {
        let field = format!("params.notifications.resourceSubscriptions[{i}]");
        let Some(uri) = uri.as_str() else {
            return Err(format!("{field} must be a string."));
        };
        if watched.iter().any(|(u, _)| u == uri) {
            continue;
        }
        let what = subscriptions::resolve(state, uri).await.map_err(|e| format!("{field}: {e}"))?;
        watched.push((uri.to_string(), what));
    }
    Ok(watched)
}

/// A listen stream after its acknowledgement.
struct Open {
    notes: mpsc::Receiver<Bytes>,
    stopping: watch::Receiver<bool>,
    /// The request's result: the last event of a graceful close.
    closing: Bytes,
    /// Forgets the stream's subscriptions when the stream is dropped, however it ends.
    _forget: Forget,
}

/// The next event of an open stream: a notification, a keep-alive comment after a quiet
/// spell, or, once the server stops, the request's result (and then the end). When the
/// subscriptions let the stream go (its client read nothing for too long) it ends without a
/// result, which tells the client to listen again.
async fn next_event(open: Option<Open>) -> Option<(Result<Bytes, Infallible>, Option<Open>)> {
    let mut open = open?;
    tokio::select! {
        // Notifications first: a stream closing at shutdown sends what waits before its result.
        biased;
        note = open.notes.recv() => note.map(|note| (Ok(note), Some(open))),
        () = until_stopping(open.stopping.clone()) => {
            let closing = open.closing.clone();
            Some((Ok(closing), None))
        }
        () = tokio::time::sleep(KEEPALIVE_EVERY) => {
            Some((Ok(Bytes::from_static(b": keep-alive\n\n")), Some(open)))
        }
    }
}

/// Forgets a listen stream's subscriptions when dropped.
struct Forget {
    state: AppState,
    key: String,
}

impl Drop for Forget {
    fn drop(&mut self) {
        self.state.subscriptions.forget(&self.key);
    }
}

/// A JSON-RPC error for the listen request, with its 2026-07-28 status.
fn refuse(id: &Value, error_code: i64, message: &str) -> Response {
    super::transport::rpc_error_for(id, error_code, message, envelope::status_of(error_code))
}
