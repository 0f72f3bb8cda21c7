//! The HEAD-only lifecycle tools, tool filtering and registration-token authentication.

use mailroom_server::mcp::catalog::ToolFilter;
use mailroom_testkit::{
    InboxCall, PolicyCall, ProjectCall, RecentSummaryCall, RegisterCall, SearchCall, SendCall,
    TestApp, TestOptions, ThreadSummaryCall, WhoisCall, git, sql_quote,
};
use serde_json::{Value, json};

const CONFIRM: &str = "I UNDERSTAND";

/// The body of every message here: a task and a note, for the summaries.
const BODY: &str = "- [ ] ship it\n- notes";

#[tokio::test]
async fn archive_and_unarchive_flag_the_project() {
    let app = TestApp::start().await;
    ProjectCall::new("/work/arch").ok(&app).await;
    let archived = app.tool_ok("archive_project", json!({"project_key": "/work/arch"})).await;
    assert_eq!(
        archived,
        json!({"status": "archived", "project_key": "/work/arch", "slug": "work-arch"})
    );
    let shown = ProjectCall::new("/work/arch").ok(&app).await;
    assert!(shown["archived_at"].is_string(), "{shown}");
    let active = app.tool_ok("unarchive_project", json!({"project_key": "work-arch"})).await;
    assert_eq!(active["status"], "active");
    let shown = ProjectCall::new("/work/arch").ok(&app).await;
    assert!(shown.get("archived_at").is_none(), "{shown}");
    let missing = app.call_tool("archive_project", json!({"project_key": "/work/nope"})).await;
    assert!(missing.expect_err("unknown project").contains("not found"));
}

#[tokio::test]
async fn retired_agents_cannot_receive_but_can_send_until_unretired() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/ret", "BlueLake", "GreenCastle").await;
    PolicyCall::new(&slug, "BlueLake", "open").ok(&app).await;
    let retired = app
        .tool_ok("retire_agent", json!({"project_key": slug, "agent_name": "greencastle"}))
        .await;
    assert_eq!(
        retired,
        json!({"status": "retired", "agent_name": "GreenCastle", "project_key": slug})
    );
    let refused = SendCall::new(&slug, "BlueLake", "GreenCastle", "hi")
        .body(BODY)
        .call(&app)
        .await
        .expect_err("retired");
    assert!(refused.contains("retired"), "{refused}");
    SendCall::new(&slug, "GreenCastle", "BlueLake", "still here").body(BODY).ok(&app).await;
    let profile = WhoisCall::new(&slug, "GreenCastle").ok(&app).await;
    assert!(profile["retired_at"].is_string(), "{profile}");
    app.archive_flushed().await;
    let file = app.archive_root().join(format!("projects/{slug}/agents/GreenCastle/profile.json"));
    let stored = std::fs::read_to_string(file).expect("profile");
    assert!(stored.contains("retired_at"), "the archived profile follows: {stored}");
    let active = app
        .tool_ok("unretire_agent", json!({"project_key": slug, "agent_name": "GreenCastle"}))
        .await;
    assert_eq!(active["status"], "active");
    SendCall::new(&slug, "BlueLake", "GreenCastle", "welcome back").body(BODY).ok(&app).await;
    let profile = WhoisCall::new(&slug, "GreenCastle").ok(&app).await;
    assert!(profile.get("retired_at").is_none(), "{profile}");
    let missing =
        app.call_tool("retire_agent", json!({"project_key": slug, "agent_name": "RedFox"})).await;
    assert!(missing.expect_err("unknown agent").contains("not found"));
}

#[tokio::test]
async fn deregistered_agents_block_all_mail() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/dereg", "BlueLake", "GreenCastle").await;
    let done = app
        .tool_ok("deregister_agent", json!({"project_key": slug, "agent_name": "GreenCastle"}))
        .await;
    assert_eq!(done["status"], "deregistered");
    let profile = WhoisCall::new(&slug, "GreenCastle").ok(&app).await;
    assert!(profile["task_description"].as_str().unwrap_or("").starts_with("[DEREGISTERED at "));
    let refused = SendCall::new(&slug, "BlueLake", "GreenCastle", "hi")
        .body(BODY)
        .call(&app)
        .await
        .expect_err("blocked");
    assert!(refused.contains("not accepting messages"), "{refused}");
}

