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

/// Holds an exclusive OS lock on the database file itself (its inode: every spelling of its
/// path, symlinks and hard links included, meets the same lock) for the life of the process,
/// and writes the pid beside it (`<database>.pid`), so a second server given the same database
/// through `DATABASE_URL` is refused like one on the same data directory. The lock is
/// `flock`'s, which SQLite's own (`fcntl`) locks do not see; its descriptor stays open until
/// the process ends, since closing any descriptor of the file would drop SQLite's locks.
/// `Missing::Create` makes an empty database file to lock (the server, which opens it next);
/// `Missing::Skip` locks nothing when there is none (a reconstruction, which builds it).
pub fn lock_database(database: &Path, missing: Missing) -> Result<Option<File>> {
    if let Some(parent) = database.parent().filter(|p| !p.as_os_str().is_empty()) {
        std::fs::create_dir_all(parent).with_context(|| {
            format!("cannot create the database's directory {}", parent.display())
        })?;
    }
    if !database.exists() {
        if missing == Missing::Skip {
            return Ok(None);
        }
        // An empty file is a new database to SQLite.
        OpenOptions::new()
            .create(true)
            .append(true)
            .open(database)
            .with_context(|| format!("cannot create {}", database.display()))?;
    }
    let lock =
        File::open(database).with_context(|| format!("cannot open {}", database.display()))?;
    let canonical = database.canonicalize().unwrap_or_else(|_| database.to_path_buf());
    let mut pid_name = canonical.file_name().unwrap_or_default().to_os_string();
    pid_name.push(".pid");
    let pid_path = canonical.with_file_name(pid_name);
    if lock.try_lock().is_err() {
        // Reached by another hard link, the holder's pid file has another name.
        let pid = std::fs::read_to_string(&pid_path).unwrap_or_else(|_| "unknown".to_string());
        bail!(
            "Another mailroom server is already using the database {} (PID: {}). Stop it or \
             point DATABASE_URL at another database.",
            canonical.display(),
            pid.trim()
        );
    }
    // Best effort: the pid only names the holder in the refusal above.
    if let Err(e) = std::fs::write(&pid_path, format!("{}\n", std::process::id())) {
        tracing::warn!(path = %pid_path.display(), error = %e, "database pid file not written");
    }
    Ok(Some(lock))
}

/// What [`lock_database`] does when the database file does not exist yet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Missing {
    Create,
    Skip,
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
