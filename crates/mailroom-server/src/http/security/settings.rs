//! The settings of HTTP authentication, roles and rate limits, read once at start-up under
//! the reference's names (docs/compat/http.md §4, docs/compat/settings.md §4).

use super::jwt::JwtSettings;
use crate::config::csv;

/// A value that must not reach a log: its `Debug` shows only that it is set.
#[derive(Clone, PartialEq, Eq)]
pub struct Secret(pub String);

impl std::fmt::Debug for Secret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Secret(…)")
    }
}

/// What protects the HTTP routes.
#[derive(Debug, Clone, PartialEq)]
pub struct SecuritySettings {
    /// `HTTP_BEARER_TOKEN`: every request but health probes (and local ones, below) must
    /// carry `Authorization: Bearer <token>`. Empty or unset: no token asked.
    pub bearer_token: Option<Secret>,
    /// `HTTP_ALLOW_LOCALHOST_UNAUTHENTICATED` (default true): a request from a loopback peer
    /// with no `X-Forwarded-*`/`Forwarded` header needs no token and has every role.
    pub allow_localhost: bool,
    /// `HTTP_JWT_ENABLED` (default false): every request but health probes, local ones too,
    /// must carry a valid JWT, whose role claim gives its roles.
    pub jwt: Option<JwtSettings>,
    /// `HTTP_RBAC_ENABLED` (default true): tools that write need a writer role.
    pub rbac_enabled: bool,
    /// `HTTP_RBAC_READER_ROLES` (default `reader,read,ro`).
    pub reader_roles: Vec<String>,
    /// `HTTP_RBAC_WRITER_ROLES` (default `writer,write,tools,rw`).
    pub writer_roles: Vec<String>,
    /// `HTTP_RBAC_DEFAULT_ROLE` (default `reader`): the role of a request that is not local.
    pub default_role: String,
    /// `HTTP_RBAC_READONLY_TOOLS`: the tools a reader may call.
    pub readonly_tools: Vec<String>,
    /// Rate limits, when on.
    pub rate_limit: Option<RateLimits>,
    /// `HTTP_RATE_LIMIT_BACKEND=redis` and `HTTP_RATE_LIMIT_REDIS_URL`: the buckets live in
    /// that Redis, shared by every server using it (the URL may hold a password).
    pub rate_limit_redis: Option<Secret>,
}

/// `HTTP_RATE_LIMIT_*`: requests per minute and bursts per kind of request. A rate of 0 or
/// less is no limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimits {
    /// `HTTP_RATE_LIMIT_TOOLS_PER_MINUTE` (60), per tool and client.
    pub tools_per_minute: f64,
    /// `HTTP_RATE_LIMIT_TOOLS_BURST` (0: the rate).
    pub tools_burst: f64,
    /// `HTTP_RATE_LIMIT_RESOURCES_PER_MINUTE` (120), all resources, per client.
    pub resources_per_minute: f64,
    /// `HTTP_RATE_LIMIT_RESOURCES_BURST` (0: the rate).
    pub resources_burst: f64,
    /// `HTTP_RATE_LIMIT_PER_MINUTE` (60): every other request, per client; its burst is the
    /// rate.
    pub other_per_minute: f64,
}

impl Default for RateLimits {
    fn default() -> Self {
        Self {
            tools_per_minute: 60.0,
            tools_burst: 0.0,
            resources_per_minute: 120.0,
            resources_burst: 0.0,
            other_per_minute: 60.0,
        }
    }
}

const READONLY_TOOLS: [&str; 5] =
    ["health_check", "fetch_inbox", "whois", "search_messages", "summarize_thread"];

impl Default for SecuritySettings {
    fn default() -> Self {
        let list = |items: &[&str]| items.iter().map(|s| s.to_string()).collect();
        Self {
            bearer_token: None,
            allow_localhost: true,
            jwt: None,
            rbac_enabled: true,
            reader_roles: list(&["reader", "read", "ro"]),
            writer_roles: list(&["writer", "write", "tools", "rw"]),
            default_role: "reader".to_string(),
            readonly_tools: list(&READONLY_TOOLS),
            rate_limit: None,
            rate_limit_redis: None,
        }
    }
}

