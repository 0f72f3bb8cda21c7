//! `GET /mail/api/events`: the server's push to open pages (server-sent events). One `change`
//! event follows each burst of committed writes (new mail, read marks, reservations, agents),
//! at most one per [`DEBOUNCE`]; a page listening reloads its content then. With
//! `?archive=1` (the archive's pages), commits to the Git archive count as changes too.
//! Comment lines keep an idle stream open through proxies; the stream ends when the server
//! shuts down.

use std::convert::Infallible;
use std::future::Future;
use std::pin::Pin;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Query, State};
use axum::http::header;
use axum::response::{IntoResponse, Response};
use futures_util::stream;
use serde::Deserialize;
use tokio::sync::watch;

use crate::state::{AppState, until_stopping};

/// The quiet time gathered into one event: a send storm wakes a page a few times a second.
const DEBOUNCE: Duration = Duration::from_millis(250);
const KEEPALIVE_EVERY: Duration = Duration::from_secs(15);

struct Listener {
    changes: watch::Receiver<u64>,
    /// The Git archive's progress, for a page showing the archive.
    archived: Option<watch::Receiver<u64>>,
    stopping: Pin<Box<dyn Future<Output = ()> + Send>>,
}

#[derive(Deserialize, Default)]
pub struct EventsQuery {
    archive: Option<String>,
}

pub async fn events(State(state): State<AppState>, Query(q): Query<EventsQuery>) -> Response {
    let mut changes = state.core.changes();
    changes.mark_unchanged();
    let wants_archive = matches!(q.archive.as_deref(), Some("1" | "true"));
    let archived = state.core.archive().filter(|_| wants_archive).map(|a| {
        let mut progress = a.progress();
        progress.mark_unchanged();
        progress
    });
    let stopping = Box::pin(until_stopping(state.stopping.subscribe()));
    let listener = Listener { changes, archived, stopping };
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
    let Listener { changes, archived, stopping } = l;
    let committed = async {
        match archived {
            Some(progress) => progress.changed().await.is_ok(),
            None => std::future::pending().await,
        }
    };
    tokio::select! {
        changed = changes.changed() => {
            changed.ok()?;
            Some(change_event(changes, archived.as_mut()).await)
        }
        true = committed => Some(change_event(changes, archived.as_mut()).await),
        () = tokio::time::sleep(KEEPALIVE_EVERY) => Some(Bytes::from_static(b": keep-alive\n\n")),
        () = stopping.as_mut() => None,
    }
}

/// A `change` event after the burst's quiet time, both counts marked seen.
async fn change_event(
    changes: &mut watch::Receiver<u64>,
    archived: Option<&mut watch::Receiver<u64>>,
) -> Bytes {
    tokio::time::sleep(DEBOUNCE).await;
    let version = *changes.borrow_and_update();
    if let Some(progress) = archived {
        progress.borrow_and_update();
    }
    Bytes::from(format!("event: change\ndata: {version}\n\n"))
}
