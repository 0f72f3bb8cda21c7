//! MCP resources end to end: list and templates, reads with path and query parameters,
//! errors, tool metrics, and the TOON format for tools and resources.

use mailroom_testkit::{
    AckCall, ProjectCall, ReplyCall, SendCall, TestApp, TestOptions, WhoisCall, git,
    sent_message_id,
};
use serde_json::{Value, json};

/// A project with BlueLake → GreenCastle: an urgent message needing an ack, a plain one,
/// and a reply. Returns (slug, urgent id, plain id, reply id).
async fn seeded(app: &TestApp) -> (String, i64, i64, i64) {
    let slug = app.seed_pair("/work/res", "BlueLake", "GreenCastle").await;
    let send = |subject: &str, importance: &str, ack: bool| {
        SendCall::new(&slug, "BlueLake", "GreenCastle", subject)
            .cc(&[])
            .body(&format!("{subject} body"))
            .importance(importance)
            .ack_required(ack)
    };
    let urgent = sent_message_id(&send("Deploy", "urgent", true).ok(app).await);
    let plain = sent_message_id(&send("Notes", "normal", false).ok(app).await);
    let reply = ReplyCall::new(&slug, "GreenCastle", urgent).body("On it").ok(app).await;
    let reply_id = reply["id"].as_i64().expect("reply id");
    (slug, urgent, plain, reply_id)
}

fn ids(view: &Value) -> Vec<i64> {
    view["messages"].as_array().expect("messages").iter().filter_map(|m| m["id"].as_i64()).collect()
}

#[tokio::test]
async fn list_and_templates_name_every_resource() {
    let app = TestApp::start().await;
    let listed = app.rpc("resources/list", Value::Null).await;
    let uris: Vec<&str> = listed["result"]["resources"]
        .as_array()
        .expect("resources")
        .iter()
        .filter_map(|r| r["uri"].as_str())
        .collect();
    for uri in
        ["resource://config/environment", "resource://tooling/metrics", "resource://projects"]
    {
        assert!(uris.contains(&uri), "{uri} listed in {uris:?}");
    }
    assert!(uris.iter().all(|u| !u.contains('{')), "fixed URIs only: {uris:?}");
    let templates = app.rpc("resources/templates/list", Value::Null).await;
    let templates: Vec<&str> = templates["result"]["resourceTemplates"]
        .as_array()
        .expect("templates")
        .iter()
        .filter_map(|r| r["uriTemplate"].as_str())
        .collect();
    assert!(templates.contains(&"resource://tooling/metrics{?format}"));
    assert!(templates.iter().any(|t| t.starts_with("resource://inbox/{agent}{?project,")));
    assert!(templates.iter().any(|t| t.starts_with("resource://file_reservations/{slug}")));
    assert!(
        !templates.iter().any(|t| t.starts_with("resource://product/")),
        "product is gated by worktrees"
    );
    let gated =
        TestApp::start_with(TestOptions { worktrees_enabled: true, ..Default::default() }).await;
    let templates = gated.rpc("resources/templates/list", Value::Null).await;
    assert!(templates.to_string().contains("resource://product/{key}{?format}"));
}