impl SecuritySettings {
    /// Applies the reference's variables on top of `self`; a value that does not parse, or
    /// a feature this build does not have, is an error naming the variable.
    pub fn apply_env(&mut self, lookup: &dyn Fn(&str) -> Option<String>) -> Result<(), String> {
        let flag = |name: &str| -> Result<Option<bool>, String> {
            lookup(name).map(|v| mailroom_core::config::parse_bool(name, &v)).transpose()
        };
        if let Some(token) = lookup("HTTP_BEARER_TOKEN") {
            let token = token.trim().to_string();
            self.bearer_token = (!token.is_empty()).then_some(Secret(token));
        }
        if let Some(allow) = flag("HTTP_ALLOW_LOCALHOST_UNAUTHENTICATED")? {
            self.allow_localhost = allow;
        }
        match flag("HTTP_JWT_ENABLED")? {
            Some(true) => self.jwt = Some(JwtSettings::from_env(lookup)?),
            Some(false) => self.jwt = None,
            None => {}
        }
        if self.jwt.is_some() && self.bearer_token.is_some() {
            // One Authorization header cannot be both (the reference would refuse every
            // remote request).
            return Err("HTTP_BEARER_TOKEN and HTTP_JWT_ENABLED exclude each other: a request \
                        carries one Authorization header; choose one"
                .to_string());
        }
        if let Some(enabled) = flag("HTTP_RBAC_ENABLED")? {
            self.rbac_enabled = enabled;
        }
        for (name, list) in [
            ("HTTP_RBAC_READER_ROLES", &mut self.reader_roles),
            ("HTTP_RBAC_WRITER_ROLES", &mut self.writer_roles),
            ("HTTP_RBAC_READONLY_TOOLS", &mut self.readonly_tools),
        ] {
            if let Some(value) = lookup(name) {
                *list = csv(&value);
            }
        }
        if let Some(role) = lookup("HTTP_RBAC_DEFAULT_ROLE") {
            let role = role.trim();
            if role.is_empty() {
                return Err("HTTP_RBAC_DEFAULT_ROLE: a role name is needed".to_string());
            }
            self.default_role = role.to_string();
        }
        // The reference's name, and the shorter one seed plans use.
        let enabled = match flag("HTTP_RATE_LIMIT_ENABLED")? {
            Some(enabled) => Some(enabled),
            None => flag("RATE_LIMIT_ENABLED")?,
        };
        if enabled == Some(true) {
            self.rate_limit = Some(rate_limits(lookup)?);
            self.rate_limit_redis = redis_url(lookup)?;
        } else if enabled == Some(false) {
            self.rate_limit = None;
            self.rate_limit_redis = None;
        }
        Ok(())
    }
}