#[tokio::test]
async fn hard_delete_agent_removes_its_rows_and_directory_but_not_history() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/hda", "BlueLake", "GreenCastle").await;
    SendCall::new(&slug, "BlueLake", "GreenCastle", "one").body(BODY).ok(&app).await;
    SendCall::new(&slug, "BlueLake", "GreenCastle", "two").body(BODY).ok(&app).await;
    let args = json!({"project_key": slug, "agent_name": "BlueLake", "confirmation": "yes"});
    let refused = app.call_tool("hard_delete_agent", args).await.expect_err("confirmation");
    assert!(refused.contains("I UNDERSTAND"), "{refused}");
    app.archive_flushed().await;
    let deleted = app
        .tool_ok(
            "hard_delete_agent",
            json!({"project_key": slug, "agent_name": "BlueLake", "confirmation": CONFIRM}),
        )
        .await;
    let counts = &deleted["deleted_counts"];
    assert_eq!(deleted["status"], "hard_deleted");
    assert_eq!(counts["messages_sent"], 2);
    assert_eq!(counts["sent_message_recipients"], 2);
    assert_eq!(counts["agent"], 1);
    assert!(counts["archive_files_removed"].as_u64().unwrap_or(0) >= 1, "{deleted}");
    assert_eq!(deleted["filesystem_errors"], json!([]));
    let gone = WhoisCall::new(&slug, "BlueLake").call(&app).await;
    assert!(gone.expect_err("deleted").contains("not found"));
    let inbox = InboxCall::new(&slug, "GreenCastle").ok(&app).await;
    assert_eq!(inbox, json!([]), "its messages went with it");
    let root = app.archive_root();
    assert!(!root.join(format!("projects/{slug}/agents/BlueLake")).exists());
    let committed = format!("HEAD:projects/{slug}/agents/BlueLake/profile.json");
    // History keeps the profile (`git` fails the test when the object is missing).
    git(&root, &["cat-file", "-e", &committed]);
}

#[tokio::test]
async fn hard_delete_project_removes_everything_of_it() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/hdp", "BlueLake", "GreenCastle").await;
    let other = app.seed_pair("/work/keep", "RedFox", "SilverHawk").await;
    SendCall::new(&slug, "BlueLake", "GreenCastle", "bye").body(BODY).ok(&app).await;
    SendCall::new(&other, "RedFox", "SilverHawk", "stays").body(BODY).ok(&app).await;
    RecentSummaryCall::new(&slug).ok(&app).await;
    let deleted = app
        .tool_ok(
            "hard_delete_project",
            json!({"project_key": "/work/hdp", "confirmation": CONFIRM}),
        )
        .await;
    let counts = &deleted["deleted_counts"];
    assert_eq!(deleted["slug"], slug);
    assert_eq!(deleted["project_key"], "/work/hdp");
    for (key, expected) in [
        ("agents", 2),
        ("messages", 1),
        ("message_recipients", 1),
        ("message_summaries", 1),
        ("project", 1),
    ] {
        assert_eq!(counts[key], expected, "{key}: {deleted}");
    }
    assert!(!app.archive_root().join(format!("projects/{slug}")).exists());
    let gone = InboxCall::new(&slug, "GreenCastle").call(&app).await;
    assert!(gone.expect_err("deleted").contains("not found"));
    let kept = InboxCall::new(&other, "SilverHawk").ok(&app).await;
    assert_eq!(kept.as_array().map(Vec::len), Some(1), "other projects are untouched");
}

