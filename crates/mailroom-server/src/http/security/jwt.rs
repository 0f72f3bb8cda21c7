//! JWT bearer tokens (`HTTP_JWT_*`, docs/compat/http.md §4.3): a request carries
//! `Authorization: Bearer <jwt>`, signed with the shared secret (HMAC) or with a key from the
//! issuer's JWKS; its `aud`, `iss`, `exp`, `nbf` and `iat` are checked, its role claim gives
//! its roles and its `sub` its rate-limit identity.
//!
//! A token is refused, before any key is used, when it is too long, its header does not
//! parse, or it names an algorithm not allowed (`none` is never one). The key must be of the
//! token algorithm's family, so an HMAC token cannot be checked against an RSA public key
//! used as a secret. JWKS keys are fetched over HTTPS (or plain HTTP to this machine) and
//! kept: a token naming a `kid` not in the set makes one new fetch (at most one per
//! [`REFETCH_INTERVAL`]), and a set older than [`MAX_AGE`] is fetched again on use.

use std::net::IpAddr;
use std::str::FromStr;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use axum::http::{HeaderMap, header};
use jsonwebtoken::jwk::{Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use super::settings::Secret;

/// Longest token read (bytes): far above any real one, short of a cost to parse.
const MAX_TOKEN: usize = 8 * 1024;
/// Longest JWKS document read.
const MAX_JWKS: usize = 1024 * 1024;
/// The JWKS fetch's timeout (the reference's).
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// A key set this old is fetched again when next used (so a withdrawn key stops working).
pub const MAX_AGE: Duration = Duration::from_secs(600);
/// Unknown `kid`s make at most one fetch this often, and a failed fetch is not tried again
/// sooner: a flood of made-up ids, or an issuer that is down, is not a flood of requests to
/// the issuer.
pub const REFETCH_INTERVAL: Duration = Duration::from_secs(10);

/// `HTTP_JWT_*`.
#[derive(Debug, Clone, PartialEq)]
pub struct JwtSettings {
    /// `HTTP_JWT_ALGORITHMS` (default `HS256`).
    pub algorithms: Vec<Algorithm>,
    /// `HTTP_JWT_SECRET`: the HMAC key.
    pub secret: Option<Secret>,
    /// `HTTP_JWT_JWKS_URL`: where the issuer publishes its keys (wins over the secret).
    pub jwks_url: Option<String>,
    /// `HTTP_JWT_AUDIENCE`: when set, `aud` must name it.
    pub audience: Option<String>,
    /// `HTTP_JWT_ISSUER`: when set, `iss` must equal it.
    pub issuer: Option<String>,
    /// `HTTP_JWT_ROLE_CLAIM` (default `role`): a string or a list of strings.
    pub role_claim: String,
}

impl JwtSettings {
    /// The settings from the environment, when `HTTP_JWT_ENABLED`; errors name the variable.
    pub fn from_env(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Self, String> {
        let set = |name: &str| lookup(name).map(|v| v.trim().to_string()).filter(|v| !v.is_empty());
        let names = set("HTTP_JWT_ALGORITHMS").unwrap_or_else(|| "HS256".to_string());
        let mut algorithms = Vec::new();
        for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
            let algorithm = Algorithm::from_str(name).map_err(|_| {
                format!(
                    "HTTP_JWT_ALGORITHMS: unknown algorithm {name:?} (known: HS256, HS384, \
                     HS512, RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, EdDSA)"
                )
            })?;
            if !algorithms.contains(&algorithm) {
                algorithms.push(algorithm);
            }
        }
        if algorithms.is_empty() {
            return Err("HTTP_JWT_ALGORITHMS: at least one algorithm is needed".to_string());
        }
        let settings = Self {
            algorithms,
            secret: set("HTTP_JWT_SECRET").map(Secret),
            jwks_url: set("HTTP_JWT_JWKS_URL"),
            audience: set("HTTP_JWT_AUDIENCE"),
            issuer: set("HTTP_JWT_ISSUER"),
            role_claim: set("HTTP_JWT_ROLE_CLAIM").unwrap_or_else(|| "role".to_string()),
        };
        match &settings.jwks_url {
            Some(url) => check_jwks_url(url)?,
            None => {
                if settings.secret.is_none() {
                    return Err("HTTP_JWT_ENABLED: tokens need a key; set HTTP_JWT_SECRET (HMAC) \
                                or HTTP_JWT_JWKS_URL"
                        .to_string());
                }
                if let Some(other) = settings.algorithms.iter().find(|a| !is_hmac(**a)) {
                    return Err(format!(
                        "HTTP_JWT_ALGORITHMS: {other:?} needs the issuer's public keys \
                         (HTTP_JWT_JWKS_URL); HTTP_JWT_SECRET serves HMAC algorithms only"
                    ));
                }
            }
        }
        Ok(settings)
    }
}

fn is_hmac(algorithm: Algorithm) -> bool {
    matches!(algorithm, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512)
}

/// A JWKS URL is `https://`, or `http://` to this machine (an issuer's sidecar): keys must
/// not cross a network in the clear.
fn check_jwks_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| format!("HTTP_JWT_JWKS_URL: not a URL ({e}): {url:?}"))?;
    let host = parsed.host_str().unwrap_or_default();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    let local = host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback());
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if local => Ok(()),
        _ => Err(format!(
            "HTTP_JWT_JWKS_URL must be an https:// URL (http:// only to this machine): {url:?}"
        )),
    }
}

