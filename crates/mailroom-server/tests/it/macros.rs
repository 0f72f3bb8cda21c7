//! Workflow macros and LLM summaries end to end; the LLM is a fake OpenAI-compatible endpoint
//! started by each test.

use mailroom_testkit::{
    FakeLlm, FakeLlmMode, InboxCall, PolicyCall, RegisterCall, ReplyCall, SendCall, TestApp,
    TestOptions, ThreadSummaryCall, sent_message_id,
};
use serde_json::{Value, json};

async fn app_with_llm(llm: &FakeLlm) -> TestApp {
    TestApp::start_with(TestOptions {
        llm_base_url: Some(llm.base_url.clone()),
        ..TestOptions::default()
    })
    .await
}

/// BlueLake and GreenCastle in /work/alpha, thread T-1 as in the conformance session.
async fn seed_thread(app: &TestApp) -> String {
    let slug = app.seed_pair("/work/alpha", "BlueLake", "GreenCastle").await;
    PolicyCall::new(&slug, "BlueLake", "open").ok(app).await;
    let root = SendCall::new(&slug, "BlueLake", "GreenCastle", "LLM Thread T-1")
        .thread("T-1")
        .body("- TODO: deploy to staging\n- discussed API changes\n")
        .ok(app)
        .await;
    let root_id = sent_message_id(&root);
    ReplyCall::new(&slug, "GreenCastle", root_id)
        .body("- ACK: will deploy\n- [ ] TODO: update docs\n`api/v2/users`\n@Carol\n")
        .ok(app)
        .await;
    slug
}

/// The heuristic summary of the seeded thread T-1.
fn heuristic_t1() -> Value {
    json!({
        "participants": ["BlueLake", "GreenCastle"],
        "key_points": ["TODO: deploy to staging", "discussed API changes", "ACK: will deploy",
                       "TODO: update docs"],
        "action_items": ["- TODO: deploy to staging", "- [ ] TODO: update docs"],
        "total_messages": 2,
        "open_actions": 1,
        "done_actions": 0,
        "mentions": [{"name": "Carol", "count": 1}],
        "code_references": ["api/v2/users"],
    })
}

async fn prepare(app: &TestApp, slug: &str, extra: Value) -> Result<Value, String> {
    let mut args = json!({"project_key": slug, "thread_id": "T-1", "program": "codex-cli",
                          "model": "gpt-5", "agent_name": "BlueLake"});
    for (key, value) in extra.as_object().expect("object") {
        args[key] = value.clone();
    }
    app.call_tool("macro_prepare_thread", args).await
}

#[tokio::test]
async fn start_session_creates_project_and_agent_and_returns_the_inbox() {
    let app = TestApp::start().await;
    let start = json!({"human_key": "/work/beta/", "program": "codex-cli", "model": "gpt-5",
                       "agent_name": "BlueLake", "task_description": "first"});
    let first = app.tool_ok("macro_start_session", start.clone()).await;
    assert_eq!(first["project"]["slug"], "work-beta");
    assert_eq!(first["project"]["human_key"], "/work/beta");
    assert_eq!(first["agent"]["name"], "BlueLake");
    assert_eq!(first["agent"]["task_description"], "first");
    assert!(first["agent"]["registration_token"].is_string());
    assert_eq!(first["file_reservations"], json!({"granted": [], "conflicts": []}));
    assert_eq!(first["inbox"], json!([]));

    RegisterCall::new("work-beta", "GreenCastle").program("x").model("y").ok(&app).await;
    PolicyCall::new("work-beta", "BlueLake", "open").ok(&app).await;
    for subject in ["one", "two"] {
        SendCall::new("work-beta", "GreenCastle", "BlueLake", subject).body("hello").ok(&app).await;
    }
    let mut again_args = start;
    again_args["task_description"] = json!("second");
    again_args["inbox_limit"] = json!(1);
    let again = app.tool_ok("macro_start_session", again_args).await;
    assert_eq!(again["project"]["id"], first["project"]["id"], "the project is reused");
    assert_eq!(again["agent"]["id"], first["agent"]["id"], "the agent is refreshed, not new");
    assert_eq!(again["agent"]["task_description"], "second");
    let inbox = again["inbox"].as_array().expect("inbox");
    assert_eq!(inbox.len(), 1, "inbox_limit is applied");
    assert_eq!(inbox[0]["subject"], "two");
    assert!(inbox[0].get("body_md").is_none(), "the snapshot has no bodies");

    let relative = json!({"human_key": "scratch", "program": "codex-cli", "model": "gpt-5"});
    let made = app.tool_ok("macro_start_session", relative).await;
    assert_eq!(made["project"]["slug"], "scratch", "no absolute-path check, as the reference");
}

