//! A fake OpenAI-compatible chat-completions server for tests, bound to 127.0.0.1:0.
//!
//! In [`FakeLlmMode::Reference`] it answers like the deterministic stub the reference's
//! conformance session was recorded with: a thread digest when the system prompt asks for a
//! "digest across threads", otherwise a single-thread summary (wrapped in prose and a code fence,
//! as models often reply). The other modes fail in the ways a real endpoint can. Every request
//! is recorded so tests can check what the server sent.

use std::sync::{Arc, Mutex};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::post;
use axum::{Json, Router};
use serde_json::{Value, json};

/// The API key [`crate::TestApp`] configures with an LLM, so tests can check it is sent.
pub const API_KEY: &str = "sk-test-mailroom";

/// How the fake answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FakeLlmMode {
    /// Deterministic summaries, as the reference's stub.
    Reference,
    /// HTTP 500.
    ServerError,
    /// A completion whose text holds no JSON.
    Garbage,
}

/// One recorded request: its JSON body and its `Authorization` header.
#[derive(Debug, Clone)]
pub struct RecordedRequest {
    pub body: Value,
    pub authorization: Option<String>,
}

#[derive(Clone)]
struct FakeState {
    mode: FakeLlmMode,
    requests: Arc<Mutex<Vec<RecordedRequest>>>,
}

/// A running fake; stops when dropped.
pub struct FakeLlm {
    /// The base URL to configure (`.../v1`).
    pub base_url: String,
    /// Where it listens (plain HTTP).
    pub address: std::net::SocketAddr,
    requests: Arc<Mutex<Vec<RecordedRequest>>>,
    server: tokio::task::JoinHandle<()>,
}

impl FakeLlm {
    /// Starts a fake answering in `mode`.
    pub async fn start(mode: FakeLlmMode) -> Self {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind fake llm");
        let address = listener.local_addr().expect("fake llm address");
        let requests = Arc::new(Mutex::new(Vec::new()));
        let state = FakeState { mode, requests: requests.clone() };
        let router = Router::new().route("/v1/chat/completions", post(complete)).with_state(state);
        let server = tokio::spawn(async move {
            let _ = axum::serve(listener, router).await;
        });
        Self { base_url: format!("http://{address}/v1"), address, requests, server }
    }

    /// The requests received so far, in order.
    pub fn requests(&self) -> Vec<RecordedRequest> {
        self.requests.lock().expect("requests lock").clone()
    }
}

impl Drop for FakeLlm {
    fn drop(&mut self) {
        self.server.abort();
    }
}

async fn complete(
    State(state): State<FakeState>,
    headers: HeaderMap,
    Json(body): Json<Value>,
) -> Response {
    let authorization =
        headers.get("authorization").and_then(|v| v.to_str().ok()).map(str::to_string);
    let recorded = RecordedRequest { body: body.clone(), authorization };
    state.requests.lock().expect("requests lock").push(recorded);
    let system = body.pointer("/messages/0/content").and_then(Value::as_str).unwrap_or("");
    let content = match state.mode {
        FakeLlmMode::ServerError => {
            return (StatusCode::INTERNAL_SERVER_ERROR, "upstream exploded").into_response();
        }
        FakeLlmMode::Garbage => "I am sorry, I cannot summarise this thread.".to_string(),
        FakeLlmMode::Reference if system.contains("digest across threads") => digest(),
        FakeLlmMode::Reference if system.contains("parts of one product") => {
            json!({"score": 0.93, "rationale": "Both serve the same shop."}).to_string()
        }
        FakeLlmMode::Reference => single_summary(),
    };
    Json(json!({
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "model": body["model"],
        "choices": [{
            "index": 0,
            "message": {"role": "assistant", "content": content},
            "finish_reason": "stop",
        }],
    }))
    .into_response()
}

/// The reference stub's single-thread answer.
fn single_summary() -> String {
    let summary = json!({
        "participants": ["BlueLake", "GreenCastle"],
        "key_points": [
            "API migration planned for next sprint",
            "Staging deployment needed before review",
        ],
        "action_items": ["Deploy to staging", "Update API docs"],
        "mentions": [{"name": "Carol", "count": 2}],
        "code_references": ["api/v2/users"],
        "total_messages": 2,
        "open_actions": 1,
        "done_actions": 0,
    });
    format!("Here is the summary:\n```json\n{summary:#}\n```\n")
}

/// The reference stub's digest, with the per-thread open-action counts the recorded session
/// shows (a multi-thread answer's per-thread counts replace the heuristic's:
/// docs/compat/tools.md §7.5).
fn digest() -> String {
    let digest = json!({
        "threads": [
            {"thread_id": "T-1", "key_points": ["API v2 schema finalized"],
             "actions": ["Update OpenAPI spec"], "open_actions": 2},
            {"thread_id": "T-2", "key_points": ["Migration to new DB"],
             "actions": ["Run migration script"], "open_actions": 1},
        ],
        "aggregate": {
            "top_mentions": ["Alice", "Bob"],
            "key_points": ["API schema and DB migration are the two main workstreams"],
            "action_items": ["Update OpenAPI spec", "Run migration script"],
        },
    });
    format!("Ok, here's the digest:\n{digest:#}\nDone.")
}
