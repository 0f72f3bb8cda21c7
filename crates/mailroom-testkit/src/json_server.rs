//! A plain HTTP server on 127.0.0.1 answering every GET with one JSON document (a JWKS, say),
//! which a test may replace while it runs; it counts the requests it served.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::State;
use axum::routing::get;
use serde_json::Value;

type Shared = (Arc<Mutex<Value>>, Arc<AtomicUsize>);

/// A running server; stops when dropped.
pub struct JsonServer {
    /// `http://127.0.0.1:<port>/document.json` (any path answers the same).
    pub url: String,
    pub address: SocketAddr,
    shared: Shared,
    task: tokio::task::JoinHandle<()>,
}

impl JsonServer {
    pub async fn start(document: Value) -> Self {
        let shared: Shared = (Arc::new(Mutex::new(document)), Arc::new(AtomicUsize::new(0)));
        let answer = |State((document, hits)): State<Shared>| async move {
            hits.fetch_add(1, Ordering::SeqCst);
            axum::Json(document.lock().expect("document").clone())
        };
        let router = Router::new().fallback(get(answer)).with_state(shared.clone());
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
        let address = listener.local_addr().expect("address");
        let task = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Self { url: format!("http://{address}/document.json"), address, shared, task }
    }

    /// Serves `document` from now on.
    pub fn set(&self, document: Value) {
        *self.shared.0.lock().expect("document") = document;
    }

    /// Requests served so far.
    pub fn hits(&self) -> usize {
        self.shared.1.load(Ordering::SeqCst)
    }
}

impl Drop for JsonServer {
    fn drop(&mut self) {
        self.task.abort();
    }
}
