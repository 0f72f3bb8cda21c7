//! What the subcommands that work on a data directory share: where it is, the core
//! configuration (defaults < environment < flags), the data-dir lock, the running server's
//! address file and logging.

use std::fs::{File, OpenOptions};
use std::io::{BufRead as _, Write as _};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use mailroom_core::CoreConfig;

/// The data directory when `--data-dir` is not given.
const DEFAULT_DATA_DIR: &str = "mailroom-data";
/// In the data directory: the lock a running server holds, its pid, and the log of a server
/// started in the background (by a stdio bridge; a service's plist).
const LOCK_FILE: &str = "server.lock";
const PID_FILE: &str = "server.pid";
pub const LOG_FILE: &str = "server.log";

/// The settings file read beside the process environment, as the reference reads its own.
pub const DOTENV: &str = ".env";

/// The variables of the `.env` in use ([`use_dotenv`]); none until one is chosen.
static DOTENV_VARS: std::sync::OnceLock<Vec<(String, String)>> = std::sync::OnceLock::new();

/// Reads `DIR/.env` for [`env`], once per process (a later call changes nothing). A missing
/// file is no settings; an unreadable one is an error naming it.
pub fn use_dotenv(dir: &Path) -> Result<()> {
    let path = dir.join(DOTENV);
    let vars = match std::fs::read_to_string(&path) {
        Ok(text) => env_file_variables(&text),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(e).with_context(|| format!("cannot read {}", path.display())),
    };
    let _ = DOTENV_VARS.set(vars);
    Ok(())
}

/// Refuses `what`, which works on SQLite's file, when the data directory's database is
/// PostgreSQL, saying what to do there instead.
pub fn refuse_on_postgres(config: &CoreConfig, what: &str, instead: &str) -> Result<()> {
    if let Some(postgres) = &config.postgres {
        bail!(
            "{what}: made for SQLite's database file, and DATABASE_URL names PostgreSQL ({}). \
             {instead}",
            mailroom_core::config::without_password(&postgres.url)
        );
    }
    Ok(())
}

/// What to do on PostgreSQL instead of restoring a backup's SQLite `file` over the database.
pub fn restore_on_postgres(file: &str) -> String {
    format!(
        "There, copy the backup's database into a new, empty PostgreSQL database \
         (`DATABASE_URL=sqlite:////path/to/the/backup/{file} mailroom copy-database --to \
         postgres://…`) and point the servers' DATABASE_URL at it."
    )
}

/// The directory holding an (absolute) data directory: where the operator keeps its `.env`
/// when the commands agents start (stdio, check-inbox) run inside the agents' projects.
pub fn operator_dir(data_dir: &Path) -> &Path {
    data_dir.parent().unwrap_or(data_dir)
}

/// For the commands agents run inside their projects: reads the `.env` beside the data
/// directory (`--data-dir` or its default), not the project's.
pub fn agent_dotenv(data_dir: Option<PathBuf>) -> Result<()> {
    let data_dir =
        std::path::absolute(self::data_dir(data_dir)).context("cannot resolve --data-dir")?;
    use_dotenv(operator_dir(&data_dir))
}

/// A setting: the process environment's value when the variable is set there (even empty, as
/// the reference's python-decouple has it), else the `.env`'s; `None` when empty or unset.
pub fn env(name: &str) -> Option<String> {
    let value = match std::env::var(name) {
        Ok(value) => Some(value),
        Err(std::env::VarError::NotPresent) => DOTENV_VARS
            .get()
            .and_then(|vars| vars.iter().rev().find(|(k, _)| k == name))
            .map(|(_, v)| v.clone()),
        Err(std::env::VarError::NotUnicode(_)) => None,
    };
    value.filter(|v| !v.is_empty())
}

/// The `NAME=value` lines of an environment file (blank lines and `#` comments skipped, an
/// `export ` prefix and one pair of quotes around a value removed), as python-decouple and
/// systemd's `EnvironmentFile` read them.
pub fn env_file_variables(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|line| !line.is_empty() && !line.starts_with('#'))
        .filter_map(|line| line.strip_prefix("export ").unwrap_or(line).split_once('='))
        .map(|(name, value)| {
            let value = value.trim();
            let unquoted = ['"', '\'']
                .iter()
                .find_map(|q| value.strip_prefix(*q).and_then(|v| v.strip_suffix(*q)))
                .unwrap_or(value);
            (name.trim().to_string(), unquoted.to_string())
        })
        .collect()
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
    try_lock_data_dir(data_dir)?.ok_or_else(|| server_running(data_dir))
}

/// How long a server or a command waits for a data directory another command (not a server)
/// holds: the shell commands, upkeep and the like hold it for their moment.
pub const COMMAND_WAIT: Duration = Duration::from_secs(30);

