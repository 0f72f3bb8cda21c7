//! JWT bearer tokens (`HTTP_JWT_*`, docs/compat/http.md §4.3): a request carries
//! `Authorization: Bearer <jwt>`, signed with the shared secret (HMAC) or with a public key
//! from the issuer's JWKS (jwks.rs); its `aud`, `iss`, `exp`, `nbf` and `iat` are checked, its
//! role claim gives its roles and its `sub` its rate-limit identity.
//!
//! A token is refused, before any key is used, when it is too long, its header does not
//! parse, or it names an algorithm not allowed (`none` is never one). A secret serves only
//! HMAC algorithms and a key set only public-key ones (both checked at start-up), and the key
//! must be of the token algorithm's family: an HMAC token is never checked against a public
//! key used as a secret.

use std::str::FromStr;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde_json::{Map, Value};

use super::jwks::{self, JwksCache};
use super::settings::Secret;

/// Longest token read (bytes): far above any real one, short of a cost to parse.
const MAX_TOKEN: usize = 8 * 1024;

/// `HTTP_JWT_*`.
#[derive(Debug, Clone, PartialEq)]
pub struct JwtSettings {
    /// `HTTP_JWT_ALGORITHMS` (default `HS256`; with a JWKS it must be set).
    pub algorithms: Vec<Algorithm>,
    /// `HTTP_JWT_SECRET`: the HMAC key.
    pub secret: Option<Secret>,
    /// `HTTP_JWT_JWKS_URL`: where the issuer publishes its public keys (not with a secret).
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
        let jwks_url = set("HTTP_JWT_JWKS_URL");
        let names = match (set("HTTP_JWT_ALGORITHMS"), &jwks_url) {
            (Some(names), _) => names,
            (None, None) => "HS256".to_string(),
            (None, Some(_)) => {
                return Err("HTTP_JWT_ALGORITHMS: name the issuer's algorithms (e.g. RS256) \
                            when HTTP_JWT_JWKS_URL is set; the default HS256 needs a secret"
                    .to_string());
            }
        };
        let algorithms = algorithms(&names)?;
        let settings = Self {
            algorithms,
            secret: set("HTTP_JWT_SECRET").map(Secret),
            jwks_url,
            audience: set("HTTP_JWT_AUDIENCE"),
            issuer: set("HTTP_JWT_ISSUER"),
            role_claim: set("HTTP_JWT_ROLE_CLAIM").unwrap_or_else(|| "role".to_string()),
        };
        settings.check_keys()?;
        Ok(settings)
    }

    /// A secret for HMAC algorithms only, a key set for public-key ones only, not both.
    fn check_keys(&self) -> Result<(), String> {
        let hmac = |wanted: bool| self.algorithms.iter().find(|a| is_hmac(**a) == wanted);
        match (&self.jwks_url, &self.secret) {
            (Some(_), Some(_)) => Err("HTTP_JWT_SECRET and HTTP_JWT_JWKS_URL exclude each \
                                       other: choose the secret (HMAC) or the issuer's keys"
                .to_string()),
            (None, None) => Err("HTTP_JWT_ENABLED: tokens need a key; set HTTP_JWT_SECRET \
                                 (HMAC) or HTTP_JWT_JWKS_URL"
                .to_string()),
            (Some(url), None) => {
                jwks::check_url(url)?;
                if let Some(hmac) = hmac(true) {
                    return Err(format!(
                        "HTTP_JWT_ALGORITHMS: {hmac:?} is an HMAC algorithm; a published key \
                         set holds public keys (name RS256, ES256, …)"
                    ));
                }
                if self.audience.is_none() && self.issuer.is_none() {
                    tracing::warn!(
                        "HTTP_JWT_JWKS_URL without HTTP_JWT_AUDIENCE or HTTP_JWT_ISSUER: any \
                         token this issuer signs, for any application, is accepted"
                    );
                }
                Ok(())
            }
            (None, Some(_)) => match hmac(false) {
                Some(other) => Err(format!(
                    "HTTP_JWT_ALGORITHMS: {other:?} needs the issuer's public keys \
                     (HTTP_JWT_JWKS_URL); HTTP_JWT_SECRET serves HMAC algorithms only"
                )),
                None => Ok(()),
            },
        }
    }
}

/// `HTTP_JWT_ALGORITHMS`: names, de-duplicated, at least one.
fn algorithms(names: &str) -> Result<Vec<Algorithm>, String> {
    let mut algorithms = Vec::new();
    for name in names.split(',').map(str::trim).filter(|n| !n.is_empty()) {
        let algorithm = Algorithm::from_str(name).map_err(|_| {
            format!(
                "HTTP_JWT_ALGORITHMS: unknown algorithm {name:?} (known: HS256, HS384, HS512, \
                 RS256, RS384, RS512, PS256, PS384, PS512, ES256, ES384, EdDSA)"
            )
        })?;
        if !algorithms.contains(&algorithm) {
            algorithms.push(algorithm);
        }
    }
    if algorithms.is_empty() {
        return Err("HTTP_JWT_ALGORITHMS: at least one algorithm is needed".to_string());
    }
    Ok(algorithms)
}

