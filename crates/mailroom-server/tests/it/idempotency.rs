//! Retry-safe writes (docs/compat/tools.md §4.10): an `idempotency_key` on send_message,
//! reply_message, acknowledge_message and the REST send makes a retry answer the first call's
//! result and store nothing twice.

use std::path::Path;

use mailroom_testkit::{
    AckCall, ReplyCall, SendCall, TestApp, sent_message_id, sql_quote, sql_time,
};
use serde_json::{Value, json};

const PROJECT: &str = "/work/idempotency";

/// The messages of the project with this subject, in the database.
async fn stored_messages(app: &TestApp, subject: &str) -> i64 {
    app.query_i64(&format!("SELECT count(*) FROM messages WHERE subject = {}", sql_quote(subject)))
        .await
}

/// Moves every kept idempotency answer two days back, past the one-day window; returns how
/// many there were.
async fn backdate_keys(app: &TestApp) -> u64 {
    let sql = format!("UPDATE idempotency_keys SET created_ts = {}", sql_time(-2 * 86_400));
    app.execute_sql(&sql).await
}

/// The canonical message files of the project in the archive (`messages/YYYY/MM/*.md`), once
/// the archive has caught up.
async fn archived_messages(app: &TestApp, slug: &str) -> usize {
    app.archive_flushed().await;
    let root = app.archive_root().join("projects").join(slug).join("messages");
    let mut files = 0;
    for year in dirs(&root).filter(|d| d.file_name().is_some_and(|n| n != "threads")) {
        files += dirs(&year).map(|month| dirs(&month).count()).sum::<usize>();
    }
    files
}

fn dirs(path: &Path) -> impl Iterator<Item = std::path::PathBuf> {
    std::fs::read_dir(path).into_iter().flatten().flatten().map(|entry| entry.path())
}

/// A tool's answer as the raw text the server sent, to compare retries byte for byte.
async fn answer_text(app: &TestApp, tool: &str, arguments: Value) -> String {
    let result = app.call_tool_raw(tool, arguments).await;
    assert_eq!(result["isError"], false, "{tool}: {result}");
    result["content"][0]["text"].as_str().expect("text").to_owned()
}

#[tokio::test]
async fn a_retried_send_with_the_same_key_stores_one_message() {
    let app = TestApp::start().await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    let send = SendCall::new(&slug, "BlueLake", "GreenCastle", "Once").idempotency_key("send-1");
    let first = answer_text(&app, "send_message", send.arguments()).await;
    let retried = answer_text(&app, "send_message", send.arguments()).await;
    assert_eq!(retried, first, "a retry answers the first call's text, byte for byte");
    assert_eq!(stored_messages(&app, "Once").await, 1);
    assert_eq!(archived_messages(&app, &slug).await, 1);
    // Without a key, the same call is a new message.
    SendCall::new(&slug, "BlueLake", "GreenCastle", "Once").ok(&app).await;
    assert_eq!(stored_messages(&app, "Once").await, 2);
    assert_eq!(archived_messages(&app, &slug).await, 2);
}

#[tokio::test]
async fn a_retried_rest_send_with_the_same_key_stores_one_message() {
    let app = TestApp::start().await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    let body = json!({"project_slug": slug, "sender_name": "BlueLake",
        "recipient_names": ["GreenCastle"], "subject": "Rest once", "body_md": "b",
        "idempotency_key": "rest-1"});
    let (status, first) = app.post("/api/message/send", body.clone()).await;
    assert_eq!(status, 200, "{first}");
    let (status, retried) = app.post("/api/message/send", body.clone()).await;
    assert_eq!((status, &retried), (200, &first));
    assert_eq!(stored_messages(&app, "Rest once").await, 1);
    assert_eq!(archived_messages(&app, &slug).await, 1);
    // The REST route and the tool share the key's scope: the tool's retry gets the answer too.
    let over_mcp = SendCall::new(&slug, "BlueLake", "GreenCastle", "Rest once")
        .body("b")
        .idempotency_key("rest-1")
        .ok(&app)
        .await;
    assert_eq!(sent_message_id(&over_mcp), sent_message_id(&first));
    let mut other = body;
    other["body_md"] = json!("another body");
    let (status, refused) = app.post("/api/message/send", other).await;
    assert_eq!(status, 409, "{refused}");
    assert_eq!(refused["error"]["type"], "IDEMPOTENCY_KEY_REUSED");
    assert_eq!(stored_messages(&app, "Rest once").await, 1);
}

#[tokio::test]
async fn the_same_key_with_other_arguments_is_refused_naming_it() {
    let app = TestApp::start().await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    let send = SendCall::new(&slug, "BlueLake", "GreenCastle", "Keyed").idempotency_key("k");
    send.ok(&app).await;
    let text = send.clone().body("other body").call(&app).await.expect_err("refused");
    assert!(text.contains("idempotency_key 'k' was already used"), "{text}");
    let text = send.clone().importance("urgent").call(&app).await.expect_err("refused");
    assert!(text.contains("idempotency_key"), "{text}");
    assert_eq!(stored_messages(&app, "Keyed").await, 1);
    // A key belongs to its agent: the recipient's own send under the same key is its own.
    SendCall::new(&slug, "GreenCastle", "BlueLake", "Keyed").idempotency_key("k").ok(&app).await;
    assert_eq!(stored_messages(&app, "Keyed").await, 2);
}