#[tokio::test]
async fn purge_counts_then_deletes_by_age() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/purge", "BlueLake", "GreenCastle").await;
    SendCall::new(&slug, "BlueLake", "GreenCastle", "old").body(BODY).ok(&app).await;
    let recent =
        app.tool_ok("purge_old_messages", json!({"project_key": slug, "max_age_days": 1})).await;
    assert_eq!(
        (recent["status"].clone(), recent["messages_affected"].clone()),
        (json!("dry_run"), json!(0))
    );
    let dry =
        app.tool_ok("purge_old_messages", json!({"project_key": slug, "max_age_days": 0})).await;
    assert_eq!(dry["messages_affected"], 1);
    assert_eq!(dry["max_age_days"], 0);
    let inbox = InboxCall::new(&slug, "GreenCastle").ok(&app).await;
    assert_eq!(inbox.as_array().map(Vec::len), Some(1), "a dry run deletes nothing");
    let purged = app
        .tool_ok(
            "purge_old_messages",
            json!({"project_key": slug, "max_age_days": 0, "dry_run": false}),
        )
        .await;
    assert_eq!(
        (purged["status"].clone(), purged["messages_affected"].clone()),
        (json!("purged"), json!(1))
    );
    let inbox = InboxCall::new(&slug, "GreenCastle").ok(&app).await;
    assert_eq!(inbox, json!([]));
}

#[tokio::test]
async fn window_identities_list_rename_and_expire() {
    let app = TestApp::start().await;
    let project = ProjectCall::new("/work/win").ok(&app).await;
    let uuid = "123e4567-e89b-12d3-a456-426614174000";
    {
        let id = project["id"].as_i64().expect("id");
        let insert = |uuid: &str, name: &str, expires: &str| {
            format!(
                "INSERT INTO window_identities (project_id, window_uuid, display_name,
                 created_ts, last_active_ts, expires_ts)
                 VALUES ({id}, {}, {}, '2026-01-01 00:00:00', '2026-01-01 00:00:00', {expires})",
                sql_quote(uuid),
                sql_quote(name)
            )
        };
        assert_eq!(app.execute_sql(&insert(uuid, "BlueLake", "NULL")).await, 1, "live window");
        let expired = "00000000-0000-0000-0000-000000000001";
        let expires = sql_quote("2026-01-02 00:00:00");
        assert_eq!(
            app.execute_sql(&insert(expired, "RedFox", &expires)).await,
            1,
            "expired window"
        );
    }
    let listed = app.tool_ok("list_window_identities", json!({"project_key": "/work/win"})).await;
    assert_eq!(listed["count"], 1);
    assert_eq!(listed["identities"][0]["display_name"], "BlueLake");
    assert!(listed["identities"][0]["age_days"].as_i64().unwrap_or(-1) >= 0);
    let bad = json!({"project_key": "/work/win", "window_uuid": "nope", "new_display_name": "GreenCastle"});
    assert!(app.call_tool("rename_window", bad).await.expect_err("uuid").contains("not a UUID"));
    let bad =
        json!({"project_key": "/work/win", "window_uuid": uuid, "new_display_name": "claude"});
    assert!(
        app.call_tool("rename_window", bad).await.expect_err("name").contains("adjective+noun")
    );
    let renamed = app
        .tool_ok(
            "rename_window",
            json!({"project_key": "/work/win", "window_uuid": uuid.to_uppercase(), "new_display_name": "greencastle"}),
        )
        .await;
    assert_eq!(
        (renamed["display_name"].clone(), renamed["old_display_name"].clone()),
        (json!("GreenCastle"), json!("BlueLake"))
    );
    let expired = app
        .tool_ok("expire_window", json!({"project_key": "/work/win", "window_uuid": uuid}))
        .await;
    assert_eq!(expired["expired"], true);
    assert_eq!(expired["display_name"], "GreenCastle");
    let listed = app.tool_ok("list_window_identities", json!({"project_key": "/work/win"})).await;
    assert_eq!(listed["count"], 0);
    let again = app
        .call_tool("expire_window", json!({"project_key": "/work/win", "window_uuid": uuid}))
        .await;
    assert!(again.expect_err("gone").contains("No active window identity"));
}

