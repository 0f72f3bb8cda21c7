//! Settings the core needs, read once at start-up and passed explicitly.
//!
//! The variable names are the reference's (docs/compat/settings.md) so that an environment written
//! for the reference configures mailroom unchanged. Nothing outside start-up reads the environment.

use std::path::PathBuf;

pub use crate::env_value::parse_bool;

/// How `register_agent`/`create_agent_identity` treat a requested name (docs/compat/tools.md
/// §1.6, "Enforcement mode").
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NameEnforcement {
    /// Invalid names are an error.
    Strict,
    /// Invalid names are silently replaced by a generated one (the reference's default).
    Coerce,
    /// Requested names are ignored; a name is always generated.
    AlwaysAuto,
}

/// Core settings.
#[derive(Debug, Clone)]
pub struct CoreConfig {
    /// `APP_ENVIRONMENT`.
    pub environment: String,
    /// SQLite database file.
    pub database_path: PathBuf,
    /// The `DATABASE_URL` shown by health_check and config resources.
    pub database_url: String,
    /// The PostgreSQL database when `DATABASE_URL` names one (`postgres://`,
    /// `postgresql://`); `None`: SQLite at `database_path`.
    pub postgres: Option<crate::store::db::postgres::PgSettings>,
    /// Git archive root (`STORAGE_ROOT`).
    pub storage_root: PathBuf,
    /// `WORKTREES_ENABLED` or `GIT_IDENTITY_ENABLED`: identity fields, product bus, build slots.
    pub worktrees_enabled: bool,
    /// `CONTACT_ENFORCEMENT_ENABLED`.
    pub contact_enforcement_enabled: bool,
    /// `FILE_RESERVATIONS_ENFORCEMENT_ENABLED`: other agents' reservations on mail-archive
    /// paths (`agents/`, `messages/`, ...) block deliveries that would write there.
    pub reservations_enforcement_enabled: bool,
    /// `CONTACT_AUTO_TTL_SECONDS`: the recent-contact window of the `auto` policy.
    pub contact_auto_ttl_seconds: i64,
    /// `IDEMPOTENCY_WINDOW_SECONDS`: how long the first answer of a write given an
    /// `idempotency_key` is kept for its retries (default 86400, one day).
    pub idempotency_window_seconds: i64,
    /// `MESSAGING_AUTO_HANDSHAKE_ON_BLOCK`: blocked sends file contact requests automatically.
    pub auto_handshake_on_block: bool,
    /// `MESSAGING_AUTO_REGISTER_RECIPIENTS`: unknown local recipients are registered on send.
    pub auto_register_recipients: bool,
    /// `AGENT_NAME_ENFORCEMENT_MODE`.
    pub name_enforcement: NameEnforcement,
    /// Number of read-only SQLite connections.
    pub reader_connections: usize,
    /// `RETENTION_IGNORE_PROJECT_PATTERNS` (CSV of fnmatch patterns): projects whose slug or
    /// human key matches are hidden from the project-list resources.
    pub retention_ignore_project_patterns: Vec<String>,
    /// `FILE_RESERVATION_INACTIVITY_SECONDS`: a holder idle this long may have stale
    /// reservations (default 1800).
    pub reservation_inactivity_seconds: i64,
    /// `FILE_RESERVATION_ACTIVITY_GRACE_SECONDS`: mail, file or Git activity this recent
    /// keeps an idle holder's reservations alive (default 900).
    pub reservation_grace_seconds: i64,
    /// The Git archive (`STORAGE_ROOT`). `ARCHIVE_ENABLED=false` (a mailroom extra) runs
    /// on SQLite alone, for benchmarks and throwaway servers.
    pub archive: ArchiveConfig,
    /// The optional LLM (`LLM_ENABLED`, `OPENAI_BASE_URL`, ...; see `crate::llm`).
    pub llm: crate::llm::LlmConfig,
    /// `MCP_AGENT_MAIL_WINDOW_ID`: this server's window identity UUID, which vouches for the
    /// agent whose name it shows when a tool call carries no token.
    pub window_id: Option<String>,
    /// `MCP_AGENT_MAIL_WINDOW_TTL_DAYS` (default 30): how long a window identity lives after
    /// its last registration.
    pub window_ttl_days: i64,
    /// The background upkeep's schedules and thresholds (`AUTO_RETIRE_STALE_AGENTS_*`,
    /// `FILE_RESERVATIONS_CLEANUP_*`, `ACK_TTL_*`).
    pub upkeep: crate::ops::upkeep::UpkeepConfig,
    /// Webhook deliveries: timeout, retries, concurrency, retention (`WEBHOOK_*`).
    pub webhooks: crate::ops::webhooks::WebhookConfig,
    /// The search index beside the database (`crate::search_index`).
    pub search_index: SearchIndexConfig,
}

