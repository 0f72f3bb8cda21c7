//! The WORKTREES_ENABLED features end to end: the product bus (gating, search, inbox and
//! summaries across linked projects, as the caller may see them), build slots (exclusive and
//! shared conflicts, renew, release) and cross-project addressing.

use mailroom_core::model::time::Timestamp;
use mailroom_testkit::{
    ContactResponseCall, InboxCall, PolicyCall, ProjectCall, RegisterCall, ReplyCall, SendCall,
    TestApp, TestOptions, git,
};
use serde_json::{Value, json};

const GATED_TOOLS: [&str; 8] = [
    "acquire_build_slot",
    "ensure_product",
    "fetch_inbox_product",
    "products_link",
    "release_build_slot",
    "renew_build_slot",
    "search_messages_product",
    "summarize_thread_product",
];

async fn worktrees_app() -> TestApp {
    TestApp::start_with(TestOptions { worktrees_enabled: true, ..TestOptions::default() }).await
}

async fn listed_tools(app: &TestApp) -> Vec<String> {
    let listed = app.rpc("tools/list", Value::Null).await;
    listed["result"]["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .filter_map(|t| t["name"].as_str().map(str::to_string))
        .collect()
}

fn subjects(result: &Value) -> Vec<String> {
    let rows = result.get("result").unwrap_or(result);
    let mut found: Vec<String> = rows
        .as_array()
        .expect("rows")
        .iter()
        .map(|r| r["subject"].as_str().expect("subject").to_string())
        .collect();
    found.sort();
    found
}

#[tokio::test]
async fn product_and_slot_tools_exist_only_with_worktrees_enabled() {
    let plain = TestApp::start().await;
    let names = listed_tools(&plain).await;
    for tool in GATED_TOOLS {
        assert!(!names.iter().any(|n| n == tool), "{tool} listed without WORKTREES_ENABLED");
    }
    let refused = plain
        .rpc(
            "tools/call",
            json!({"name": "ensure_product",
        "arguments": {"product_key": "WidgetBus"}}),
        )
        .await;
    let called = refused.get("error").is_some() || refused["result"]["isError"] == true;
    assert!(called, "an unlisted tool must not run: {refused}");

    let gated = worktrees_app().await;
    let names = listed_tools(&gated).await;
    for tool in GATED_TOOLS {
        assert!(names.iter().any(|n| n == tool), "{tool} missing with WORKTREES_ENABLED");
    }
}

/// alpha: BlueLake, GreenCastle, OrangeFox; beta: BlueLake, PurpleBear; gamma (not linked):
/// BlueLake, RedStone. Every project holds "Deploy" messages.
/// Returns the product, alpha as products_link shows it, and BlueLake's token in alpha.
async fn seed_product(app: &TestApp) -> (Value, Value, String) {
    let mut token = String::new();
    for (project, names) in [
        ("/work/alpha", ["BlueLake", "GreenCastle", "OrangeFox"].as_slice()),
        ("/work/beta", ["BlueLake", "PurpleBear"].as_slice()),
        ("/work/gamma", ["BlueLake", "RedStone"].as_slice()),
    ] {
        ProjectCall::new(project).ok(app).await;
        for name in names {
            let agent = RegisterCall::new(project, name).ok(app).await;
            if project == "/work/alpha" && *name == "BlueLake" {
                token = agent["registration_token"].as_str().expect("token").to_string();
            }
            PolicyCall::new(project, name, "open").ok(app).await;
        }
    }
    for (project, from, to, subject, thread) in [
        ("work-alpha", "BlueLake", "GreenCastle", "Deploy plan alpha", "T-9"),
        ("work-alpha", "GreenCastle", "OrangeFox", "Deploy secret alpha", "T-8"),
        ("work-beta", "PurpleBear", "BlueLake", "Deploy plan beta", "T-9"),
        ("work-gamma", "RedStone", "BlueLake", "Deploy plan gamma", "T-9"),
        ("work-alpha", "OrangeFox", "BlueLake", "Status alpha", "T-7"),
    ] {
        let body = format!("{subject}\n- [ ] follow up");
        SendCall::new(project, from, to, subject).body(&body).thread(thread).ok(app).await;
    }
    let product = app.tool_ok("ensure_product", json!({"name": "Widget  Bus"})).await;
    let key = product["product_uid"].as_str().expect("uid").to_string();
    for project in ["work-alpha", "/work/beta"] {
        let linked =
            app.tool_ok("products_link", json!({"product_key": key, "project_key": project})).await;
        assert_eq!(linked["linked"], true);
    }
    let again = app
        .tool_ok(
            "products_link",
            json!({"product_key": "Widget Bus",
        "project_key": "work-alpha"}),
        )
        .await;
    assert_eq!(again["product"]["product_uid"], key.as_str(), "names find products too");
    (product, again["project"].clone(), token)
}

#[tokio::test]
async fn product_reads_cover_linked_projects_as_the_caller_sees_them() {
    let app = worktrees_app().await;
    let (product, alpha, alpha_token) = seed_product(&app).await;
    assert_eq!(product["name"], "Widget Bus", "whitespace collapsed");
    assert_eq!(product["product_uid"].as_str().map(str::len), Some(20));
    let same = app.tool_ok("ensure_product", json!({"product_key": "Widget Bus"})).await;
    assert_eq!(same["id"], product["id"]);
    let key = product["product_uid"].as_str().expect("uid");
    let search = |agent: Option<&str>| {
        let mut args = json!({"product_key": key, "query": "Deploy"});
        if let Some(agent) = agent {
            args["agent_name"] = json!(agent);
        }
        app.call_tool("search_messages_product", args)
    };

    let everything = search(None).await.expect("whole projects");
    assert_eq!(
        subjects(&everything),
        ["Deploy plan alpha", "Deploy plan beta", "Deploy secret alpha"],
        "gamma is not linked"
    );
    let as_blue = search(Some("BlueLake")).await.expect("as BlueLake");
    assert_eq!(subjects(&as_blue), ["Deploy plan alpha", "Deploy plan beta"]);
    let alpha_id = alpha["id"].clone();
    let hit = as_blue["result"]
        .as_array()
        .expect("rows")
        .iter()
        .find(|r| r["subject"] == "Deploy plan alpha");
    assert_eq!(hit.map(|r| r["project_id"].clone()), Some(alpha_id));
    let as_green = search(Some("GreenCastle")).await.expect("as GreenCastle");
    assert_eq!(subjects(&as_green), ["Deploy plan alpha", "Deploy secret alpha"]);
    let stranger = search(Some("RedStone")).await.expect_err("not in any linked project");
    assert!(stranger.contains("not registered in any project linked"), "{stranger}");

    let wrong = app
        .call_tool(
            "search_messages_product",
            json!({"product_key": key, "query": "Deploy",
            "agent_name": "BlueLake", "registration_token": "not-the-token"}),
        )
        .await
        .expect_err("wrong token");
    assert!(wrong.contains("Invalid registration_token"), "{wrong}");
    let alpha_only = app
        .tool_ok(
            "search_messages_product",
            json!({"product_key": key, "query": "Deploy",
            "agent_name": "BlueLake", "registration_token": alpha_token}),
        )
        .await;
    assert_eq!(subjects(&alpha_only), ["Deploy plan alpha"], "the token holds in alpha only");

    let inbox = app
        .tool_ok(
            "fetch_inbox_product",
            json!({"product_key": key, "agent_name": "BlueLake",
            "include_bodies": true}),
        )
        .await;
    let received: Vec<&Value> = inbox.as_array().expect("inbox").iter().collect();
    let order: Vec<(&Value, &Value)> =
        received.iter().map(|m| (&m["subject"], &m["project_id"])).collect();
    assert_eq!(order.len(), 2, "BlueLake received one message in alpha and one in beta");
    assert_eq!(order[0], (&json!("Status alpha"), &alpha["id"]), "newest first");
    assert_eq!(order[1].0, "Deploy plan beta");
    assert!(received[1]["body_md"].as_str().is_some_and(|b| b.starts_with("Deploy plan beta")));

    let summary = |agent: Option<&str>| {
        let mut args = json!({"product_key": key, "thread_id": "T-9", "include_examples": true,
            "llm_mode": false});
        if let Some(agent) = agent {
            args["agent_name"] = json!(agent);
        }
        app.tool_ok("summarize_thread_product", args)
    };
    let whole = summary(None).await;
    assert_eq!(whole["summary"]["participants"], json!(["BlueLake", "PurpleBear"]));
    assert_eq!(whole["summary"]["total_messages"], 2);
    assert_eq!(whole["summary"]["open_actions"], 2);
    assert_eq!(whole["examples"].as_array().map(Vec::len), Some(2));
    let as_green = summary(Some("GreenCastle")).await;
    assert_eq!(as_green["summary"]["participants"], json!(["BlueLake"]));
    assert_eq!(as_green["summary"]["total_messages"], 1);

    let missing = app
        .call_tool("search_messages_product", json!({"product_key": "nope", "query": "x"}))
        .await
        .expect_err("unknown product");
    assert!(missing.contains("Product 'nope' not found"), "{missing}");
    let empty = app.tool_ok("ensure_product", json!({"product_key": "0123456789abcdef"})).await;
    assert_eq!(empty["product_uid"], "0123456789abcdef", "hex keys are kept as uids");
    let nothing = app
        .tool_ok(
            "summarize_thread_product",
            json!({"product_key": "0123456789abcdef",
            "thread_id": "T-9"}),
        )
        .await;
    assert_eq!(
        nothing,
        json!({"thread_id": "T-9", "summary": {"participants": [], "key_points": [],
            "action_items": [], "total_messages": 0}, "examples": []})
    );
}

fn ts(value: &Value) -> Timestamp {
    Timestamp::parse_iso(value.as_str().expect("timestamp text")).expect("ISO timestamp")
}

#[tokio::test]
async fn build_slots_report_conflicts_and_renew_and_release() {
    let app = worktrees_app().await;
    ProjectCall::new("/work/alpha").ok(&app).await;
    let acquire = |agent: &str, branch: &str, exclusive: bool| {
        app.tool_ok(
            "acquire_build_slot",
            json!({"project_key": "work-alpha", "agent_name": agent,
            "slot": "build", "branch": branch, "exclusive": exclusive, "ttl_seconds": 1}),
        )
    };
    let holders = |grant: &Value| -> Vec<String> {
        grant["conflicts"]
            .as_array()
            .expect("conflicts")
            .iter()
            .map(|l| {
                format!(
                    "{}@{}",
                    l["agent"].as_str().unwrap_or(""),
                    l["branch"].as_str().unwrap_or("")
                )
            })
            .collect()
    };
    let blue = acquire("BlueLake", "main", true).await;
    assert_eq!(holders(&blue), Vec::<String>::new());
    let granted = &blue["granted"];
    assert_eq!(granted["branch"], "main");
    let ttl = ts(&granted["expires_ts"]).as_micros() - ts(&granted["acquired_ts"]).as_micros();
    assert!(ttl >= 60_000_000, "TTL floor of 60 s, got {ttl} µs");

    let green = acquire("GreenCastle", "main", false).await;
    assert_eq!(holders(&green), ["BlueLake@main"], "shared conflicts with exclusive holders");
    let red = acquire("RedStone", "main", true).await;
    assert_eq!(holders(&red), ["BlueLake@main", "GreenCastle@main"], "exclusive with all");
    let other_branch = acquire("BlueLake", "dev", false).await;
    assert_eq!(holders(&other_branch), ["BlueLake@main", "RedStone@main"]);

    let renew = |agent: &str, branch: &str| {
        app.tool_ok(
            "renew_build_slot",
            json!({"project_key": "work-alpha", "agent_name": agent,
            "slot": "build", "branch": branch, "extend_seconds": 5}),
        )
    };
    let renewed = renew("BlueLake", "main").await;
    assert_eq!(renewed["renewed"], true);
    let extension = ts(&renewed["expires_ts"]).as_micros() - ts(&granted["expires_ts"]).as_micros();
    assert!(extension >= 60_000_000, "extension floor of 60 s, got {extension} µs");

    let release = |agent: &str, branch: &str| {
        app.tool_ok(
            "release_build_slot",
            json!({"project_key": "work-alpha", "agent_name": agent,
            "slot": "build", "branch": branch}),
        )
    };
    assert_eq!(release("BlueLake", "main").await["released"], true);
    assert_eq!(release("BlueLake", "main").await["released"], false, "nothing left to release");
    let after = renew("BlueLake", "main").await;
    assert_eq!(after, json!({"renewed": false, "expires_ts": null}));
    let green_again = acquire("GreenCastle", "main", false).await;
    assert_eq!(holders(&green_again), ["RedStone@main"], "released leases no longer conflict");

    let file = app.archive_root().join("projects/work-alpha/build_slots/build/BlueLake__main.json");
    let kept: Value =
        serde_json::from_slice(&std::fs::read(&file).expect("lease file kept")).expect("JSON");
    assert!(kept["released_ts"].is_string(), "{kept}");
    assert_eq!(kept["released_ts"], kept["expires_ts"]);
    app.archive_flushed().await;
    let untracked = git(&app.archive_root(), &["status", "--porcelain", "--untracked-files=all"]);
    assert!(!untracked.contains("build_slots"), "leases are not for Git: {untracked}");

    let bad = app
        .call_tool(
            "acquire_build_slot",
            json!({"project_key": "work-alpha",
            "agent_name": "BlueLake", "slot": ".."}),
        )
        .await
        .expect_err("unusable slot");
    assert!(bad.contains("slot '..'"), "{bad}");
}

#[tokio::test]
async fn cross_project_messages_need_a_link_and_carry_their_origin() {
    let app = worktrees_app().await;
    for (project, name) in [("/work/alpha", "BlueLake"), ("/work/beta", "GreenCastle")] {
        ProjectCall::new(project).ok(&app).await;
        RegisterCall::new(project, name).ok(&app).await;
    }
    let send_to = |to: &str, thread: Option<&str>| {
        app.call_tool(
            "send_message",
            json!({"project_key": "work-alpha",
            "sender_name": "BlueLake", "to": [to], "subject": format!("Hi {to}"),
            "body_md": "hello", "thread_id": thread}),
        )
    };
    let quiet = SendCall::new("work-alpha", "BlueLake", "project:work-beta#GreenCastle", "s")
        .body("b")
        .arg("auto_contact_if_blocked", false)
        .call(&app)
        .await
        .expect_err("no link");
    assert!(quiet.contains("cannot be reached"), "{quiet}");
    assert!(quiet.contains("project:work-beta#GreenCastle"), "{quiet}");
    assert!(!quiet.contains("Contact requests were sent"), "{quiet}");
    let contacts = app
        .tool_ok("list_contacts", json!({"project_key": "work-alpha", "agent_name": "BlueLake"}))
        .await;
    assert_eq!(contacts, json!([]), "nothing requested without auto-contact");
    let refused = send_to("project:work-beta#GreenCastle", None).await.expect_err("no link");
    assert!(refused.contains("Contact requests were sent automatically to"), "{refused}");
    let contacts = app
        .tool_ok("list_contacts", json!({"project_key": "work-alpha", "agent_name": "BlueLake"}))
        .await;
    assert_eq!(contacts[0]["to"], "GreenCastle");
    assert_eq!(contacts[0]["status"], "pending", "the failed send kept its request");

    let response = ContactResponseCall::new("work-beta", "GreenCastle", "BlueLake", true);
    response.from_project("work-alpha").ok(&app).await;

    for to in ["project:work-beta#GreenCastle", "GreenCastle@/work/beta", "GreenCastle"] {
        let sent = send_to(to, Some("X-1")).await.unwrap_or_else(|e| panic!("{to}: {e}"));
        assert_eq!(sent["count"], 1, "{to}");
        assert_eq!(sent["deliveries"][0]["project"], "/work/beta", "{to}");
        let payload = &sent["deliveries"][0]["payload"];
        assert_eq!(payload["from_project"], "/work/alpha");
        assert_eq!(payload["from_project_slug"], "work-alpha");
        assert_eq!(payload["from_address"], "project:work-alpha#BlueLake");
    }
    let inbox = InboxCall::new("work-beta", "GreenCastle").ok(&app).await;
    let from_alpha: Vec<&Value> = inbox
        .as_array()
        .expect("inbox")
        .iter()
        .filter(|m| m["subject"].as_str().is_some_and(|s| s.starts_with("Hi ")))
        .collect();
    assert_eq!(from_alpha.len(), 3);
    assert!(from_alpha.iter().all(|m| m["from_address"] == "project:work-alpha#BlueLake"));

    app.archive_flushed().await;
    let files = git(&app.archive_root(), &["ls-tree", "-r", "--name-only", "HEAD"]);
    assert!(
        files.lines().any(|f| f.starts_with("projects/work-beta/agents/GreenCastle/inbox/")),
        "delivered messages are archived in the target project: {files}"
    );

    // GreenCastle has no link back, but may answer inside the thread BlueLake wrote in.
    let id = from_alpha[0]["id"].clone();
    let reply = ReplyCall::new("work-beta", "GreenCastle", id).body("hi back").ok(&app).await;
    assert_eq!(reply["deliveries"][0]["project"], "/work/alpha");
    assert_eq!(reply["to"], json!(["BlueLake"]));
    assert_eq!(reply["from_address"], "project:work-beta#GreenCastle");
    let fresh =
        SendCall::new("work-beta", "GreenCastle", "project:work-alpha#BlueLake", "New topic")
            .body("x")
            .call(&app)
            .await
            .expect_err("outside the thread the link is needed");
    assert!(fresh.contains("cannot be reached"), "{fresh}");

    PolicyCall::new("work-beta", "GreenCastle", "block_all").ok(&app).await;
    let blocked = send_to("project:work-beta#GreenCastle", None).await.expect_err("block_all");
    assert!(blocked.contains("not accepting messages"), "{blocked}");
}