#[tokio::test]
async fn fetch_topic_lists_what_the_viewer_sees() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/topic", "BlueLake", "GreenCastle").await;
    RegisterCall::new(&slug, "RedFox").program("p").model("m").ok(&app).await;
    for subject in ["first", "second"] {
        let send = SendCall::new(&slug, "BlueLake", "GreenCastle", subject).body("x");
        send.topic("Release").ok(&app).await;
    }
    let listed = app
        .tool_ok(
            "fetch_topic",
            json!({"project_key": slug, "topic_name": "release", "agent_name": "GreenCastle"}),
        )
        .await;
    let subjects: Vec<&str> =
        listed.as_array().expect("list").iter().filter_map(|m| m["subject"].as_str()).collect();
    assert_eq!(subjects, ["second", "first"]);
    assert_eq!(listed[0]["body_md"], "x", "bodies by default");
    assert!(listed[0].get("kind").is_none());
    let outsider = app
        .tool_ok(
            "fetch_topic",
            json!({"project_key": slug, "topic_name": "release", "agent_name": "RedFox"}),
        )
        .await;
    assert_eq!(outsider, json!([]));
    let blank = app.call_tool("fetch_topic", json!({"project_key": slug, "topic_name": " "})).await;
    assert!(blank.expect_err("blank").contains("topic_name"));
}

#[tokio::test]
async fn summarize_recent_stores_and_reuses_summaries() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/recent", "BlueLake", "GreenCastle").await;
    let empty = RecentSummaryCall::new(&slug).ok(&app).await;
    assert_eq!(empty["summary_text"], "No activity in the last 1.0 hours.");
    assert_eq!(empty["id"], Value::Null);
    SendCall::new(&slug, "BlueLake", "GreenCastle", "plan").body(BODY).ok(&app).await;
    SendCall::new(&slug, "GreenCastle", "BlueLake", "reply").body(BODY).ok(&app).await;
    let first = RecentSummaryCall::new(&slug).since_hours(2).ok(&app).await;
    assert_eq!(first["cached"], false);
    assert_eq!(first["source_message_count"], 2);
    let digest: Value =
        serde_json::from_str(first["summary_text"].as_str().expect("text")).expect("json");
    assert_eq!(digest["total_messages"], 2);
    assert_eq!(digest["open_actions"], 2);
    assert_eq!(digest["participants"], json!(["BlueLake", "GreenCastle"]));
    let again = RecentSummaryCall::new(&slug).since_hours(2).ok(&app).await;
    assert_eq!((again["cached"].clone(), again["id"].clone()), (json!(true), first["id"].clone()));
    let stored = app.tool_ok("fetch_summary", json!({"project_key": slug})).await;
    assert_eq!(stored.as_array().map(Vec::len), Some(1));
    assert_eq!(stored[0]["id"], first["id"]);
    assert!(stored[0].get("cached").is_none());
}

fn tool_names(list: &Value) -> Vec<String> {
    let mut names: Vec<String> = list["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect();
    names.sort();
    names
}

#[tokio::test]
async fn tool_filter_profiles_shape_the_tool_list() {
    let minimal = TestApp::start_with(TestOptions {
        tool_filter: Some(ToolFilter::Minimal),
        ..TestOptions::default()
    })
    .await;
    let names = tool_names(&minimal.rpc("tools/list", json!({})).await);
    let expected = [
        "acknowledge_message",
        "ensure_project",
        "fetch_inbox",
        "health_check",
        "register_agent",
        "send_message",
    ];
    assert_eq!(names, expected);
    let whois = minimal.call_tool("whois", json!({"project_key": "x", "agent_name": "y"})).await;
    assert!(whois.expect_err("filtered").contains("Unknown tool"));
    let custom = TestApp::start_with(TestOptions {
        tool_filter: Some(ToolFilter::Custom {
            clusters: vec!["identity".into()],
            tools: vec!["send_message".into()],
            exclude: true,
        }),
        ..TestOptions::default()
    })
    .await;
    let names = tool_names(&custom.rpc("tools/list", json!({})).await);
    assert!(names.contains(&"fetch_inbox".to_string()));
    for gone in ["register_agent", "whois", "retire_agent", "send_message"] {
        assert!(!names.contains(&gone.to_string()), "{gone} is excluded");
    }
    let full = TestApp::start().await;
    assert!(tool_names(&full.rpc("tools/list", json!({})).await).len() > expected.len());
}

/// Calls a tool with an optional `mcp-session-id`.
async fn call(
    app: &TestApp,
    session: Option<&str>,
    name: &str,
    arguments: Value,
) -> Result<Value, String> {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
        "params": {"name": name, "arguments": arguments}});
    let mut request = app.client.post(format!("{}/mcp", app.base_url)).json(&body);
    if let Some(id) = session {
        request = request.header("mcp-session-id", id);
    }
    let response: Value = request.send().await.expect("request").json().await.expect("json");
    let result = &response["result"];
    let text = result["content"][0]["text"].as_str().unwrap_or_default().to_string();
    if result["isError"].as_bool().unwrap_or(false) {
        return Err(text);
    }
    Ok(serde_json::from_str(&text).expect("json text"))
}