#[tokio::test]
async fn start_session_refuses_before_doing_anything() {
    let app = TestApp::start().await;
    let no_program = json!({"human_key": "/work/gamma", "program": " ", "model": "gpt-5"});
    let err = app.call_tool("macro_start_session", no_program).await.expect_err("refused");
    assert!(err.contains("program must not be empty"), "{err}");
    let err = app
        .call_tool("list_agents", json!({"project_key": "work-gamma"}))
        .await
        .expect_err("no project was created");
    assert!(err.contains("not found"), "{err}");
    let empty_paths = json!({"human_key": "/work/gamma", "program": "codex-cli", "model": "gpt-5",
                             "file_reservation_paths": []});
    app.tool_ok("macro_start_session", empty_paths).await;
}

#[tokio::test]
async fn prepare_thread_without_llm_gives_the_heuristic_summary() {
    let app = TestApp::start().await;
    let slug = seed_thread(&app).await;
    let prepared =
        prepare(&app, &slug, json!({"task_description": "review"})).await.expect("prepared");
    assert_eq!(prepared["project"]["slug"], slug);
    assert_eq!(prepared["agent"]["task_description"], "review");
    let thread = &prepared["thread"];
    assert_eq!(thread["thread_id"], "T-1");
    assert_eq!(thread["summary"], heuristic_t1());
    assert_eq!(thread["total_messages"], 2);
    assert_eq!(thread["examples"].as_array().map(Vec::len), Some(2));
    assert_eq!(thread["examples"][1]["from"], "GreenCastle");
    assert_eq!(prepared["inbox"][0]["subject"], "Re: LLM Thread T-1");
    assert!(prepared["inbox"][0].get("body_md").is_none());
    let with_bodies =
        prepare(&app, &slug, json!({"include_inbox_bodies": true})).await.expect("prepared");
    assert!(with_bodies["inbox"][0]["body_md"].is_string());

    let unregistered = json!({"register_if_missing": false, "agent_name": null});
    let err = prepare(&app, &slug, unregistered).await.expect_err("needs a name");
    assert!(err.contains("agent_name is required"), "{err}");
    let unknown = json!({"register_if_missing": false, "agent_name": "RedStone"});
    let err = prepare(&app, &slug, unknown).await.expect_err("unknown agent");
    assert!(err.contains("not found"), "{err}");
    let existing =
        prepare(&app, &slug, json!({"register_if_missing": false})).await.expect("existing agent");
    assert_eq!(existing["agent"]["task_description"], "", "not re-registered");
}

