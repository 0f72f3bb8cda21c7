//! HTTP authentication, roles and rate limits (docs/compat/http.md §4): the bearer token, the
//! localhost rule and its proxy headers, readers refused writes over MCP, REST and the web
//! UI, clients over their rate refused while others go on, health probes exempt.

use mailroom_testkit::{InboxCall, SendCall, TestApp, TestOptions, WhoisCall};
use serde_json::{Value, json};

const TOKEN: &str = "correct-horse-battery-staple";

pub(crate) async fn start(env: &[(&'static str, &str)]) -> TestApp {
    let server_env = env.iter().map(|(k, v)| (*k, (*v).to_string())).collect();
    TestApp::start_with(TestOptions { server_env, ..TestOptions::default() }).await
}

/// A request as a remote client makes it: through a proxy on this machine that names the
/// client (`X-Forwarded-For`), with a bearer token or none.
pub(crate) struct Remote<'a> {
    pub app: &'a TestApp,
    pub client_ip: &'a str,
    pub token: Option<&'a str>,
}

impl Remote<'_> {
    pub fn request(&self, method: reqwest::Method, path: &str) -> reqwest::RequestBuilder {
        let mut request = self
            .app
            .client
            .request(method, format!("{}{path}", self.app.base_url))
            .header("x-forwarded-for", self.client_ip);
        if let Some(token) = self.token {
            request = request.header("authorization", format!("Bearer {token}"));
        }
        request
    }

    pub async fn post(&self, path: &str, body: Value) -> (u16, Value) {
        let response = self.request(reqwest::Method::POST, path).json(&body).send().await;
        let response = response.expect("post");
        let status = response.status().as_u16();
        (status, response.json().await.unwrap_or(Value::Null))
    }

    pub async fn get(&self, path: &str) -> u16 {
        let response = self.request(reqwest::Method::GET, path).send().await.expect("get");
        response.status().as_u16()
    }

    pub async fn tool(&self, name: &str, arguments: Value) -> (u16, Value) {
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                          "params": {"name": name, "arguments": arguments}});
        self.post("/mcp", call).await
    }
}

#[tokio::test]
async fn the_bearer_token_guards_everything_but_health_and_local_requests() {
    let app = start(&[("HTTP_BEARER_TOKEN", TOKEN), ("HTTP_RBAC_DEFAULT_ROLE", "writer")]).await;
    let anonymous = Remote { app: &app, client_ip: "203.0.113.5", token: None };
    let wrong = Remote { token: Some("correct-horse-battery-stapl"), ..anonymous };
    let right = Remote { token: Some(TOKEN), ..anonymous };
    for who in [&anonymous, &wrong] {
        let (status, body) = who.tool("health_check", json!({})).await;
        assert_eq!((status, body), (401, json!({"detail": "Unauthorized"})));
        assert_eq!(who.get("/mail").await, 401, "the web UI too");
        let (status, _) = who.post("/api/inbox", json!({})).await;
        assert_eq!(status, 401, "and REST");
    }
    for probe in ["/health", "/health/liveness", "/health/readiness", "/ready", "/api/health"] {
        assert_eq!(anonymous.get(probe).await, 200, "{probe} is exempt");
    }
    let (status, body) = right.tool("health_check", json!({})).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(right.get("/mail").await, 200);
    // Local (a loopback peer, no proxy header): no token needed.
    let health = app.tool_ok("health_check", json!({})).await;
    assert_eq!(health["status"], "ok");
    // A forged X-Forwarded-For does not make a request local: it makes it remote.
    let forged = app
        .client
        .get(format!("{}/mail", app.base_url))
        .header("x-forwarded-for", "127.0.0.1")
        .send()
        .await
        .expect("get");
    assert_eq!(forged.status().as_u16(), 401);
}

