//! Outbound HTTPS as an operator runs it: `mailroom serve` fetching an issuer's JWKS and
//! calling an OpenAI-compatible API over TLS, trusting the system's store or `SSL_CERT_FILE`
//! (here the test CA), and refusing a certificate it cannot trust.

mod common;

use std::time::{SystemTime, UNIX_EPOCH};

use common::{KillOnDrop, start_with, stop};
use jsonwebtoken::jwk::{Jwk, JwkSet};
use jsonwebtoken::{Algorithm, EncodingKey, Header, encode};
use mailroom_testkit::tls::{TlsProxy, ca_file, fixture};
use mailroom_testkit::{
    FakeLlm, FakeLlmMode, JsonServer, RecentSummaryCall, RegisterCall, SendCall,
};
use serde_json::{Value, json};

/// Calls `name` over MCP with `token`; the HTTP status and the tool's parsed text.
async fn call(url: &str, token: &str, name: &str, arguments: Value) -> (u16, Value) {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": name, "arguments": arguments}});
    let response = reqwest::Client::new()
        .post(format!("{url}/mcp"))
        .bearer_auth(token)
        .json(&body)
        .send()
        .await
        .expect("post");
    let status = response.status().as_u16();
    let reply: Value = response.json().await.unwrap_or(Value::Null);
    let text = reply["result"]["content"][0]["text"].as_str().unwrap_or("null");
    (status, serde_json::from_str(text).unwrap_or(Value::Null))
}

#[tokio::test]
async fn jwks_and_the_llm_are_reached_over_https() {
    let key = EncodingKey::from_rsa_pem(&std::fs::read(fixture("jwt-rsa.pem")).expect("key"))
        .expect("rsa key");
    let mut jwk = Jwk::from_encoding_key(&key, Algorithm::RS256).expect("jwk");
    jwk.common.key_id = Some("k1".to_string());
    let issuer =
        JsonServer::start(serde_json::to_value(JwkSet { keys: vec![jwk] }).expect("jwks")).await;
    let issuer_tls = TlsProxy::start(issuer.address).await;
    let llm = FakeLlm::start(FakeLlmMode::Reference).await;
    let llm_tls = TlsProxy::start(llm.address).await;
    let exp = SystemTime::now().duration_since(UNIX_EPOCH).expect("clock").as_secs() + 600;
    let mut header = Header::new(Algorithm::RS256);
    header.kid = Some("k1".to_string());
    let token = encode(&header, &json!({"sub": "ops", "exp": exp}), &key).expect("sign");

    let jwks_url = format!("{}/.well-known/jwks.json", issuer_tls.base_url);
    let llm_url = format!("{}/v1", llm_tls.base_url);
    let ca = ca_file().display().to_string();
    let mut env = vec![
        ("HTTP_JWT_ENABLED", "true"),
        ("HTTP_JWT_ALGORITHMS", "RS256"),
        ("HTTP_JWT_JWKS_URL", jwks_url.as_str()),
        ("LLM_ENABLED", "true"),
        ("OPENAI_BASE_URL", llm_url.as_str()),
        ("OPENAI_API_KEY", "sk-test-https"),
    ];
    // Without the test CA the issuer's certificate is not trusted: no keys, no entry.
    let data = tempfile::tempdir().expect("temp dir");
    let (server, url) = start_with(data.path(), &env);
    let server = KillOnDrop(Some(server));
    let (status, _) = call(&url, &token, "health_check", json!({})).await;
    assert_eq!(status, 401, "an untrusted JWKS endpoint gives no keys");
    assert_eq!(issuer.hits(), 0, "the TLS handshake failed before any request");
    stop(server.take());

    env.push(("SSL_CERT_FILE", ca.as_str()));
    let data = tempfile::tempdir().expect("temp dir");
    let (server, url) = start_with(data.path(), &env);
    let server = KillOnDrop(Some(server));
    let (status, health) = call(&url, &token, "health_check", json!({})).await;
    assert_eq!((status, &health["status"]), (200, &json!("ok")), "{health}");
    assert_eq!(issuer.hits(), 1);
    let (_, project) =
        call(&url, &token, "ensure_project", json!({"human_key": "/work/tls"})).await;
    let slug = project["slug"].as_str().expect("slug").to_string();
    for name in ["BlueLake", "GreenCastle"] {
        let register = RegisterCall::new(&slug, name).arguments();
        assert_eq!(call(&url, &token, "register_agent", register).await.0, 200);
    }
    let send = SendCall::new(&slug, "BlueLake", "BlueLake", "plan").body("- [ ] ship it");
    let send = send.arguments();
    assert_eq!(call(&url, &token, "send_message", send).await.0, 200);
    let summary = RecentSummaryCall::new(&slug).arguments();
    let (_, summary) = call(&url, &token, "summarize_recent", summary).await;
    assert!(summary["llm_model"].is_string(), "the LLM answered over HTTPS: {summary}");
    let requests = llm.requests();
    assert_eq!(requests.len(), 1);
    assert_eq!(requests[0].authorization.as_deref(), Some("Bearer sk-test-https"));
    stop(server.take());
}

/// A PostgreSQL cluster of its own serving TLS with the test certificate
/// (`scripts/postgres-cluster`, `MAILROOM_PG_TLS`), stopped when dropped.
struct TlsPostgres {
    dir: tempfile::TempDir,
    /// `postgres://postgres@127.0.0.1:<port>/mailroom`.
    url: String,
}

