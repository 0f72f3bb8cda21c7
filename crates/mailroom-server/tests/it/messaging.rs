//! Tools end to end: identity, contacts, messaging, search, bad input.

use mailroom_testkit::{
    AckCall, ContactResponseCall, InboxCall, PolicyCall, ProjectCall, ReadCall, RegisterCall,
    ReplyCall, SearchCall, SendCall, TestApp, sent_message_id,
};
use serde_json::{Value, json};

#[tokio::test]
async fn send_fetch_reply_read_and_ack() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/alpha", "BlueLake", "GreenCastle").await;
    let sent = SendCall::new(&slug, "BlueLake", "GreenCastle", "Plan")
        .body("Ship it")
        .ack_required(true)
        .ok(&app)
        .await;
    assert_eq!(sent["count"], 1);
    let id = sent_message_id(&sent);
    let inbox = InboxCall::new(&slug, "greencastle").include_bodies(true).ok(&app).await;
    assert_eq!(inbox[0]["id"], id);
    assert_eq!(inbox[0]["body_md"], "Ship it");
    assert_eq!(inbox[0]["kind"], "to");
    let reply = ReplyCall::new(&slug, "GreenCastle", id).body("On it").ok(&app).await;
    assert_eq!(reply["subject"], "Re: Plan");
    assert_eq!(reply["thread_id"], id.to_string());
    assert_eq!(reply["to"], json!(["BlueLake"]));
    let read = ReadCall::new(&slug, "GreenCastle", id).ok(&app).await;
    assert_eq!(read["read"], true);
    let ack = AckCall::new(&slug, "GreenCastle", id).ok(&app).await;
    assert_eq!(ack["acknowledged"], true);
    assert_eq!(ack["read_at"], read["read_at"], "first read wins");
    let again = AckCall::new(&slug, "GreenCastle", id).ok(&app).await;
    assert_eq!(again["acknowledged_at"], ack["acknowledged_at"], "acknowledgement is idempotent");
}

#[tokio::test]
async fn contact_policy_blocks_then_the_request_unlocks() {
    let app = TestApp::start().await;
    ProjectCall::new("/work/beta").ok(&app).await;
    for name in ["RedFox", "SilverHawk"] {
        RegisterCall::new("/work/beta", name).program("p").model("m").ok(&app).await;
    }
    PolicyCall::new("work-beta", "SilverHawk", "contacts_only").ok(&app).await;
    let send = SendCall::new("work-beta", "RedFox", "SilverHawk", "hi").body("x");
    let blocked = send.call(&app).await.expect_err("blocked");
    assert!(blocked.contains("Contact approval required"), "{blocked}");
    // The automatic request left an intro message; still blocked until approved (contacts_only).
    assert!(send.call(&app).await.is_err());
    ContactResponseCall::new("work-beta", "SilverHawk", "RedFox", true).ok(&app).await;
    send.ok(&app).await;
    let contacts = app
        .tool_ok("list_contacts", json!({"project_key": "work-beta", "agent_name": "SilverHawk"}))
        .await;
    assert_eq!(contacts[0]["to"], "RedFox");
    assert_eq!(contacts[0]["status"], "approved");
    PolicyCall::new("work-beta", "SilverHawk", "block_all").ok(&app).await;
    let refused = send.call(&app).await.expect_err("block_all");
    assert!(refused.contains("not accepting messages"), "{refused}");
}

#[tokio::test]
async fn search_finds_words_and_survives_hostile_queries() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/gamma", "BlueLake", "GreenCastle").await;
    for (subject, body) in [("Deploy POL-358", "migrate the database"), ("Lunch", "tacos")] {
        SendCall::new(&slug, "BlueLake", "GreenCastle", subject).body(body).ok(&app).await;
    }
    let search = |q: &str| SearchCall::new(&slug, q);
    let hits = search("migrate").ok(&app).await;
    assert_eq!(hits["result"][0]["subject"], "Deploy POL-358");
    assert_eq!(hits["result"][0]["ack_required"], 0);
    let hyphen = search("POL-358").ok(&app).await;
    assert_eq!(hyphen["result"].as_array().map(Vec::len), Some(1));
    let prefix = search("migr*").ok(&app).await;
    assert_eq!(prefix["result"].as_array().map(Vec::len), Some(1));
    for hostile in ["", "*", "\"unterminated", "AND", "a OR", "((", "NEAR(", "subject:"] {
        let outcome = search(hostile).call(&app).await;
        assert!(outcome.is_ok(), "{hostile:?} must not error: {outcome:?}");
    }
}