/// [`lock_data_dir`], waiting up to [`COMMAND_WAIT`] while the holder is a command rather than
/// a serving server (`server.json` names the lock holder's pid only when it serves): two
/// commands run together take turns instead of one failing, and a server a stdio bridge starts
/// waits for the command in its way. `serving` is asked on every turn whether to stop waiting
/// (a server turned up); its answer is returned instead of a lock.
pub fn wait_for_data_dir<T>(
    data_dir: &Path,
    mut serving: impl FnMut() -> Option<T>,
) -> Result<Result<File, T>> {
    let deadline = Instant::now() + COMMAND_WAIT;
    loop {
        if let Some(lock) = try_lock_data_dir(data_dir)? {
            return Ok(Ok(lock));
        }
        if let Some(server) = serving() {
            return Ok(Err(server));
        }
        if Instant::now() >= deadline {
            let pid = std::fs::read_to_string(data_dir.join(PID_FILE)).unwrap_or_default();
            bail!(
                "Another mailroom command has held the data directory {} for {} s (PID: {}); \
                 try again when it ends.",
                data_dir.display(),
                COMMAND_WAIT.as_secs(),
                pid.trim()
            );
        }
        std::thread::sleep(Duration::from_millis(25));
    }
}

/// Whether the holder of the data directory's lock serves it (its pid is `server.json`'s).
pub fn served(data_dir: &Path) -> bool {
    ServerAddress::read(data_dir).is_some_and(|a| server_pid(data_dir) == Some(a.pid))
}

/// Takes the data directory's lock if it is free (writing this process's pid beside it);
/// `None` when another process holds it.
fn try_lock_data_dir(data_dir: &Path) -> Result<Option<File>> {
    std::fs::create_dir_all(data_dir)
        .with_context(|| format!("cannot create data directory {}", data_dir.display()))?;
    let lock_path = data_dir.join(LOCK_FILE);
    let pid_path = data_dir.join(PID_FILE);
    let lock = OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(&lock_path)
        .with_context(|| format!("cannot open {}", lock_path.display()))?;
    if lock.try_lock().is_err() {
        return Ok(None);
    }
    let mut pid_file =
        File::create(&pid_path).with_context(|| format!("cannot write {}", pid_path.display()))?;
    writeln!(pid_file, "{}", std::process::id())?;
    Ok(Some(lock))
}

/// The refusal of a data directory a server holds.
pub fn server_running(data_dir: &Path) -> anyhow::Error {
    let pid = std::fs::read_to_string(data_dir.join(PID_FILE)).unwrap_or_default();
    anyhow::anyhow!(
        "Another mailroom server is already running for this data directory {} (PID: {}). \
         Stop it or choose another --data-dir.",
        data_dir.display(),
        pid.trim()
    )
}

/// The file in which a running server tells where it listens (`serve` writes it once bound,
/// removes it when it stops; stdio bridges read it).
const ADDRESS_FILE: &str = "server.json";

/// Where the server of a data directory listens, as `DIR/server.json` records it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerAddress {
    pub pid: u32,
    /// `http://host:port`, a host clients on this machine can reach.
    pub url: String,
}

impl ServerAddress {
    /// Records that this process serves `data_dir` at `local` (a wildcard host is reached
    /// through loopback).
    pub fn write(data_dir: &Path, local: std::net::SocketAddr) -> Result<()> {
        let host = match local.ip() {
            ip if ip.is_unspecified() && ip.is_ipv4() => "127.0.0.1".to_string(),
            ip if ip.is_unspecified() => "[::1]".to_string(),
            std::net::IpAddr::V6(ip) => format!("[{ip}]"),
            ip => ip.to_string(),
        };
        let record = serde_json::json!({
            "pid": std::process::id(),
            "url": format!("http://{host}:{}", local.port()),
        });
        let path = data_dir.join(ADDRESS_FILE);
        let temp = data_dir.join(format!("{ADDRESS_FILE}.{}", std::process::id()));
        std::fs::write(&temp, format!("{record}\n"))
            .and_then(|()| std::fs::rename(&temp, &path))
            .with_context(|| format!("cannot write {}", path.display()))
    }

    /// The address recorded in `data_dir`, if any (whether that server still runs is the
    /// caller's to check).
    pub fn read(data_dir: &Path) -> Option<Self> {
        let text = std::fs::read_to_string(data_dir.join(ADDRESS_FILE)).ok()?;
        let record: serde_json::Value = serde_json::from_str(&text).ok()?;
        Some(Self {
            pid: u32::try_from(record["pid"].as_u64()?).ok()?,
            url: record["url"].as_str()?.to_string(),
        })
    }

