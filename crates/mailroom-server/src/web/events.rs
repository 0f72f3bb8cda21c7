//! `GET /mail/api/events`: the server's push to open pages (server-sent events). One `change`
//! event follows each burst of committed writes (new mail, read marks, reservations, agents),
//! at most one per [`DEBOUNCE`]; a page listening reloads its content then. Comment lines
//! keep an idle stream open through proxies; the stream ends when the server shuts down.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::State;
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use tokio::sync::watch;

use crate::state::{AppState, until_stopping};

/// The quiet time gathered into one event: a send storm wakes a page a few times a second.
const DEBOUNCE: Duration = Duration::from_millis(250);
const KEEPALIVE_EVERY: Duration = Duration::from_secs(15);

struct Listener {
    changes: watch::Receiver<u64>,
    stopping: Pin<Box<dyn Future<Output = ()> + Send>>,
}

pub async fn events(State(state): State<AppState>) -> Response {
    let mut changes = state.core.changes();
    changes.mark_unchanged();
    let stopping = Box::pin(until_stopping(state.stopping.subscribe()));
    let listener = Listener { changes, stopping };
    let opened =
        stream::once(async { Ok::<_, Infallible>(Bytes::from_static(b"retry: 2000\n\n")) });
    let pushed = stream::unfold(listener, |mut l| async move {
        let chunk = next_chunk(&mut l).await?;
        Some((Ok::<_, Infallible>(chunk), l))
    });
    let body = Body::from_stream(futures_util::StreamExt::chain(opened, pushed));
    ([(header::CONTENT_TYPE, "text/event-stream"), (header::CACHE_CONTROL, "no-cache")], body)
        .into_response()
}

/// The next thing to send: a change event, a keep-alive, or `None` to end the stream.
async fn next_chunk(l: &mut Listener) -> Option<Bytes> {
    let Listener { changes, stopping } = l;
    tokio::select! {
        changed = changes.changed() => {
            changed.ok()?;
            tokio::time::sleep(DEBOUNCE).await;
            let version = *changes.borrow_and_update();
            Some(Bytes::from(format!("event: change\ndata: {version}\n\n")))
        }
        () = tokio::time::sleep(KEEPALIVE_EVERY) => Some(Bytes::from_static(b": keep-alive\n\n")),
        () = stopping.as_mut() => None,
    }
}
