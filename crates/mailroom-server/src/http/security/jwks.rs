//! The issuer's published keys (`HTTP_JWT_JWKS_URL`), fetched when first needed and kept.
//!
//! A token naming a `kid` the kept set lacks makes one new fetch, at most one per
//! [`REFETCH_INTERVAL`] (a flood of made-up ids is not a flood of requests to the issuer). A
//! set older than [`MAX_AGE`] is still used while a fetch in the background replaces it; past
//! [`STALE_LIMIT`] (the issuer unreachable for a day) it is no longer trusted. A failed fetch
//! is not tried again for [`REFETCH_INTERVAL`]. Only public keys are kept: a symmetric
//! (`oct`) key in a published set would let anyone who reads it sign tokens.

use std::net::IpAddr;
use std::sync::{Arc, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, KeyAlgorithm, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey};
use serde_json::Value;

use super::jwt::Refusal;

/// Longest JWKS document read.
const MAX_JWKS: usize = 1024 * 1024;
/// The fetch's timeout (the reference's).
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// A set this old is fetched again (in the background) when next used.
const MAX_AGE: Duration = Duration::from_secs(600);
/// A set this old is not used at all (the issuer has been unreachable that long).
const STALE_LIMIT: Duration = Duration::from_secs(24 * 3600);
/// Fetches for unknown `kid`s, and after a failure, are this far apart at least.
const REFETCH_INTERVAL: Duration = Duration::from_secs(10);

/// A key of the set.
struct SetKey {
    kid: Option<String>,
    /// The key's `alg`, when it names one.
    algorithm: Option<KeyAlgorithm>,
    key: DecodingKey,
}

/// The keys of one fetch.
#[derive(Default)]
pub struct KeySet {
    keys: Vec<SetKey>,
    fetched: Option<Instant>,
}

impl KeySet {
    /// The key a token names by `kid`, else the first that fits its algorithm.
    pub fn find(&self, kid: Option<&str>, algorithm: Algorithm) -> Option<&DecodingKey> {
        let fits = |k: &&SetKey| {
            kid.is_none_or(|kid| k.kid.as_deref() == Some(kid))
                && k.algorithm.is_none_or(|a| a == KeyAlgorithm::from(algorithm))
                && k.key.family() == algorithm.family()
        };
        self.keys.iter().find(fits).map(|k| &k.key)
    }

    fn has(&self, kid: &str) -> bool {
        self.keys.iter().any(|k| k.kid.as_deref() == Some(kid))
    }

    fn age(&self, now: Instant) -> Option<Duration> {
        self.fetched.map(|at| now.saturating_duration_since(at))
    }
}

/// When fetches were last made for an unknown `kid`, and last failed.
#[derive(Default)]
struct Attempts {
    unknown_kid: Option<Instant>,
    failed: Option<Instant>,
}

/// The kept set and how to fetch it.
pub struct JwksCache {
    url: String,
    http: reqwest::Client,
    current: RwLock<Arc<KeySet>>,
    /// One fetch at a time.
    attempts: tokio::sync::Mutex<Attempts>,
}

impl JwksCache {
    pub fn new(url: String) -> Result<Arc<Self>, String> {
        let mut builder = reqwest::Client::builder()
            .timeout(FETCH_TIMEOUT)
            .redirect(reqwest::redirect::Policy::none());
        // Keys fetched from this machine never go through a proxy (which would carry them in
        // the clear).
        if is_loopback_url(&url) {
            builder = builder.no_proxy();
        }
        let http = builder
            .build()
            .map_err(|e| format!("HTTP_JWT_JWKS_URL: cannot build an HTTPS client: {e}"))?;
        let current = RwLock::new(Arc::new(KeySet::default()));
        Ok(Arc::new(Self { url, http, current, attempts: tokio::sync::Mutex::default() }))
    }

    fn current(&self) -> Arc<KeySet> {
        self.current.read().unwrap_or_else(std::sync::PoisonError::into_inner).clone()
    }

    /// A key set to find `kid` in (see the module's notes for when it is fetched).
    pub async fn key_set_for(self: &Arc<Self>, kid: Option<&str>) -> Result<Arc<KeySet>, Refusal> {
        let known = |set: &KeySet| kid.is_none_or(|kid| set.has(kid));
        let set = self.current();
        let now = Instant::now();
        match set.age(now) {
            Some(age) if age < MAX_AGE && known(&set) => return Ok(set),
            Some(age) if age < STALE_LIMIT && known(&set) => {
                let cache = Arc::clone(self);
                tokio::spawn(async move { cache.refresh(false).await });
                return Ok(set);
            }
            _ => {}
        }
        self.refresh(set.age(now).is_some_and(|age| age < MAX_AGE)).await
    }