#[tokio::test]
async fn prepare_thread_with_llm_refines_the_summary() {
    let llm = FakeLlm::start(FakeLlmMode::Reference).await;
    let app = app_with_llm(&llm).await;
    let slug = seed_thread(&app).await;
    let prepared = prepare(&app, &slug, json!({})).await.expect("prepared");
    let summary = &prepared["thread"]["summary"];
    assert_eq!(
        summary["key_points"],
        json!([
            "API migration planned for next sprint",
            "Staging deployment needed before review",
            "TODO: deploy to staging",
            "TODO: update docs"
        ])
    );
    assert_eq!(summary["action_items"], json!(["Deploy to staging", "Update API docs"]));
    assert_eq!(summary["mentions"], json!([{"name": "Carol", "count": 2}]));
    assert_eq!(prepared["thread"]["total_messages"], 2);

    let requests = llm.requests();
    assert_eq!(requests.len(), 1);
    let request = &requests[0];
    assert_eq!(request.authorization.as_deref(), Some("Bearer sk-test-mailroom"));
    assert_eq!(request.body["model"], "gpt-4o-mini");
    assert_eq!(request.body["max_tokens"], 512);
    let user = request.body["messages"][1]["content"].as_str().expect("user prompt");
    assert!(user.contains("- BlueLake: LLM Thread T-1\n- TODO: deploy to staging"), "{user}");
    assert!(user.contains("- GreenCastle: Re: LLM Thread T-1\n"), "{user}");

    let with_model =
        prepare(&app, &slug, json!({"llm_model": "my-local-model"})).await.expect("prepared");
    assert_eq!(with_model["thread"]["summary"], *summary);
    assert_eq!(llm.requests()[1].body["model"], "my-local-model");
    let plain = prepare(&app, &slug, json!({"llm_mode": false})).await.expect("prepared");
    assert_eq!(plain["thread"]["summary"], heuristic_t1());
    assert_eq!(llm.requests().len(), 2, "llm_mode=false makes no call");
}

#[tokio::test]
async fn llm_failures_fall_back_to_the_heuristic_summary() {
    for mode in [FakeLlmMode::ServerError, FakeLlmMode::Garbage] {
        let llm = FakeLlm::start(mode).await;
        let app = app_with_llm(&llm).await;
        let slug = seed_thread(&app).await;
        let single = ThreadSummaryCall::new(&slug, "T-1").ok(&app).await;
        assert_eq!(single["summary"], heuristic_t1(), "{mode:?}");
        let prepared = prepare(&app, &slug, json!({})).await.expect("prepared");
        assert_eq!(prepared["thread"]["summary"], heuristic_t1(), "{mode:?}");
        let multi = ThreadSummaryCall::new(&slug, "T-1,T-9").ok(&app).await;
        assert_eq!(multi["threads"][0]["summary"], heuristic_t1(), "{mode:?}");
        assert_eq!(multi["aggregate"]["top_mentions"], json!([{"name": "Carol", "count": 1}]));
        assert_eq!(llm.requests().len(), 3, "{mode:?}: every summary tried the LLM once");
    }
}

#[tokio::test]
async fn multi_thread_digest_replaces_the_aggregate() {
    let llm = FakeLlm::start(FakeLlmMode::Reference).await;
    let app = app_with_llm(&llm).await;
    let slug = seed_thread(&app).await;
    let multi = ThreadSummaryCall::new(&slug, "T-1, T-2").ok(&app).await;
    assert_eq!(multi["threads"][0]["summary"]["key_points"], json!(["API v2 schema finalized"]));
    assert_eq!(multi["threads"][0]["summary"]["action_items"], json!(["Update OpenAPI spec"]));
    assert_eq!(multi["threads"][1]["summary"]["total_messages"], 0, "no such messages");
    assert_eq!(multi["aggregate"]["top_mentions"], json!(["Alice", "Bob"]));
    let user = llm.requests()[0].body["messages"][1]["content"].as_str().map(str::to_string);
    let user = user.expect("user prompt");
    assert!(user.contains("# Thread T-1\n## Key Points\n- TODO: deploy to staging\n"), "{user}");
    let empty = ThreadSummaryCall::new(&slug, " , ").ok(&app).await;
    assert_eq!(empty["threads"], json!([]));
    assert_eq!(llm.requests().len(), 1, "an empty digest asks nothing");
}

async fn handshake(app: &TestApp, args: Value) -> Result<Value, String> {
    app.call_tool("macro_contact_handshake", args).await
}

