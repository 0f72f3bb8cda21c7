//! Where a command's tool calls and resource reads go, as the reference's CLI decides: the data
//! directory's running server when there is one (over MCP, with the bearer token when set),
//! else this process, which opens the database itself (holding the data directory's lock) and
//! answers through the server's own dispatcher. Either way the command sees exactly what an
//! MCP client would.

use std::fs::File;
use std::path::Path;

use anyhow::{Context, Result, bail};
use mailroom_core::Mailroom;
use mailroom_server::mcp::dispatch::{self, Request};
use mailroom_server::mcp::envelope::Era;
use mailroom_server::{AppState, ServerConfig};
use serde_json::{Value, json};

use super::remote::Remote;
use super::shared;

/// A server to ask.
pub enum Backend {
    Server(Remote),
    Local(Local),
}

/// The data directory opened in this process.
pub struct Local {
    runtime: tokio::runtime::Runtime,
    state: AppState,
    _locks: (File, Option<File>),
}

impl Backend {
    /// The running server of `data_dir`, or the data directory itself. A data directory
    /// without a database is an error (nothing is created) unless `create`.
    pub fn open(data_dir: &Path, create: bool) -> Result<Self> {
        // A command holding the data directory for its moment (not a server) makes `find`
        // fail; that is waited for below.
        if let Ok(Some(server)) = Remote::find(data_dir) {
            return Ok(Backend::Server(server));
        }
        let config = shared::core_config(data_dir)?;
        let database = &config.database_path;
        let sqlite = config.postgres.is_none();
        if sqlite && !create && !database.is_file() {
            bail!(
                "{} holds no mailroom database (start the server there, or name --data-dir)",
                data_dir.display()
            );
        }
        if sqlite
            && database.is_file()
            && !mailroom_core::ops::doctor::is_mailroom_database(database)
        {
            bail!(
                "{} is not a mailroom database (is DATABASE_URL another program's?); not opening it",
                database.display()
            );
        }
        // Another command holding it is waited for; a server that turns up meanwhile is asked.
        let lock =
            match shared::wait_for_data_dir(data_dir, || Remote::find(data_dir).ok().flatten())? {
                Ok(lock) => lock,
                Err(server) => return Ok(Backend::Server(server)),
            };
        let database = if sqlite {
            shared::lock_database(&config.database_path, shared::Missing::Create)?
        } else {
            None
        };
        let mut server_config = ServerConfig::default();
        server_config
            .apply_env(&shared::env)
            .map_err(anyhow::Error::msg)
            .context("invalid environment")?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .context("cannot start the async runtime")?;
        // One call, most of them reads: the archive's repository is opened only if it writes.
        // On a database servers share, the archive and the upkeep are theirs: the work this
        // call queues is committed by their leader.
        let mut config = config;
        config.archive.open_on_first_work = true;
        if let Some(postgres) = &mut config.postgres {
            postgres.may_lead = false;
        }
        let state = runtime.block_on(async {
            let core = Mailroom::open(config)?;
            AppState::new(core, server_config).map_err(anyhow::Error::msg)
        })?;
        Ok(Backend::Local(Local { runtime, state, _locks: (lock, database) }))
    }

    /// Calls the tool `name`; its JSON result, or its error as this call's error.
    pub fn call_tool(&self, name: &str, arguments: Value) -> Result<Value> {
        let result = self.rpc("tools/call", json!({"name": name, "arguments": arguments}))?;
        let text = result["content"][0]["text"].as_str().unwrap_or_default();
        if result["isError"].as_bool().unwrap_or(false) {
            bail!("{name}: {text}");
        }
        serde_json::from_str(text)
            .with_context(|| format!("{name} answered text that is not JSON: {text}"))
    }

    /// Reads the resource `uri`; its JSON.
    pub fn read_resource(&self, uri: &str) -> Result<Value> {
        let result = self.rpc("resources/read", json!({"uri": uri}))?;
        let text = result["contents"][0]["text"].as_str().unwrap_or_default();
        serde_json::from_str(text)
            .with_context(|| format!("{uri} answered text that is not JSON: {text}"))
    }

    /// One JSON-RPC request; its `result`.
    fn rpc(&self, method: &str, params: Value) -> Result<Value> {
        match self {
            Backend::Server(server) => server.rpc(method, params),
            Backend::Local(local) => local.rpc(method, params),
        }
    }
}

impl Local {
    /// One JSON-RPC request through the dispatcher; its `result`, or its error.
    fn rpc(&self, method: &str, params: Value) -> Result<Value> {
        let request = Request { id: json!(1), method: method.to_string(), params };
        let response =
            self.runtime.block_on(dispatch::handle(&self.state, request, None, Era::Handshake));
        let text = response.into_text();
        let mut answer: Value =
            serde_json::from_str(&text).context("the dispatcher answered text that is not JSON")?;
        if let Some(error) = answer.get("error") {
            bail!("{}", error["message"].as_str().unwrap_or("unknown error"));
        }
        Ok(answer["result"].take())
    }
}

impl Drop for Local {
    fn drop(&mut self) {
        // Queued archive work is committed and the database checkpointed before the locks go.
        let core = self.state.core.clone();
        let _ = self
            .runtime
            .block_on(async move { tokio::task::spawn_blocking(move || core.close()).await });
    }
}