    /// Fetches the set unless another request just did, or a fetch is not due yet.
    /// `for_unknown_kid`: the kept set is fresh but lacks the token's `kid`.
    async fn refresh(&self, for_unknown_kid: bool) -> Result<Arc<KeySet>, Refusal> {
        let requested = Instant::now();
        let mut attempts = self.attempts.lock().await;
        let set = self.current();
        let now = Instant::now();
        // Another request fetched while this one waited.
        if set.fetched.is_some_and(|at| at >= requested) {
            return Ok(set);
        }
        let recent = |at: Option<Instant>| {
            at.is_some_and(|at| now.saturating_duration_since(at) < REFETCH_INTERVAL)
        };
        if recent(attempts.failed) || (for_unknown_kid && recent(attempts.unknown_kid)) {
            return usable(set, now);
        }
        if for_unknown_kid {
            attempts.unknown_kid = Some(now);
        }
        match self.fetch().await {
            Ok(keys) => {
                let fetched = Arc::new(KeySet { keys, fetched: Some(now) });
                *self.current.write().unwrap_or_else(std::sync::PoisonError::into_inner) =
                    Arc::clone(&fetched);
                Ok(fetched)
            }
            Err(error) => {
                attempts.failed = Some(now);
                tracing::warn!(url = %self.url, %error, "JWKS fetch failed; kept keys used");
                usable(set, now)
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
        parse(&body)
    }
}

/// The kept set while it may be trusted.
fn usable(set: Arc<KeySet>, now: Instant) -> Result<Arc<KeySet>, Refusal> {
    match set.age(now) {
        Some(age) if age < STALE_LIMIT && !set.keys.is_empty() => Ok(set),
        _ => Err("no usable JWKS keys".to_string()),
    }
}

/// The public signing keys of a JWKS document; keys this build cannot read, symmetric keys
/// and keys meant for encryption are passed over (RFC 7517 §5).
fn parse(body: &[u8]) -> Result<Vec<SetKey>, Refusal> {
    let document: Value =
        serde_json::from_slice(body).map_err(|e| format!("JWKS is not JSON: {e}"))?;
    let entries = document.get("keys").and_then(Value::as_array).ok_or("JWKS has no keys")?;
    let keys: Vec<SetKey> = entries
        .iter()
        .filter_map(|entry| serde_json::from_value::<Jwk>(entry.clone()).ok())
        .filter(|jwk| !matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)))
        .filter(|jwk| !matches!(jwk.common.public_key_use, Some(PublicKeyUse::Encryption)))
        .filter_map(|jwk| {
            Some(SetKey {
                key: DecodingKey::from_jwk(&jwk).ok()?,
                kid: jwk.common.key_id,
                algorithm: jwk.common.key_algorithm,
            })
        })
        .collect();
    if keys.is_empty() {
        return Err("JWKS holds no usable public signing key".to_string());
    }
    Ok(keys)
}

/// `https://` anywhere, `http://` only to this machine.
pub fn check_url(url: &str) -> Result<(), String> {
    let parsed = reqwest::Url::parse(url)
        .map_err(|e| format!("HTTP_JWT_JWKS_URL: not a URL ({e}): {url:?}"))?;
    match parsed.scheme() {
        "https" => Ok(()),
        "http" if is_loopback_url(url) => Ok(()),
        _ => Err(format!(
            "HTTP_JWT_JWKS_URL must be an https:// URL (http:// only to this machine): {url:?}"
        )),
    }
}

fn is_loopback_url(url: &str) -> bool {
    let Ok(parsed) = reqwest::Url::parse(url) else { return false };
    let host = parsed.host_str().unwrap_or_default();
    let host = host.trim_start_matches('[').trim_end_matches(']');
    host == "localhost" || host.parse::<IpAddr>().is_ok_and(|ip| ip.is_loopback())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_public_signing_keys_are_kept() {
        let document = serde_json::json!({"keys": [
            {"kty": "oct", "k": "c2VjcmV0", "kid": "shared"},
            {"kty": "EC", "crv": "P-256", "use": "enc", "kid": "enc",
             "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
             "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
            {"kty": "EC", "crv": "P-256", "kid": "sig",
             "x": "f83OJ3D2xF1Bg8vub9tLe1gHMzV76e8Tus9uPHvRVEU",
             "y": "x_FEzRu9m36HLN_tue659LNpXW6pCyStikYjKIWI5a0"},
            {"kty": "nonsense"},
        ]});
        let keys = parse(document.to_string().as_bytes()).expect("one usable key");
        let kids: Vec<_> = keys.iter().map(|k| k.kid.as_deref()).collect();
        assert_eq!(kids, [Some("sig")]);
        let only_secret = serde_json::json!({"keys": [{"kty": "oct", "k": "c2VjcmV0"}]});
        assert!(parse(only_secret.to_string().as_bytes()).is_err());
    }

    #[test]
    fn urls_are_https_or_this_machine() {
        for url in ["https://idp.example/jwks", "http://127.0.0.1:9/k", "http://[::1]/k"] {
            assert!(check_url(url).is_ok(), "{url}");
        }
        for url in ["http://idp.example/jwks", "ftp://127.0.0.1/k", "not a url"] {
            assert!(check_url(url).is_err(), "{url}");
        }
    }
}