#[tokio::test]
async fn search_stays_inside_its_project() {
    let app = TestApp::start().await;
    let alpha = app.seed_pair("/work/search-alpha", "BlueLake", "GreenCastle").await;
    let beta = app.seed_pair("/work/search-beta", "RedFox", "GoldHawk").await;
    for (slug, sender, to, subject) in [
        (&alpha, "BlueLake", "GreenCastle", "alpha rollout"),
        (&beta, "RedFox", "GoldHawk", "beta rollout"),
        (&beta, "RedFox", "GoldHawk", "beta rollout again"),
    ] {
        let body = "shared plan project_scope p1 p2";
        SendCall::new(slug, sender, to, subject).body(body).ok(&app).await;
    }
    // A missing list or subject panics, so an empty list below really means no hit.
    let subjects = |hits: &Value| -> Vec<String> {
        let rows = hits["result"].as_array().unwrap_or_else(|| panic!("no result list: {hits}"));
        rows.iter().map(|r| r["subject"].as_str().expect("subject").to_string()).collect()
    };
    let in_alpha = SearchCall::new(&alpha, "rollout").ok(&app).await;
    assert_eq!(subjects(&in_alpha), vec!["alpha rollout"]);
    let in_beta = SearchCall::new(&beta, "shared").ok(&app).await;
    assert_eq!(subjects(&in_beta).len(), 2, "{in_beta}");
    // The hidden project tokens are not searchable text: "p1" finds the bodies that say it,
    // each project its own.
    let token = SearchCall::new(&alpha, "p1").ok(&app).await;
    assert_eq!(subjects(&token), vec!["alpha rollout"]);
    // A query that only parses once wrapped falls back to LIKE, whose terms ("rollout" and
    // "beta", both required) match beta's two messages: found in beta, never from alpha.
    let sneaky = "rollout) OR (beta";
    let from_alpha = SearchCall::new(&alpha, sneaky).ok(&app).await;
    assert_eq!(subjects(&from_alpha), Vec::<String>::new(), "{from_alpha}");
    let from_beta = SearchCall::new(&beta, sneaky).ok(&app).await;
    assert_eq!(subjects(&from_beta), vec!["beta rollout again", "beta rollout"], "{from_beta}");
}

#[tokio::test]
async fn bad_input_gets_errors_naming_the_problem_and_writes_nothing() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/delta", "BlueLake", "GreenCastle").await;
    // A project whose key looks like a placeholder can exist; calls naming it are still
    // refused as placeholders, on the inline inbox path as on every other.
    ProjectCall::new("/work/placeholder-app").ok(&app).await;
    let cases = [
        ("ensure_project", json!({"human_key": "relative/path"}), "absolute directory path"),
        (
            "send_message",
            json!({"project_key": slug, "sender_name": "BlueLake", "to": "GreenCastle", "subject": "s", "body_md": "b"}),
            "to",
        ),
        (
            "send_message",
            json!({"project_key": slug, "sender_name": "BlueLake", "to": ["GreenCastle"], "subject": "s"}),
            "body_md",
        ),
        (
            "send_message",
            json!({"project_key": slug, "sender_name": "BlueLake", "to": ["GreenCastle"], "subject": "s", "body_md": "b", "colour": "red"}),
            "colour",
        ),
        (
            "send_message",
            json!({"project_key": slug, "sender_name": "BlueLake", "to": ["NoSuchAgent"], "subject": "s", "body_md": "b"}),
            "NoSuchAgent",
        ),
        (
            "send_message",
            json!({"project_key": slug, "sender_name": "BlueLake", "to": ["claude-code"], "subject": "s", "body_md": "b"}),
            "Invalid recipient",
        ),
        (
            "send_message",
            json!({"project_key": slug, "sender_name": "BlueLake", "to": ["GreenCastle"], "subject": "s", "body_md": "b", "thread_id": "../etc"}),
            "thread_id",
        ),
        (
            "send_message",
            json!({"project_key": "nope", "sender_name": "BlueLake", "to": ["GreenCastle"], "subject": "s", "body_md": "b"}),
            "not found",
        ),
        (
            "fetch_inbox",
            json!({"project_key": slug, "agent_name": "GreenCastle", "limit": 0}),
            "limit",
        ),
        (
            "fetch_inbox",
            json!({"project_key": slug, "agent_name": "GreenCastle", "limit": "many"}),
            "limit",
        ),
        (
            "fetch_inbox",
            json!({"project_key": slug, "agent_name": "GreenCastle", "since_ts": "yesterday"}),
            "since_ts",
        ),
        // An unfiltered page is read inline only for names that resolve directly; the
        // others still get the suggestions.
        (
            "fetch_inbox",
            json!({"project_key": slug, "agent_name": "GreenCastel"}),
            "Did you mean: GreenCastle?",
        ),
        (
            "fetch_inbox",
            json!({"project_key": "/work/delt", "agent_name": "GreenCastle"}),
            "Did you mean: '/work/delta'",
        ),
        ("fetch_inbox", json!({"project_key": slug, "agent_name": "  "}), "agent_name"),
        (
            "fetch_inbox",
            json!({"project_key": "/work/placeholder-app", "agent_name": "GreenCastle"}),
            "placeholder",
        ),
        (
            "fetch_inbox",
            json!({"project_key": "/work/placeholder-app", "agent_name": "GreenCastle", "urgent_only": true}),
            "placeholder",
        ),
        ("register_agent", json!({"project_key": slug, "program": " ", "model": "m"}), "program"),
        (
            "mark_message_read",
            json!({"project_key": slug, "agent_name": "GreenCastle", "message_id": 999}),
            "not found",
        ),
        ("no_such_tool", json!({}), "Unknown tool"),
    ];
    for (tool, args, needle) in cases {
        let error = app.call_tool(tool, args.clone()).await.expect_err(tool);
        assert!(error.contains(needle), "{tool} {args}: {error}");
    }
    let inbox = InboxCall::new(&slug, "GreenCastle").ok(&app).await;
    assert_eq!(inbox, json!([]), "no failed call left a message behind");
    let lax = app.tool_ok("fetch_inbox", json!({"project_key": slug, "agent_name": "GreenCastle", "limit": "5", "include_bodies": "true"})).await;
    assert_eq!(lax, json!([]), "numeric and boolean strings are coerced as the reference does");
}