impl TlsPostgres {
    fn start() -> Self {
        let dir = tempfile::tempdir().expect("temp dir");
        // The server runs as `postgres` when the tests run as root: it must enter the folder.
        std::fs::set_permissions(dir.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755))
            .expect("chmod");
        let tls = format!(
            "{}:{}",
            fixture("tls-server.pem").display(),
            fixture("tls-server.key").display()
        );
        let output = std::process::Command::new(script("postgres-cluster"))
            .arg("start")
            .arg(dir.path().join("pg"))
            .env("MAILROOM_PG_FAST", "1")
            .env("MAILROOM_PG_TLS", tls)
            .output()
            .expect("scripts/postgres-cluster");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        let url = String::from_utf8_lossy(&output.stdout).trim().to_string();
        Self { dir, url }
    }

    /// `psql`'s one-value answer to `sql`, over a plain connection.
    fn value(&self, sql: &str) -> String {
        let output = std::process::Command::new("psql")
            .args([&self.url, "-qAtc", sql])
            .env("PGSSLMODE", "disable")
            .output()
            .expect("psql");
        assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }

    /// `mailroom migrate` on a data directory of its own against this database, as `url`
    /// (the cluster's URL with `params`) and `env` name it: whether it connected, and its
    /// error.
    fn migrate(&self, params: &str, env: &[(&str, &str)]) -> (bool, String) {
        let data = self.dir.path().join("data");
        std::fs::create_dir_all(&data).expect("mkdir");
        let output = common::mailroom()
            .args(["migrate", "--data-dir"])
            .arg(&data)
            .env("DATABASE_URL", format!("{}?{params}", self.url))
            .env_remove("SSL_CERT_FILE")
            .envs(env.iter().copied())
            .output()
            .expect("mailroom migrate");
        (output.status.success(), String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

impl Drop for TlsPostgres {
    fn drop(&mut self) {
        let _ = std::process::Command::new(script("postgres-cluster"))
            .arg("stop")
            .arg(self.dir.path().join("pg"))
            .status();
    }
}

fn script(name: &str) -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts").join(name)
}

/// `DATABASE_URL`'s `sslmode` and `sslrootcert` as libpq reads them: `verify-full` with the
/// test CA (named, or in the system's store through `SSL_CERT_FILE`) connects, and a server
/// then keeps every connection encrypted; without a CA that signed it, `verify-full` and
/// `verify-ca` refuse the certificate; `require` encrypts without checking it; `disable`
/// connects in the clear.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn postgresql_over_tls_checks_the_certificate_as_sslmode_asks() {
    let mut postgres = TlsPostgres::start();
    let ca = ca_file();
    let ca = ca.to_str().expect("utf-8 path");
    let verified = format!("sslmode=verify-full&sslrootcert={ca}");
    assert_eq!(postgres.migrate(&verified, &[]), (true, String::new()));
    let (ok, _) = postgres.migrate("sslmode=verify-full", &[("SSL_CERT_FILE", ca)]);
    assert!(ok, "the system's store holds the CA");
    for refused in ["sslmode=verify-full", "sslmode=verify-ca"] {
        let other_ca = fixture("tls-server.pem");
        let params = format!("{refused}&sslrootcert={}", other_ca.display());
        let (ok, error) = postgres.migrate(&params, &[]);
        assert!(!ok, "{refused}: a certificate no trusted CA signed");
        assert!(error.contains("certificate") || error.contains("Certificate"), "{error}");
    }
    // Reached under a name the certificate does not hold (the address given apart):
    // verify-ca checks only the chain, verify-full the name too.
    let address = postgres.url.clone();
    postgres.url = address.replace("127.0.0.1", "db.invalid");
    let by_address = format!("hostaddr=127.0.0.1&sslrootcert={ca}");
    assert!(postgres.migrate(&format!("sslmode=verify-ca&{by_address}"), &[]).0);
    let (ok, error) = postgres.migrate(&format!("sslmode=verify-full&{by_address}"), &[]);
    assert!(!ok && error.contains("certificate"), "{error}");
    postgres.url = address;
    assert!(postgres.migrate("sslmode=require", &[]).0, "require checks no certificate");
    assert!(postgres.migrate("sslmode=disable", &[]).0);
    let (ok, error) = postgres.migrate("sslmode=sometimes", &[]);
    assert!(!ok && error.contains("sslmode \"sometimes\""), "{error}");

    // A server on it: every connection it makes (pool, writer, listener, lease) encrypted.
    let data = postgres.dir.path().join("served");
    let url = format!("{}?{verified}", postgres.url);
    let (server, base) = start_with(&data, &[("DATABASE_URL", url.as_str())]);
    let server = KillOnDrop(Some(server));
    mailroom_testkit::seed_pair_at(&base, "/work/tls", "BlueLake", "GreenCastle").await;
    let count = |ssl: &str| {
        postgres.value(&format!(
            "SELECT count(*) FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) \
             WHERE application_name = 'mailroom' AND ssl = {ssl}"
        ))
    };
    assert!(count("true").parse::<u32>().is_ok_and(|n| n >= 3), "{}", count("true"));
    assert_eq!(count("false"), "0");
    stop(server.take());
}
