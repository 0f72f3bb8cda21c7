//! Resource subscriptions (protocol 2025-11-25 and earlier): a session subscribes to an
//! agent's inbox or outbox, and its GET stream carries `notifications/resources/updated` for
//! each message that changes it, from any path (a tool here, REST too); unsubscribing stops
//! them; what cannot be watched is refused by name; the server goes on serving everyone.

use std::time::Duration;

use mailroom_testkit::{SendCall, TestApp};
use serde_json::{Value, json};

const PROJECT: &str = "/work/push";

/// An MCP session: its id after initialize.
async fn session(app: &TestApp) -> String {
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "push-test", "version": "0"}}});
    let response = app
        .client
        .post(format!("{}/mcp", app.base_url))
        .header("accept", "application/json, text/event-stream")
        .json(&init)
        .send()
        .await
        .expect("initialize");
    let id = response.headers()["mcp-session-id"].to_str().expect("session").to_string();
    let answer: Value = response.json().await.expect("json");
    assert_eq!(answer["result"]["capabilities"]["resources"]["subscribe"], true, "{answer}");
    id
}

/// One request in `session` (or none); its JSON-RPC answer.
async fn call(app: &TestApp, session: Option<&str>, method: &str, params: Value) -> Value {
    let mut request = app
        .client
        .post(format!("{}/mcp", app.base_url))
        .header("accept", "application/json, text/event-stream")
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params}));
    if let Some(session) = session {
        request = request.header("mcp-session-id", session);
    }
    request.send().await.expect("request").json().await.expect("json")
}

/// The URIs the next `count` notifications name, read from the session's GET stream.
async fn next_updates(
    events: &mut reqwest::Response,
    buffer: &mut String,
    count: usize,
) -> Vec<String> {
    let mut uris = Vec::new();
    while uris.len() < count {
        let note = mailroom_testkit::next_event_data(events, buffer).await;
        assert_eq!(note["method"], "notifications/resources/updated", "{note}");
        uris.push(note["params"]["uri"].as_str().expect("uri").to_string());
    }
    uris
}

#[tokio::test]
async fn a_subscribed_inbox_is_notified_as_mail_commits() {
    let app = TestApp::start().await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    mailroom_testkit::RegisterCall::new(&slug, "RedStone").ok(&app).await;
    mailroom_testkit::PolicyCall::new(&slug, "RedStone", "open").ok(&app).await;
    let session = session(&app).await;
    let inbox = format!("resource://inbox/GreenCastle?project={slug}");
    let outbox = format!("resource://outbox/BlueLake?project={slug}");
    let subscribed = call(&app, Some(&session), "resources/subscribe", json!({"uri": inbox})).await;
    assert_eq!(subscribed["result"], json!({}), "{subscribed}");

    let mut events = app.event_stream(&session).await;
    let mut buffer = String::new();

    // Mail to someone else tells nothing; mail to GreenCastle tells its inbox.
    SendCall::new(&slug, "BlueLake", "RedStone", "not for you").ok(&app).await;
    SendCall::new(&slug, "BlueLake", "GreenCastle", "for you").ok(&app).await;
    assert_eq!(next_updates(&mut events, &mut buffer, 1).await, std::slice::from_ref(&inbox));

    // Unsubscribed from the inbox, watching BlueLake's outbox: only the outbox is told.
    let gone = call(&app, Some(&session), "resources/unsubscribe", json!({"uri": inbox})).await;
    assert_eq!(gone["result"], json!({}));
    SendCall::new(&slug, "RedStone", "GreenCastle", "after unsubscribing").ok(&app).await;
    call(&app, Some(&session), "resources/subscribe", json!({"uri": outbox})).await;
    SendCall::new(&slug, "BlueLake", "RedStone", "from the outbox").ok(&app).await;
    assert_eq!(next_updates(&mut events, &mut buffer, 1).await, [outbox]);
    drop(events);

    // What cannot be watched is refused by name.
    let refusals = [
        (None, json!({"uri": format!("resource://inbox/GreenCastle?project={slug}")}), "session"),
        (
            Some(&session),
            json!({"uri": "resource://inbox/Nobody?project=".to_owned() + &slug}),
            "Nobody",
        ),
        (Some(&session), json!({"uri": "resource://projects"}), "project"),
        (Some(&session), json!({"uri": "resource://nothing/here"}), "Unknown resource"),
        (Some(&session), json!({}), "uri"),
    ];
    for (session, params, named) in refusals {
        let answer = call(&app, session.map(String::as_str), "resources/subscribe", params).await;
        let message = answer["error"]["message"].as_str().unwrap_or_default();
        assert!(message.contains(named), "{named}: {answer}");
    }
    app.assert_serves_everyone("after subscriptions").await;
}

/// `NOTIFICATIONS_ENABLED`: the reference's signal files, one per `to`/`cc` recipient (none for
/// `bcc`), with the message's metadata; fetch_inbox removes the reader's.
#[tokio::test]
async fn signal_files_mark_new_mail_until_the_inbox_is_read() {
    let signals = tempfile::tempdir().expect("signals dir");
    let app = TestApp::start_with(mailroom_testkit::TestOptions::signals(signals.path())).await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    mailroom_testkit::RegisterCall::new(&slug, "RedStone").ok(&app).await;
    mailroom_testkit::PolicyCall::new(&slug, "RedStone", "open").ok(&app).await;
    let send = SendCall::new(&slug, "BlueLake", "GreenCastle", "signalled")
        .arg("bcc", json!(["RedStone"]));
    let sent = send.ok(&app).await;
    let id = sent["deliveries"][0]["payload"]["id"].as_i64().expect("id");
    let agents = signals.path().join("projects").join(&slug).join("agents");
    let green = agents.join("GreenCastle.signal");
    // Written by the watcher after the commit: waited for, bounded.
    for _ in 0..200 {
        if green.exists() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(25)).await;
    }
    let signal: Value =
        serde_json::from_str(&std::fs::read_to_string(&green).expect("the signal")).expect("JSON");
    assert_eq!(signal["project"], slug.as_str());
    assert_eq!(signal["agent"], "GreenCastle");
    assert_eq!(signal["message"]["id"], id);
    assert_eq!(signal["message"]["from"], "BlueLake");
    assert_eq!(signal["message"]["subject"], "signalled");
    assert!(!agents.join("RedStone.signal").exists(), "no signal for a bcc recipient");
    mailroom_testkit::InboxCall::new(&slug, "GreenCastle").ok(&app).await;
    assert!(!green.exists(), "reading the inbox clears the signal");
    app.assert_serves_everyone("after signals").await;
}
