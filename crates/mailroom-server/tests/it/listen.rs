//! MCP 2026-07-28 over HTTP: `server/discover`, the per-request envelope and its refusals (each
//! with its code, its HTTP status and the request's id), results stamped as the revision asks,
//! and `subscriptions/listen`: acknowledged first, told of committed mail with the listen id in
//! `_meta`, forgotten when its client goes away, closed with its result when the server stops.

use std::time::Duration;

use mailroom_testkit::{SendCall, TestApp};
use serde_json::{Value, json};

const PROJECT: &str = "/work/listen";
const VERSION: &str = "2026-07-28";

fn envelope(version: &str) -> Value {
    json!({ "io.modelcontextprotocol/protocolVersion": version,
        "io.modelcontextprotocol/clientCapabilities": {},
        "io.modelcontextprotocol/clientInfo": { "name": "listen-test", "version": "0" } })
}

/// A 2026-07-28 request with its envelope and routing headers; `name` is the `Mcp-Name` header.
fn request(
    app: &TestApp,
    method: &str,
    mut params: Value,
    name: Option<&str>,
) -> reqwest::RequestBuilder {
    params["_meta"] = envelope(VERSION);
    let mut builder = app
        .client
        .post(format!("{}/mcp", app.base_url))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-method", method)
        .json(&json!({ "jsonrpc": "2.0", "id": 7, "method": method, "params": params }));
    if let Some(name) = name {
        builder = builder.header("mcp-name", name);
    }
    builder
}

async fn answer(builder: reqwest::RequestBuilder) -> (u16, Value) {
    let response = builder.send().await.expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.expect("json"))
}

#[tokio::test]
async fn discover_and_stamped_results() {
    let app = TestApp::start().await;
    let (status, discovered) = answer(request(&app, "server/discover", json!({}), None)).await;
    assert_eq!(status, 200, "{discovered}");
    let result = &discovered["result"];
    assert_eq!(result["supportedVersions"][0], VERSION);
    assert!(result["supportedVersions"].as_array().expect("list").contains(&json!("2025-11-25")));
    assert_eq!(result["capabilities"]["resources"]["subscribe"], true);
    assert_eq!(result["resultType"], "complete");
    assert_eq!(
        (result["ttlMs"].clone(), result["cacheScope"].clone()),
        (json!(0), json!("private"))
    );
    assert_eq!(result["_meta"]["io.modelcontextprotocol/serverInfo"]["name"], "mcp-agent-mail");
    assert!(discovered.get("error").is_none());

    // A shared list keeps its members and gains the revision's.
    let (_, tools) = answer(request(&app, "tools/list", json!({}), None)).await;
    assert!(tools["result"]["tools"].as_array().expect("tools").len() > 40);
    assert_eq!(tools["result"]["resultType"], "complete");
    assert_eq!(tools["result"]["ttlMs"], 0);
    // A tool call's result is stamped, not cached.
    let params = json!({ "name": "health_check", "arguments": {} });
    let (status, called) = answer(request(&app, "tools/call", params, Some("health_check"))).await;
    assert_eq!(status, 200, "{called}");
    assert_eq!(called["result"]["resultType"], "complete");
    assert!(called["result"].get("ttlMs").is_none());
    assert_eq!(called["result"]["structuredContent"]["status"], "ok", "{called}");
    // No session is handed out.
    let response = request(&app, "tools/list", json!({}), None).send().await.expect("list");
    assert!(response.headers().get("mcp-session-id").is_none());
}