/// The Redis URL when `HTTP_RATE_LIMIT_BACKEND=redis`.
fn redis_url(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Option<Secret>, String> {
    let backend = lookup("HTTP_RATE_LIMIT_BACKEND").map(|b| b.trim().to_ascii_lowercase());
    match backend.as_deref() {
        None | Some("" | "memory") => Ok(None),
        Some("redis") => {
            let url = lookup("HTTP_RATE_LIMIT_REDIS_URL").map(|u| u.trim().to_string());
            let url = url.filter(|u| !u.is_empty()).ok_or(
                "HTTP_RATE_LIMIT_BACKEND=redis needs HTTP_RATE_LIMIT_REDIS_URL \
                 (e.g. redis://127.0.0.1:6379/0)",
            )?;
            redis::Client::open(url.as_str())
                .map_err(|e| format!("HTTP_RATE_LIMIT_REDIS_URL is not a Redis URL: {e}"))?;
            Ok(Some(Secret(url)))
        }
        Some(other) => {
            Err(format!("HTTP_RATE_LIMIT_BACKEND must be `memory` or `redis`, not {other:?}"))
        }
    }
}

fn rate_limits(lookup: &dyn Fn(&str) -> Option<String>) -> Result<RateLimits, String> {
    let mut limits = RateLimits::default();
    for (name, value) in [
        ("HTTP_RATE_LIMIT_TOOLS_PER_MINUTE", &mut limits.tools_per_minute),
        ("HTTP_RATE_LIMIT_TOOLS_BURST", &mut limits.tools_burst),
        ("HTTP_RATE_LIMIT_RESOURCES_PER_MINUTE", &mut limits.resources_per_minute),
        ("HTTP_RATE_LIMIT_RESOURCES_BURST", &mut limits.resources_burst),
        ("HTTP_RATE_LIMIT_PER_MINUTE", &mut limits.other_per_minute),
    ] {
        if let Some(text) = lookup(name) {
            *value = text
                .trim()
                .parse::<i64>()
                .map_err(|_| format!("{name} must be a whole number, got {text:?}"))?
                as f64;
        }
    }
    Ok(limits)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with(pairs: &[(&str, &str)]) -> Result<SecuritySettings, String> {
        let mut settings = SecuritySettings::default();
        settings.apply_env(&|name| {
            pairs.iter().find(|(k, _)| *k == name).map(|(_, v)| (*v).to_string())
        })?;
        Ok(settings)
    }

    #[test]
    fn the_reference_names_and_defaults() {
        let plain = with(&[]).expect("defaults");
        assert_eq!(plain, SecuritySettings::default());
        assert!(plain.rbac_enabled && plain.allow_localhost && plain.bearer_token.is_none());
        let on = with(&[("HTTP_BEARER_TOKEN", " s3cret "), ("RATE_LIMIT_ENABLED", "true")])
            .expect("valid");
        assert_eq!(on.bearer_token.as_ref().map(|t| t.0.as_str()), Some("s3cret"));
        assert!(!format!("{on:?}").contains("s3cret"), "the token never shows in a log");
        assert_eq!(on.rate_limit, Some(RateLimits::default()), "the short name works");
        let off = with(&[("RATE_LIMIT_ENABLED", "true"), ("HTTP_RATE_LIMIT_ENABLED", "false")]);
        assert_eq!(off.expect("valid").rate_limit, None, "the reference's name wins");
        let tuned = with(&[
            ("HTTP_RATE_LIMIT_ENABLED", "1"),
            ("HTTP_RATE_LIMIT_TOOLS_PER_MINUTE", "5"),
            ("HTTP_RBAC_READONLY_TOOLS", "fetch_inbox, whois"),
        ])
        .expect("valid");
        assert_eq!(tuned.rate_limit.map(|l| l.tools_per_minute), Some(5.0));
        assert_eq!(tuned.readonly_tools, ["fetch_inbox", "whois"]);
        let shared = with(&[
            ("HTTP_RATE_LIMIT_ENABLED", "true"),
            ("HTTP_RATE_LIMIT_BACKEND", "Redis"),
            ("HTTP_RATE_LIMIT_REDIS_URL", "redis://:pa55@127.0.0.1:6379/2"),
        ])
        .expect("valid");
        let url = shared.rate_limit_redis.as_ref().map(|u| u.0.as_str());
        assert_eq!(url, Some("redis://:pa55@127.0.0.1:6379/2"));
        assert!(!format!("{shared:?}").contains("pa55"), "the URL's password never shows");
        assert_eq!(with(&[("HTTP_BEARER_TOKEN", "  ")]).expect("valid").bearer_token, None);
    }

    #[test]
    fn jwt_settings() {
        let jwt = |pairs: &[(&str, &str)]| with(pairs).expect("valid").jwt.expect("on");
        let hmac = jwt(&[("HTTP_JWT_ENABLED", "true"), ("HTTP_JWT_SECRET", " k3y ")]);
        assert_eq!(hmac.algorithms, [jsonwebtoken::Algorithm::HS256]);
        assert_eq!(
            (hmac.secret.map(|s| s.0), hmac.role_claim),
            (Some("k3y".into()), "role".into())
        );
        for url in
            ["https://idp.example/.well-known/jwks.json", "http://127.0.0.1:9/k", "http://[::1]/k"]
        {
            let keys = jwt(&[
                ("HTTP_JWT_ENABLED", "true"),
                ("HTTP_JWT_JWKS_URL", url),
                ("HTTP_JWT_ALGORITHMS", "RS256, ES256,RS256"),
                ("HTTP_JWT_ROLE_CLAIM", "roles"),
            ]);
            use jsonwebtoken::Algorithm::{ES256, RS256};
            assert_eq!((keys.algorithms, keys.role_claim), (vec![RS256, ES256], "roles".into()));
        }
        assert_eq!(with(&[("HTTP_JWT_ENABLED", "false")]).expect("off").jwt, None);
    }

    #[test]
    fn bad_values_name_their_variable() {
        for (pairs, name) in [
            (vec![("HTTP_RBAC_ENABLED", "perhaps")], "HTTP_RBAC_ENABLED"),
            (vec![("HTTP_JWT_ENABLED", "true")], "HTTP_JWT_ENABLED"),
            (
                vec![
                    ("HTTP_JWT_ENABLED", "true"),
                    ("HTTP_JWT_SECRET", "k"),
                    ("HTTP_BEARER_TOKEN", "t"),
                ],
                "HTTP_JWT_ENABLED",
            ),
            (
                vec![
                    ("HTTP_JWT_ENABLED", "1"),
                    ("HTTP_JWT_SECRET", "k"),
                    ("HTTP_JWT_ALGORITHMS", "RS256"),
                ],
                "HTTP_JWT_JWKS_URL",
            ),
            (
                vec![
                    ("HTTP_JWT_ENABLED", "1"),
                    ("HTTP_JWT_SECRET", "k"),
                    ("HTTP_JWT_ALGORITHMS", "none"),
                ],
                "HTTP_JWT_ALGORITHMS",
            ),
            (
                vec![
                    ("HTTP_JWT_ENABLED", "1"),
                    ("HTTP_JWT_ALGORITHMS", "RS256"),
                    ("HTTP_JWT_JWKS_URL", "http://idp.example/jwks"),
                ],
                "HTTP_JWT_JWKS_URL",
            ),
            (
                vec![("HTTP_JWT_ENABLED", "1"), ("HTTP_JWT_JWKS_URL", "https://idp.example/k")],
                "HTTP_JWT_ALGORITHMS",
            ),
            (
                vec![
                    ("HTTP_JWT_ENABLED", "1"),
                    ("HTTP_JWT_ALGORITHMS", "RS256,HS256"),
                    ("HTTP_JWT_JWKS_URL", "https://idp.example/k"),
                ],
                "HTTP_JWT_ALGORITHMS",
            ),
            (
                vec![
                    ("HTTP_JWT_ENABLED", "1"),
                    ("HTTP_JWT_ALGORITHMS", "RS256"),
                    ("HTTP_JWT_JWKS_URL", "https://idp.example/k"),
                    ("HTTP_JWT_SECRET", "s"),
                ],
                "HTTP_JWT_SECRET",
            ),
            (
                vec![("HTTP_RATE_LIMIT_ENABLED", "true"), ("HTTP_RATE_LIMIT_PER_MINUTE", "x")],
                "HTTP_RATE_LIMIT_PER_MINUTE",
            ),
            (
                vec![("HTTP_RATE_LIMIT_ENABLED", "true"), ("HTTP_RATE_LIMIT_BACKEND", "redis")],
                "HTTP_RATE_LIMIT_REDIS_URL",
            ),
            (
                vec![("HTTP_RATE_LIMIT_ENABLED", "true"), ("HTTP_RATE_LIMIT_BACKEND", "memcached")],
                "HTTP_RATE_LIMIT_BACKEND",
            ),
            (
                vec![
                    ("HTTP_RATE_LIMIT_ENABLED", "true"),
                    ("HTTP_RATE_LIMIT_BACKEND", "redis"),
                    ("HTTP_RATE_LIMIT_REDIS_URL", "http://127.0.0.1:6379"),
                ],
                "HTTP_RATE_LIMIT_REDIS_URL",
            ),
            (vec![("HTTP_RBAC_DEFAULT_ROLE", "")], "HTTP_RBAC_DEFAULT_ROLE"),
        ] {
            let error = with(&pairs).expect_err(name);
            assert!(error.contains(name), "{error}");
        }
    }
}
