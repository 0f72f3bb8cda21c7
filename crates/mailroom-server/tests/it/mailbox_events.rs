//! unread_only and mark_read on the inbox tools, and fetch_inbox_events' durable cursor:
//! events oldest first, pages that neither miss nor repeat, expired, ahead and hostile
//! cursors. (Restarts and kill -9: `crates/mailroom/tests/crash.rs`.)

use mailroom_testkit::{
    AckCall, EventsCall, InboxCall, ReadCall, SendCall, TestApp, sent_message_id,
};
use serde_json::{Value, json};

const PROJECT: &str = "/work/cursor";

fn ids(list: &Value) -> Vec<i64> {
    list.as_array().expect("a list").iter().map(|m| m["id"].as_i64().expect("id")).collect()
}

/// `(kind, message_id)` of each event of a page.
fn kinds(page: &Value) -> Vec<(String, i64)> {
    let events = page["events"].as_array().expect("events");
    events
        .iter()
        .map(|e| {
            (e["kind"].as_str().expect("kind").to_string(), e["message_id"].as_i64().expect("id"))
        })
        .collect()
}

/// Sends `count` messages BlueLake → GreenCastle; returns their ids, oldest first.
async fn send(app: &TestApp, slug: &str, count: usize) -> Vec<i64> {
    let mut sent = Vec::new();
    for i in 0..count {
        let reply =
            SendCall::new(slug, "BlueLake", "GreenCastle", &format!("note {i}")).ok(app).await;
        sent.push(sent_message_id(&reply));
    }
    sent
}

/// Reads every event after `cursor` in pages of `limit`; returns them and the last cursor.
async fn drain(
    app: &TestApp,
    slug: &str,
    cursor: &str,
    limit: i64,
) -> (Vec<(String, i64)>, String) {
    let (mut events, mut cursor) = (Vec::new(), cursor.to_string());
    for _ in 0..100 {
        let page = EventsCall::new(slug, "GreenCastle").cursor(&cursor).limit(limit).ok(app).await;
        let got = kinds(&page);
        let next = page["next_cursor"].as_str().expect("next_cursor").to_string();
        if got.is_empty() {
            assert_eq!(next, cursor, "an empty page keeps its place: {page}");
            return (events, cursor);
        }
        events.extend(got);
        cursor = next;
    }
    panic!("the events never ended");
}

#[tokio::test]
async fn unread_only_and_mark_read_and_the_default_inbox_unchanged() {
    let app = TestApp::start().await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    let sent = send(&app, &slug, 4).await;
    let newest_first: Vec<i64> = sent.iter().rev().copied().collect();
    let plain = InboxCall::new(&slug, "GreenCastle").include_bodies(true).ok(&app).await;
    assert_eq!(ids(&plain), newest_first);
    // Reading marks nothing: every message is still unread.
    let unread = InboxCall::new(&slug, "GreenCastle").unread_only(true).ok(&app).await;
    assert_eq!(ids(&unread), newest_first);
    ReadCall::new(&slug, "GreenCastle", sent[3]).ok(&app).await;
    let unread = InboxCall::new(&slug, "GreenCastle").unread_only(true).ok(&app).await;
    assert_eq!(ids(&unread), [sent[2], sent[1], sent[0]]);
    // mark_read marks exactly what it returns.
    let marked = InboxCall::new(&slug, "GreenCastle")
        .unread_only(true)
        .mark_read(true)
        .limit(2)
        .ok(&app)
        .await;
    assert_eq!(ids(&marked), [sent[2], sent[1]]);
    let unread = InboxCall::new(&slug, "GreenCastle").unread_only(true).ok(&app).await;
    assert_eq!(ids(&unread), [sent[0]]);
    // The listing without the new arguments (or with them false) is what it was, to the byte.
    let again = InboxCall::new(&slug, "GreenCastle").include_bodies(true).ok(&app).await;
    assert_eq!(again, plain);
    let explicit = InboxCall::new(&slug, "GreenCastle")
        .include_bodies(true)
        .unread_only(false)
        .mark_read(false)
        .ok(&app)
        .await;
    assert_eq!(explicit, plain);
    // mark_read alone lists as fetch_inbox does and marks the rest.
    let all =
        InboxCall::new(&slug, "GreenCastle").include_bodies(true).mark_read(true).ok(&app).await;
    assert_eq!(all, plain);
    let unread = InboxCall::new(&slug, "GreenCastle").unread_only(true).ok(&app).await;
    assert_eq!(ids(&unread), Vec::<i64>::new());
    // The reads of mark_read are events, once each (one call's in message order).
    let (events, _) = drain(&app, &slug, "", 100).await;
    let reads: Vec<i64> = events.iter().filter(|(k, _)| k == "read").map(|(_, id)| *id).collect();
    assert_eq!(reads, [sent[3], sent[1], sent[2], sent[0]]);
}

