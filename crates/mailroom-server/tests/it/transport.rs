//! Streamable HTTP rules: stateless POSTs, sessions, negotiation, rejections.

use mailroom_testkit::TestApp;
use serde_json::{Value, json};

const INIT: &str = r#"{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{},"clientInfo":{"name":"it","version":"0"}}}"#;

async fn post_raw(
    app: &TestApp,
    path: &str,
    body: &str,
    headers: &[(&str, &str)],
) -> reqwest::Response {
    let mut request = app
        .client
        .post(format!("{}{path}", app.base_url))
        .header("content-type", "application/json")
        .body(body.to_string());
    for (name, value) in headers {
        request = request.header(*name, *value);
    }
    request.send().await.expect("post")
}

#[tokio::test]
async fn tools_work_without_initialize_on_every_alias() {
    let app = TestApp::start().await;
    for path in ["/mcp", "/mcp/", "/api", "/api/"] {
        let body = r#"{"jsonrpc":"2.0","id":7,"method":"tools/list"}"#;
        let response = post_raw(&app, path, body, &[]).await;
        assert_eq!(response.status(), 200, "{path}");
        assert!(response.headers().get("mcp-session-id").is_none());
        let json: Value = response.json().await.expect("json");
        assert_eq!(json["id"], 7);
        let names: Vec<&str> = json["result"]["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .filter_map(|t| t["name"].as_str())
            .collect();
        for expected in ["send_message", "fetch_inbox", "register_agent", "search_messages"] {
            assert!(names.contains(&expected), "{path} lacks {expected}: {names:?}");
        }
    }
}

#[tokio::test]
async fn initialize_opens_a_session_that_get_and_delete_honour() {
    let app = TestApp::start().await;
    let response =
        post_raw(&app, "/mcp", INIT, &[("accept", "application/json, text/event-stream")]).await;
    assert_eq!(response.status(), 200);
    let session = response.headers()["mcp-session-id"].to_str().expect("header").to_string();
    let json: Value = response.json().await.expect("json");
    assert_eq!(json["result"]["protocolVersion"], "2025-06-18");
    assert_eq!(json["result"]["serverInfo"]["name"], "mcp-agent-mail");

    let notified = post_raw(
        &app,
        "/mcp",
        r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#,
        &[("mcp-session-id", &session), ("mcp-protocol-version", "2025-06-18")],
    )
    .await;
    assert_eq!(notified.status(), 202);

    let stream = app.event_stream(&session).await;
    assert_eq!(stream.status(), 200);
    assert_eq!(stream.headers()["content-type"], "text/event-stream");
    drop(stream);

    let deleted = app
        .client
        .delete(format!("{}/mcp", app.base_url))
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("delete");
    assert_eq!(deleted.status(), 204);
    let after = post_raw(
        &app,
        "/mcp",
        r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#,
        &[("mcp-session-id", &session)],
    )
    .await;
    assert_eq!(after.status(), 404, "a deleted session is gone");
}

/// On a shared database (PostgreSQL), a `DELETE` the database refuses answers 503, since the
/// session, still recorded, could be adopted by another server; tried again, it ends it, and
/// only a recorded session's end is told to the others.
#[tokio::test]
async fn a_delete_the_database_refuses_is_a_503_and_can_be_tried_again() {
    if !mailroom_testkit::postgres_server::enabled() {
        return;
    }
    let app = TestApp::start().await;
    let response =
        post_raw(&app, "/mcp", INIT, &[("accept", "application/json, text/event-stream")]).await;
    let session = response.headers()["mcp-session-id"].to_str().expect("header").to_string();
    app.execute_sql(
        "CREATE FUNCTION refuse_delete() RETURNS trigger LANGUAGE plpgsql AS \
         $$ BEGIN RAISE EXCEPTION 'refused by the test'; END $$; \
         CREATE TRIGGER refuse_delete BEFORE DELETE ON mcp_sessions \
         FOR EACH ROW EXECUTE FUNCTION refuse_delete()",
    )
    .await;
    let delete =
        || app.client.delete(format!("{}/mcp", app.base_url)).header("mcp-session-id", &session);
    let refused = delete().send().await.expect("delete");
    assert_eq!(refused.status(), 503);
    assert!(refused.text().await.expect("text").contains("try again"));
    app.execute_sql("DROP TRIGGER refuse_delete ON mcp_sessions").await;
    assert_eq!(delete().send().await.expect("delete").status(), 204);
    assert_eq!(delete().send().await.expect("delete").status(), 404, "ended already");
    let ping = r#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#;
    let after = post_raw(&app, "/mcp", ping, &[("mcp-session-id", &session)]).await;
    assert_eq!(after.status(), 404, "the ended session is adopted nowhere");
}

#[tokio::test]
async fn event_stream_only_clients_get_sse_responses() {
    let app = TestApp::start().await;
    let response = post_raw(
        &app,
        "/mcp",
        r#"{"jsonrpc":"2.0","id":3,"method":"ping"}"#,
        &[("accept", "text/event-stream")],
    )
    .await;
    assert_eq!(response.headers()["content-type"], "text/event-stream");
    let text = response.text().await.expect("text");
    assert!(text.starts_with("event: message\ndata: {"), "{text}");
    assert!(text.contains(r#""id":3"#), "{text}");
}

/// The precomputed list answers go out as chunks around a per-request head: the id (here a
/// string needing escapes) and the event framing land in the right places, and the length
/// announced is the length sent.
#[tokio::test]
async fn shared_list_answers_carry_their_id_in_both_framings() {
    let app = TestApp::start().await;
    let body = r#"{"jsonrpc":"2.0","id":"a\"b","method":"tools/list"}"#;
    for accept in ["application/json", "text/event-stream"] {
        let response = post_raw(&app, "/mcp", body, &[("accept", accept)]).await;
        let announced = response.headers()["content-length"].to_str().expect("length").to_string();
        let text = response.text().await.expect("text");
        assert_eq!(announced, text.len().to_string(), "{accept}");
        let json = match text.strip_prefix("event: message\ndata: ") {
            Some(event) => event.strip_suffix("\n\n").expect("event end"),
            None => &text,
        };
        let answer: Value = serde_json::from_str(json).expect("one JSON answer");
        assert_eq!(answer["id"], "a\"b", "{accept}");
        assert!(answer["result"]["tools"].as_array().is_some_and(|t| t.len() > 30), "{accept}");
    }
}

#[tokio::test]
async fn bad_requests_are_rejected_clearly() {
    let app = TestApp::start().await;
    type Case<'a> = (&'a str, &'a [(&'a str, &'a str)], u16, &'a str);
    let cases: [Case; 6] = [
        ("{not json", &[], 400, "Parse error"),
        (r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#, &[], 400, "Batch"),
        (r#"{"jsonrpc":"1.0","id":1,"method":"ping"}"#, &[], 400, "jsonrpc"),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            &[("origin", "http://evil.example")],
            403,
            "Origin",
        ),
        (r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#, &[("host", "evil.example")], 421, "Host"),
        (
            r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
            &[("mcp-protocol-version", "1999-01-01")],
            400,
            "Unsupported",
        ),
    ];
    for (body, headers, status, needle) in cases {
        let response = post_raw(&app, "/mcp", body, headers).await;
        assert_eq!(response.status(), status, "{body} {headers:?}");
        let text = response.text().await.expect("text");
        assert!(text.contains(needle), "{body}: {text}");
    }
    let localhost = post_raw(
        &app,
        "/mcp",
        r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#,
        &[("origin", "http://localhost:6274")],
    )
    .await;
    assert_eq!(localhost.status(), 200, "loopback origins (e.g. the Inspector) are allowed");
    let unknown = app.rpc("no/such", json!({})).await;
    assert_eq!(unknown["error"]["code"], -32601);
}

#[tokio::test]
async fn oversized_bodies_are_refused() {
    let app = TestApp::start().await;
    let huge = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"pad":"{}"}}}}"#,
        "x".repeat(9 << 20)
    );
    let response = post_raw(&app, "/mcp", &huge, &[]).await;
    assert_eq!(response.status(), 413);
    let json: Value = response.json().await.expect("a JSON-RPC error, not plain text");
    assert_eq!(json["error"]["code"], -32600);
}

