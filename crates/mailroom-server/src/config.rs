//! Settings of the HTTP front, read once at start-up (the reference's variable names:
//! docs/compat/settings.md §2, §4 and §9).

use crate::http::security::SecuritySettings;
use crate::mcp::format::OutputFormat;

/// HTTP settings.
#[derive(Debug, Clone)]
pub struct ServerConfig {
    /// Interface the server listens on (`HTTP_HOST`).
    pub host: String,
    /// Port the server listens on (`HTTP_PORT`); reported by health_check.
    pub port: u16,
    /// Extra MCP mount path (`HTTP_PATH`, reference default `/api/`); `/mcp` and `/api` always.
    pub mcp_path: String,
    /// Origins allowed besides loopback ones (`HTTP_CORS_ORIGINS`, CSV).
    pub allowed_origins: Vec<String>,
    /// Host header values allowed besides loopback names and the bind address
    /// (`HTTP_ALLOWED_HOSTS`, CSV; `*` disables the check).
    pub allowed_hosts: Vec<String>,
    /// Largest accepted request body.
    pub max_body_bytes: usize,
    /// Most MCP sessions kept at once; the least recently used is dropped beyond it.
    pub max_sessions: usize,
    /// `MAILROOM_TOOL_AUTH` (default false): tools demand registration tokens (or a session
    /// already bound to the agent) as the reference's HEAD does (docs/compat/tools.md §1.7).
    pub tool_auth: bool,
    /// `MCP_AGENT_MAIL_SESSION_BINDING_TTL_SECONDS` (default 86400, at least 60): how long an
    /// unused session binding lasts.
    pub session_binding_ttl_seconds: u64,
    /// `TOOLS_FILTER_*`: which tools are registered.
    pub tool_filter: crate::mcp::catalog::ToolFilter,
    /// Format of tool and resource results when the caller names none
    /// (`MCP_AGENT_MAIL_OUTPUT_FORMAT`, else `TOON_DEFAULT_FORMAT`; default JSON).
    pub default_format: OutputFormat,
    /// `HTTP_CORS_*`: `None` when CORS is off.
    pub cors: Option<crate::http::cors::CorsSettings>,
    /// Bearer token, roles and rate limits (`HTTP_BEARER_TOKEN`, `HTTP_RBAC_*`,
    /// `HTTP_RATE_LIMIT_*`).
    pub security: SecuritySettings,
    /// `NOTIFICATIONS_*`: the reference's signal files.
    pub signals: crate::signals::SignalSettings,
}

impl Default for ServerConfig {
    fn default() -> Self {
        Self {
            host: "127.0.0.1".to_string(),
            port: 8765,
            mcp_path: "/api/".to_string(),
            allowed_origins: Vec::new(),
            allowed_hosts: Vec::new(),
            max_body_bytes: 8 * 1024 * 1024,
            max_sessions: 10_000,
            tool_auth: false,
            session_binding_ttl_seconds: 86_400,
            tool_filter: crate::mcp::catalog::ToolFilter::Full,
            default_format: OutputFormat::Json,
            cors: Some(crate::http::cors::CorsSettings::default()),
            security: SecuritySettings::default(),
            signals: crate::signals::SignalSettings::default(),
        }
    }
}

impl ServerConfig {
    /// Applies the reference's environment variables on top of `self`.
    pub fn apply_env(&mut self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
        if let Some(host) = lookup("HTTP_HOST") {
            self.host = host;
        }
        if let Some(port) = lookup("HTTP_PORT") {
            self.port = port
                .trim()
                .parse()
                .map_err(|_| format!("HTTP_PORT must be a port, got {port:?}"))?;
        }
        if let Some(path) = lookup("HTTP_PATH") {
            check_mcp_path(&path).map_err(|e| format!("HTTP_PATH {e}"))?;
            self.mcp_path = path;
        }
        if let Some(origins) = lookup("HTTP_CORS_ORIGINS") {
            self.allowed_origins = csv(&origins);
        }
        self.cors = crate::http::cors::CorsSettings::from_env(lookup)?;
        if let Some(cors) = &self.cors {
            cors.check_origins(&self.allowed_origins)?;
        }
        if let Some(hosts) = lookup("HTTP_ALLOWED_HOSTS") {
            self.allowed_hosts = csv(&hosts);
        }
        if let Some(v) = lookup("MAILROOM_TOOL_AUTH") {
            self.tool_auth = mailroom_core::config::parse_bool("MAILROOM_TOOL_AUTH", &v)?;
        }
        if let Some(v) = lookup("MCP_AGENT_MAIL_SESSION_BINDING_TTL_SECONDS") {
            let seconds: u64 = v.trim().parse().map_err(|_| {
                format!("MCP_AGENT_MAIL_SESSION_BINDING_TTL_SECONDS must be seconds, got {v:?}")
            })?;
            self.session_binding_ttl_seconds = seconds.max(60);
        }
        self.tool_filter = crate::mcp::catalog::ToolFilter::from_env(lookup)?;
        self.security.apply_env(lookup)?;
        self.signals.apply_env(lookup)?;
        let format =
            lookup("MCP_AGENT_MAIL_OUTPUT_FORMAT").or_else(|| lookup("TOON_DEFAULT_FORMAT"));
        if let Some(format) = format {
            self.default_format = OutputFormat::parse(&format)?.unwrap_or(OutputFormat::Json);
        }
        Ok(())
    }
}