#[tokio::test]
async fn envelope_faults_are_refused_with_code_status_and_id() {
    let app = TestApp::start().await;
    let url = format!("{}/mcp", app.base_url);
    let post = |headers: Vec<(&'static str, String)>, body: Value| {
        let mut builder = app.client.post(&url).header("accept", "application/json");
        for (name, value) in headers {
            builder = builder.header(name, value);
        }
        answer(builder.json(&body))
    };
    let routed = |method: &str| {
        vec![("mcp-protocol-version", VERSION.to_string()), ("mcp-method", method.to_string())]
    };
    let body = |method: &str, params: Value| json!({ "jsonrpc": "2.0", "id": "req-9", "method": method, "params": params });
    let cases = [
        // No _meta at all: invalid params.
        (routed("tools/list"), body("tools/list", json!({})), 400, -32602),
        // The header names one version, the envelope another: a mismatch.
        (
            vec![("mcp-protocol-version", VERSION.into()), ("mcp-method", "tools/list".into())],
            body("tools/list", json!({ "_meta": envelope("2025-11-25") })),
            400,
            -32020,
        ),
        // The name header disagrees with the tool called.
        (
            [routed("tools/call"), vec![("mcp-name", "fetch_inbox".to_string())]].concat(),
            body("tools/call", json!({ "name": "health_check", "_meta": envelope(VERSION) })),
            400,
            -32020,
        ),
        // A version we do not speak, in both places.
        (
            vec![
                ("mcp-protocol-version", "2031-01-01".into()),
                ("mcp-method", "tools/list".into()),
            ],
            body("tools/list", json!({ "_meta": envelope("2031-01-01") })),
            400,
            -32022,
        ),
        // Removed in 2026-07-28.
        (routed("ping"), body("ping", json!({ "_meta": envelope(VERSION) })), 404, -32601),
        (
            routed("resources/subscribe"),
            body(
                "resources/subscribe",
                json!({ "uri": "resource://projects", "_meta": envelope(VERSION) }),
            ),
            404,
            -32601,
        ),
    ];
    for (headers, request, status, code) in cases {
        let (got, answer) = post(headers, request.clone()).await;
        assert_eq!(
            (got, answer["error"]["code"].as_i64()),
            (status, Some(code)),
            "{request}: {answer}"
        );
        assert_eq!(answer["id"], "req-9", "the request's id is kept: {answer}");
    }
    let (_, unsupported) = post(
        vec![("mcp-protocol-version", "2031-01-01".into()), ("mcp-method", "tools/list".into())],
        body("tools/list", json!({ "_meta": envelope("2031-01-01") })),
    )
    .await;
    assert_eq!(unsupported["error"]["data"]["requested"], "2031-01-01");
    assert_eq!(unsupported["error"]["data"]["supported"][0], VERSION);

    // An unknown resource names its URI in the error's data.
    let uri = "resource://nothing/here";
    let (status, missing) =
        answer(request(&app, "resources/read", json!({ "uri": uri }), Some(uri))).await;
    assert_eq!((status, missing["error"]["code"].as_i64()), (400, Some(-32602)), "{missing}");
    assert_eq!(missing["error"]["data"]["uri"], uri);
    // Listening needs an event stream.
    let refused = app
        .client
        .post(&url)
        .header("accept", "application/json")
        .header("mcp-protocol-version", VERSION)
        .header("mcp-method", "subscriptions/listen")
        .json(&body(
            "subscriptions/listen",
            json!({ "notifications": {}, "_meta": envelope(VERSION) }),
        ))
        .send()
        .await
        .expect("listen");
    assert_eq!(refused.status(), 406);
    app.assert_serves_everyone("after envelope faults").await;
}

/// The events of a listen stream, read as they come (bounded, so a missing one fails the test).
struct Events {
    response: reqwest::Response,
    buffer: String,
}

impl Events {
    async fn next(&mut self) -> Value {
        loop {
            while let Some(end) = self.buffer.find("\n\n") {
                let event: String = self.buffer.drain(..end + 2).collect();
                if let Some(data) = event.lines().find_map(|l| l.strip_prefix("data: ")) {
                    return serde_json::from_str(data).expect("JSON event");
                }
            }
            let chunk = tokio::time::timeout(Duration::from_secs(20), self.response.chunk())
                .await
                .expect("an event within the bound")
                .expect("a chunk")
                .expect("the stream stays open");
            self.buffer.push_str(&String::from_utf8_lossy(&chunk));
        }
    }
}

async fn listen(app: &TestApp, uris: &[&str]) -> Events {
    let params =
        json!({ "notifications": { "resourceSubscriptions": uris, "toolsListChanged": true } });
    let response = request(app, "subscriptions/listen", params, None).send().await.expect("listen");
    assert_eq!(response.status(), 200);
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    Events { response, buffer: String::new() }
}

