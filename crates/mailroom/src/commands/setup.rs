//! What the subcommands that work on a data directory share: where it is, the core
//! configuration (defaults < environment < flags), the data-dir lock and logging.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use mailroom_core::CoreConfig;

/// The data directory when `--data-dir` is not given.
const DEFAULT_DATA_DIR: &str = "mailroom-data";

/// A non-empty environment variable.
pub fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

/// The `--data-dir` flag or its default.
pub fn data_dir(flag: Option<PathBuf>) -> PathBuf {
    flag.unwrap_or_else(|| PathBuf::from(DEFAULT_DATA_DIR))
}

/// The core configuration for `data_dir`: its defaults, then the environment.
pub fn core_config(data_dir: &Path) -> Result<CoreConfig> {
    let mut config = CoreConfig::for_data_dir(data_dir);
    config.apply_env(&env).map_err(anyhow::Error::msg).context("invalid environment")?;
    Ok(config)
}

/// Creates the data directory if needed, then holds an exclusive OS lock on
/// `DIR/server.lock` for the life of the process, so a second server (or a maintenance
/// command that writes) on the same data directory is refused instead of corrupting shared
/// state.
pub fn lock_data_dir(data_dir: &Path) -> Result<File> {
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("cannot create data directory {}", data_dir.display()))?;
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

/// Logs to stderr at `LOG_LEVEL` (default info).
pub fn init_logging() {
    let level = match env("LOG_LEVEL").unwrap_or_default().to_ascii_lowercase().as_str() {
        "debug" => tracing::Level::DEBUG,
        "trace" => tracing::Level::TRACE,
        "warn" | "warning" => tracing::Level::WARN,
        "error" => tracing::Level::ERROR,
        _ => tracing::Level::INFO,
    };
    tracing_subscriber::fmt().with_max_level(level).with_writer(std::io::stderr).init();
}