#[tokio::test]
async fn without_the_localhost_rule_every_request_needs_the_token() {
    let app =
        start(&[("HTTP_BEARER_TOKEN", TOKEN), ("HTTP_ALLOW_LOCALHOST_UNAUTHENTICATED", "false")])
            .await;
    let (status, _) = app.get("/mail").await;
    assert_eq!(status, 401);
    let (status, _) = app.get("/health").await;
    assert_eq!(status, 200);
}

#[tokio::test]
async fn a_reader_reads_but_cannot_write_over_mcp_rest_or_the_ui() {
    let app = start(&[("HTTP_BEARER_TOKEN", TOKEN)]).await;
    let slug = app.seed_pair("/work/rbac", "BlueLake", "GreenCastle").await;
    let reader = Remote { app: &app, client_ip: "198.51.100.7", token: Some(TOKEN) };
    let forbidden = json!({"detail": "Forbidden"});
    let send = SendCall::new(&slug, "BlueLake", "GreenCastle", "from a reader").body("x");
    let send = send.arguments();
    assert_eq!(reader.tool("send_message", send.clone()).await, (403, forbidden.clone()));
    let inbox = InboxCall::new(&slug, "GreenCastle");
    let (status, body) = reader.tool("fetch_inbox", inbox.arguments()).await;
    assert_eq!(status, 200, "a read-only tool: {body}");
    let (status, body) =
        reader.post("/mcp", json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list"})).await;
    assert!(status == 200 && body["result"]["tools"].is_array(), "{body}");
    // A key given twice is judged as the transport reads it (the last one).
    let smuggled = format!(
        r#"{{"jsonrpc":"2.0","id":3,"method":"tools/list","method":"tools/call","params":{{"name":"send_message","arguments":{send}}}}}"#
    );
    let response = reader
        .request(reqwest::Method::POST, "/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(smuggled)
        .send()
        .await
        .expect("post");
    assert_eq!(response.status().as_u16(), 403, "a smuggled tools/call is a tools/call");
    let rest_send = json!({"project_slug": slug, "sender_name": "BlueLake",
                           "recipient_names": ["GreenCastle"], "subject": "s", "body_md": "b"});
    assert_eq!(reader.post("/api/message/send", rest_send).await, (403, forbidden.clone()));
    let (status, _) =
        reader.post("/api/inbox", json!({"project_slug": slug, "agent_name": "GreenCastle"})).await;
    assert_eq!(status, 200);
    assert_eq!(reader.get(&format!("/mail/{slug}")).await, 200, "pages are for readers");
    // Reading is a reader's; marking read while reading is a change.
    let mut marking = inbox.arguments();
    marking["mark_read"] = json!(true);
    assert_eq!(reader.tool("fetch_inbox", marking).await, (403, forbidden.clone()));
    let rest_marking =
        json!({"project_slug": slug, "agent_name": "GreenCastle", "mark_read": true});
    assert_eq!(reader.post("/api/inbox", rest_marking).await, (403, forbidden.clone()));
    // Spelled with an escape, the key still means mark_read to the tool, and to the check.
    let escaped = format!(
        r#"{{"jsonrpc":"2.0","id":4,"method":"tools/call","params":{{"name":"fetch_inbox","arguments":{{"project_key":"{slug}","agent_name":"GreenCastle","mark\u005fread":true}}}}}}"#
    );
    let response = reader
        .request(reqwest::Method::POST, "/mcp")
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .body(escaped)
        .send()
        .await
        .expect("post");
    assert_eq!(response.status().as_u16(), 403, "an escaped mark_read is a mark_read");
    let rest_escaped =
        format!(r#"{{"project_slug":"{slug}","agent_name":"GreenCastle","mark\u005fread":true}}"#);
    let response = reader
        .request(reqwest::Method::POST, "/api/inbox")
        .header("content-type", "application/json")
        .body(rest_escaped)
        .send()
        .await
        .expect("post");
    assert_eq!(response.status().as_u16(), 403, "over REST too");
    let mut not_marking = inbox.arguments();
    not_marking["mark_read"] = json!(false);
    assert_eq!(reader.tool("fetch_inbox", not_marking).await.0, 200);
    let ui_change = format!("/mail/{slug}/inbox/GreenCastle/mark-all-read");
    assert_eq!(reader.post(&ui_change, json!({})).await, (403, forbidden));
    // Nothing was written: the inbox is still empty.
    assert_eq!(inbox.ok(&app).await, json!([]));
}

#[tokio::test]
async fn writers_write_and_roles_can_be_turned_off() {
    for env in [vec![("HTTP_RBAC_DEFAULT_ROLE", "rw")], vec![("HTTP_RBAC_ENABLED", "false")]] {
        let app = start(&env).await;
        let slug = app.seed_pair("/work/rbac-w", "BlueLake", "GreenCastle").await;
        let remote = Remote { app: &app, client_ip: "198.51.100.8", token: None };
        let send = SendCall::new(&slug, "BlueLake", "GreenCastle", "allowed").body("x");
        let (status, body) = remote.tool("send_message", send.arguments()).await;
        assert_eq!(status, 200, "{env:?}: {body}");
        assert!(body["result"]["isError"] != json!(true), "{body}");
    }
}

#[tokio::test]
async fn a_client_over_its_rate_is_refused_while_others_go_on() {
    let app = start(&[
        ("RATE_LIMIT_ENABLED", "true"),
        ("HTTP_RATE_LIMIT_TOOLS_PER_MINUTE", "3"),
        ("HTTP_RATE_LIMIT_PER_MINUTE", "1000"),
    ])
    .await;
    let slug = app.seed_pair("/work/limits", "BlueLake", "GreenCastle").await;
    let fetch = InboxCall::new(&slug, "GreenCastle").arguments();
    let busy = Remote { app: &app, client_ip: "192.0.2.10", token: None };
    for n in 0..3 {
        assert_eq!(busy.tool("fetch_inbox", fetch.clone()).await.0, 200, "call {n}");
    }
    let (status, body) = busy.tool("fetch_inbox", fetch.clone()).await;
    assert_eq!((status, body), (429, json!({"detail": "Rate limit exceeded"})));
    // Its other tools have buckets of their own, as do other clients; health is exempt.
    assert_eq!(busy.tool("whois", WhoisCall::new(&slug, "BlueLake").arguments()).await.0, 200);
    let calm = Remote { client_ip: "192.0.2.11", ..busy };
    assert_eq!(calm.tool("fetch_inbox", fetch).await.0, 200);
    assert_eq!(busy.get("/health").await, 200);
}

/// A browser's preflight from `origin` for a JSON POST to /mcp carrying a token.
async fn preflight(app: &TestApp, origin: &str) -> reqwest::Response {
    app.client
        .request(reqwest::Method::OPTIONS, format!("{}/mcp", app.base_url))
        .header("origin", origin)
        .header("access-control-request-method", "POST")
        .header("access-control-request-headers", "authorization,content-type,mcp-session-id")
        .send()
        .await
        .expect("preflight")
}

#[tokio::test]
async fn cors_lets_listed_origins_read_answers_and_no_others() {
    const DASH: &str = "https://dash.example";
    let header = |response: &reqwest::Response, name: &str| {
        response.headers().get(name).map(|v| v.to_str().expect("ascii").to_string())
    };
    // On by default (development), but no origin listed: no other origin may read.
    let plain = start(&[]).await;
    let response = preflight(&plain, DASH).await;
    assert_eq!(header(&response, "access-control-allow-origin"), None);

    let app = start(&[
        ("HTTP_CORS_ORIGINS", DASH),
        ("HTTP_CORS_ALLOW_CREDENTIALS", "true"),
        ("HTTP_BEARER_TOKEN", TOKEN),
        ("HTTP_ALLOW_LOCALHOST_UNAUTHENTICATED", "false"),
    ])
    .await;
    // The preflight carries no token and needs none.
    let response = preflight(&app, DASH).await;
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(header(&response, "access-control-allow-origin").as_deref(), Some(DASH));
    assert_eq!(header(&response, "access-control-allow-credentials").as_deref(), Some("true"));
    let allowed = header(&response, "access-control-allow-headers").expect("headers");
    assert!(allowed.contains("authorization") && allowed.contains("mcp-session-id"), "{allowed}");
    assert!(header(&response, "access-control-allow-methods").expect("methods").contains("POST"));
    let list = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    let post = |origin: &str| {
        app.client
            .post(format!("{}/mcp", app.base_url))
            .header("origin", origin)
            .bearer_auth(TOKEN)
            .json(&list)
            .send()
    };
    let response = post(DASH).await.expect("post");
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(header(&response, "access-control-allow-origin").as_deref(), Some(DASH));
    let exposed = header(&response, "access-control-expose-headers").expect("exposed");
    assert!(exposed.contains("mcp-session-id"), "{exposed}");
    // A request without Origin is no CORS request: no CORS headers at all.
    let agent = app.client.post(format!("{}/mcp", app.base_url)).bearer_auth(TOKEN).json(&list);
    let response = agent.send().await.expect("post");
    assert_eq!(response.status().as_u16(), 200);
    assert_eq!(header(&response, "access-control-expose-headers"), None);
    assert_eq!(header(&response, "vary"), None);
    // An origin not listed: refused outright (the DNS-rebinding check), no CORS headers.
    let response = post("https://evil.example").await.expect("post");
    assert_eq!(response.status().as_u16(), 403);
    assert_eq!(header(&response, "access-control-allow-origin"), None);
    let response = preflight(&app, "https://evil.example").await;
    assert_eq!(header(&response, "access-control-allow-origin"), None);

    // Off outside development unless asked for.
    let production = start(&[("HTTP_CORS_ORIGINS", DASH), ("APP_ENVIRONMENT", "production")]).await;
    let response = preflight(&production, DASH).await;
    assert_eq!(header(&response, "access-control-allow-origin"), None);
}

/// A page of another site, in a browser on this machine, reaches 127.0.0.1 from a loopback
/// peer; it is not a local client. With its origin allowed (`*`), it is a reader: it may not
/// write. Not allowed, it is refused outright, on REST too, where a `text/plain` POST needs no
/// preflight.
#[tokio::test]
async fn pages_of_other_sites_are_not_local_clients() {
    let app = start(&[("HTTP_CORS_ORIGINS", "*")]).await;
    let slug = app.seed_pair("/work/origins", "BlueLake", "GreenCastle").await;
    let send = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
        "name": "send_message", "arguments": {"project_key": slug, "sender_name": "BlueLake",
        "to": ["GreenCastle"], "subject": "from a web page", "body_md": "x"}}});
    let from = |origin: &str| {
        app.client.post(format!("{}/mcp", app.base_url)).header("origin", origin).json(&send)
    };
    let response = from("https://evil.example").send().await.expect("post");
    assert_eq!(response.status().as_u16(), 403, "a foreign page is a reader");
    let response = from("http://localhost:3000").send().await.expect("post");
    assert_eq!(response.status().as_u16(), 200, "a page of this machine is local");

    let strict = start(&[]).await;
    let slug = strict.seed_pair("/work/origins", "BlueLake", "GreenCastle").await;
    let body = json!({"project_slug": slug, "sender_name": "BlueLake",
                      "recipient_names": ["GreenCastle"], "subject": "csrf", "body_md": "x"});
    let response = strict
        .client
        .post(format!("{}/api/message/send", strict.base_url))
        .header("origin", "https://evil.example")
        .header("content-type", "text/plain")
        .body(body.to_string())
        .send()
        .await
        .expect("post");
    assert_eq!(response.status().as_u16(), 403, "a cross-site simple POST to REST");
    let inbox = InboxCall::new(&slug, "GreenCastle").ok(&strict).await;
    assert_eq!(inbox, json!([]), "nothing was sent");
}
