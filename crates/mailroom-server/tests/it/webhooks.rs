//! Webhook tools under tool authentication (docs/compat/tools.md §4.13): any agent of the
//! project manages the project-wide webhooks; an agent's own webhooks, their URLs and their
//! deliveries (bcc ones included) are that agent's alone; a project webhook never sees bcc.

use mailroom_testkit::{PolicyCall, ProjectCall, RegisterCall, SendCall, TestApp, TestOptions};
use serde_json::{Value, json};

const PROJECT: &str = "/work/hooks";

/// Calls a webhook tool as the holder of `token`: `Ok(result)` or `Err(error text)`.
async fn as_agent(
    app: &TestApp,
    token: &str,
    tool: &str,
    mut arguments: Value,
) -> Result<Value, String> {
    arguments["project_key"] = json!(PROJECT);
    arguments["registration_token"] = json!(token);
    app.call_tool(tool, arguments).await
}

#[tokio::test]
async fn an_agents_webhooks_and_its_bcc_deliveries_are_its_own() {
    let app = TestApp::start_with(TestOptions { tool_auth: true, ..TestOptions::default() }).await;
    ProjectCall::new(PROJECT).ok(&app).await;
    let mut tokens = Vec::new();
    for name in ["BlueLake", "GreenCastle", "RedStone"] {
        let registered = RegisterCall::new(PROJECT, name).program("p").model("m").ok(&app).await;
        let token = registered["registration_token"].as_str().expect("token").to_owned();
        PolicyCall::new(PROJECT, name, "open").token(&token).ok(&app).await;
        tokens.push(token);
    }
    let (blue, green, red) = (&tokens[0], &tokens[1], &tokens[2]);
    let blue_url = "http://127.0.0.1:9/blue-capability-7f3a";

    // GreenCastle cannot register a webhook for BlueLake; BlueLake can.
    let for_blue = json!({"agent_name": "BlueLake", "url": blue_url});
    let refused = as_agent(&app, green, "register_webhook", for_blue.clone()).await;
    let refused = refused.expect_err("another agent's webhook");
    assert!(refused.contains("Invalid registration_token for agent 'BlueLake'"), "{refused}");
    let blue_hook = as_agent(&app, blue, "register_webhook", for_blue).await.expect("own");
    let project_url = json!({"url": "http://127.0.0.1:9/all"});
    let project_hook =
        as_agent(&app, green, "register_webhook", project_url).await.expect("project webhook");

    // Listing: the project-wide webhooks without agent_name; BlueLake's only for BlueLake.
    let listed = as_agent(&app, green, "list_webhooks", json!({})).await.expect("project list");
    assert_eq!(listed["webhooks"].as_array().map(Vec::len), Some(1));
    assert_eq!(listed["webhooks"][0]["id"], project_hook["id"]);
    assert!(!listed.to_string().contains(blue_url), "BlueLake's URL was shown: {listed}");
    let scoped = json!({"agent_name": "BlueLake"});
    let refused = as_agent(&app, green, "list_webhooks", scoped.clone()).await;
    assert!(refused.is_err(), "GreenCastle listed BlueLake's webhooks");
    let own = as_agent(&app, blue, "list_webhooks", scoped.clone()).await.expect("own list");
    assert_eq!(own["webhooks"][0]["url"], blue_url);

    // Removing: not through the project scope, not as another agent.
    let by_id = json!({"webhook_id": blue_hook["id"]});
    let missing = as_agent(&app, green, "remove_webhook", by_id.clone()).await;
    assert!(missing.expect_err("project scope").contains("not found"));
    let mut scoped_id = by_id.clone();
    scoped_id["agent_name"] = json!("BlueLake");
    assert!(as_agent(&app, green, "remove_webhook", scoped_id.clone()).await.is_err());

    // RedStone writes to GreenCastle, bcc BlueLake: the project webhook gets GreenCastle's
    // delivery only; BlueLake's webhook its bcc one, which only BlueLake sees.
    let send = SendCall::new(PROJECT, "RedStone", "GreenCastle", "plans").body("b");
    send.arg("bcc", json!(["BlueLake"])).sender_token(red).ok(&app).await;
    let all = json!({"status": "all"});
    let project_view =
        as_agent(&app, green, "webhook_deliveries", all.clone()).await.expect("project view");
    let recipients: Vec<&Value> = project_view["deliveries"]
        .as_array()
        .expect("deliveries")
        .iter()
        .map(|d| &d["recipient"])
        .collect();
    assert_eq!(recipients, [&json!("GreenCastle")], "{project_view}");
    let mut blue_view = all;
    blue_view["agent_name"] = json!("BlueLake");
    let refused = as_agent(&app, green, "webhook_deliveries", blue_view.clone()).await;
    assert!(refused.is_err(), "GreenCastle saw BlueLake's deliveries");
    let seen = as_agent(&app, blue, "webhook_deliveries", blue_view).await.expect("own view");
    assert_eq!(seen["deliveries"].as_array().map(Vec::len), Some(1), "{seen}");
    assert_eq!(seen["deliveries"][0]["recipient"], "BlueLake");
    assert_eq!(seen["deliveries"][0]["webhook_id"], blue_hook["id"]);

    let removed = as_agent(&app, blue, "remove_webhook", scoped_id).await.expect("own removal");
    assert_eq!(removed["removed"], true);
}

/// On a database servers share, the server that posts a delivery claims it until its attempt
/// must be over: another server (a new leader while the old one still posts) finds it not due,
/// so it is not posted twice.
#[tokio::test]
async fn a_delivery_being_posted_is_claimed_from_the_other_servers() {
    if !mailroom_testkit::postgres_server::enabled() {
        return;
    }
    let app = TestApp::start().await;
    // A receiver that takes each request and never answers: the attempt stays in flight.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let port = listener.local_addr().expect("address").port();
    std::thread::spawn(move || {
        let held: Vec<_> = listener.incoming().take(8).collect();
        std::thread::sleep(std::time::Duration::from_secs(60));
        drop(held);
    });
    ProjectCall::new(PROJECT).ok(&app).await;
    for name in ["BlueLake", "GreenCastle"] {
        RegisterCall::new(PROJECT, name).program("p").model("m").ok(&app).await;
        PolicyCall::new(PROJECT, name, "open").ok(&app).await;
    }
    let url = format!("http://127.0.0.1:{port}/hook");
    app.call_tool("register_webhook", json!({"project_key": PROJECT, "url": url}))
        .await
        .expect("registered");
    SendCall::new(PROJECT, "BlueLake", "GreenCastle", "claimed").ok(&app).await;
    // The server's worker claims it and posts: its next attempt moves past the timeout.
    let now_us = || {
        let since = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH);
        i64::try_from(since.expect("clock").as_micros()).expect("micros")
    };
    let mut claimed = false;
    for _ in 0..100 {
        let next = app.query_i64("SELECT max(next_attempt_us) FROM webhook_deliveries").await;
        if next > now_us() + 1_000_000 {
            claimed = true;
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert!(claimed, "the worker never claimed the delivery");
    let pending = app.query_i64("SELECT count(*) FROM webhook_deliveries WHERE status = 'pending'");
    assert_eq!(pending.await, 1, "still in flight, so still pending");
    let others = app
        .core
        .due_webhook_deliveries(10, &std::collections::HashMap::new(), &[])
        .await
        .expect("due");
    assert!(others.is_empty(), "another server would post it again: {others:?}");
}