#[tokio::test]
async fn handshake_with_auto_accept_approves_and_welcomes() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/alpha", "BlueLake", "GreenCastle").await;
    PolicyCall::new(&slug, "GreenCastle", "contacts_only").ok(&app).await;
    let outcome = handshake(
        &app,
        json!({"project_key": slug, "requester": "BlueLake", "target": "GreenCastle",
               "auto_accept": true, "ttl_seconds": 86400,
               "welcome_subject": "Hi", "welcome_body": "Glad to work with you"}),
    )
    .await
    .expect("handshake");
    assert_eq!(outcome["request"]["status"], "pending");
    assert_eq!(outcome["request"]["to"], "GreenCastle");
    assert_eq!(outcome["response"]["approved"], true);
    assert_eq!(outcome["response"]["updated"], 1);
    assert_eq!(outcome["welcome_message"]["count"], 1);
    assert!(outcome.get("welcome_error").is_none());
    let contacts =
        app.tool_ok("list_contacts", json!({"project_key": slug, "agent_name": "BlueLake"})).await;
    assert_eq!(contacts[0]["status"], "approved");
    let inbox = InboxCall::new(&slug, "GreenCastle").ok(&app).await;
    let subjects: Vec<&str> =
        inbox.as_array().expect("inbox").iter().filter_map(|m| m["subject"].as_str()).collect();
    assert_eq!(subjects, ["Hi", "Contact request from BlueLake"]);

    let again = handshake(
        &app,
        json!({"project_key": slug, "agent_name": "BlueLake", "to_agent": "GreenCastle",
               "auto_accept": true}),
    )
    .await
    .expect("second handshake");
    assert_eq!(again["request"]["status"], "pending", "an approved link is filed afresh");
    assert_eq!(again["response"]["approved"], true);
    assert_eq!(again["welcome_message"], Value::Null);
    let inbox = InboxCall::new(&slug, "GreenCastle").ok(&app).await;
    assert_eq!(inbox[0]["subject"], "Contact request from BlueLake", "with a new intro");

    RegisterCall::new(&slug, "RedStone").program("x").model("y").ok(&app).await;
    PolicyCall::new(&slug, "RedStone", "block_all").ok(&app).await;
    let blocked = handshake(
        &app,
        json!({"project_key": slug, "requester": "BlueLake", "target": "RedStone",
               "auto_accept": true, "welcome_subject": "Hi", "welcome_body": "Hello"}),
    )
    .await
    .expect("the handshake itself succeeds");
    assert_eq!(blocked["response"]["approved"], true);
    assert_eq!(blocked["welcome_message"], Value::Null);
    assert_eq!(blocked["welcome_error"]["type"], "CONTACT_BLOCKED", "{blocked}");
}

#[tokio::test]
async fn handshake_without_auto_accept_only_requests() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/alpha", "BlueLake", "GreenCastle").await;
    let outcome = handshake(&app, json!({"project_key": slug, "requester": "BlueLake"}))
        .await
        .expect("target inferred: the only other agent");
    assert_eq!(outcome["request"]["to"], "GreenCastle");
    assert_eq!(outcome["request"]["status"], "pending");
    assert_eq!(outcome["response"], Value::Null);
    assert_eq!(outcome["welcome_message"], Value::Null);
    let contacts =
        app.tool_ok("list_contacts", json!({"project_key": slug, "agent_name": "BlueLake"})).await;
    assert_eq!(contacts[0]["status"], "pending");

    let early_welcome = json!({"project_key": slug, "requester": "BlueLake",
                               "target": "GreenCastle", "welcome_subject": "Hi",
                               "welcome_body": "Hello"});
    let err = handshake(&app, early_welcome).await.expect_err("welcome needs auto_accept");
    assert!(err.contains("auto_accept"), "{err}");
    let conflict = json!({"project_key": slug, "requester": "BlueLake", "agent_name": "Other"});
    let err = handshake(&app, conflict).await.expect_err("conflicting aliases");
    assert!(err.contains("requester and agent_name"), "{err}");
    RegisterCall::new(&slug, "RedStone").program("x").model("y").ok(&app).await;
    let err = handshake(&app, json!({"project_key": slug, "requester": "BlueLake"}))
        .await
        .expect_err("three agents: target cannot be inferred");
    assert!(err.contains("target is required"), "{err}");
    let err = handshake(
        &app,
        json!({"project_key": slug, "requester": "BlueLake",
                                     "target": "BlueLake"}),
    )
    .await
    .expect_err("self-contact");
    assert!(err.contains("self-contact"), "{err}");
}