/// Where the search index lives and whether this process keeps it up to date.
#[derive(Debug, Clone)]
pub struct SearchIndexConfig {
    /// Its directory (`<data dir>/search-index`); `None` when `SEARCH_INDEX_ENABLED=false`
    /// (a mailroom extra): every search asks the database.
    pub dir: Option<PathBuf>,
    /// This process feeds it (a server); a one-call command only reads it.
    pub writes: bool,
}

/// Settings of the Git archive and its attachments.
#[derive(Debug, Clone)]
pub struct ArchiveConfig {
    /// `ARCHIVE_ENABLED` (default true).
    pub enabled: bool,
    /// `GIT_AUTHOR_NAME` / `GIT_AUTHOR_EMAIL`.
    pub author_name: String,
    pub author_email: String,
    /// `ARCHIVE_COMMIT_WINDOW_MS`: the longest a change waits to share a commit (default 50).
    pub commit_window_ms: u64,
    /// `ARCHIVE_QUEUE_CAPACITY`: rows the archive may lag before writers wait (default 8192).
    pub queue_capacity: u64,
    /// `ARCHIVE_WORKTREE_MAX_FILES`: index entries past which the oldest month leaves the
    /// work tree (default 250,000; 0: no limit). See `archive/work_tree.rs`.
    pub worktree_max_files: u64,
    /// `CONVERT_IMAGES` (default true).
    pub convert_images: bool,
    /// `INLINE_IMAGE_MAX_BYTES` (default 65536).
    pub inline_image_max_bytes: usize,
    /// `KEEP_ORIGINAL_IMAGES` (default false).
    pub keep_original_images: bool,
    /// `ALLOW_ABSOLUTE_ATTACHMENT_PATHS` (default false).
    pub allow_absolute_attachment_paths: bool,
    /// Open the repository only when there is work for it, not at start (default false): for
    /// a command that opens the data directory for one call, most of which only read, where
    /// reading a large archive's index would cost more than the call.
    pub open_on_first_work: bool,
}

impl Default for ArchiveConfig {
    fn default() -> Self {
        Self {
            enabled: true,
            author_name: "mcp-agent".to_string(),
            author_email: "mcp-agent@example.com".to_string(),
            commit_window_ms: 50,
            queue_capacity: 8192,
            worktree_max_files: 250_000,
            convert_images: true,
            inline_image_max_bytes: 65_536,
            keep_original_images: false,
            allow_absolute_attachment_paths: false,
            open_on_first_work: false,
        }
    }
}

impl CoreConfig {
    /// Defaults for a data directory: database and archive both live under it.
    pub fn for_data_dir(data_dir: impl Into<PathBuf>) -> Self {
        let data_dir = data_dir.into();
        let database_path = data_dir.join("mailroom.sqlite3");
        Self {
            environment: "development".to_string(),
            database_url: format!("sqlite+aiosqlite:///{}", database_path.display()),
            database_path,
            postgres: None,
            storage_root: data_dir.join("archive"),
            worktrees_enabled: false,
            contact_enforcement_enabled: true,
            reservations_enforcement_enabled: true,
            contact_auto_ttl_seconds: 86_400,
            idempotency_window_seconds: 86_400,
            auto_handshake_on_block: true,
            auto_register_recipients: false,
            name_enforcement: NameEnforcement::Coerce,
            reader_connections: 4,
            retention_ignore_project_patterns: [
                "demo",
                "test*",
                "testproj*",
                "testproject",
                "backendproj*",
                "frontendproj*",
            ]
            .map(str::to_string)
            .to_vec(),
            reservation_inactivity_seconds: 1800,
            reservation_grace_seconds: 900,
            archive: ArchiveConfig::default(),
            llm: crate::llm::LlmConfig::default(),
            window_id: None,
            window_ttl_days: 30,
            upkeep: crate::ops::upkeep::UpkeepConfig::default(),
            webhooks: crate::ops::webhooks::WebhookConfig::default(),
            search_index: SearchIndexConfig {
                dir: Some(data_dir.join("search-index")),
                writes: true,
            },
        }
    }

