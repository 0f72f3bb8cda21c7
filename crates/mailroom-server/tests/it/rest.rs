//! The REST API mirrors the tools.

use mailroom_testkit::{PolicyCall, ProjectCall, RegisterCall, SendCall, TestApp, sent_message_id};
use serde_json::json;

#[tokio::test]
async fn rest_routes_return_the_tool_shapes() {
    let app = TestApp::start().await;
    let (status, project) =
        app.post("/api/project/ensure", json!({"human_key": "/work/rest"})).await;
    assert_eq!(status, 200, "{project}");
    let slug = project["slug"].as_str().expect("slug").to_string();
    for name in ["BlueLake", "GreenCastle"] {
        let (status, agent) = app
            .post(
                "/api/agent/register",
                json!({"project_slug": slug, "name": name,
            "program": "bench", "model": "none"}),
            )
            .await;
        assert_eq!((status, agent["name"].as_str()), (200, Some(name)));
    }
    PolicyCall::new(&slug, "GreenCastle", "open").ok(&app).await;
    let (status, sent) = app.post("/api/message/send", json!({"project_slug": slug, "sender_name": "BlueLake",
        "recipient_names": ["GreenCastle"], "subject": "Load", "body_md": "test body", "importance": "high"})).await;
    assert_eq!(status, 200, "{sent}");
    let id = sent_message_id(&sent);
    let (status, inbox) = app
        .post(
            "/api/inbox",
            json!({"project_slug": slug, "agent_name": "GreenCastle",
        "include_bodies": true}),
        )
        .await;
    assert_eq!(status, 200);
    assert_eq!(inbox[0]["id"], id);
    assert_eq!(inbox[0]["body_md"], "test body");
    let (status, hits) =
        app.post("/api/messages/search", json!({"project_slug": slug, "query": "body"})).await;
    assert_eq!((status, hits["result"][0]["id"].as_i64()), (200, Some(id)));
}

#[tokio::test]
async fn rest_errors_are_json_with_a_stable_type() {
    let app = TestApp::start().await;
    let (status, body) =
        app.post("/api/inbox", json!({"project_slug": "missing", "agent_name": "X"})).await;
    assert_eq!((status, body["error"]["type"].as_str()), (404, Some("NOT_FOUND")), "{body}");
    let (status, body) = app.post("/api/message/send", json!({"project_slug": "x"})).await;
    assert_eq!(status, 400);
    assert!(
        body["error"]["message"].as_str().unwrap_or_default().contains("sender_name"),
        "{body}"
    );
    let (status, body) =
        app.post("/api/project/ensure", json!({"human_key": "/w", "extra": 1})).await;
    assert_eq!(status, 400);
    assert!(body["error"]["message"].as_str().unwrap_or_default().contains("extra"), "{body}");
}

const SEED_PROJECT: &str = "benchmark-project";

/// The benchmark plan's setup and message phases (`scripts/unified_benchmark.sh`), request by
/// request, with its bodies as written.
#[tokio::test]
async fn the_seed_benchmark_flow_runs_as_written() {
    let app = TestApp::start().await;
    let (status, project) =
        app.post("/api/project/ensure", json!({"human_key": SEED_PROJECT})).await;
    assert_eq!(status, 200, "{project}");
    assert_eq!(
        (project["slug"].as_str(), project["human_key"].as_str()),
        (Some(SEED_PROJECT), Some(SEED_PROJECT))
    );
    let (_, again) = app.post("/api/project/ensure", json!({"human_key": SEED_PROJECT})).await;
    assert_eq!(again["id"], project["id"], "ensure is idempotent");
    for name in ["sender", "receiver", "sender"] {
        let (status, agent) = app
            .post(
                "/api/agent/register",
                json!({"project_slug": SEED_PROJECT, "name": name, "program": "bench", "model": "test"}),
            )
            .await;
        assert_eq!((status, agent["name"].as_str()), (200, Some(name)), "{agent}");
    }
    let send = json!({"project_slug": SEED_PROJECT, "sender_name": "sender",
        "recipient_names": ["receiver"], "subject": "Bench", "body_md": "Test"});
    for _ in 0..3 {
        let (status, sent) = app.post("/api/message/send", send.clone()).await;
        assert_eq!(status, 200, "{sent}");
        assert_eq!(sent["deliveries"][0]["payload"]["to"], json!(["receiver"]), "{sent}");
    }
    let (status, inbox) = app
        .post("/api/inbox", json!({"project_slug": SEED_PROJECT, "agent_name": "receiver"}))
        .await;
    assert_eq!(status, 200, "{inbox}");
    let subjects: Vec<_> =
        inbox.as_array().expect("a list").iter().map(|m| m["subject"].clone()).collect();
    assert_eq!(subjects, vec![json!("Bench"); 3]);
}

