//! mailroom-server: the HTTP front of mailroom — MCP over Streamable HTTP, a REST API for
//! scripts and load tools, and health probes — on top of `mailroom-core`.

pub mod config;
pub mod http;
pub mod mcp;
pub mod signals;
pub mod state;
pub mod upkeep;
pub mod web;
pub mod webhooks;

use std::future::Future;

use axum::serve::ListenerExt as _;
use tokio::net::TcpListener;

pub use config::ServerConfig;
pub use state::AppState;

/// Serves `state` on `listener` until `shutdown` resolves, then drains in-flight requests and
/// commits the archive's queued work.
pub async fn serve(
    listener: TcpListener,
    state: AppState,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    // Without TCP_NODELAY, small keep-alive responses wait on Nagle + delayed ACK (~40 ms).
    let listener = listener.tap_io(|tcp| {
        if let Err(e) = tcp.set_nodelay(true) {
            tracing::debug!(error = %e, "could not set TCP_NODELAY");
        }
    });
    let core = state.core.clone();
    let stopping = state.stopping.clone();
    // Related projects for the web UI, scored as projects and agents change.
    let scorer = core.clone();
    let stop = state::until_stopping(stopping.subscribe());
    tokio::spawn(async move { scorer.score_siblings(stop).await });
    upkeep::start(&state);
    // Subscribed MCP sessions are told of messages as they commit.
    tokio::spawn(mcp::subscriptions::watch(state.clone()));
    tokio::spawn(mcp::transport::drop_sessions_ended_elsewhere(state.clone()));
    // Webhooks are posted from their durable queue.
    tokio::spawn(webhooks::deliver(state.clone()));
    let shutdown = async move {
        shutdown.await;
        stopping.send_replace(true);
    };
    // The peer's address reaches the security middleware (the localhost rule, rate limits).
    let app = axum::ServiceExt::<axum::extract::Request>::into_make_service_with_connect_info::<
        std::net::SocketAddr,
    >(http::app(state));
    let served = axum::serve(listener, app).with_graceful_shutdown(shutdown).await;
    tokio::task::spawn_blocking(move || core.close()).await.map_err(std::io::Error::other)?;
    served
}