    /// Applies the reference's environment variables on top of `self`.
    ///
    /// `lookup` is the environment (a closure so tests need not touch the process env).
    /// Invalid values are reported, not ignored, so a typo does not silently run defaults.
    pub fn apply_env(&mut self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
        if let Some(v) = lookup("APP_ENVIRONMENT") {
            self.environment = v;
        }
        if let Some(url) = lookup("DATABASE_URL") {
            if url.starts_with("postgres://") || url.starts_with("postgresql://") {
                self.postgres = Some(crate::store::db::postgres::PgSettings {
                    url: url.clone(),
                    pool_size: 8,
                    statement_timeout_ms: 30_000,
                    connect_timeout: std::time::Duration::from_secs(10),
                    may_lead: true,
                });
                // Reported by health_check and the config resource: never the password.
                self.database_url = without_password(&url);
            } else {
                self.database_path = database_path_from_url(&url)?;
                self.postgres = None;
                self.database_url = url;
            }
        }
        if let Some(settings) = self.postgres.as_mut() {
            settings.pool_size = number(lookup, "DATABASE_POOL_SIZE", settings.pool_size)?.max(1);
            settings.statement_timeout_ms =
                number(lookup, "DATABASE_STATEMENT_TIMEOUT_MS", settings.statement_timeout_ms)?;
            let connect =
                number(lookup, "DATABASE_POOL_TIMEOUT", settings.connect_timeout.as_secs())?;
            settings.connect_timeout = std::time::Duration::from_secs(connect.max(1));
        }
        if let Some(root) = lookup("STORAGE_ROOT") {
            self.storage_root = expand_home(&root, lookup);
        }
        if let Some(patterns) = lookup("RETENTION_IGNORE_PROJECT_PATTERNS") {
            self.retention_ignore_project_patterns = patterns
                .split(',')
                .map(str::trim)
                .filter(|p| !p.is_empty())
                .map(str::to_string)
                .collect();
        }
        let flag = |name: &str, current: bool| -> Result<bool, String> {
            lookup(name).map_or(Ok(current), |v| parse_bool(name, &v))
        };
        if !flag("SEARCH_INDEX_ENABLED", self.search_index.dir.is_some())? {
            self.search_index.dir = None;
        }
        self.worktrees_enabled = flag("WORKTREES_ENABLED", self.worktrees_enabled)?
            || flag("GIT_IDENTITY_ENABLED", false)?;
        self.contact_enforcement_enabled =
            flag("CONTACT_ENFORCEMENT_ENABLED", self.contact_enforcement_enabled)?;
        self.reservations_enforcement_enabled =
            flag("FILE_RESERVATIONS_ENFORCEMENT_ENABLED", self.reservations_enforcement_enabled)?;
        self.auto_handshake_on_block =
            flag("MESSAGING_AUTO_HANDSHAKE_ON_BLOCK", self.auto_handshake_on_block)?;
        self.auto_register_recipients =
            flag("MESSAGING_AUTO_REGISTER_RECIPIENTS", self.auto_register_recipients)?;
        if let Some(v) = lookup("CONTACT_AUTO_TTL_SECONDS") {
            self.contact_auto_ttl_seconds = v
                .trim()
                .parse()
                .map_err(|_| format!("CONTACT_AUTO_TTL_SECONDS must be an integer, got {v:?}"))?;
        }
        self.idempotency_window_seconds =
            number(lookup, "IDEMPOTENCY_WINDOW_SECONDS", self.idempotency_window_seconds)?;
        self.reservation_inactivity_seconds = number(
            lookup,
            "FILE_RESERVATION_INACTIVITY_SECONDS",
            self.reservation_inactivity_seconds,
        )?;
        self.reservation_grace_seconds = number(
            lookup,
            "FILE_RESERVATION_ACTIVITY_GRACE_SECONDS",
            self.reservation_grace_seconds,
        )?;
        if let Some(v) = lookup("MCP_AGENT_MAIL_WINDOW_ID") {
            self.window_id = Some(v.trim().to_string()).filter(|v| !v.is_empty());
        }
        self.window_ttl_days =
            number(lookup, "MCP_AGENT_MAIL_WINDOW_TTL_DAYS", self.window_ttl_days)?;
        // Both become stored expiry times, which must stay within what the database holds.
        let max_seconds = crate::model::bounds::MAX_DURATION_SECONDS;
        if !(0..=max_seconds).contains(&self.contact_auto_ttl_seconds) {
            return Err(format!(
                "CONTACT_AUTO_TTL_SECONDS must be between 0 and {max_seconds} (ten years), got {}",
                self.contact_auto_ttl_seconds
            ));
        }
        if !(1..=max_seconds).contains(&self.idempotency_window_seconds) {
            return Err(format!(
                "IDEMPOTENCY_WINDOW_SECONDS must be between 1 and {max_seconds} (ten years), got {}",
                self.idempotency_window_seconds
            ));
        }
        if !(0..=max_seconds / 86_400).contains(&self.window_ttl_days) {
            return Err(format!(
                "MCP_AGENT_MAIL_WINDOW_TTL_DAYS must be between 0 and {} (ten years), got {}",
                max_seconds / 86_400,
                self.window_ttl_days
            ));
        }
        self.apply_archive_env(lookup, &flag)?;
        self.llm.apply_env(lookup)?;
        self.upkeep.apply_env(lookup)?;
        self.webhooks.apply_env(lookup)?;
        if let Some(v) = lookup("AGENT_NAME_ENFORCEMENT_MODE") {
            self.name_enforcement = match v.trim().to_ascii_lowercase().as_str() {
                "strict" => NameEnforcement::Strict,
                "always_auto" => NameEnforcement::AlwaysAuto,
                _ => NameEnforcement::Coerce,
            };
        }
        Ok(())
    }
}