/// What a valid token grants.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Claims {
    /// From the role claim; empty when it names none.
    pub roles: Vec<String>,
    /// `sub`, when a string.
    pub subject: Option<String>,
}

/// Why a token was refused (logged at debug; the client sees only 401).
pub type Refusal = String;

/// Checks tokens against the configured key or key set.
pub struct JwtVerifier {
    settings: JwtSettings,
    keys: Keys,
}

enum Keys {
    Secret(DecodingKey),
    Jwks(JwksCache),
}

impl JwtVerifier {
    pub fn new(settings: JwtSettings) -> Result<Self, String> {
        let keys = match (&settings.jwks_url, &settings.secret) {
            (Some(url), _) => Keys::Jwks(JwksCache::new(url.clone())?),
            (None, Some(secret)) => Keys::Secret(DecodingKey::from_secret(secret.0.as_bytes())),
            (None, None) => return Err("HTTP_JWT_ENABLED: no key configured".to_string()),
        };
        Ok(Self { settings, keys })
    }

    /// The request's token, checked.
    pub async fn verify(&self, headers: &HeaderMap) -> Result<Claims, Refusal> {
        let value = headers.get(header::AUTHORIZATION).ok_or("no Authorization header")?;
        let token = value.as_bytes().strip_prefix(b"Bearer ").ok_or("not a Bearer token")?;
        if token.len() > MAX_TOKEN {
            return Err(format!("token of {} bytes", token.len()));
        }
        let head = jsonwebtoken::decode_header(token).map_err(|e| format!("header: {e}"))?;
        let algorithm = head.alg;
        if !self.settings.algorithms.contains(&algorithm) {
            return Err(format!("algorithm {algorithm:?} not allowed"));
        }
        let claims = match &self.keys {
            Keys::Secret(key) => self.decode(token, key, algorithm)?,
            Keys::Jwks(cache) => {
                let set = cache.key_set_for(head.kid.as_deref()).await?;
                let key = set.find(head.kid.as_deref(), algorithm).ok_or("no key for the token")?;
                self.decode(token, key, algorithm)?
            }
        };
        self.grant(claims)
    }

    fn decode(
        &self,
        token: &[u8],
        key: &DecodingKey,
        algorithm: Algorithm,
    ) -> Result<Map<String, Value>, Refusal> {
        if key.family() != algorithm.family() {
            return Err(format!("a {:?} key cannot check a {algorithm:?} token", key.family()));
        }
        let mut validation = Validation::new(algorithm);
        // The reference's checks: time claims when present, no leeway.
        validation.leeway = 0;
        validation.required_spec_claims.clear();
        validation.validate_nbf = true;
        // A configured audience or issuer must be named: a token without the claim is not
        // one made for this server.
        match &self.settings.audience {
            Some(audience) => {
                validation.set_audience(&[audience]);
                validation.required_spec_claims.insert("aud".to_string());
            }
            None => validation.validate_aud = false,
        }
        if let Some(issuer) = &self.settings.issuer {
            validation.set_issuer(&[issuer]);
            validation.required_spec_claims.insert("iss".to_string());
        }
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, key, &validation)
            .map_err(|e| format!("token: {e}"))?;
        Ok(data.claims)
    }

    /// `iat` (not checked by the decoder) and the grants.
    fn grant(&self, claims: Map<String, Value>) -> Result<Claims, Refusal> {
        if let Some(issued) = claims.get("iat") {
            let issued = issued.as_f64().ok_or("iat is not a number")?;
            if issued > now_seconds() {
                return Err("iat is in the future".to_string());
            }
        }
        for claim in ["exp", "nbf"] {
            if claims.get(claim).is_some_and(|v| !v.is_number()) {
                return Err(format!("{claim} is not a number"));
            }
        }
        let roles = match claims.get(&self.settings.role_claim) {
            Some(Value::String(role)) => vec![role.clone()],
            Some(Value::Array(items)) => {
                items.iter().filter_map(Value::as_str).map(str::to_string).collect()
            }
            _ => Vec::new(),
        };
        let roles = roles.into_iter().filter(|r| !r.is_empty()).collect();
        let subject = claims.get("sub").and_then(Value::as_str).map(str::to_string);
        Ok(Claims { roles, subject })
    }
}

fn now_seconds() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

/// A key of the set: its `kid`, its `alg` when it names one, the key.
type SetKey = (Option<String>, Option<KeyAlgorithm>, DecodingKey);

/// The keys of one fetch.
#[derive(Default)]
struct KeySet {
    keys: Vec<SetKey>,
    fetched: Option<Instant>,
}