#[tokio::test]
async fn declared_but_empty_prompts_answer_invalid_params_for_any_name() {
    let app = TestApp::start().await;
    let listed = app.rpc("prompts/list", json!({})).await;
    assert_eq!(listed["result"]["prompts"], json!([]));
    // The capability is declared, so prompts/get exists: an unknown name is invalid params
    // (-32602), not method not found.
    let got = app.rpc("prompts/get", json!({ "name": "test_simple_prompt" })).await;
    assert_eq!(got["error"]["code"], -32602, "{got}");
    assert!(got["error"]["message"].as_str().unwrap_or("").contains("test_simple_prompt"), "{got}");
}

#[tokio::test]
async fn malformed_logging_and_tool_call_params_are_invalid_params() {
    let app = TestApp::start().await;
    for level in ["debug", "info", "notice", "warning", "error", "critical", "alert", "emergency"] {
        let set = app.rpc("logging/setLevel", json!({ "level": level })).await;
        assert_eq!(set["result"], json!({}), "{level}: {set}");
    }
    for params in [json!({ "level": "verbose" }), json!({}), json!({ "level": 3 })] {
        let set = app.rpc("logging/setLevel", params.clone()).await;
        assert_eq!(set["error"]["code"], -32602, "{params}: {set}");
    }
    for params in [json!({}), json!({ "name": 7 }), json!({ "arguments": {} })] {
        let call = app.rpc("tools/call", params.clone()).await;
        assert_eq!(call["error"]["code"], -32602, "{params}: {call}");
    }
    // An unknown tool stays a tool error result (isError), as the reference answers it.
    let unknown = app.rpc("tools/call", json!({ "name": "no_such_tool", "arguments": {} })).await;
    assert_eq!(unknown["result"]["isError"], true, "{unknown}");
}