#[tokio::test]
async fn mailbox_family_reads_with_query_parameters() {
    let app = TestApp::start().await;
    let (slug, urgent, plain, reply) = seeded(&app).await;

    let inbox = app
        .read_resource(&format!("resource://inbox/GreenCastle?project={slug}&limit=1"))
        .await
        .expect("inbox");
    assert_eq!((inbox["project"].as_str(), inbox["count"].as_i64()), (Some("/work/res"), Some(1)));
    assert_eq!(ids(&inbox), [plain]);
    assert!(inbox["messages"][0].get("body_md").is_none(), "no bodies by default");
    assert_eq!(inbox["messages"][0]["kind"], "to");
    // The commit is the archive's, or a note when the archive has not committed it yet.
    assert!(inbox["messages"][0]["commit"]["summary"].is_string());
    let urgent_only = app
        .read_resource(&format!(
            "resource://inbox/GreenCastle?project={slug}&urgent_only=yes&include_bodies=1"
        ))
        .await
        .expect("urgent inbox");
    assert_eq!(ids(&urgent_only), [urgent]);
    assert_eq!(urgent_only["messages"][0]["body_md"], "Deploy body");

    let outbox = app
        .read_resource("resource://outbox/BlueLake?project=%2Fwork%2Fres")
        .await
        .expect("outbox by human key, percent-encoded");
    assert_eq!(ids(&outbox), [plain, urgent]);
    assert_eq!(outbox["messages"][0]["to"], json!(["GreenCastle"]));

    let mailbox = app
        .read_resource(&format!("resource://mailbox/GreenCastle?project={slug}"))
        .await
        .expect("mailbox");
    assert_eq!(ids(&mailbox), [reply, plain, urgent]);
    assert_eq!(mailbox["messages"][0]["kind"], "outbox");
    assert!(mailbox["messages"][0]["commit"].get("insertions").is_none());
    assert_eq!(
        mailbox["messages"][0]["commit"]["summary"],
        "Commit metadata unavailable for sent message: GreenCastle -> BlueLake | Re: Deploy"
    );
    let with_commits = app
        .read_resource(&format!("resource://mailbox-with-commits/GreenCastle?project={slug}"))
        .await
        .expect("mailbox with commits");
    assert_eq!(with_commits["messages"][0]["commit"]["diff_summary"]["hunks"], 0);

    let message = app
        .read_resource(&format!("resource://message/{urgent}?project={slug}"))
        .await
        .expect("message");
    assert_eq!(message["body_md"], "Deploy body");
    assert_eq!(
        (message["to"].clone(), message["bcc"].clone()),
        (json!(["GreenCastle"]), json!([]))
    );
    let thread = app
        .read_resource(&format!("resource://thread/{urgent}?project={slug}&include_bodies=true"))
        .await
        .expect("thread");
    assert_eq!(ids(&thread), [urgent, reply]);
    assert_eq!(
        (thread["limit"].as_i64(), thread["truncated"].as_bool()),
        (Some(10000), Some(false))
    );
    assert_eq!(thread["messages"][1]["body_md"], "On it");
}

#[tokio::test]
async fn inbox_rows_carry_the_commit_that_wrote_the_message() {
    let app = TestApp::start().await;
    let (slug, urgent, _, _) = seeded(&app).await;
    app.archive_flushed().await;
    let inbox = app
        .read_resource(&format!("resource://inbox/GreenCastle?project={slug}&urgent_only=true"))
        .await
        .expect("inbox");
    assert_eq!(ids(&inbox), [urgent]);
    let commit = &inbox["messages"][0]["commit"];
    let hexsha = commit["hexsha"].as_str().expect("committed by now");
    assert!(hexsha.len() == 12 && hexsha.bytes().all(|b| b.is_ascii_hexdigit()), "{commit}");
    assert!(commit["summary"].as_str().is_some_and(|s| !s.is_empty()), "{commit}");
    assert!(commit["insertions"].as_i64() > Some(0), "{commit}");
    assert_eq!(commit["deletions"], 0);
    assert_eq!(commit["diff_summary"]["hunks"], 1);
    let excerpt = commit["diff_summary"]["excerpt"].as_array().expect("excerpt");
    assert!(!excerpt.is_empty() && excerpt.len() <= 12, "{commit}");
    assert!(excerpt.iter().all(|l| l.as_str().is_some_and(|l| l.starts_with('+'))), "{commit}");
    assert_eq!(excerpt[0], "+---json", "the message file's front matter opens the diff");
}

#[tokio::test]
async fn acknowledgement_views_follow_read_and_ack_state() {
    let app = TestApp::start().await;
    let (slug, urgent, _, _) = seeded(&app).await;
    let view = |name: &str, query: &str| {
        format!("resource://views/{name}/GreenCastle?project={slug}{query}")
    };
    let unread = app.read_resource(&view("urgent-unread", "")).await.expect("urgent-unread");
    assert_eq!(ids(&unread), [urgent]);
    let required = app.read_resource(&view("ack-required", "")).await.expect("ack-required");
    assert_eq!(ids(&required), [urgent]);
    assert!(required["messages"][0].get("from").is_none());
    let stale = app.read_resource(&view("acks-stale", "&ttl_seconds=0")).await.expect("stale");
    assert_eq!((ids(&stale), stale["ttl_seconds"].as_i64()), (vec![urgent], Some(0)));
    assert!(stale["messages"][0]["age_seconds"].is_i64());
    assert!(stale["messages"][0]["read_at"].is_null());
    let fresh = app.read_resource(&view("acks-stale", "&ttl_seconds=3600")).await.expect("stale");
    assert_eq!(fresh["count"], 0);
    let overdue = app.read_resource(&view("ack-overdue", "&ttl_minutes=1")).await.expect("overdue");
    assert_eq!(overdue["count"], 0, "created less than a minute ago");

    AckCall::new(&slug, "GreenCastle", urgent).ok(&app).await;
    let unread = app.read_resource(&view("urgent-unread", "")).await.expect("urgent-unread");
    assert_eq!(unread["count"], 0, "acknowledging marks read");
    let required = app.read_resource(&view("ack-required", "")).await.expect("ack-required");
    assert_eq!(required["count"], 0);
}