impl KeySet {
    /// The key a token names by `kid`, else the first that fits its algorithm.
    fn find(&self, kid: Option<&str>, algorithm: Algorithm) -> Option<&DecodingKey> {
        let fits = |(id, alg, key): &&SetKey| {
            kid.is_none_or(|kid| id.as_deref() == Some(kid))
                && alg.is_none_or(|alg| alg == KeyAlgorithm::from(algorithm))
                && key.family() == algorithm.family()
        };
        self.keys.iter().find(fits).map(|(_, _, key)| key)
    }

    fn has(&self, kid: &str) -> bool {
        self.keys.iter().any(|(id, _, _)| id.as_deref() == Some(kid))
    }

    fn fresh(&self, now: Instant) -> bool {
        self.fetched.is_some_and(|at| now.saturating_duration_since(at) < MAX_AGE)
    }
}

/// The issuer's keys, fetched when first needed and kept (see the module's notes).
struct JwksCache {
    url: String,
    http: reqwest::Client,
    current: RwLock<Arc<KeySet>>,
    /// One fetch at a time; holds when fetches were last made for an unknown `kid` and last
    /// failed.
    attempts: tokio::sync::Mutex<Attempts>,
}

#[derive(Default)]
struct Attempts {
    unknown_kid: Option<Instant>,
    failed: Option<Instant>,
}

impl JwksCache {
    fn new(url: String) -> Result<Self, String> {
        let http = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none())
            .build()
            .map_err(|e| format!("HTTP_JWT_JWKS_URL: cannot build an HTTPS client: {e}"))?;
        let current = RwLock::new(Arc::new(KeySet::default()));
        Ok(Self { url, http, current, attempts: tokio::sync::Mutex::default() })
    }

    fn current(&self) -> Arc<KeySet> {
        self.current.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// A key set to find `kid` in: the kept one while fresh and knowing `kid`, else a new
    /// fetch (the kept one if that fails and it has keys).
    async fn key_set_for(&self, kid: Option<&str>) -> Result<Arc<KeySet>, Refusal> {
        let known = |set: &KeySet| kid.is_none_or(|kid| set.has(kid));
        let set = self.current();
        if set.fresh(Instant::now()) && known(&set) {
            return Ok(set);
        }
        let mut attempts = self.attempts.lock().await;
        // Another request may have fetched while this one waited.
        let set = self.current();
        let now = Instant::now();
        if set.fresh(now) && known(&set) {
            return Ok(set);
        }
        let recent = |at: Option<Instant>| {
            at.is_some_and(|at| now.saturating_duration_since(at) < REFETCH_INTERVAL)
        };
        // The issuer failed a moment ago, or a `kid` unknown a moment ago is named again
        // (made up, most likely): no new fetch yet.
        let unknown_kid = set.fresh(now);
        if recent(attempts.failed) || (unknown_kid && recent(attempts.unknown_kid)) {
            return if set.keys.is_empty() { Err("no JWKS keys".to_string()) } else { Ok(set) };
        }
        if unknown_kid {
            attempts.unknown_kid = Some(now);
        }
        match self.fetch().await {
            Ok(keys) => {
                let fetched = Arc::new(KeySet { keys, fetched: Some(now) });
                *self.current.write().unwrap_or_else(std::sync::PoisonError::into_inner) =
                    fetched.clone();
                Ok(fetched)
            }
            Err(error) => {
                attempts.failed = Some(now);
                tracing::warn!(url = %self.url, %error, "JWKS fetch failed; kept keys used");
                if set.keys.is_empty() { Err(error) } else { Ok(set) }
            }
        }
    }

    async fn fetch(&self) -> Result<Vec<SetKey>, Refusal> {
        let mut response =
            self.http.get(&self.url).send().await.map_err(|e| format!("JWKS fetch: {e}"))?;
        if !response.status().is_success() {
            return Err(format!("JWKS fetch: HTTP {}", response.status()));
        }
        let mut body = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| format!("JWKS read: {e}"))? {
            if body.len() + chunk.len() > MAX_JWKS {
                return Err(format!("JWKS larger than {MAX_JWKS} bytes"));
            }
            body.extend_from_slice(&chunk);
        }
        let document: Value =
            serde_json::from_slice(&body).map_err(|e| format!("JWKS is not JSON: {e}"))?;
        let entries = document.get("keys").and_then(Value::as_array).ok_or("JWKS has no keys")?;
        // Keys this build cannot read, or meant for encryption, are passed over (RFC 7517 §5).
        let keys: Vec<_> = entries
            .iter()
            .filter_map(|entry| serde_json::from_value::<Jwk>(entry.clone()).ok())
            .filter(|jwk| !matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)))
            .filter_map(|jwk| {
                let key = DecodingKey::from_jwk(&jwk).ok()?;
                Some((jwk.common.key_id.clone(), jwk.common.key_algorithm, key))
            })
            .collect();
        if keys.is_empty() {
            return Err("JWKS holds no usable signing key".to_string());
        }
        Ok(keys)
    }
}