async fn open_session(app: &TestApp) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "t", "version": "1"}}});
    let response =
        app.client.post(format!("{}/mcp", app.base_url)).json(&body).send().await.expect("init");
    let id = response.headers().get("mcp-session-id").expect("session id").to_str().expect("ascii");
    id.to_string()
}

#[tokio::test]
async fn tokens_are_required_when_authentication_is_on() {
    let app = TestApp::start_with(TestOptions { tool_auth: true, ..TestOptions::default() }).await;
    ProjectCall::new("/work/auth").ok(&app).await;
    let register = |name: &str| RegisterCall::new("/work/auth", name).program("p").model("m");
    let blue = register("BlueLake").ok(&app).await;
    let token = blue["registration_token"].as_str().expect("token").to_string();
    let green = register("GreenCastle").ok(&app).await;
    let green_token = green["registration_token"].as_str().expect("token");
    PolicyCall::new("/work/auth", "GreenCastle", "open").token(green_token).ok(&app).await;
    let inbox = |token: Option<&str>| {
        let mut args = json!({"project_key": "/work/auth", "agent_name": "BlueLake"});
        if let Some(token) = token {
            args["registration_token"] = json!(token);
        }
        args
    };
    let malformed = json!({"project_key": "/work/auth", "agent_name": "BlueLake", "limit": "x"});
    let invalid = call(&app, None, "fetch_inbox", malformed).await.expect_err("bad args");
    assert!(invalid.contains("validation error"), "arguments are checked first: {invalid}");
    let missing = call(&app, None, "fetch_inbox", inbox(None)).await.expect_err("no token");
    assert!(
        missing.contains("fetch_inbox requires registration_token for agent 'BlueLake'"),
        "{missing}"
    );
    let wrong = call(&app, None, "fetch_inbox", inbox(Some("nope"))).await.expect_err("wrong");
    assert!(wrong.contains("Invalid registration_token for agent 'BlueLake'"), "{wrong}");
    call(&app, None, "fetch_inbox", inbox(Some(&token))).await.expect("right token");
    let again = call(&app, None, "fetch_inbox", inbox(None)).await;
    assert!(again.is_err(), "a stateless call needs the token every time");
    let reregister = call(&app, None, "register_agent", register("BlueLake").arguments()).await;
    assert!(
        reregister.expect_err("existing name").contains("register_agent for an existing identity")
    );
    let send = SendCall::new("/work/auth", "BlueLake", "GreenCastle", "s").body("b");
    let unsigned = call(&app, None, "send_message", send.arguments()).await.expect_err("sender");
    assert!(unsigned.contains("requires sender_token"), "{unsigned}");
    let signed = send.clone().sender_token(&token).arguments();
    call(&app, None, "send_message", signed).await.expect("signed send");

    let session = open_session(&app).await;
    call(&app, Some(&session), "fetch_inbox", inbox(Some(&token))).await.expect("binds");
    call(&app, Some(&session), "fetch_inbox", inbox(None)).await.expect("bound session");
    call(&app, Some(&session), "send_message", send.arguments()).await.expect("bound sender");
    let other = open_session(&app).await;
    assert!(call(&app, Some(&other), "fetch_inbox", inbox(None)).await.is_err(), "other session");

    let fresh = open_session(&app).await;
    let red = call(&app, Some(&fresh), "register_agent", register("RedFox").arguments()).await;
    assert!(red.expect("new")["registration_token"].is_string());
    let red_inbox = InboxCall::new("/work/auth", "RedFox").arguments();
    call(&app, Some(&fresh), "fetch_inbox", red_inbox.clone()).await.expect("registration binds");
    assert!(call(&app, None, "fetch_inbox", red_inbox).await.is_err());

    let rest = json!({"project_slug": "work-auth", "agent_name": "BlueLake"});
    let (status, refused) = app.post("/api/inbox", rest.clone()).await;
    assert_eq!(status, 403, "REST routes authenticate like their tools: {refused}");
    let mut rest = rest;
    rest["registration_token"] = json!(token);
    assert_eq!(app.post("/api/inbox", rest).await.0, 200);

    let topic = json!({"project_key": "/work/auth", "topic_name": "t"});
    let viewer = call(&app, None, "fetch_topic", topic.clone()).await.expect_err("viewer");
    assert!(viewer.contains("fetch_topic requires agent_name"), "{viewer}");
    let tagged = send.topic("t").arguments();
    call(&app, Some(&session), "send_message", tagged).await.expect("tagged send");
    let seen =
        call(&app, Some(&session), "fetch_topic", topic.clone()).await.expect("bound viewer");
    assert_eq!(seen.as_array().map(Vec::len), Some(1), "the session's agent is the viewer");
    let unseen = call(&app, Some(&fresh), "fetch_topic", topic).await.expect("other viewer");
    assert_eq!(unseen, json!([]), "RedFox neither sent nor received it");

    let admin = json!({"project_key": "/work/auth"});
    let refused = call(&app, None, "archive_project", admin.clone()).await.expect_err("admin");
    assert!(refused.contains("archive_project requires registration_token"), "{refused}");
    call(&app, Some(&fresh), "archive_project", admin).await.expect("session agent is admin");
}

