//! JWT bearer tokens (docs/compat/http.md §4.3): HMAC secrets and JWKS keys, the claims
//! checked, roles and rate-limit identity from the token, and a negative corpus of forged,
//! stale and malformed tokens: each one 401, none of them reaching a tool.

use std::time::{SystemTime, UNIX_EPOCH};

use base64::Engine;
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use mailroom_testkit::tls::fixture;
use mailroom_testkit::{InboxCall, JsonServer, RegisterCall, SendCall, TestApp};
use serde_json::{Value, json};

use crate::security::{Remote, start};

const SECRET: &str = "a-shared-secret-of-more-than-32-bytes!";

fn now() -> i64 {
    SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_secs() as i64
}

fn pem(name: &str) -> Vec<u8> {
    std::fs::read(fixture(name)).expect("fixture key")
}

fn rsa_key(name: &str) -> EncodingKey {
    EncodingKey::from_rsa_pem(&pem(name)).expect("rsa key")
}

fn sign(algorithm: Algorithm, kid: Option<&str>, key: &EncodingKey, claims: &Value) -> String {
    let mut header = Header::new(algorithm);
    header.kid = kid.map(str::to_string);
    encode(&header, claims, key).expect("sign")
}

fn hs(algorithm: Algorithm, claims: &Value) -> String {
    sign(algorithm, None, &EncodingKey::from_secret(SECRET.as_bytes()), claims)
}

/// A JWKS document of `keys`.
fn jwks(keys: Vec<Jwk>) -> Value {
    serde_json::to_value(JwkSet { keys }).expect("jwks")
}

fn jwk(key: &EncodingKey, algorithm: Algorithm, kid: &str) -> Jwk {
    let mut jwk = Jwk::from_encoding_key(key, algorithm).expect("jwk");
    jwk.common.key_id = Some(kid.to_string());
    jwk
}

#[tokio::test]
async fn hmac_tokens_carry_roles_and_identity() {
    let app = start(&[
        ("HTTP_JWT_ENABLED", "true"),
        ("HTTP_JWT_SECRET", SECRET),
        ("HTTP_JWT_ALGORITHMS", "HS256,HS384,HS512"),
        ("HTTP_RATE_LIMIT_ENABLED", "true"),
        ("HTTP_RATE_LIMIT_TOOLS_PER_MINUTE", "2"),
        ("HTTP_RATE_LIMIT_PER_MINUTE", "1000"),
    ])
    .await;
    // Local requests are not exempt from JWTs (the reference's rule).
    let (status, _) = app.get("/mail").await;
    assert_eq!(status, 401, "a local request without a token");
    let (status, _) = app.get("/health").await;
    assert_eq!(status, 200, "health is exempt");
    let writer = hs(Algorithm::HS512, &json!({"sub": "ci-bot", "role": "writer"}));
    let local = app
        .client
        .post(format!("{}/mcp", app.base_url))
        .bearer_auth(&writer)
        .json(&json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "ensure_project", "arguments": {"human_key": "/work/jwt"}}}))
        .send()
        .await
        .expect("post");
    assert_eq!(local.status().as_u16(), 200);
    let as_writer = Remote { app: &app, client_ip: "203.0.113.20", token: Some(&writer) };
    for name in ["BlueLake", "GreenCastle"] {
        let register = RegisterCall::new("/work/jwt", name).arguments();
        let (status, body) = as_writer.tool("register_agent", register).await;
        assert_eq!(status, 200, "{body}");
    }
    let send = SendCall::new("/work/jwt", "BlueLake", "BlueLake", "from a writer").body("x");
    let send = send.arguments();
    let reader = hs(Algorithm::HS256, &json!({"sub": "dashboard", "role": ["ro"]}));
    let as_reader = Remote { token: Some(&reader), ..as_writer };
    assert_eq!(as_reader.tool("send_message", send.clone()).await.0, 403, "a reader's token");
    let fetch = InboxCall::new("/work/jwt", "BlueLake").arguments();
    assert_eq!(as_reader.tool("fetch_inbox", fetch.clone()).await.0, 200);
    // No role claim: the default role (reader).
    let plain = hs(Algorithm::HS384, &json!({"sub": "someone"}));
    let as_plain = Remote { token: Some(&plain), ..as_writer };
    assert_eq!(as_plain.tool("send_message", send.clone()).await.0, 403);
    // Rate limits count per subject: the same address, another `sub`, another bucket.
    assert_eq!(as_reader.tool("fetch_inbox", fetch.clone()).await.0, 200);
    assert_eq!(as_reader.tool("fetch_inbox", fetch.clone()).await.0, 429, "dashboard is over");
    assert_eq!(as_plain.tool("fetch_inbox", fetch.clone()).await.0, 200, "someone is not");
    // A static bearer token is no JWT.
    let opaque = Remote { token: Some("correct-horse-battery-staple"), ..as_writer };
    assert_eq!(opaque.get("/mail").await, 401);
}