/// macro_start_session reserves the requested paths exclusively; another agent's session on
/// the same paths is granted too and sees the first holder as a conflict.
#[tokio::test]
async fn start_session_reserves_the_requested_paths() {
    let app = TestApp::start().await;
    let start = |name: &str| {
        json!({"human_key": "/work/session", "program": "codex-cli", "model": "gpt-5",
               "agent_name": name, "file_reservation_paths": ["src/api/**"],
               "file_reservation_reason": "task-7", "file_reservation_ttl_seconds": 600})
    };
    let first = app.tool_ok("macro_start_session", start("BlueLake")).await;
    let granted = &first["file_reservations"]["granted"];
    assert_eq!(granted[0]["path_pattern"], "src/api/**", "{first}");
    assert_eq!(granted[0]["exclusive"], true);
    assert_eq!(granted[0]["reason"], "task-7");
    assert_eq!(first["file_reservations"]["conflicts"], json!([]));

    let second = app.tool_ok("macro_start_session", start("GreenCastle")).await;
    let holders = &second["file_reservations"]["conflicts"][0]["holders"];
    assert_eq!(holders[0]["agent"], "BlueLake", "{second}");

    let without = app
        .tool_ok(
            "macro_start_session",
            json!({"human_key": "/work/session", "program": "codex-cli", "model": "gpt-5",
                   "agent_name": "OrangeFox"}),
        )
        .await;
    assert_eq!(without["file_reservations"], json!({"granted": [], "conflicts": []}));
}

/// macro_file_reservation_cycle grants, then (with auto_release) releases exactly those
/// patterns; the nested file_reservation_paths / release_file_reservations calls are counted
/// in the tool metrics as the reference counts them.
#[tokio::test]
async fn reservation_cycle_grants_releases_and_counts_nested_calls() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/cycle", "BlueLake", "GreenCastle").await;
    let cycle = |auto_release: bool| {
        json!({"project_key": slug, "agent_name": "BlueLake", "paths": ["docs/*.md"],
               "reason": "br-9", "auto_release": auto_release})
    };
    let kept = app.tool_ok("macro_file_reservation_cycle", cycle(false)).await;
    assert_eq!(kept["file_reservations"]["granted"][0]["path_pattern"], "docs/*.md", "{kept}");
    assert_eq!(kept["released"], Value::Null);

    let released = app.tool_ok("macro_file_reservation_cycle", cycle(true)).await;
    assert_eq!(released["released"]["released"], 1, "{released}");
    let listed = app
        .read_resource(&format!("resource://file_reservations/{slug}"))
        .await
        .expect("reservations resource");
    assert_eq!(listed, json!([]), "nothing stays active: {listed}");

    let err = app
        .call_tool(
            "macro_file_reservation_cycle",
            json!({"project_key": slug, "agent_name": "BlueLake", "paths": []}),
        )
        .await
        .expect_err("empty paths");
    assert!(err.contains("paths list cannot be empty"), "{err}");

    let metrics = app.read_resource("resource://tooling/metrics").await.expect("metrics");
    let counts = |tool: &str| {
        let row = metrics["tools"]
            .as_array()
            .expect("tools")
            .iter()
            .find(|t| t["name"] == tool)
            .cloned()
            .unwrap_or_else(|| panic!("{tool} not counted: {metrics}"));
        (row["calls"].as_i64().expect("calls"), row["errors"].as_i64().expect("errors"))
    };
    assert_eq!(counts("macro_file_reservation_cycle"), (3, 1));
    assert_eq!(counts("file_reservation_paths"), (3, 1));
    assert_eq!(counts("release_file_reservations"), (1, 0));
}