#[tokio::test]
async fn the_window_identity_names_the_agent_and_vouches_for_it() {
    let uuid = "0f8fad5b-d9cb-469f-a165-70867728950e";
    let app = TestApp::start_with(TestOptions {
        tool_auth: true,
        window_id: Some(uuid.to_uppercase()),
        ..TestOptions::default()
    })
    .await;
    ProjectCall::new("/work/window").ok(&app).await;
    let register = json!({"project_key": "/work/window", "program": "p", "model": "m"});
    let first = app.tool_ok("register_agent", register.clone()).await;
    let name = first["name"].as_str().expect("name").to_string();
    assert_eq!(first["window_id"], uuid);
    assert_eq!(first["window_display_name"], name.as_str());
    let second = app.tool_ok("register_agent", register).await;
    assert_eq!(second["name"], name.as_str(), "the window keeps its name across registrations");
    assert_eq!(second["id"], first["id"]);
    let listed =
        app.tool_ok("list_window_identities", json!({"project_key": "/work/window"})).await;
    assert_eq!(listed["count"], 1);
    assert_eq!(listed["identities"][0]["display_name"], name.as_str());
    assert!(listed["identities"][0]["expires_ts"].is_string());
    let inbox = InboxCall::new("/work/window", &name).arguments();
    call(&app, None, "fetch_inbox", inbox.clone()).await.expect("the window vouches");
    app.tool_ok("expire_window", json!({"project_key": "/work/window", "window_uuid": uuid})).await;
    let refused = call(&app, None, "fetch_inbox", inbox).await.expect_err("no longer vouched");
    assert!(refused.contains("requires registration_token"), "{refused}");
}

#[tokio::test]
async fn handshake_auto_accept_needs_the_target_when_authentication_is_on() {
    let app = TestApp::start_with(TestOptions { tool_auth: true, ..TestOptions::default() }).await;
    ProjectCall::new("/work/hs").ok(&app).await;
    let mut tokens = Vec::new();
    for name in ["BlueLake", "GreenCastle"] {
        let agent = RegisterCall::new("/work/hs", name).program("p").model("m").ok(&app).await;
        tokens.push(agent["registration_token"].as_str().expect("token").to_string());
    }
    let mut handshake = json!({"project_key": "/work/hs", "requester": "BlueLake",
        "target": "GreenCastle", "auto_accept": true});
    let anonymous = app.call_tool("macro_contact_handshake", handshake.clone()).await;
    assert!(anonymous.expect_err("requester").contains("requester_registration_token"));
    handshake["requester_registration_token"] = json!(tokens[0]);
    let pending = app.tool_ok("macro_contact_handshake", handshake.clone()).await;
    assert_eq!(pending["response"], Value::Null);
    assert_eq!(pending["response_error"]["type"], "AUTHENTICATION_REQUIRED");
    assert_eq!(pending["request"]["status"], "pending");
    handshake["target_registration_token"] = json!(tokens[1]);
    let accepted = app.tool_ok("macro_contact_handshake", handshake).await;
    assert_eq!(accepted["response"]["approved"], true, "{accepted}");
    assert!(accepted.get("response_error").is_none());
}