#[tokio::test]
async fn fetch_topic_filters_unread_and_marks_read_for_its_viewer() {
    let app = TestApp::start().await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    let mut sent = Vec::new();
    for subject in ["one", "two"] {
        let reply = SendCall::new(&slug, "BlueLake", "GreenCastle", subject)
            .topic("deploys")
            .ok(&app)
            .await;
        sent.push(sent_message_id(&reply));
    }
    let topic = |extra: Value| {
        let mut arguments =
            json!({"project_key": slug, "topic_name": "deploys", "agent_name": "GreenCastle"});
        for (k, v) in extra.as_object().expect("object") {
            arguments[k] = v.clone();
        }
        arguments
    };
    let plain = app.tool_ok("fetch_topic", topic(json!({}))).await;
    assert_eq!(ids(&plain), [sent[1], sent[0]]);
    ReadCall::new(&slug, "GreenCastle", sent[1]).ok(&app).await;
    let unread = app.tool_ok("fetch_topic", topic(json!({"unread_only": true}))).await;
    assert_eq!(ids(&unread), [sent[0]]);
    let marked =
        app.tool_ok("fetch_topic", topic(json!({"unread_only": true, "mark_read": true}))).await;
    assert_eq!(ids(&marked), [sent[0]]);
    let none = app.tool_ok("fetch_topic", topic(json!({"unread_only": true}))).await;
    assert_eq!(ids(&none), Vec::<i64>::new());
    assert_eq!(
        app.tool_ok("fetch_topic", topic(json!({}))).await,
        plain,
        "the default is unchanged"
    );
    // The sender received nothing: nothing of the topic is unread for it.
    let sender = app
        .tool_ok("fetch_topic", topic(json!({"agent_name": "BlueLake", "unread_only": true})))
        .await;
    assert_eq!(ids(&sender), Vec::<i64>::new());
    let anonymous = json!({"project_key": slug, "topic_name": "deploys", "mark_read": true});
    let refused = app.call_tool("fetch_topic", anonymous).await.expect_err("no viewer");
    assert!(refused.contains("need agent_name"), "{refused}");
}

#[tokio::test]
async fn events_come_oldest_first_and_pages_neither_miss_nor_repeat() {
    let app = TestApp::start().await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    let sent = send(&app, &slug, 7).await;
    let first = EventsCall::new(&slug, "GreenCastle").limit(3).ok(&app).await;
    let event = &first["events"][0];
    assert_eq!(event["kind"], "delivered", "{first}");
    assert_eq!(event["message_id"], sent[0]);
    assert_eq!(event["message"]["subject"], "note 0");
    assert_eq!(event["message"]["from"], "BlueLake");
    assert_eq!(event["message"]["kind"], "to");
    assert!(event["message"].get("body_md").is_none(), "a summary, no body: {first}");
    assert!(event["ts"].as_str().is_some_and(|t| t.ends_with("+00:00")), "{first}");
    assert!(event["id"].as_i64().is_some(), "{first}");

    let (events, cursor) = drain(&app, &slug, "", 3).await;
    let delivered: Vec<(String, i64)> =
        sent.iter().map(|id| ("delivered".to_string(), *id)).collect();
    assert_eq!(events, delivered, "every delivery once, in order");
    // Reads and acknowledgements follow; an acknowledgement also reads (logged first).
    ReadCall::new(&slug, "GreenCastle", sent[0]).ok(&app).await;
    AckCall::new(&slug, "GreenCastle", sent[1]).ok(&app).await;
    ReadCall::new(&slug, "GreenCastle", sent[0]).ok(&app).await; // no second read event
    let cc =
        SendCall::new(&slug, "BlueLake", "BlueLake", "copy").cc(&["GreenCastle"]).ok(&app).await;
    let cc_id = sent_message_id(&cc);
    let (rest, _) = drain(&app, &slug, &cursor, 2).await;
    let want =
        [("read", sent[0]), ("read", sent[1]), ("acknowledged", sent[1]), ("delivered", cc_id)];
    let want: Vec<(String, i64)> = want.iter().map(|(k, id)| (k.to_string(), *id)).collect();
    assert_eq!(rest, want);
    let page = EventsCall::new(&slug, "GreenCastle").cursor(&cursor).ok(&app).await;
    assert_eq!(page["events"][3]["message"]["kind"], "cc", "{page}");
    assert!(page["events"][0].get("message").is_none(), "reads carry no summary: {page}");
    // The sender's own log: it sent to itself once.
    let sender = EventsCall::new(&slug, "BlueLake").ok(&app).await;
    assert_eq!(kinds(&sender), [("delivered".to_string(), cc_id)]);
}