fn is_hmac(algorithm: Algorithm) -> bool {
    matches!(algorithm, Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512)
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
    /// The checks for each allowed algorithm, built once.
    validations: Vec<(Algorithm, Validation)>,
}

enum Keys {
    Secret(DecodingKey),
    Jwks(Arc<JwksCache>),
}

impl JwtVerifier {
    pub fn new(settings: JwtSettings) -> Result<Self, String> {
        let keys = match (&settings.jwks_url, &settings.secret) {
            (Some(url), _) => Keys::Jwks(JwksCache::new(url.clone())?),
            (None, Some(secret)) => Keys::Secret(DecodingKey::from_secret(secret.0.as_bytes())),
            (None, None) => return Err("HTTP_JWT_ENABLED: no key configured".to_string()),
        };
        let validations =
            settings.algorithms.iter().map(|a| (*a, validation(&settings, *a))).collect();
        Ok(Self { settings, keys, validations })
    }

    /// The request's token (`Authorization: Bearer <token>`), checked.
    pub async fn verify(&self, token: Option<&[u8]>) -> Result<Claims, Refusal> {
        let token = token.ok_or("no Bearer token")?;
        if token.len() > MAX_TOKEN {
            return Err(format!("token of {} bytes", token.len()));
        }
        let head = jsonwebtoken::decode_header(token).map_err(|e| format!("header: {e}"))?;
        let algorithm = head.alg;
        let (_, validation) = self
            .validations
            .iter()
            .find(|(allowed, _)| *allowed == algorithm)
            .ok_or_else(|| format!("algorithm {algorithm:?} not allowed"))?;
        let set;
        let key = match &self.keys {
            Keys::Secret(key) => key,
            Keys::Jwks(cache) => {
                set = cache.key_set_for(head.kid.as_deref()).await?;
                set.find(head.kid.as_deref(), algorithm).ok_or("no key for the token")?
            }
        };
        if key.family() != algorithm.family() {
            return Err(format!("a {:?} key cannot check a {algorithm:?} token", key.family()));
        }
        let data = jsonwebtoken::decode::<Map<String, Value>>(token, key, validation)
            .map_err(|e| format!("token: {e}"))?;
        self.grant(data.claims)
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
            Some(role @ Value::String(_)) => std::slice::from_ref(role),
            Some(Value::Array(items)) => items.as_slice(),
            _ => &[],
        };
        let roles = roles.iter().filter_map(Value::as_str).filter(|r| !r.is_empty());
        let roles = roles.map(str::to_string).collect();
        let subject = claims.get("sub").and_then(Value::as_str).map(str::to_string);
        Ok(Claims { roles, subject })
    }
}

/// The checks of `algorithm`'s tokens: the reference's (time claims when present, no
/// leeway), and a configured audience or issuer required (a token without the claim is not
/// one made for this server).
fn validation(settings: &JwtSettings, algorithm: Algorithm) -> Validation {
    let mut validation = Validation::new(algorithm);
    validation.leeway = 0;
    validation.required_spec_claims.clear();
    validation.validate_nbf = true;
    match &settings.audience {
        Some(audience) => {
            validation.set_audience(&[audience]);
            validation.required_spec_claims.insert("aud".to_string());
        }
        None => validation.validate_aud = false,
    }
    if let Some(issuer) = &settings.issuer {
        validation.set_issuer(&[issuer]);
        validation.required_spec_claims.insert("iss".to_string());
    }
    validation
}

fn now_seconds() -> f64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |d| d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use jsonwebtoken::{EncodingKey, Header};

    use super::*;

    /// Settings that pass start-up never pair a secret with a public-key algorithm; should
    /// they, the key's family still refuses the token (no HMAC check with a public key as the
    /// secret, nor the reverse).
    #[tokio::test]
    async fn a_key_of_another_family_checks_nothing() {
        let pem = std::fs::read(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../mailroom-testkit/fixtures/jwt-rsa.pem"
        ))
        .expect("fixture");
        let rsa = EncodingKey::from_rsa_pem(&pem).expect("rsa");
        let token = jsonwebtoken::encode(&Header::new(Algorithm::RS256), &json_claims(), &rsa)
            .expect("sign");
        let verifier = JwtVerifier::new(JwtSettings {
            algorithms: vec![Algorithm::RS256, Algorithm::HS256],
            secret: Some(Secret("s3cret".into())),
            jwks_url: None,
            audience: None,
            issuer: None,
            role_claim: "role".into(),
        })
        .expect("verifier");
        let refusal = verifier.verify(Some(token.as_bytes())).await.expect_err("refused");
        assert!(refusal.contains("cannot check"), "{refusal}");
        let hmac = EncodingKey::from_secret(b"s3cret");
        let good = jsonwebtoken::encode(&Header::new(Algorithm::HS256), &json_claims(), &hmac)
            .expect("sign");
        assert!(verifier.verify(Some(good.as_bytes())).await.is_ok(), "the right family works");
    }

    fn json_claims() -> Value {
        serde_json::json!({"sub": "x", "exp": now_seconds() as u64 + 600})
    }
}