/// REST names what the agent's rules would refuse, and MCP's rules stay the reference's.
#[tokio::test]
async fn rest_takes_names_as_given_while_mcp_keeps_the_reference_rules() {
    let app = TestApp::start().await;
    app.post("/api/project/ensure", json!({"human_key": SEED_PROJECT})).await;
    for name in ["sender", "receiver"] {
        let body = json!({"project_slug": SEED_PROJECT, "name": name, "program": "bench", "model": "test"});
        assert_eq!(app.post("/api/agent/register", body).await.0, 200);
    }
    let refused = ProjectCall::new(SEED_PROJECT).call(&app).await;
    assert!(refused.expect_err("not a path").contains("absolute directory path"));
    let coerced = RegisterCall::new(SEED_PROJECT, "sender2").ok(&app).await;
    let generated = coerced["name"].as_str().expect("name").to_string();
    assert_ne!(generated, "sender2", "MCP replaces a name that is not adjective+noun");
    let screened =
        SendCall::new(SEED_PROJECT, &generated, "receiver", "Hi").body("x").call(&app).await;
    let screened = screened.expect_err("screened");
    assert!(screened.contains("looks like a Unix user name"), "{screened}");
    // Over REST, the same first message goes through; over MCP it waits for a handshake.
    let rest_send = |to: &str| {
        json!({"project_slug": SEED_PROJECT, "sender_name": generated, "recipient_names": [to],
            "subject": "Hi", "body_md": "x"})
    };
    let (status, sent) = app.post("/api/message/send", rest_send("receiver")).await;
    assert_eq!(status, 200, "{sent}");
    let mcp_agent = RegisterCall::new(SEED_PROJECT, "BlueLake").ok(&app).await;
    assert_eq!(mcp_agent["name"], "BlueLake");
    let handshake = SendCall::new(SEED_PROJECT, "BlueLake", &generated, "Hi")
        .body("x")
        .arg("auto_contact_if_blocked", false)
        .call(&app)
        .await;
    let handshake = handshake.expect_err("contact required");
    assert!(handshake.contains("Contact approval required"), "{handshake}");
    // A recipient's explicit choice still holds over REST.
    PolicyCall::new(SEED_PROJECT, "receiver", "block_all").ok(&app).await;
    let (status, blocked) = app.post("/api/message/send", rest_send("receiver")).await;
    assert_eq!(
        (status, blocked["error"]["type"].as_str()),
        (403, Some("CONTACT_BLOCKED")),
        "{blocked}"
    );
}

#[tokio::test]
async fn rest_names_that_are_not_identifiers_are_refused_by_field() {
    let app = TestApp::start().await;
    for key in ["a/b", "has space", "../up"] {
        let (status, body) = app.post("/api/project/ensure", json!({"human_key": key})).await;
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert_eq!(status, 400, "{body}");
        assert!(message.starts_with("human_key must be"), "{message}");
    }
    app.post("/api/project/ensure", json!({"human_key": SEED_PROJECT})).await;
    for name in ["two words", "-x", "naïve"] {
        let body = json!({"project_slug": SEED_PROJECT, "name": name, "program": "bench", "model": "test"});
        let (status, body) = app.post("/api/agent/register", body).await;
        let message = body["error"]["message"].as_str().unwrap_or_default();
        assert_eq!(status, 400, "{body}");
        assert!(message.starts_with(&format!("name '{name}'")), "{message}");
    }
    let (_, agents) =
        app.post("/api/inbox", json!({"project_slug": SEED_PROJECT, "agent_name": "x"})).await;
    assert_eq!(agents["error"]["type"], "NOT_FOUND", "nothing was registered: {agents}");
}

/// `/api/inbox` takes unread_only and mark_read; `/api/inbox/events` mirrors
/// fetch_inbox_events, its cursor refusals as JSON errors with their type.
#[tokio::test]
async fn rest_reads_unread_mail_and_the_mailbox_events() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/rest-events", "BlueLake", "GreenCastle").await;
    let sent = SendCall::new(&slug, "BlueLake", "GreenCastle", "hello").ok(&app).await;
    let id = sent_message_id(&sent);
    let unread = json!({"project_slug": slug, "agent_name": "GreenCastle", "unread_only": true,
        "mark_read": true});
    let (status, inbox) = app.post("/api/inbox", unread.clone()).await;
    assert_eq!((status, inbox[0]["id"].as_i64()), (200, Some(id)), "{inbox}");
    let (_, inbox) = app.post("/api/inbox", unread).await;
    assert_eq!(inbox, json!([]), "marked read by the first call");

    let events = json!({"project_slug": slug, "agent_name": "GreenCastle", "limit": 1});
    let (status, page) = app.post("/api/inbox/events", events).await;
    assert_eq!(status, 200, "{page}");
    assert_eq!(
        (page["events"][0]["kind"].as_str(), page["events"][0]["message_id"].as_i64()),
        (Some("delivered"), Some(id)),
        "{page}"
    );
    let cursor = page["next_cursor"].clone();
    let (_, rest) = app
        .post(
            "/api/inbox/events",
            json!({"project_slug": slug, "agent_name": "GreenCastle",
            "cursor": cursor}),
        )
        .await;
    assert_eq!(rest["events"].as_array().map(Vec::len), Some(1), "{rest}");
    assert_eq!(rest["events"][0]["kind"], "read", "{rest}");
    let (status, body) = app
        .post(
            "/api/inbox/events",
            json!({"project_slug": slug, "agent_name": "GreenCastle",
            "cursor": "mb1.0123456789abcdef.1"}),
        )
        .await;
    assert_eq!((status, body["error"]["type"].as_str()), (409, Some("CURSOR_AHEAD")), "{body}");
    let (status, body) = app
        .post(
            "/api/inbox/events",
            json!({"project_slug": slug, "agent_name": "GreenCastle",
            "cursor": "garbage"}),
        )
        .await;
    assert_eq!((status, body["error"]["type"].as_str()), (400, Some("INVALID_CURSOR")), "{body}");
}
