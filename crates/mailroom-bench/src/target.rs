//! What is measured: a server's address and the paths its implementation uses.

use std::fmt;
use std::str::FromStr;

use anyhow::{Context, Result, bail};

/// Which Agent Mail implementation serves the target; it decides the health, readiness and
/// MCP paths (the benchmark plan's endpoint mapping; README's "Load lab"), so both are driven
/// with identical parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Implementation {
    Mailroom,
    PythonReference,
}

impl Implementation {
    /// Liveness: no I/O.
    pub fn health_path(self) -> &'static str {
        match self {
            Implementation::Mailroom => "/health",
            Implementation::PythonReference => "/health/liveness",
        }
    }

    /// Readiness: a database round trip.
    pub fn ready_path(self) -> &'static str {
        match self {
            Implementation::Mailroom => "/ready",
            Implementation::PythonReference => "/health/readiness",
        }
    }

    /// The MCP endpoint (the reference mounts FastMCP at `/mcp/`).
    pub fn mcp_path(self) -> &'static str {
        match self {
            Implementation::Mailroom => "/mcp",
            Implementation::PythonReference => "/mcp/",
        }
    }

    /// Whether the implementation has the REST routes (docs/compat/http.md §5).
    pub fn has_rest(self) -> bool {
        matches!(self, Implementation::Mailroom)
    }
}

impl FromStr for Implementation {
    type Err = String;
    fn from_str(s: &str) -> Result<Self, String> {
        match s {
            "mailroom" => Ok(Implementation::Mailroom),
            "python-reference" | "python" => Ok(Implementation::PythonReference),
            _ => Err(format!("unknown implementation '{s}' (mailroom, python-reference)")),
        }
    }
}

impl fmt::Display for Implementation {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            Implementation::Mailroom => "mailroom",
            Implementation::PythonReference => "python-reference",
        })
    }
}

/// A server under test.
#[derive(Debug, Clone)]
pub struct Target {
    /// `host:port`, what the connections dial and the Host header carries.
    pub authority: String,
    /// A path prefix from the URL (empty, or `/something` without a trailing slash).
    pub prefix: String,
    pub implementation: Implementation,
    /// Overrides the implementation's MCP path.
    pub mcp_path: Option<String>,
}

impl Target {
    /// Parses `http://host[:port][/prefix]`; only plain HTTP is measured (TLS would measure
    /// the TLS stack, not the server).
    pub fn parse(url: &str, implementation: Implementation) -> Result<Self> {
        let uri: hyper::Uri = url.parse().with_context(|| format!("invalid --url '{url}'"))?;
        match uri.scheme_str() {
            Some("http") => {}
            Some(other) => bail!("--url: scheme '{other}' is not supported (use http://)"),
            None => bail!("--url '{url}' needs a scheme, e.g. http://127.0.0.1:8765"),
        }
        let host = uri.host().with_context(|| format!("--url '{url}' has no host"))?;
        let port = uri.port_u16().unwrap_or(80);
        let prefix = uri.path().trim_end_matches('/').to_string();
        Ok(Self { authority: format!("{host}:{port}"), prefix, implementation, mcp_path: None })
    }

    /// Overrides the implementation's MCP path; it must be an absolute path.
    pub fn with_mcp_path(mut self, path: &str) -> Result<Self> {
        if !crate::client::is_valid_path(path) {
            bail!("--mcp-path '{path}' is not an absolute URL path such as /mcp/");
        }
        self.mcp_path = Some(path.to_string());
        Ok(self)
    }

    /// The full path of `path` under the URL's prefix.
    pub fn path(&self, path: &str) -> String {
        format!("{}{path}", self.prefix)
    }

    /// The MCP endpoint's path.
    pub fn mcp(&self) -> String {
        self.path(self.mcp_path.as_deref().unwrap_or(self.implementation.mcp_path()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_and_paths() {
        let target =
            Target::parse("http://127.0.0.1:8765", Implementation::Mailroom).expect("test value");
        assert_eq!(target.authority, "127.0.0.1:8765");
        assert_eq!(target.mcp(), "/mcp");
        let target = Target::parse("http://localhost/base/", Implementation::PythonReference)
            .expect("test value");
        assert_eq!(target.authority, "localhost:80");
        assert_eq!(target.path(target.implementation.health_path()), "/base/health/liveness");
        assert_eq!(target.mcp(), "/base/mcp/");
        assert!(Target::parse("https://x", Implementation::Mailroom).is_err());
        let custom = target.clone().with_mcp_path("/custom/mcp").expect("valid path");
        assert_eq!(custom.mcp(), "/base/custom/mcp");
        assert!(target.clone().with_mcp_path("mcp").is_err());
        assert!(target.with_mcp_path("/a b").is_err());
        assert!(Target::parse("127.0.0.1:8765", Implementation::Mailroom).is_err());
    }
}