#[tokio::test]
async fn a_session_authenticated_as_the_recipient_approves_the_contact() {
    let app = TestApp::start_with(TestOptions { tool_auth: true, ..TestOptions::default() }).await;
    ProjectCall::new("/work/approve").ok(&app).await;
    let mut tokens = Vec::new();
    for name in ["BlueLake", "SilverHawk"] {
        let agent = RegisterCall::new("/work/approve", name).program("p").model("m").ok(&app).await;
        tokens.push(agent["registration_token"].as_str().expect("token").to_string());
    }
    let policy = PolicyCall::new("/work/approve", "SilverHawk", "contacts_only");
    policy.token(&tokens[1]).ok(&app).await;
    let send = SendCall::new("/work/approve", "BlueLake", "SilverHawk", "s").body("b");
    let send = send.sender_token(&tokens[0]).arguments();
    let blocked = call(&app, None, "send_message", send.clone()).await.expect_err("blocked");
    assert!(blocked.contains("Contact approval required"), "{blocked}");
    let session = open_session(&app).await;
    let inbox = InboxCall::new("/work/approve", "SilverHawk").token(&tokens[1]).arguments();
    call(&app, Some(&session), "fetch_inbox", inbox).await.expect("binds SilverHawk");
    let sent = call(&app, Some(&session), "send_message", send).await.expect("auto-approved");
    assert_eq!(sent["count"], 1);
}

#[tokio::test]
async fn summarize_recent_takes_the_llm_digest_and_keeps_the_heuristic_on_failure() {
    use mailroom_testkit::{FakeLlm, FakeLlmMode};
    for (mode, refined) in [(FakeLlmMode::Reference, true), (FakeLlmMode::Garbage, false)] {
        let llm = FakeLlm::start(mode).await;
        let app = TestApp::start_with(TestOptions {
            llm_base_url: Some(llm.base_url.clone()),
            ..TestOptions::default()
        })
        .await;
        let slug = app.seed_pair("/work/llm", "BlueLake", "GreenCastle").await;
        SendCall::new(&slug, "BlueLake", "GreenCastle", "plan").body(BODY).ok(&app).await;
        let summary = RecentSummaryCall::new(&slug).ok(&app).await;
        let text: Value =
            serde_json::from_str(summary["summary_text"].as_str().expect("text")).expect("json");
        assert_eq!(llm.requests().len(), 1);
        if refined {
            assert_eq!(text["key_points"][0], "API migration planned for next sprint");
            assert!(summary["llm_model"].is_string(), "{summary}");
        } else {
            assert_eq!(text["total_messages"], 1, "the heuristic digest stays: {text}");
            assert_eq!(summary["llm_model"], Value::Null);
        }
    }
}