impl CoreConfig {
    fn apply_archive_env(
        &mut self,
        lookup: &dyn Fn(&str) -> Option<String>,
        flag: &dyn Fn(&str, bool) -> Result<bool, String>,
    ) -> Result<(), String> {
        let archive = &mut self.archive;
        archive.enabled = flag("ARCHIVE_ENABLED", archive.enabled)?;
        archive.convert_images = flag("CONVERT_IMAGES", archive.convert_images)?;
        archive.keep_original_images = flag("KEEP_ORIGINAL_IMAGES", archive.keep_original_images)?;
        archive.allow_absolute_attachment_paths =
            flag("ALLOW_ABSOLUTE_ATTACHMENT_PATHS", archive.allow_absolute_attachment_paths)?;
        if let Some(v) = lookup("GIT_AUTHOR_NAME").filter(|v| !v.trim().is_empty()) {
            archive.author_name = v;
        }
        if let Some(v) = lookup("GIT_AUTHOR_EMAIL").filter(|v| !v.trim().is_empty()) {
            archive.author_email = v;
        }
        archive.commit_window_ms =
            number(lookup, "ARCHIVE_COMMIT_WINDOW_MS", archive.commit_window_ms)?;
        archive.queue_capacity = number(lookup, "ARCHIVE_QUEUE_CAPACITY", archive.queue_capacity)?;
        archive.worktree_max_files =
            number(lookup, "ARCHIVE_WORKTREE_MAX_FILES", archive.worktree_max_files)?;
        archive.inline_image_max_bytes =
            number(lookup, "INLINE_IMAGE_MAX_BYTES", archive.inline_image_max_bytes)?;
        Ok(())
    }
}

fn number<T: std::str::FromStr>(
    lookup: &dyn Fn(&str) -> Option<String>,
    name: &str,
    current: T,
) -> Result<T, String> {
    match lookup(name) {
        None => Ok(current),
        Some(v) => v
            .trim()
            .parse()
            .map_err(|_| format!("{name} must be a non-negative integer, got {v:?}")),
    }
}

/// Extracts the file path from a `sqlite[+driver]:///path` URL, refusing other backends.
pub fn database_path_from_url(url: &str) -> Result<PathBuf, String> {
    let Some((scheme, rest)) = url.split_once("://") else {
        return Err(format!("DATABASE_URL is not a URL: {url:?}"));
    };
    if scheme != "sqlite" && !scheme.starts_with("sqlite+") {
        return Err(format!(
            "DATABASE_URL uses an unsupported backend {scheme:?}; SQLite (sqlite:///path) and \
             PostgreSQL (postgres://…) are supported"
        ));
    }
    let path = rest.strip_prefix('/').unwrap_or(rest);
    if path.is_empty() || path == ":memory:" {
        return Err("DATABASE_URL must name a database file".to_string());
    }
    Ok(PathBuf::from(path))
}