#[tokio::test]
async fn concurrent_sends_with_one_key_store_one_message() {
    let app = TestApp::start().await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    let send = SendCall::new(&slug, "BlueLake", "GreenCastle", "Raced").idempotency_key("race");
    let calls = (0..8).map(|_| {
        let (send, base_url) = (send.clone(), app.base_url.clone());
        tokio::spawn(async move { send.ok_at(&base_url).await })
    });
    let answers = futures_util::future::join_all(calls).await;
    let answers: Vec<Value> = answers.into_iter().map(|a| a.expect("task")).collect();
    assert!(answers.iter().all(|a| a == &answers[0]), "one answer for all: {answers:?}");
    assert_eq!(stored_messages(&app, "Raced").await, 1);
    assert_eq!(archived_messages(&app, &slug).await, 1);
}

#[tokio::test]
async fn retried_replies_and_acknowledgements_answer_once() {
    let app = TestApp::start().await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    let sent = SendCall::new(&slug, "BlueLake", "GreenCastle", "Question")
        .ack_required(true)
        .ok(&app)
        .await;
    let id = sent_message_id(&sent);
    let reply = ReplyCall::new(&slug, "GreenCastle", id).body("answer").idempotency_key("r-1");
    let replied = answer_text(&app, "reply_message", reply.arguments()).await;
    let retried = answer_text(&app, "reply_message", reply.arguments()).await;
    assert_eq!(retried, replied);
    assert_eq!(stored_messages(&app, "Re: Question").await, 1);
    let text = reply.clone().body("another answer").call(&app).await.expect_err("refused");
    assert!(text.contains("idempotency_key"), "{text}");
    assert_eq!(stored_messages(&app, "Re: Question").await, 1);

    let ack = AckCall::new(&slug, "GreenCastle", id).idempotency_key("a-1");
    let first = answer_text(&app, "acknowledge_message", ack.arguments()).await;
    let retried = answer_text(&app, "acknowledge_message", ack.arguments()).await;
    assert_eq!(retried, first);
    let reply_id = sent_message_id(&serde_json::from_str(&replied).expect("reply json"));
    let other = AckCall::new(&slug, "GreenCastle", reply_id).idempotency_key("a-1");
    let text = other.call(&app).await.expect_err("refused");
    assert!(text.contains("idempotency_key 'a-1'"), "{text}");
}

#[tokio::test]
async fn an_expired_key_lets_a_new_send_through() {
    let app = TestApp::start().await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    let send = SendCall::new(&slug, "BlueLake", "GreenCastle", "Later").idempotency_key("old");
    send.ok(&app).await;
    send.ok(&app).await;
    assert_eq!(stored_messages(&app, "Later").await, 1);
    // Two days ago, past the one-day window.
    assert_eq!(backdate_keys(&app).await, 1);
    // An expired key is free again, even for other arguments.
    send.clone().body("new body").ok(&app).await;
    assert_eq!(stored_messages(&app, "Later").await, 2);
    let kept = app.query_i64("SELECT count(*) FROM idempotency_keys").await;
    assert_eq!(kept, 1, "the expired answer was replaced");

    // Kept answers past the window go with the reservation sweep too, keyed writes or not.
    assert_eq!(backdate_keys(&app).await, 1);
    let swept = app.tool_ok("run_upkeep", json!({"task": "reservations"})).await;
    assert_eq!(swept["reports"][0]["idempotency_answers_forgotten"], 1, "{swept}");
    let left = app.query_i64("SELECT count(*) FROM idempotency_keys").await;
    assert_eq!(left, 0);
}

#[tokio::test]
async fn hostile_keys_are_refused_naming_the_field_and_everything_goes_on() {
    let app = TestApp::start().await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    let long = "k".repeat(129);
    for key in ["", "line\nbreak", "nul\0", long.as_str()] {
        let send = SendCall::new(&slug, "BlueLake", "GreenCastle", "Hostile").idempotency_key(key);
        let text = send.call(&app).await.expect_err("refused");
        assert!(text.contains("idempotency_key must be 1 to 128 bytes"), "{text}");
        let ack = AckCall::new(&slug, "GreenCastle", 1).idempotency_key(key);
        let text = ack.call(&app).await.expect_err("refused");
        assert!(text.contains("idempotency_key"), "{text}");
    }
    let (status, body) = app
        .post(
            "/api/message/send",
            json!({"project_slug": slug, "sender_name": "BlueLake",
                "recipient_names": ["GreenCastle"], "subject": "Hostile", "body_md": "b",
                "idempotency_key": long}),
        )
        .await;
    assert_eq!((status, body["error"]["type"].as_str()), (400, Some("INVALID_ARGUMENT")));
    assert_eq!(stored_messages(&app, "Hostile").await, 0);
    app.assert_serves_everyone("hostile idempotency keys").await;
}