#[tokio::test]
async fn search_and_summaries_show_only_what_the_authenticated_viewer_sees() {
    let app = TestApp::start_with(TestOptions { tool_auth: true, ..TestOptions::default() }).await;
    ProjectCall::new("/work/scope").ok(&app).await;
    let mut tokens = std::collections::HashMap::new();
    for name in ["BlueLake", "GreenCastle", "RedFox"] {
        let agent = RegisterCall::new("/work/scope", name).program("p").model("m").ok(&app).await;
        let token = agent["registration_token"].as_str().expect("token").to_string();
        PolicyCall::new("/work/scope", name, "open").token(&token).ok(&app).await;
        tokens.insert(name, token);
    }
    // BlueLake → GreenCastle and GreenCastle → RedFox, in one thread: each of BlueLake and
    // RedFox took part in one message of it, GreenCastle in both.
    for (from, to, subject, body) in [
        ("BlueLake", "GreenCastle", "alpha one", "- [ ] blue task"),
        ("GreenCastle", "RedFox", "alpha two", "- [ ] red task"),
    ] {
        let send = SendCall::new("/work/scope", from, to, subject).body(body).thread("T-1");
        send.sender_token(&tokens[from]).ok(&app).await;
    }
    let as_agent = |name: &str, mut args: Value| {
        args["agent_name"] = json!(name);
        args["registration_token"] = json!(tokens[name]);
        args
    };
    let subjects = |found: &Value| -> Vec<String> {
        let mut subjects: Vec<String> = found["result"]
            .as_array()
            .expect("result list")
            .iter()
            .filter_map(|m| m["subject"].as_str().map(str::to_string))
            .collect();
        subjects.sort_unstable();
        subjects
    };
    let query = SearchCall::new("/work/scope", "alpha").arguments();
    let refused = call(&app, None, "search_messages", query.clone()).await.expect_err("viewer");
    assert!(refused.contains("search_messages requires agent_name"), "{refused}");
    for (viewer, expected) in [
        ("BlueLake", vec!["alpha one"]),
        ("GreenCastle", vec!["alpha one", "alpha two"]),
        ("RedFox", vec!["alpha two"]),
    ] {
        let found = app.tool_ok("search_messages", as_agent(viewer, query.clone())).await;
        assert_eq!(subjects(&found), expected, "{viewer}");
    }
    // A session authenticated as RedFox searches as RedFox without naming it.
    let session = open_session(&app).await;
    let inbox = InboxCall::new("/work/scope", "RedFox").token(&tokens["RedFox"]).arguments();
    call(&app, Some(&session), "fetch_inbox", inbox).await.expect("binds the session");
    let found = call(&app, Some(&session), "search_messages", query).await.expect("session viewer");
    assert_eq!(subjects(&found), ["alpha two"]);
    // The REST route scopes the same way.
    let rest = json!({"project_slug": "work-scope", "query": "alpha", "agent_name": "BlueLake",
        "registration_token": tokens["BlueLake"]});
    let (status, found) = app.post("/api/messages/search", rest).await;
    assert_eq!(status, 200, "{found}");
    assert_eq!(subjects(&found), ["alpha one"]);

    let thread = ThreadSummaryCall::new("/work/scope", "T-1").arguments();
    let blue = app.tool_ok("summarize_thread", as_agent("BlueLake", thread.clone())).await;
    assert_eq!(blue["summary"]["participants"], json!(["BlueLake"]));
    assert_eq!(blue["summary"]["action_items"], json!(["- [ ] blue task"]));
    assert_eq!(blue["summary"]["total_messages"], 1);
    let green = app.tool_ok("summarize_thread", as_agent("GreenCastle", thread.clone())).await;
    assert_eq!(green["summary"]["total_messages"], 2);
    let red = call(&app, Some(&session), "summarize_thread", thread).await.expect("session");
    assert_eq!(red["summary"]["participants"], json!(["GreenCastle"]));
    assert_eq!(red["summary"]["action_items"], json!(["- [ ] red task"]));
    let several = ThreadSummaryCall::new("/work/scope", "T-1,T-2").arguments();
    let multi = app.tool_ok("summarize_thread", as_agent("RedFox", several)).await;
    assert_eq!(multi["threads"][0]["summary"]["total_messages"], 1);
    assert_eq!(multi["aggregate"]["action_items"], json!(["- [ ] red task"]));
}

#[tokio::test]
async fn without_authentication_search_and_summaries_cover_the_whole_project() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/open-scope", "BlueLake", "GreenCastle").await;
    RegisterCall::new(&slug, "RedFox").program("p").model("m").ok(&app).await;
    let send = SendCall::new(&slug, "BlueLake", "GreenCastle", "alpha one").body("x");
    send.thread("T-1").ok(&app).await;
    // RedFox took no part, but the recorded reference has no viewer scoping.
    let found = SearchCall::new(&slug, "alpha").agent("RedFox").ok(&app).await;
    assert_eq!(found["result"].as_array().map(Vec::len), Some(1));
    let summary = ThreadSummaryCall::new(&slug, "T-1").agent("RedFox").ok(&app).await;
    assert_eq!(summary["summary"]["total_messages"], 1);
}
