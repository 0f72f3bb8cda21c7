//! `mailroom serve`: configuration (defaults < environment < flags), the data-dir lock, the
//! runtime, and graceful shutdown on SIGINT/SIGTERM.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use clap::Args;
use mailroom_core::{CoreConfig, Mailroom};
use mailroom_server::{AppState, ServerConfig};

use super::shared::{self, env};

/// Flags of `mailroom serve`; each overrides the environment variable named beside it.
#[derive(Args, Debug)]
pub struct ServeArgs {
    /// Interface to listen on [env: HTTP_HOST] [default: 127.0.0.1]
    #[arg(long)]
    host: Option<String>,
    /// Port to listen on; 0 picks a free one [env: HTTP_PORT] [default: 8765]
    #[arg(long)]
    port: Option<u16>,
    /// Directory for the database and the archive [default: ./mailroom-data]
    #[arg(long, value_name = "DIR")]
    data_dir: Option<PathBuf>,
    /// Extra MCP mount path besides /mcp and /api [env: HTTP_PATH] [default: /api/]
    #[arg(long)]
    path: Option<String>,
    /// Speak MCP over stdin/stdout (for clients that start their server as a command):
    /// bridges to the data directory's running server, starting one in the background
    /// when none runs
    #[arg(long)]
    pub stdio: bool,
}

impl ServeArgs {
    /// The data directory these flags name.
    pub fn data_dir(&self) -> PathBuf {
        shared::data_dir(self.data_dir.clone())
    }

    /// The flags that shape the listener (`--host`, `--port`, `--path`), as given, for a
    /// server started on these flags' behalf.
    pub fn listener_flags(&self) -> Vec<String> {
        let mut flags = Vec::new();
        if let Some(host) = &self.host {
            flags.extend(["--host".to_string(), host.clone()]);
        }
        if let Some(port) = self.port {
            flags.extend(["--port".to_string(), port.to_string()]);
        }
        if let Some(path) = &self.path {
            flags.extend(["--path".to_string(), path.clone()]);
        }
        flags
    }
}

/// Runs the server until SIGINT or SIGTERM (with `--stdio`, the stdio bridge until its
/// input ends).
pub fn run(args: ServeArgs) -> Result<()> {
    if args.stdio {
        return super::stdio::run(&args);
    }
    let data_dir = args.data_dir();
    let core_config = shared::core_config(&data_dir)?;
    let mut server_config = ServerConfig::default();
    server_config.apply_env(&env).map_err(anyhow::Error::msg).context("invalid environment")?;
    if let Some(host) = args.host {
        server_config.host = host;
    }
    if let Some(port) = args.port {
        server_config.port = port;
    }
    if let Some(path) = args.path {
        mailroom_server::config::check_mcp_path(&path)
            .map_err(|e| anyhow::anyhow!("--path {e}"))?;
        server_config.mcp_path = path;
    }
    shared::init_logging()?;
    // A command holding the data directory for its moment is waited for; a server is not.
    let _lock = shared::wait_for_data_dir(&data_dir, || shared::served(&data_dir).then_some(()))?
        .map_err(|()| shared::server_running(&data_dir))?;
    // A PostgreSQL database is claimed by the store itself (an advisory lock).
    let _database_lock = match core_config.postgres {
        Some(_) => None,
        None => shared::lock_database(&core_config.database_path, shared::Missing::Create)?,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(serve(&data_dir, core_config, server_config))
}

async fn serve(
    data_dir: &Path,
    core_config: CoreConfig,
    mut server_config: ServerConfig,
) -> Result<()> {
    let database = match &core_config.postgres {
        Some(_) => core_config.database_url.clone(),
        None => core_config.database_path.display().to_string(),
    };
    // The core's messages name what failed (the database file or the archive root).
    let core = Mailroom::open(core_config)?;
    let address = format!("{}:{}", server_config.host, server_config.port);
    let listener = tokio::net::TcpListener::bind(&address)
        .await
        .with_context(|| format!("cannot listen on {address}"))?;
    let local = listener.local_addr().context("no local address")?;
    server_config.port = local.port();
    let state = AppState::new(core, server_config).map_err(anyhow::Error::msg)?;
    // Everything a signal needs is in place before the announcement: a SIGTERM sent as soon as
    // the line appears stops the server gracefully instead of killing it.
    let shutdown = shutdown_signal();
    shared::ServerAddress::write(data_dir, local)?;
    tracing::info!(%local, %database, "mailroom listening");
    println!("mailroom listening on http://{local} (MCP at /mcp)");
    let served = mailroom_server::serve(listener, state, shutdown).await.context("server failed");
    shared::ServerAddress::remove_own(data_dir);
    served?;
    tracing::info!("mailroom stopped");
    Ok(())
}

/// Resolves on SIGINT or SIGTERM. The Unix handlers are registered here, when called, not
/// when first polled.
fn shutdown_signal() -> impl std::future::Future<Output = ()> + Send + 'static {
    #[cfg(unix)]
    let handlers = {
        use tokio::signal::unix::{SignalKind, signal};
        signal(SignalKind::interrupt()).and_then(|i| Ok((i, signal(SignalKind::terminate())?)))
    };
    async move {
        #[cfg(unix)]
        if let Ok((mut interrupt, mut terminate)) = handlers {
            tokio::select! {
                _ = interrupt.recv() => {}
                _ = terminate.recv() => {}
            }
            return;
        }
        let _ = tokio::signal::ctrl_c().await;
    }
}
