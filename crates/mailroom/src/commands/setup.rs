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
    let Some(lock) = try_lock_file(&lock_path)? else {
        let pid = std::fs::read_to_string(&pid_path).unwrap_or_default();
        bail!(
            "Another mailroom server is already running for this data directory {} (PID: {}). \
             Stop it or choose another --data-dir.",
            data_dir.display(),
            pid.trim()
        );
    };
    let mut pid_file =
        File::create(&pid_path).with_context(|| format!("cannot write {}", pid_path.display()))?;
    writeln!(pid_file, "{}", std::process::id())?;
    Ok(lock)
}

/// Holds an exclusive OS lock on `<database>.lock` beside the database file, found by its
/// canonical path (symlinks and `..` resolved), for the life of the process: a second server
/// given the same database through `DATABASE_URL`, by any spelling, is refused like one on
/// the same data directory. (The lock is a file of its own: an extra descriptor on the
/// database file itself, once closed, would drop SQLite's own locks.)
pub fn lock_database(database: &Path) -> Result<File> {
    let name = database.file_name().context("the database path names no file")?;
    let parent = match database.parent() {
        Some(parent) if !parent.as_os_str().is_empty() => parent,
        _ => Path::new("."),
    };
    std::fs::create_dir_all(parent)
        .with_context(|| format!("cannot create the database's directory {}", parent.display()))?;
    let directory = parent
        .canonicalize()
        .with_context(|| format!("cannot resolve the database's directory {}", parent.display()))?;
    // A symlink to the database file resolves to the file it names.
    let file = directory.join(name);
    let file = file.canonicalize().unwrap_or(file);
    let mut lock_name = file.file_name().unwrap_or(name).to_os_string();
    lock_name.push(".lock");
    let lock_path = file.with_file_name(lock_name);
    let Some(mut lock) = try_lock_file(&lock_path)? else {
        let pid = std::fs::read_to_string(&lock_path).unwrap_or_default();
        bail!(
            "Another mailroom server is already using the database {} (PID: {}). Stop it or \
             point DATABASE_URL at another database.",
            file.display(),
            pid.trim()
        );
    };
    lock.set_len(0)?;
    writeln!(lock, "{}", std::process::id())?;
    Ok(lock)
}

/// Opens (creating) `path` and takes an exclusive OS lock on it, held while the file is open;
/// `None` when another process holds it.
fn try_lock_file(path: &Path) -> Result<Option<File>> {
    let file = OpenOptions::new()
        .create(true)
        .truncate(false)
        .read(true)
        .write(true)
        .open(path)
        .with_context(|| format!("cannot open {}", path.display()))?;
    Ok(file.try_lock().is_ok().then_some(file))
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
