//! Tool calls in tests: a `send_message` built field by field and sent through a [`TestApp`]
//! or to any server's URL, the message id read back from its result, and plain JSON-RPC and
//! tool calls to a URL (the built binary's tests have no `TestApp`).

use serde_json::{Value, json};

use crate::TestApp;

/// The id of the message a `send_message` or `reply_message` result (MCP or REST) delivered:
/// its first delivery's payload id. Fails the test when there is none.
pub fn sent_message_id(sent: &Value) -> i64 {
    sent["deliveries"][0]["payload"]["id"]
        .as_i64()
        .unwrap_or_else(|| panic!("no delivered message id in {sent}"))
}

/// POSTs a JSON-RPC request to `{base_url}/mcp` (no session) with `client` and returns the
/// parsed JSON response, error or not. [`TestApp::rpc`] is this for its own server.
pub async fn rpc_at(
    client: &reqwest::Client,
    base_url: &str,
    method: &str,
    params: Value,
) -> Value {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
    let response =
        client.post(format!("{base_url}/mcp")).json(&body).send().await.expect("rpc request");
    response.json().await.expect("rpc json")
}

/// Calls the tool `name` on the server at `base_url` (`POST {base_url}/mcp`, no session) and
/// returns its parsed JSON result; fails the test when the call fails. For a server without
/// a [`TestApp`], such as the built binary.
pub async fn tool_at(base_url: &str, name: &str, arguments: Value) -> Value {
    let params = json!({"name": name, "arguments": arguments});
    let response = rpc_at(&reqwest::Client::new(), base_url, "tools/call", params).await;
    let text = response["result"]["content"][0]["text"].as_str().expect("text");
    assert_ne!(response["result"]["isError"], true, "{name}: {text}");
    serde_json::from_str(text).expect("tool JSON")
}

/// A `send_message` call from one agent to one other: the required fields in [`Self::new`],
/// the optional ones set by the methods, then sent with [`Self::ok`], [`Self::call`] or
/// [`Self::ok_at`].
#[derive(Debug, Clone)]
pub struct SendCall {
    project_key: String,
    sender_name: String,
    to: String,
    subject: String,
    body_md: String,
    thread_id: Option<String>,
    importance: Option<String>,
}

impl SendCall {
    /// `sender_name`'s message to `to` in `project_key` (a slug or a human key), with
    /// `subject` and the body `body` until [`Self::body`] sets another.
    pub fn new(project_key: &str, sender_name: &str, to: &str, subject: &str) -> Self {
        Self {
            project_key: project_key.to_string(),
            sender_name: sender_name.to_string(),
            to: to.to_string(),
            subject: subject.to_string(),
            body_md: "body".to_string(),
            thread_id: None,
            importance: None,
        }
    }

    /// The Markdown body (`body_md`).
    pub fn body(mut self, body_md: &str) -> Self {
        self.body_md = body_md.to_string();
        self
    }

    /// The thread the message joins (`thread_id`).
    pub fn thread(mut self, thread_id: &str) -> Self {
        self.thread_id = Some(thread_id.to_string());
        self
    }

    /// The importance (free text; `high` and `urgent` count as urgent).
    pub fn importance(mut self, importance: &str) -> Self {
        self.importance = Some(importance.to_string());
        self
    }

    /// The tool's arguments, for a request the test builds itself.
    pub fn arguments(&self) -> Value {
        let mut arguments = json!({
            "project_key": self.project_key, "sender_name": self.sender_name, "to": [self.to],
            "subject": self.subject, "body_md": self.body_md,
        });
        if let Some(thread_id) = &self.thread_id {
            arguments["thread_id"] = json!(thread_id);
        }
        if let Some(importance) = &self.importance {
            arguments["importance"] = json!(importance);
        }
        arguments
    }

    /// Sends through `app`: `Ok(result)`, or `Err(error text)` when the tool refuses.
    pub async fn call(&self, app: &TestApp) -> Result<Value, String> {
        app.call_tool("send_message", self.arguments()).await
    }

    /// Sends through `app` and returns the result; fails the test when the tool refuses.
    pub async fn ok(&self, app: &TestApp) -> Value {
        app.tool_ok("send_message", self.arguments()).await
    }

    /// Sends to the server at `base_url` with [`tool_at`] and returns the result; fails the
    /// test when the tool refuses.
    pub async fn ok_at(&self, base_url: &str) -> Value {
        tool_at(base_url, "send_message", self.arguments()).await
    }
}