#[tokio::test]
async fn a_listen_stream_is_told_of_its_inbox_and_ends_with_its_client_or_the_server() {
    let app = TestApp::start().await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    let inbox = format!("resource://inbox/GreenCastle?project={slug}");
    let mut events = listen(&app, &[&inbox]).await;

    let ack = events.next().await;
    assert_eq!(ack["method"], "notifications/subscriptions/acknowledged", "{ack}");
    assert_eq!(ack["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7);
    // Only what can fire is honored: the lists never change while the server runs.
    assert_eq!(ack["params"]["notifications"], json!({ "resourceSubscriptions": [inbox] }));

    SendCall::new(&slug, "BlueLake", "GreenCastle", "for you").ok(&app).await;
    let note = events.next().await;
    assert_eq!(note["method"], "notifications/resources/updated", "{note}");
    assert_eq!(note["params"]["uri"], inbox.as_str());
    assert_eq!(note["params"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7);

    // A client that goes away takes its subscriptions with it (the stream's entry is gone, not
    // merely closed).
    assert_eq!(app.state.subscriptions.listen_streams(), 1);
    drop(events);
    let mut forgotten = false;
    for _ in 0..400 {
        if app.state.subscriptions.listen_streams() == 0 {
            forgotten = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    assert!(forgotten, "the closed listen stream's subscriptions were kept");

    // A refused filter: the field is named, and the server serves on.
    let bad = format!("resource://inbox/Nobody?project={slug}");
    let params = json!({ "notifications": { "resourceSubscriptions": [inbox, bad] } });
    let (status, refused) = answer(request(&app, "subscriptions/listen", params, None)).await;
    assert_eq!((status, refused["error"]["code"].as_i64()), (400, Some(-32602)), "{refused}");
    let message = refused["error"]["message"].as_str().unwrap_or_default();
    assert!(
        message.contains("resourceSubscriptions[1]") && message.contains("Nobody"),
        "{message}"
    );
    app.assert_serves_everyone("after listening").await;

    // The server stopping closes an open stream gracefully: the listen request's result last.
    let mut events = listen(&app, &[&inbox]).await;
    events.next().await;
    app.state.stopping.send_replace(true);
    let closing = events.next().await;
    assert_eq!(closing["id"], 7, "{closing}");
    assert_eq!(closing["result"]["resultType"], "complete");
    assert_eq!(closing["result"]["_meta"]["io.modelcontextprotocol/subscriptionId"], 7);
}

#[tokio::test]
async fn a_listen_stream_on_file_reservations_is_told_of_holds_renewals_and_releases() {
    use mailroom_testkit::{ReleaseCall, RenewCall, ReserveCall};
    let app = TestApp::start().await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    let uri = format!("resource://file_reservations/{slug}");
    let inbox = format!("resource://inbox/GreenCastle?project={slug}");
    let mut events = listen(&app, &[&uri, &inbox]).await;
    let ack = events.next().await;
    assert_eq!(ack["params"]["notifications"]["resourceSubscriptions"], json!([uri, inbox]));

    // Each change to the project's reservations tells the URI once; mail tells the inbox only.
    ReserveCall::new(&slug, "BlueLake", &["src/**"]).ttl(600).ok(&app).await;
    assert_eq!(events.next().await["params"]["uri"], uri.as_str());
    SendCall::new(&slug, "BlueLake", "GreenCastle", "mail, not a hold").ok(&app).await;
    assert_eq!(events.next().await["params"]["uri"], inbox.as_str());
    RenewCall::new(&slug, "BlueLake").ok(&app).await;
    assert_eq!(events.next().await["params"]["uri"], uri.as_str());
    ReleaseCall::new(&slug, "BlueLake").ok(&app).await;
    assert_eq!(events.next().await["params"]["uri"], uri.as_str());
    // A second project's hold tells nothing here: the next event is the inbox's.
    let other = app.seed_pair("/work/listen-other", "BlueLake", "GreenCastle").await;
    ReserveCall::new(&other, "BlueLake", &["docs/**"]).ok(&app).await;
    SendCall::new(&slug, "BlueLake", "GreenCastle", "after the other hold").ok(&app).await;
    assert_eq!(events.next().await["params"]["uri"], inbox.as_str());
    app.assert_serves_everyone("after watching reservations").await;
}

/// A reservation that expires is no write: a listen stream on an idle server hears of it all
/// the same (the watcher looks again after a quiet spell while reservations are watched).
#[tokio::test]
async fn an_expiring_reservation_is_told_on_an_idle_server() {
    use mailroom_testkit::ReserveCall;
    let app = TestApp::start().await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    ReserveCall::new(&slug, "BlueLake", &["tmp/**"]).ttl(2).ok(&app).await;
    let uri = format!("resource://file_reservations/{slug}");
    let mut events = listen(&app, &[&uri]).await;
    events.next().await; // the acknowledgement
    // Nothing writes from here on; the hold expires after two seconds.
    let expired = events.next().await;
    assert_eq!(expired["method"], "notifications/resources/updated", "{expired}");
    assert_eq!(expired["params"]["uri"], uri.as_str());
    let holds = app.read_resource(&uri).await.expect("reservations");
    assert_eq!(holds.as_array().map(Vec::len), Some(0), "{holds}");
}
