//! `mailroom serve`: configuration (defaults < environment < flags), the data-dir lock, the
//! runtime, and graceful shutdown on SIGINT/SIGTERM.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use clap::Args;
use mailroom_core::{CoreConfig, Mailroom};
use mailroom_server::{AppState, ServerConfig};

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
}

/// Runs the server until SIGINT or SIGTERM.
pub fn run(args: ServeArgs) -> Result<()> {
    let env = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let data_dir = args.data_dir.clone().unwrap_or_else(|| PathBuf::from("mailroom-data"));
    let mut core_config = CoreConfig::for_data_dir(&data_dir);
    core_config.apply_env(&env).map_err(anyhow::Error::msg).context("invalid environment")?;
    let mut server_config = ServerConfig::default();
    server_config.apply_env(&env).map_err(anyhow::Error::msg).context("invalid environment")?;
    if let Some(host) = args.host {
        server_config.host = host;
    }
    if let Some(port) = args.port {
        server_config.port = port;
    }
    if let Some(path) = args.path {
        server_config.mcp_path = path;
    }
    init_logging(&env);
    std::fs::create_dir_all(&data_dir)
        .with_context(|| format!("cannot create data directory {}", data_dir.display()))?;
    let _lock = lock_data_dir(&data_dir)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .context("cannot start the async runtime")?;
    runtime.block_on(serve(core_config, server_config))
}

async fn serve(core_config: CoreConfig, mut server_config: ServerConfig) -> Result<()> {
    let database = core_config.database_path.clone();
    let core = Mailroom::open(core_config)
        .map_err(|e| anyhow::anyhow!(e.message))
        .with_context(|| format!("cannot open database {}", database.display()))?;
    let address = format!("{}:{}", server_config.host, server_config.port);
    let listener = tokio::net::TcpListener::bind(&address)
        .await
        .with_context(|| format!("cannot listen on {address}"))?;
    let local = listener.local_addr().context("no local address")?;
    server_config.port = local.port();
    tracing::info!(%local, database = %database.display(), "mailroom listening");
    println!("mailroom listening on http://{local} (MCP at /mcp)");
    let state = AppState::new(core, server_config);
    mailroom_server::serve(listener, state, shutdown_signal()).await.context("server failed")?;
    tracing::info!("mailroom stopped");
    Ok(())
}

async fn shutdown_signal() {
    let interrupt = tokio::signal::ctrl_c();
    #[cfg(unix)]
    {
        let mut terminate =
            match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
                Ok(signal) => signal,
                Err(_) => {
                    let _ = interrupt.await;
                    return;
                }
            };
        tokio::select! {
            _ = interrupt => {}
            _ = terminate.recv() => {}
        }
    }
    #[cfg(not(unix))]
    let _ = interrupt.await;
}

/// Holds an exclusive OS lock on `DIR/server.lock` for the life of the process, so a second
/// server on the same data directory is refused instead of corrupting shared state.
fn lock_data_dir(data_dir: &Path) -> Result<File> {
    let lock_path = data_dir.join("server.lock");
    let pid_path = data_dir.join("server.pid");
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .with_context(|| format!("cannot open {}", lock_path.display()))?;
    if lock.try_lock().is_err() {
        let pid = std::fs::read_to_string(&pid_path).unwrap_or_default();
        bail!(
            "Another mailroom server is already running for this data directory {} (PID: {}). \
             Stop it or choose another --data-dir.",
            data_dir.display(),
            pid.trim()
        );
    }
    let mut pid_file =
        File::create(&pid_path).with_context(|| format!("cannot write {}", pid_path.display()))?;
    writeln!(pid_file, "{}", std::process::id())?;
    Ok(lock)
}

fn init_logging(env: &dyn Fn(&str) -> Option<String>) {
    let level = match env("LOG_LEVEL").unwrap_or_default().to_ascii_lowercase().as_str() {
        "debug" => tracing::Level::DEBUG,
        "trace" => tracing::Level::TRACE,
        "warn" | "warning" => tracing::Level::WARN,
        "error" => tracing::Level::ERROR,
        _ => tracing::Level::INFO,
    };
    tracing_subscriber::fmt().with_max_level(level).with_writer(std::io::stderr).init();
}