#[tokio::test]
async fn project_and_tooling_resources() {
    let app = TestApp::start().await;
    let (slug, _, _, _) = seeded(&app).await;
    ProjectCall::new("/demo").ok(&app).await;
    ProjectCall::new("/testproject").ok(&app).await;
    let projects = app.read_resource("resource://tooling/projects").await.expect("projects");
    let slugs: Vec<&str> =
        projects.as_array().expect("list").iter().filter_map(|p| p["slug"].as_str()).collect();
    assert_eq!(slugs, [slug.as_str()], "demo and test projects are hidden by default");
    let detail = app.read_resource(&format!("resource://project/{slug}")).await.expect("project");
    assert_eq!(detail["agents"].as_array().map(Vec::len), Some(2));
    assert!(detail["agents"][0].get("capabilities").is_none(), "plain AgentOut");
    let agents = app.read_resource(&format!("resource://agents/{slug}")).await.expect("agents");
    assert_eq!(agents["agents"][1]["unread_count"], 2);

    let env = app.read_resource("resource://config/environment").await.expect("environment");
    assert_eq!(env["http"]["path"], "/api/");
    let locks = app.read_resource("resource://tooling/locks").await.expect("locks");
    assert_eq!(locks["summary"]["total"], 0, "the server's own ownership lock is not listed");
    let caps = app
        .read_resource(&format!("resource://tooling/capabilities/BlueLake?project={slug}"))
        .await
        .expect("capabilities");
    assert_eq!(caps["capabilities"].as_array().map(Vec::len), Some(4));

    let _ = WhoisCall::new(&slug, "Nobody").call(&app).await;
    let metrics = app.read_resource("resource://tooling/metrics").await.expect("metrics");
    let whois = metrics["tools"]
        .as_array()
        .expect("tools")
        .iter()
        .find(|t| t["name"] == "whois")
        .cloned()
        .expect("whois counted");
    assert_eq!((whois["calls"].as_i64(), whois["errors"].as_i64()), (Some(1), Some(1)));
    assert_eq!(whois["cluster"], "identity");
    let recent = app
        .read_resource(&format!("resource://tooling/recent/60?agent=BlueLake&project={slug}"))
        .await
        .expect("recent");
    let tools: Vec<&str> = recent["entries"]
        .as_array()
        .expect("entries")
        .iter()
        .filter_map(|e| e["tool"].as_str())
        .collect();
    assert_eq!(tools, ["register_agent", "send_message", "send_message"]);
}

#[tokio::test]
async fn resource_errors_are_clear() {
    let app = TestApp::start().await;
    let (slug, _, _, _) = seeded(&app).await;
    let unknown = app.read_resource("resource://nope/x").await.expect_err("unknown");
    assert_eq!(unknown, (-32602, "Unknown resource: resource://nope/x".to_string()));
    let (code, message) =
        app.read_resource("resource://inbox/GreenCastle").await.expect_err("no project");
    assert_eq!(code, 0);
    assert_eq!(
        message,
        "Error reading resource from template 'resource://inbox/GreenCastle': project \
         parameter is required for inbox"
    );
    let (_, message) = app
        .read_resource(&format!("resource://inbox/Nobody?project={slug}"))
        .await
        .expect_err("unknown agent");
    assert!(message.contains("Agent 'Nobody' not found"), "{message}");
    let (_, message) = app
        .read_resource(&format!("resource://message/abc?project={slug}"))
        .await
        .expect_err("bad id");
    assert!(message.contains("message_id must be an integer"), "{message}");
    let (_, message) = app
        .read_resource(&format!("resource://message/999?project={slug}&agent=BlueLake"))
        .await
        .expect_err("missing message");
    assert!(message.contains("Message not found: 999"), "{message}");
    let (_, message) =
        app.read_resource("resource://tooling/metrics?format=xml").await.expect_err("format");
    assert!(message.ends_with("Invalid format 'xml'. Use 'json' or 'toon'."), "{message}");
    let (_, message) = app
        .read_resource("resource://file_reservations/no-such-project")
        .await
        .expect_err("unknown project");
    assert!(message.contains("Project 'no-such-project' not found"), "{message}");
}

