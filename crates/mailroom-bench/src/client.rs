//! The lab's HTTP client: one bare hyper HTTP/1.1 connection per worker, kept alive, with
//! TCP_NODELAY. No pool, no redirects, no decompression: the client's own cost stays as small
//! as wrk's, so the figures measure the server.

use std::future::{Future, poll_fn};
use std::pin::Pin;
use std::task::Poll;

use bytes::Bytes;
use http_body_util::{BodyExt, Full};
use hyper::client::conn::http1::{self, SendRequest};
use hyper::header::{ACCEPT, CONTENT_TYPE, HOST, HeaderValue};
use hyper::{Method, Request, StatusCode, Uri};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

/// What a request carries; built once per scenario and cloned cheaply per send.
#[derive(Debug, Clone)]
pub struct Call {
    pub method: Method,
    /// Parsed once here, not per send.
    pub uri: Uri,
    /// A JSON body; `None` for GET.
    pub body: Option<Bytes>,
}

impl Call {
    /// `GET path`.
    pub fn get(path: impl AsRef<str>) -> Self {
        Self { method: Method::GET, uri: origin(path.as_ref()), body: None }
    }

    /// `POST path` with a JSON body.
    pub fn post_json(path: impl AsRef<str>, body: &serde_json::Value) -> Self {
        let body = Some(Bytes::from(body.to_string()));
        Self { method: Method::POST, uri: origin(path.as_ref()), body }
    }
}

/// Paths come from a parsed URL and checked flags (`Target`), so they always parse; "/" is
/// only a fallback that keeps this function total.
fn origin(path: &str) -> Uri {
    path.parse().unwrap_or_else(|_| Uri::from_static("/"))
}

/// Whether `path` is a valid origin-form request target (`/...`).
pub(crate) fn is_valid_path(path: &str) -> bool {
    path.starts_with('/') && path.parse::<Uri>().is_ok()
}

/// Why a send failed before any answer arrived.
#[derive(Debug)]
pub enum SendError {
    /// The peer had closed the idle connection before this request was written: nothing was
    /// sent, so the caller reconnects and sends it again without counting an error.
    Closed,
    /// The connection broke with the request in flight; the caller should reconnect.
    Broken(hyper::Error),
}

type Driver = http1::Connection<TokioIo<TcpStream>, Full<Bytes>>;

/// One keep-alive HTTP/1.1 connection.
///
/// The connection's I/O (hyper's "driver") is polled inside the worker's own task, beside the
/// request, rather than in a spawned task: a request then costs no cross-task wake-ups, which
/// keeps the client's CPU share close to wrk's on a machine it shares with the server.
pub struct Connection {
    sender: SendRequest<Full<Bytes>>,
    /// `None` once the connection has ended.
    driver: Option<Pin<Box<Driver>>>,
    host: HeaderValue,
}

enum First<T> {
    Exchange(T),
    DriverEnded,
}

impl Connection {
    /// Connects to `authority` (`host:port`) with TCP_NODELAY and completes the handshake.
    pub async fn open(authority: &str) -> std::io::Result<Self> {
        let stream = TcpStream::connect(authority).await?;
        stream.set_nodelay(true)?;
        let (sender, driver) =
            http1::handshake(TokioIo::new(stream)).await.map_err(std::io::Error::other)?;
        let host = HeaderValue::from_str(authority).map_err(std::io::Error::other)?;
        Ok(Self { sender, driver: Some(Box::pin(driver)), host })
    }

    /// Sends `call` and reads the whole answer.
    pub async fn send(&mut self, call: &Call) -> Result<(StatusCode, Bytes), SendError> {
        let Self { sender, driver, host } = self;
        let Some(running) = driver.as_mut() else { return Err(SendError::Closed) };
        // Let the driver notice a close that arrived while the connection sat idle.
        if poll_fn(|cx| Poll::Ready(running.as_mut().poll(cx).is_ready())).await {
            *driver = None;
            return Err(SendError::Closed);
        }
        let exchange = exchange(sender, host, call);
        tokio::pin!(exchange);
        let first = tokio::select! {
            biased;
            result = &mut exchange => First::Exchange(result),
            _ = running.as_mut() => First::DriverEnded,
        };
        match first {
            First::Exchange(result) => result,
            First::DriverEnded => {
                // The connection ended mid-request; the exchange now fails promptly.
                *driver = None;
                exchange.await
            }
        }
    }
}

async fn exchange(
    sender: &mut SendRequest<Full<Bytes>>,
    host: &HeaderValue,
    call: &Call,
) -> Result<(StatusCode, Bytes), SendError> {
    sender.ready().await.map_err(|_| SendError::Closed)?;
    let mut request = Request::new(Full::new(call.body.clone().unwrap_or_default()));
    *request.method_mut() = call.method.clone();
    *request.uri_mut() = call.uri.clone();
    let headers = request.headers_mut();
    headers.insert(HOST, host.clone());
    if call.body.is_some() {
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        // MCP's Streamable HTTP transport insists on both; servers answer plain JSON.
        headers.insert(ACCEPT, HeaderValue::from_static("application/json, text/event-stream"));
    }
    let response = sender.send_request(request).await.map_err(SendError::Broken)?;
    let status = response.status();
    let body = response.into_body().collect().await.map_err(SendError::Broken)?.to_bytes();
    Ok((status, body))
}