    /// Removes the record if this process wrote it.
    pub fn remove_own(data_dir: &Path) {
        if Self::read(data_dir).is_some_and(|a| a.pid == std::process::id()) {
            let _ = std::fs::remove_file(data_dir.join(ADDRESS_FILE));
        }
    }
}

/// Whether some process holds `DIR/server.lock` (a server runs for this data directory).
pub fn data_dir_in_use(data_dir: &Path) -> bool {
    let Ok(lock) = File::open(data_dir.join(LOCK_FILE)) else { return false };
    lock.try_lock_shared().is_err()
}

/// Refuses work that needs the data directory to itself (a restore, a reset) while a server
/// runs on it.
pub fn refuse_while_served(data_dir: &Path, doing: &str) -> Result<()> {
    if data_dir_in_use(data_dir) {
        let pid = server_pid(data_dir).map_or_else(|| "unknown".to_string(), |p| p.to_string());
        bail!(
            "a mailroom server is running on {} (PID: {pid}); stop it before {doing}",
            data_dir.display()
        );
    }
    Ok(())
}

/// Asks a yes-or-no `question` on the terminal; true for `y` or `yes`. Without a terminal to
/// ask on, it refuses, naming `--force`.
pub fn confirm(question: &str) -> Result<bool> {
    let Some(answer) = ask(&format!("{question} [y/N] "))? else {
        bail!("{question} Not asked, since standard input is not a terminal: pass --force");
    };
    Ok(matches!(answer.to_ascii_lowercase().as_str(), "y" | "yes"))
}

/// Prints `prompt` on stderr (stdout carries the command's answer, which a script may be
/// capturing) and reads one line from the terminal, trimmed; `None` when standard input is
/// not a terminal, where nobody could answer.
pub fn ask(prompt: &str) -> Result<Option<String>> {
    use std::io::{BufRead as _, IsTerminal as _};
    if !std::io::stdin().is_terminal() {
        return Ok(None);
    }
    eprint!("{prompt}");
    std::io::stderr().flush()?;
    let mut answer = String::new();
    std::io::stdin().lock().read_line(&mut answer)?;
    Ok(Some(answer.trim().to_string()))
}

/// The pid the data directory's server last recorded (it holds the lock while it runs).
pub fn server_pid(data_dir: &Path) -> Option<u32> {
    std::fs::read_to_string(data_dir.join(PID_FILE)).ok()?.trim().parse().ok()
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

/// Asks `question` on the terminal (on stderr: stdout carries the command's answer, which a
/// script may be capturing); whether the answer was yes. The caller checks that stdin is a
/// terminal.
pub fn ask_yes(question: &str) -> Result<bool> {
    eprint!("{question} [y/N] ");
    std::io::stderr().flush()?;
    let mut line = String::new();
    std::io::stdin().lock().read_line(&mut line)?;
    Ok(matches!(line.trim().to_ascii_lowercase().as_str(), "y" | "yes"))
}

/// Refuses when a server runs on `data_dir` (it holds `server.lock`): `why` says what the
/// command would replace under it.
pub fn refuse_running_server(data_dir: &Path, why: &str) -> Result<()> {
    if data_dir_in_use(data_dir) {
        let pid = server_pid(data_dir).map_or("unknown".to_string(), |p| p.to_string());
        bail!(
            "a mailroom server is running on {} (PID: {pid}): stop it first; {why}",
            data_dir.display()
        );
    }
    Ok(())
}

/// Logs to stderr at `LOG_LEVEL` (default info), as `LOG_FORMAT` says: `text` (the default)
/// or `json`, one object a line for log collectors. Any other format is refused.
pub fn init_logging() -> Result<()> {
    let level = match env("LOG_LEVEL").unwrap_or_default().to_ascii_lowercase().as_str() {
        "debug" => tracing::Level::DEBUG,
        "trace" => tracing::Level::TRACE,
        "warn" | "warning" => tracing::Level::WARN,
        "error" => tracing::Level::ERROR,
        _ => tracing::Level::INFO,
    };
    let json = match env("LOG_FORMAT").map(|f| f.to_ascii_lowercase()).as_deref() {
        None | Some("text") => false,
        Some("json") => true,
        Some(other) => bail!("LOG_FORMAT must be text or json, not {other:?}"),
    };
    let logs = tracing_subscriber::fmt().with_max_level(level).with_writer(std::io::stderr);
    if json {
        // An event's fields at the top level beside `timestamp`, `level` and `target`.
        logs.json().flatten_event(true).init();
    } else {
        // Colours only for a terminal: a log file (a background server's `server.log`) stays
        // text.
        logs.with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr())).init();
    }
    Ok(())
}
