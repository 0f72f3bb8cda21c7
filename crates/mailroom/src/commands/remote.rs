//! The running server of a data directory, for the commands that prefer it (as the
//! reference's CLI does): found by its lock and `server.json`, called over MCP with the
//! bearer token when one is set. Without one they work on the database themselves.

use std::path::Path;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use serde_json::{Value, json};

use super::shared::{self, ServerAddress};

/// How long a command waits for the server's answer (upkeep can scan a whole archive).
const CALL_TIMEOUT: Duration = Duration::from_secs(300);

/// A running server, with the client (and the runtime it runs on) every call of the command
/// shares.
pub struct Remote {
    url: String,
    token: Option<String>,
    http: reqwest::Client,
    runtime: tokio::runtime::Runtime,
}

impl Remote {
    /// The server holding `data_dir`, if one does. A server whose lock is held but whose
    /// address is unknown is an error: the command must not open the database beside it.
    pub fn find(data_dir: &Path) -> Result<Option<Self>> {
        if !shared::data_dir_in_use(data_dir) {
            return Ok(None);
        }
        let address = ServerAddress::read(data_dir)
            .filter(|a| shared::server_pid(data_dir) == Some(a.pid))
            .with_context(|| {
                format!(
                    "a server holds {} but its address is unknown; try again",
                    data_dir.display()
                )
            })?;
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        let http = reqwest::Client::builder().no_proxy().timeout(CALL_TIMEOUT).build()?;
        let token = shared::env("HTTP_BEARER_TOKEN");
        Ok(Some(Self { url: address.url, token, http, runtime }))
    }

    /// One JSON-RPC request; its `result`, or its error as this call's error.
    pub fn rpc(&self, method: &str, params: Value) -> Result<Value> {
        self.runtime.block_on(self.request(method, params))
    }

    async fn request(&self, method: &str, params: Value) -> Result<Value> {
        let body = json!({"jsonrpc": "2.0", "id": 1, "method": method, "params": params});
        let mut request = self
            .http
            .post(format!("{}/mcp", self.url))
            .header(reqwest::header::ACCEPT, "application/json, text/event-stream")
            .json(&body);
        if let Some(token) = &self.token {
            request = request.bearer_auth(token);
        }
        let response =
            request.send().await.with_context(|| format!("cannot reach {}", self.url))?;
        let status = response.status();
        if status == reqwest::StatusCode::UNAUTHORIZED {
            bail!("{} wants a bearer token: set HTTP_BEARER_TOKEN (or put it in .env)", self.url);
        }
        let mut answer: Value = response
            .json()
            .await
            .with_context(|| format!("{} answered {status} without JSON", self.url))?;
        if let Some(error) = answer.get("error") {
            bail!("{}: {}", self.url, error["message"].as_str().unwrap_or("unknown error"));
        }
        Ok(answer["result"].take())
    }
}