#[tokio::test]
async fn the_negative_corpus_is_refused() {
    let rsa = rsa_key("jwt-rsa.pem");
    let issuer = JsonServer::start(jwks(vec![jwk(&rsa, Algorithm::RS256, "k1")])).await;
    let app = start(&[
        ("HTTP_JWT_ENABLED", "true"),
        ("HTTP_JWT_JWKS_URL", &issuer.url),
        ("HTTP_JWT_ALGORITHMS", "RS256"),
        ("HTTP_JWT_AUDIENCE", "mailroom"),
        ("HTTP_JWT_ISSUER", "https://idp.example"),
        ("HTTP_RBAC_DEFAULT_ROLE", "writer"),
    ])
    .await;
    let t = now();
    let good = json!({"sub": "agent-1", "aud": "mailroom", "iss": "https://idp.example",
                      "iat": t - 5, "nbf": t - 5, "exp": t + 600});
    let with = |patch: Value| {
        let mut claims = good.clone();
        for (k, v) in patch.as_object().expect("object") {
            if v.is_null() {
                claims.as_object_mut().expect("claims").remove(k);
            } else {
                claims[k] = v.clone();
            }
        }
        claims
    };
    let valid = sign(Algorithm::RS256, Some("k1"), &rsa, &good);
    assert_eq!(status(&app, Some(&valid)).await, 200, "the valid token works");
    let audiences =
        sign(Algorithm::RS256, Some("k1"), &rsa, &with(json!({"aud": ["x", "mailroom"]})));
    assert_eq!(status(&app, Some(&audiences)).await, 200, "aud as a list naming us");
    let b64 = |bytes: &[u8]| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(bytes);
    let [_, body, signature]: [&str; 3] =
        valid.split('.').collect::<Vec<_>>().try_into().expect("three parts");
    let public_pem = pem("jwt-rsa.pub.pem");
    let corpus: Vec<(&str, String)> = vec![
        ("alg none", format!("{}.{body}.", b64(br#"{"alg":"none","typ":"JWT"}"#))),
        ("alg None", format!("{}.{body}.", b64(br#"{"alg":"None","kid":"k1"}"#))),
        (
            "HS256 signed with the RSA public key (key confusion)",
            sign(Algorithm::HS256, Some("k1"), &EncodingKey::from_secret(&public_pem), &good),
        ),
        (
            "signed by another key under the same kid",
            sign(Algorithm::RS256, Some("k1"), &rsa_key("jwt-rsa-other.pem"), &good),
        ),
        ("another token's claims under this signature", {
            let other = sign(Algorithm::RS256, Some("k1"), &rsa, &with(json!({"sub": "root"})));
            let (signed, _) = other.rsplit_once('.').expect("dot");
            format!("{signed}.{signature}")
        }),
        ("expired", sign(Algorithm::RS256, Some("k1"), &rsa, &with(json!({"exp": t - 1})))),
        (
            "not yet valid",
            sign(Algorithm::RS256, Some("k1"), &rsa, &with(json!({"nbf": t + 3600}))),
        ),
        (
            "issued in the future",
            sign(Algorithm::RS256, Some("k1"), &rsa, &with(json!({"iat": t + 3600}))),
        ),
        (
            "exp not a number",
            sign(Algorithm::RS256, Some("k1"), &rsa, &with(json!({"exp": "never"}))),
        ),
        (
            "wrong audience",
            sign(Algorithm::RS256, Some("k1"), &rsa, &with(json!({"aud": "other"}))),
        ),
        ("no audience", sign(Algorithm::RS256, Some("k1"), &rsa, &with(json!({"aud": null})))),
        (
            "wrong issuer",
            sign(Algorithm::RS256, Some("k1"), &rsa, &with(json!({"iss": "https://evil"}))),
        ),
        ("unknown kid", sign(Algorithm::RS256, Some("k9"), &rsa, &good)),
        ("RS384, not allowed", sign(Algorithm::RS384, Some("k1"), &rsa, &good)),
        ("two parts", valid.rsplit_once('.').expect("dot").0.to_string()),
        ("header not base64", format!("!!!.{body}.{signature}")),
        ("header not JSON", format!("{}.{body}.{signature}", b64(b"{\"alg\":"))),
        (
            "body not JSON",
            format!("{}.{}.{signature}", valid.split('.').next().expect("h"), b64(b"[1")),
        ),
        (
            "oversized",
            sign(Algorithm::RS256, Some("k1"), &rsa, &with(json!({"pad": "x".repeat(9000)}))),
        ),
        ("empty", String::new()),
    ];
    let before = *app.core.changes().borrow();
    for (what, token) in &corpus {
        assert_eq!(status(&app, Some(token)).await, 401, "{what}");
    }
    assert_eq!(status(&app, None).await, 401, "no Authorization header");
    let raw = app
        .client
        .get(format!("{}/mail", app.base_url))
        .header("authorization", format!("Token {valid}"))
        .send()
        .await
        .expect("get");
    assert_eq!(raw.status().as_u16(), 401, "not the Bearer scheme");
    assert_eq!(*app.core.changes().borrow(), before, "no refused call reached a tool");
}

/// `ensure_project` as a remote client with `token`; the HTTP status.
async fn status(app: &TestApp, token: Option<&str>) -> u16 {
    let remote = Remote { app, client_ip: "198.51.100.30", token };
    remote.tool("ensure_project", json!({"human_key": "/work/negative"})).await.0
}

#[tokio::test]
async fn jwks_keys_are_kept_and_fetched_again_for_a_new_kid() {
    let rsa = rsa_key("jwt-rsa.pem");
    let ec = EncodingKey::from_ec_pem(&pem("jwt-ec.pem")).expect("ec key");
    let issuer = JsonServer::start(jwks(vec![jwk(&rsa, Algorithm::RS256, "rsa-1")])).await;
    let app = start(&[
        ("HTTP_JWT_ENABLED", "true"),
        ("HTTP_JWT_JWKS_URL", &issuer.url),
        ("HTTP_JWT_ALGORITHMS", "RS256,ES256"),
        ("HTTP_RBAC_DEFAULT_ROLE", "writer"),
    ])
    .await;
    let claims = json!({"sub": "agent", "exp": now() + 600});
    let rsa_token = sign(Algorithm::RS256, Some("rsa-1"), &rsa, &claims);
    for _ in 0..5 {
        assert_eq!(status(&app, Some(&rsa_token)).await, 200);
    }
    assert_eq!(issuer.hits(), 1, "kept by kid, not fetched per request");
    // The issuer rotates in an EC key: a token naming it makes one new fetch.
    issuer
        .set(jwks(vec![jwk(&rsa, Algorithm::RS256, "rsa-1"), jwk(&ec, Algorithm::ES256, "ec-2")]));
    let ec_token = sign(Algorithm::ES256, Some("ec-2"), &ec, &claims);
    assert_eq!(status(&app, Some(&ec_token)).await, 200, "the new kid is fetched");
    assert_eq!(issuer.hits(), 2);
    // Made-up kids right after a fetch wait their turn: no fetch per forged token.
    for n in 0..5 {
        let forged = sign(Algorithm::RS256, Some(&format!("made-up-{n}")), &rsa, &claims);
        assert_eq!(status(&app, Some(&forged)).await, 401);
    }
    assert_eq!(issuer.hits(), 2, "unknown kids fetch at most once per interval");
    // No kid: the first key that fits the algorithm.
    let bare = sign(Algorithm::ES256, None, &ec, &claims);
    assert_eq!(status(&app, Some(&bare)).await, 200);
}