/// A URL with its password, if any, shown as `***`: the user part's and a `password=`
/// query parameter's (libpq takes both).
pub fn without_password(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else { return url.to_string() };
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let rest = match rest[..authority_end].rfind('@') {
        Some(at) => match rest[..at].split_once(':') {
            Some((user, _)) => format!("{user}:***{}", &rest[at..]),
            None => rest.to_string(),
        },
        None => rest.to_string(),
    };
    let Some((path, query)) = rest.split_once('?') else { return format!("{scheme}://{rest}") };
    let query: Vec<String> = query
        .split('&')
        .map(|pair| match pair.split_once('=') {
            Some((key, _)) if key.eq_ignore_ascii_case("password") => format!("{key}=***"),
            _ => pair.to_string(),
        })
        .collect();
    format!("{scheme}://{path}?{}", query.join("&"))
}

/// `path` with a leading `~` or `~/` taken as the home directory (`HOME`, read through
/// `lookup`); as it is otherwise, or when `HOME` is unset.
pub fn expand_home(path: &str, lookup: &dyn Fn(&str) -> Option<String>) -> PathBuf {
    match (path, lookup("HOME")) {
        ("~", Some(home)) => PathBuf::from(home),
        (path, Some(home)) if path.starts_with("~/") => PathBuf::from(home).join(&path[2..]),
        (path, _) => PathBuf::from(path),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A PostgreSQL URL selects the backend with every setting read, and the URL reported
    /// (health_check, the config resource) carries no password.
    #[test]
    fn a_postgres_url_selects_postgres_and_hides_its_password() {
        let mut config = CoreConfig::for_data_dir("/d");
        let env = |name: &str| match name {
            "DATABASE_URL" => Some("postgresql://mr:s3cret@db:5432/mail?sslmode=disable".into()),
            "DATABASE_POOL_SIZE" => Some("3".into()),
            "DATABASE_STATEMENT_TIMEOUT_MS" => Some("1500".into()),
            _ => None,
        };
        config.apply_env(&env).expect("applies");
        let settings = config.postgres.as_ref().expect("postgres selected");
        assert_eq!(settings.url, "postgresql://mr:s3cret@db:5432/mail?sslmode=disable");
        assert_eq!((settings.pool_size, settings.statement_timeout_ms), (3, 1500));
        assert_eq!(config.database_url, "postgresql://mr:***@db:5432/mail?sslmode=disable");
        for (url, shown) in [
            ("postgres://mr@db/mail", "postgres://mr@db/mail"),
            ("postgres://db/mail", "postgres://db/mail"),
            ("postgres://a:b:c@db/x@y", "postgres://a:***@db/x@y"),
            (
                "postgres://db/x?user=u&password=p&sslmode=x",
                "postgres://db/x?user=u&password=***&sslmode=x",
            ),
        ] {
            assert_eq!(without_password(url), shown, "{url}");
        }
        let bad = |name: &str| (name == "DATABASE_URL").then(|| "mysql://db/x".to_string());
        let refused = CoreConfig::for_data_dir("/d").apply_env(&bad).expect_err("refused");
        assert!(refused.contains("PostgreSQL (postgres://…) are supported"), "{refused}");
    }

    fn check(url: &str, expected: Result<&str, ()>) {
        let got = database_path_from_url(url);
        match expected {
            Ok(path) => assert_eq!(got, Ok(PathBuf::from(path)), "{url}"),
            Err(()) => assert!(got.is_err(), "{url} should be refused, got {got:?}"),
        }
    }

    #[test]
    fn database_urls() {
        check("sqlite+aiosqlite:///./storage.sqlite3", Ok("./storage.sqlite3"));
        check("sqlite:////var/db/mail.sqlite3", Ok("/var/db/mail.sqlite3"));
        check("postgresql://localhost/db", Err(()));
        check("sqlite:///:memory:", Err(()));
        check("storage.sqlite3", Err(()));
    }

    #[test]
    fn env_overrides_defaults_and_rejects_bad_values() {
        let mut config = CoreConfig::for_data_dir("/data");
        let env = |name: &str| match name {
            "WORKTREES_ENABLED" => Some("yes".to_string()),
            "AGENT_NAME_ENFORCEMENT_MODE" => Some("strict".to_string()),
            "FILE_RESERVATIONS_ENFORCEMENT_ENABLED" => Some("false".to_string()),
            _ => None,
        };
        assert!(config.reservations_enforcement_enabled, "on by default");
        config.apply_env(&env).expect("valid env");
        assert!(config.worktrees_enabled);
        assert!(!config.reservations_enforcement_enabled);
        assert_eq!(config.name_enforcement, NameEnforcement::Strict);
        let bad = |name: &str| (name == "CONTACT_ENFORCEMENT_ENABLED").then(|| "maybe".to_string());
        assert!(config.apply_env(&bad).is_err());
    }
}