/// An extra MCP mount path: it starts with `/`, holds no route syntax (`{`, `}`, `*`), and is
/// not under the UI's or the health probes' paths (whose rules would then apply to it).
pub fn check_mcp_path(path: &str) -> Result<(), String> {
    let under = |prefix: &str| path == prefix || path.starts_with(&format!("{prefix}/"));
    if !path.starts_with('/') {
        Err(format!("must start with '/', got {path:?}"))
    } else if path.contains(['{', '}', '*']) {
        Err(format!("must be a plain path (no '{{', '}}' or '*'), got {path:?}"))
    } else if ["/mail", "/health", "/ready"].into_iter().any(under) {
        Err(format!("must not be under /mail, /health or /ready, got {path:?}"))
    } else {
        Ok(())
    }
}

/// Comma-separated values, trimmed, empty items dropped.
pub(crate) fn csv(value: &str) -> Vec<String> {
    value.split(',').map(str::trim).filter(|s| !s.is_empty()).map(str::to_string).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mcp::catalog::ToolFilter;

    #[test]
    fn auth_and_filter_settings_come_from_the_environment() {
        let mut config = ServerConfig::default();
        assert!(!config.tool_auth, "authentication is off by default");
        let env = |name: &str| match name {
            "MAILROOM_TOOL_AUTH" => Some("true".to_string()),
            "MCP_AGENT_MAIL_SESSION_BINDING_TTL_SECONDS" => Some("5".to_string()),
            "TOOLS_FILTER_ENABLED" => Some("1".to_string()),
            "TOOLS_FILTER_PROFILE" => Some("core".to_string()),
            _ => None,
        };
        config.apply_env(&env).expect("valid env");
        assert!(config.tool_auth);
        assert_eq!(config.session_binding_ttl_seconds, 60, "at least a minute");
        assert_eq!(config.tool_filter, ToolFilter::Core);
        let bad = |name: &str| (name == "MAILROOM_TOOL_AUTH").then(|| "perhaps".to_string());
        assert!(ServerConfig::default().apply_env(&bad).is_err());
        for path in ["/agent-mail/", "/api/", "/mailbox"] {
            assert_eq!(check_mcp_path(path), Ok(()), "{path}");
        }
        for path in ["api", "/{x}", "/*rest", "/mail", "/mail/mcp", "/health/mcp", "/ready"] {
            assert!(check_mcp_path(path).is_err(), "{path}");
        }
    }

    fn with_env(pairs: &[(&str, &str)]) -> Result<ServerConfig, String> {
        let mut config = ServerConfig::default();
        config.apply_env(&|name| {
            pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_string())
        })?;
        Ok(config)
    }

    #[test]
    fn default_output_format_comes_from_the_reference_variables() {
        assert_eq!(with_env(&[]).map(|c| c.default_format), Ok(OutputFormat::Json));
        let toon = with_env(&[("TOON_DEFAULT_FORMAT", "toon")]);
        assert_eq!(toon.map(|c| c.default_format), Ok(OutputFormat::Toon));
        let both =
            with_env(&[("MCP_AGENT_MAIL_OUTPUT_FORMAT", "json"), ("TOON_DEFAULT_FORMAT", "toon")]);
        assert_eq!(both.map(|c| c.default_format), Ok(OutputFormat::Json), "the first one wins");
        let auto = with_env(&[("MCP_AGENT_MAIL_OUTPUT_FORMAT", "auto")]);
        assert_eq!(auto.map(|c| c.default_format), Ok(OutputFormat::Json));
        assert!(with_env(&[("MCP_AGENT_MAIL_OUTPUT_FORMAT", "xml")]).is_err());
    }
}