#[tokio::test]
async fn fifty_concurrent_registrations_of_one_name_all_succeed() {
    let app = std::sync::Arc::new(TestApp::start().await);
    ProjectCall::new("/work/epsilon").ok(&app).await;
    let calls = (0..50).map(|i| {
        let app = app.clone();
        let register = RegisterCall::new("work-epsilon", "BlueLake").program("p");
        tokio::spawn(async move { register.model(&format!("m{i}")).call(&app).await })
    });
    let outcomes = futures_join(calls).await;
    assert!(outcomes.iter().all(Result::is_ok), "{outcomes:?}");
    let agents = app.tool_ok("list_agents", json!({"project_key": "work-epsilon"})).await;
    assert_eq!(agents["agents"].as_array().map(Vec::len), Some(1), "{agents}");
}

#[tokio::test]
async fn generated_names_follow_the_adjective_noun_rule() {
    let app = TestApp::start().await;
    ProjectCall::new("/work/zeta").ok(&app).await;
    let agent = app
        .tool_ok(
            "register_agent",
            json!({"project_key": "/work/zeta", "program": "p", "model": "m"}),
        )
        .await;
    let name = agent["name"].as_str().expect("name");
    assert!(mailroom_core::model::names::is_valid_adjective_noun(name), "{name}");
    let coerced = app
        .tool_ok(
            "create_agent_identity",
            json!({"project_key": "/work/zeta", "program": "p", "model": "m", "name_hint": name}),
        )
        .await;
    assert_ne!(coerced["name"], name, "a taken hint yields a fresh name");
}

async fn futures_join<T: Send + 'static>(
    handles: impl Iterator<Item = tokio::task::JoinHandle<T>>,
) -> Vec<T> {
    let mut out = Vec::new();
    for handle in handles {
        out.push(handle.await.expect("task"));
    }
    out
}

/// message_receipts: the sender sees, per recipient, delivery, read and acknowledgement;
/// nobody else sees them.
#[tokio::test]
async fn the_sender_reads_each_recipients_receipt() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/receipts", "BlueLake", "GreenCastle").await;
    RegisterCall::new(&slug, "RedStone").ok(&app).await;
    PolicyCall::new(&slug, "RedStone", "open").ok(&app).await;
    let sent = SendCall::new(&slug, "BlueLake", "GreenCastle", "Receipts")
        .cc(&["RedStone"])
        .ack_required(true)
        .ok(&app)
        .await;
    let id = sent_message_id(&sent);
    let ask = |agent: &str| json!({"project_key": slug, "agent_name": agent, "message_id": id});
    let receipts = app.tool_ok("message_receipts", ask("BlueLake")).await;
    let delivered = sent["deliveries"][0]["payload"]["created_ts"].clone();
    assert_eq!(
        (receipts["message_id"].as_i64(), &receipts["delivered_ts"]),
        (Some(id), &delivered)
    );
    let recipients = receipts["recipients"].as_array().expect("recipients");
    let names: Vec<_> = recipients.iter().map(|r| (&r["name"], &r["kind"])).collect();
    assert_eq!(names, [(&json!("GreenCastle"), &json!("to")), (&json!("RedStone"), &json!("cc"))]);
    assert!(recipients.iter().all(|r| r["read_ts"].is_null() && r["ack_ts"].is_null()));
    assert!(recipients.iter().all(|r| r["delivered_ts"] == delivered));
    let acked = AckCall::new(&slug, "GreenCastle", id).ok(&app).await;
    ReadCall::new(&slug, "RedStone", id).ok(&app).await;
    let receipts = app.tool_ok("message_receipts", ask("BlueLake")).await;
    assert_eq!(receipts["recipients"][0]["ack_ts"], acked["acknowledged_at"]);
    assert_eq!(receipts["recipients"][0]["read_ts"], acked["read_at"]);
    assert!(receipts["recipients"][1]["read_ts"].is_string(), "{receipts}");
    assert!(receipts["recipients"][1]["ack_ts"].is_null(), "{receipts}");
    // A recipient is not the sender: its receipts are not its to read.
    let text = app.call_tool("message_receipts", ask("GreenCastle")).await.expect_err("refused");
    assert!(text.contains("not found or not sent by agent 'GreenCastle'"), "{text}");
}