#[tokio::test]
async fn tail_hears_only_what_comes_next() {
    let app = TestApp::start().await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    send(&app, &slug, 3).await;
    let tail = EventsCall::new(&slug, "GreenCastle").cursor("tail").ok(&app).await;
    assert_eq!(kinds(&tail), []);
    assert_eq!(tail["next_cursor"], tail["tail_cursor"]);
    let cursor = tail["next_cursor"].as_str().expect("cursor").to_string();
    let later = send(&app, &slug, 1).await;
    let (events, _) = drain(&app, &slug, &cursor, 10).await;
    assert_eq!(events, [("delivered".to_string(), later[0])]);
}

/// The cursor with its event id moved by `by`.
fn moved(cursor: &str, by: i64) -> String {
    let (head, id) = cursor.rsplit_once('.').expect("a cursor");
    format!("{head}.{}", id.parse::<i64>().expect("id") + by)
}

#[tokio::test]
async fn expired_and_ahead_cursors_are_refused_naming_the_cursor() {
    let app = TestApp::start().await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    send(&app, &slug, 2).await;
    let start = EventsCall::new(&slug, "GreenCastle").limit(1).ok(&app).await;
    let early = start["next_cursor"].as_str().expect("cursor").to_string();
    let tail = start["tail_cursor"].as_str().expect("cursor").to_string();

    let ahead = moved(&tail, 1000);
    let text =
        EventsCall::new(&slug, "GreenCastle").cursor(&ahead).call(&app).await.expect_err("ahead");
    assert!(text.contains(&ahead) && text.contains("ahead") && text.contains("\"tail\""), "{text}");
    let (_, id) = tail.rsplit_once('.').expect("cursor");
    let elsewhere = format!("mb1.0123456789abcdef.{id}");
    let text = EventsCall::new(&slug, "GreenCastle")
        .cursor(&elsewhere)
        .call(&app)
        .await
        .expect_err("other db");
    assert!(text.contains(&elsewhere) && text.contains("another database"), "{text}");

    // Age every event past the retention window, add a fresh one, and prune.
    let aged = app.execute_sql("UPDATE mailbox_events SET ts = '2000-01-01 00:00:00.000000'").await;
    assert!(aged >= 2, "age the events: {aged} aged");
    let fresh = send(&app, &slug, 1).await;
    let swept = app.tool_ok("run_upkeep", json!({"task": "reservations", "force": true})).await;
    assert_eq!(swept["reports"][0]["mailbox_events_pruned"], 2, "{swept}");
    let text =
        EventsCall::new(&slug, "GreenCastle").cursor(&early).call(&app).await.expect_err("expired");
    assert!(
        text.contains(&early) && text.contains("expired") && text.contains("fetch_inbox"),
        "{text}"
    );
    // The tail cursor taken before the pruning lost nothing: it still reads on.
    let (events, _) = drain(&app, &slug, &tail, 10).await;
    assert_eq!(events, [("delivered".to_string(), fresh[0])]);
    let (from_start, _) = drain(&app, &slug, "", 10).await;
    assert_eq!(from_start, events, "no cursor starts at the oldest event kept");
}

#[tokio::test]
async fn hostile_cursors_and_limits_get_clear_errors_and_everyone_is_served() {
    let app = TestApp::start().await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    send(&app, &slug, 2).await;
    let huge = "z".repeat(100_000);
    for garbage in [
        "nonsense",
        "mb1..5",
        "mb1.00ff.-1",
        "mb1.00ff.1e9",
        "mb1.00ff.99999999999999999999",
        "mb1.ÿÿ.1",
        huge.as_str(),
    ] {
        let text = EventsCall::new(&slug, "GreenCastle")
            .cursor(garbage)
            .call(&app)
            .await
            .expect_err(garbage);
        assert!(text.contains("is not a cursor fetch_inbox_events gave out"), "{text}");
        assert!(text.len() < 1000, "the echo is bounded: {} bytes", text.len());
    }
    let text = EventsCall::new(&slug, "GreenCastle").limit(0).call(&app).await.expect_err("zero");
    assert!(text.contains("limit must be at least 1"), "{text}");
    let most = EventsCall::new(&slug, "GreenCastle").limit(i64::MAX).ok(&app).await;
    assert_eq!(most["events"].as_array().map(Vec::len), Some(2), "a huge limit is capped");
    let float = json!({"project_key": slug, "agent_name": "GreenCastle", "limit": 1e30});
    let text = app.call_tool("fetch_inbox_events", float).await.expect_err("not an integer");
    assert!(text.contains("limit"), "{text}");
    let unknown =
        EventsCall::new(&slug, "NoSuchAgent").call(&app).await.expect_err("unknown agent");
    assert!(unknown.contains("not found"), "{unknown}");
    app.assert_serves_everyone("hostile fetch_inbox_events cursors and limits").await;
}