#[tokio::test]
async fn toon_format_for_tools_and_resources() {
    let app = TestApp::start().await;
    let ensured =
        app.tool_ok("ensure_project", json!({"human_key": "/work/toon", "format": "toon"})).await;
    assert_eq!(ensured["format"], "toon");
    assert_eq!(
        ensured["meta"],
        json!({"requested": "toon", "source": "param", "encoder": "mailroom-toon"})
    );
    let data = ensured["data"].as_str().expect("toon text");
    assert!(data.contains("human_key: /work/toon\n") && data.contains("slug: work-toon"), "{data}");
    let json_again = app
        .tool_ok("ensure_project", json!({"human_key": "/work/toon", "format": "application/json"}))
        .await;
    assert_eq!(json_again["slug"], "work-toon");
    let bad = app
        .call_tool("ensure_project", json!({"human_key": "/work/toon", "format": "yaml"}))
        .await
        .expect_err("invalid format");
    assert!(bad.contains("Invalid format 'yaml'"), "{bad}");

    let projects = app.read_resource("resource://projects?format=toon").await.expect("toon");
    assert_eq!(projects["format"], "toon");
    let data = projects["data"].as_str().expect("toon text");
    assert!(data.starts_with("[1]{created_at,human_key,id,slug}:\n  "), "{data}");
    assert!(data.ends_with(",/work/toon,1,work-toon"), "{data}");
}

/// With worktrees on, a project inside a Git repository reports the repository in its
/// identity (ensure_project and the identity resource agree), and a product lists the
/// projects linked to it.
#[tokio::test]
async fn identity_and_product_resources_describe_real_repositories() {
    let app =
        TestApp::start_with(TestOptions { worktrees_enabled: true, ..Default::default() }).await;
    let repo = tempfile::tempdir().expect("temp dir");
    git(repo.path(), &["init", "-q", "-b", "trunk"]);
    git(repo.path(), &["remote", "add", "origin", "git@github.com:Acme/Widgets.git"]);
    git(repo.path(), &["commit", "-q", "--allow-empty", "-m", "x"]);
    let root = repo.path().to_string_lossy().into_owned();

    let ensured = ProjectCall::new(&root).ok(&app).await;
    assert_eq!(ensured["repo_root"], json!(root), "{ensured}");
    assert_eq!(ensured["branch"], "trunk");
    assert_eq!(ensured["normalized_remote"], "github.com/acme/widgets");
    let slug = ensured["slug"].as_str().expect("slug").to_string();

    let by_slug = app.read_resource(&format!("resource://identity/{slug}")).await.expect("read");
    let encoded = root.replace('/', "%2F");
    let by_path = app.read_resource(&format!("resource://identity/{encoded}")).await.expect("read");
    for identity in [&by_slug, &by_path] {
        assert_eq!(identity["human_key"], json!(root), "{identity}");
        assert_eq!(identity["slug"], json!(slug));
        assert_eq!(identity["repo_root"], json!(root));
        assert_eq!(identity["branch"], "trunk");
        assert_eq!(identity["project_uid"], ensured["project_uid"]);
    }

    app.tool_ok("ensure_product", json!({"product_key": "Widgets"})).await;
    app.tool_ok("products_link", json!({"product_key": "Widgets", "project_key": slug})).await;
    let product = app.read_resource("resource://product/Widgets").await.expect("product");
    assert_eq!(product["name"], "Widgets", "{product}");
    assert_eq!(product["projects"][0]["slug"], json!(slug));
    let (_, missing) =
        app.read_resource("resource://product/nope").await.expect_err("unknown product");
    assert!(missing.contains("not found"), "{missing}");
}
