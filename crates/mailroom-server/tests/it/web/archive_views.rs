//! The archive views: history, a commit's diff, the file browser and its traversal rules,
//! the agent network, time travel, a project's attachments and agents list.

use mailroom_testkit::{ProjectCall, SendCall, TINY_PNG, TestApp, sent_message_id};
use serde_json::{Value, json};

use super::{mail, page};

/// The page at `path` once it shows `text` (checked every 100 ms, for up to 10 s); the last
/// answer otherwise.
async fn page_once(app: &TestApp, path: &str, text: &str) -> String {
    let mut html = String::new();
    for _ in 0..100 {
        let (status, _, body) = page(app, path).await;
        assert_eq!(status, 200, "{path}");
        html = body;
        if html.contains(text) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    html
}

async fn get_json(app: &TestApp, path: &str) -> (u16, Value) {
    let response = app.client.get(format!("{}{path}", app.base_url)).send().await.expect("get");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn the_archive_views_show_history_files_and_the_network() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/views", "BlueLake", "GreenCastle").await;
    let sent = sent_message_id(
        &mail(&slug, "Ship <it> today").body("Body **words**").thread("T-9").ok(&app).await,
    );
    app.archive_flushed().await;

    let (status, _, guide) = page(&app, "/mail/archive/guide").await;
    assert_eq!(status, 200);
    assert!(guide.contains(&app.archive_root().display().to_string()), "the archive's place");
    assert!(guide.contains(&format!("/mail/archive/timeline?project={slug}")));

    let (status, _, activity) = page(&app, "/mail/archive/activity?limit=5").await;
    assert_eq!(status, 200);
    let sha = activity
        .split("/mail/archive/commit/")
        .nth(1)
        .and_then(|rest| rest.split('"').next())
        .expect("a commit link")
        .to_string();
    assert_eq!(sha.len(), 40);
    for (path, status) in [
        ("/mail/archive/activity?limit=0", 400),
        ("/mail/archive/activity?limit=x", 400),
        ("/mail/archive/activity?limit=99999999", 200),
        ("/mail/archive/activity?project=nope", 404),
        ("/mail/archive/timeline?project=nope", 404),
    ] {
        assert_eq!(page(&app, path).await.0, status, "{path}");
    }

    let (status, _, commit) = page(&app, &format!("/mail/archive/commit/{sha}")).await;
    assert_eq!(status, 200);
    assert!(commit.contains("class=\"add\""), "a diff with added lines");
    assert!(commit.contains("Ship &#60;it&#62; today"), "subjects escaped in commit lines");
    assert!(!commit.contains("Ship <it>"));
    assert!(commit.contains(&format!("__{sent}.md")), "the message's files are listed");
    let short = &sha[..8];
    assert_eq!(page(&app, &format!("/mail/archive/commit/{short}")).await.0, 200, "a prefix");
    for (path, status, says) in [
        ("/mail/archive/commit/not-hex".to_string(), 400, "sha:"),
        ("/mail/archive/commit/abc".to_string(), 400, "sha:"),
        (format!("/mail/archive/commit/{}", "0".repeat(40)), 404, "No commit"),
    ] {
        let (got, _, body) = page(&app, &path).await;
        assert_eq!(got, status, "{path}");
        assert!(body.contains(says), "{path}: {body}");
    }

    let (status, _, timeline) = page(&app, &format!("/mail/archive/timeline?project={slug}")).await;
    assert_eq!(status, 200);
    assert!(timeline.contains("class=\"day\"") && timeline.contains(&sha[..12]));

    // The file browser: a directory, a file, and paths that would leave their place.
    let (status, _, root) = page(&app, "/mail/archive/browser").await;
    assert_eq!(status, 200);
    assert!(root.contains("projects/"), "{root}");
    let (status, _, agents) =
        page(&app, &format!("/mail/archive/browser?project={slug}&path=agents")).await;
    assert_eq!(status, 200);
    assert!(agents.contains("BlueLake/") && agents.contains("GreenCastle/"));
    let profile = format!("/mail/archive/browser?project={slug}&path=agents/BlueLake/profile.json");
    let (status, _, file) = page(&app, &profile).await;
    assert_eq!(status, 200);
    assert!(file.contains("&#34;name&#34;: &#34;BlueLake&#34;"), "{file}");
    let (status, json) = get_json(
        &app,
        &format!("/mail/archive/browser/{slug}/file?path=agents/BlueLake/profile.json"),
    )
    .await;
    assert_eq!(status, 200);
    assert!(json.as_str().expect("a JSON string").contains("\"program\""), "{json}");
    for (path, status) in [
        (format!("/mail/archive/browser/{slug}/file?path=../../../etc/passwd"), 400),
        (format!("/mail/archive/browser/{slug}/file?path=%2Fetc%2Fpasswd"), 400),
        (format!("/mail/archive/browser/{slug}/file?path=agents%2F..%2F..%2Fx"), 400),
        (format!("/mail/archive/browser/{slug}/file?path=a%5Cb"), 400),
        (format!("/mail/archive/browser/{slug}/file"), 400),
        (format!("/mail/archive/browser/{slug}/file?path=agents"), 404),
        (format!("/mail/archive/browser/{slug}/file?path=nope.md"), 404),
        ("/mail/archive/browser/nope/file?path=a.md".to_string(), 404),
        ("/mail/archive/browser?path=../x".to_string(), 400),
        ("/mail/archive/browser?path=projects/../../x".to_string(), 400),
        ("/mail/archive/browser?path=nothing/here".to_string(), 404),
    ] {
        let response = app.client.get(format!("{}{path}", app.base_url)).send().await.expect("get");
        assert_eq!(response.status().as_u16(), status, "{path}");
        let body = response.text().await.expect("body");
        if status == 400 {
            assert!(body.contains("path"), "the error names the field: {path}: {body}");
        }
        assert!(!body.contains("root:x:0:0"), "nothing outside the archive");
    }

    // The network: who wrote to whom.
    let (status, _, network) = page(&app, &format!("/mail/archive/network?project={slug}")).await;
    assert_eq!(status, 200);
    assert!(network.contains("<svg") && network.contains("BlueLake → GreenCastle: 1"), "{network}");
    assert_eq!(page(&app, "/mail/archive/network?project=nope").await.0, 404);

    let (status, names) = get_json(&app, &format!("/mail/api/projects/{slug}/agents")).await;
    assert_eq!(status, 200);
    assert_eq!(names, json!({"agents": ["BlueLake", "GreenCastle"]}));
    assert_eq!(get_json(&app, "/mail/api/projects/nope/agents").await.0, 404);
}

#[tokio::test]
async fn time_travel_shows_an_inbox_as_it_stood() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/travel", "BlueLake", "GreenCastle").await;
    mail(&slug, "Early news").body("first").thread("T-1").ok(&app).await;
    app.archive_flushed().await;
    let base = format!("/mail/archive/time-travel/snapshot?project={slug}&agent=GreenCastle");
    let (status, now) = get_json(&app, &format!("{base}&timestamp=2100-01-01T00:00")).await;
    assert_eq!(status, 200, "{now}");
    let subjects: Vec<&str> = now["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["subject"].as_str())
        .collect();
    assert!(subjects.contains(&"Early news"), "{now}");
    assert_eq!(now["commit_sha"].as_str().map(str::len), Some(40));
    assert_eq!(now["requested_time"], "2100-01-01T00:00");
    let (status, before) = get_json(&app, &format!("{base}&timestamp=2001-01-01T00:00")).await;
    assert_eq!(status, 200);
    assert_eq!(before["messages"], json!([]));
    assert!(before["error"].is_string(), "{before}");
    for (query, field) in [
        ("project=Bad.Slug&agent=GreenCastle&timestamp=2100-01-01T00:00".to_string(), "project"),
        (format!("project={slug}&agent=Green-Castle&timestamp=2100-01-01T00:00"), "agent"),
        (format!("project={slug}&agent=GreenCastle&timestamp=yesterday"), "timestamp"),
        (format!("project={slug}&agent=GreenCastle"), "timestamp"),
    ] {
        let (status, body) =
            get_json(&app, &format!("/mail/archive/time-travel/snapshot?{query}")).await;
        assert_eq!(status, 400, "{query}");
        assert!(body["error"].as_str().expect("error").starts_with(field), "{body}");
    }
    let (status, _, html) = page(
        &app,
        &format!(
            "/mail/archive/time-travel?project={slug}&agent=GreenCastle&timestamp=2100-01-01T00:00"
        ),
    )
    .await;
    assert_eq!(status, 200);
    assert!(html.contains("Early news") && html.contains("id=\"snapshot\""));
}

#[tokio::test]
async fn the_attachments_page_lists_messages_with_images() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/attach", "BlueLake", "GreenCastle").await;
    let project_dir = app.archive_root().join("projects").join(&slug);
    std::fs::create_dir_all(&project_dir).expect("project dir");
    std::fs::write(project_dir.join("diagram.png"), TINY_PNG).expect("png");
    SendCall::new(&slug, "BlueLake", "GreenCastle", "With a diagram")
        .body("see attached")
        .attachments(&["diagram.png"])
        .ok(&app)
        .await;
    mail(&slug, "Plain words").body("nothing attached").thread("T-2").ok(&app).await;
    let (status, _, html) = page(&app, &format!("/mail/{slug}/attachments")).await;
    assert_eq!(status, 200);
    assert!(html.contains("With a diagram") && !html.contains("Plain words"), "{html}");
    assert!(html.contains("src=\"data:image/webp;base64,"), "an inline thumbnail");
    assert_eq!(page(&app, "/mail/nope/attachments").await.0, 404);
}

#[tokio::test]
async fn related_projects_are_suggested_and_a_person_decides() {
    let app = TestApp::start().await;
    let api = app.seed_pair("/work/acme-api", "BlueLake", "GreenCastle").await;
    let web = app.seed_pair("/work/acme-web", "BlueLake", "GreenCastle").await;
    let far = app.seed_pair("/srv/telescope", "PinkDog", "OrangeCreek").await;
    // Pairs are scored in the background as projects and agents arrive; the page shows them
    // once stored (its cache follows the write).
    let fleet = page_once(&app, "/mail", "2 agent(s) in both").await;
    assert!(fleet.contains("id=\"siblings\""), "{fleet}");
    let related = fleet.split("id=\"siblings\"").nth(1).expect("siblings list");
    assert!(related.contains(&api) && related.contains(&web), "{related}");
    assert!(!related.contains(&far), "a stranger is not suggested: {related}");
    assert!(related.contains("2 agent(s) in both (BlueLake, GreenCastle)"), "{related}");

    let mut ids = Vec::new();
    for key in ["/work/acme-api", "/work/acme-web", "/srv/telescope"] {
        let project = ProjectCall::new(key).ok(&app).await;
        ids.push(project["id"].as_i64().expect("project id"));
    }
    let (api_id, web_id, far_id) = (ids[0], ids[1], ids[2]);
    let token = super::csrf_token(&app).await;
    let route = |a: i64, b: i64| format!("/mail/api/projects/{a}/siblings/{b}");
    let (status, answer) =
        super::ui_post(&app, &route(web_id, api_id), json!({"status": "confirmed"}), Some(&token))
            .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(
        (answer["success"].clone(), answer["status"].clone()),
        (json!(true), json!("confirmed"))
    );
    let (_, _, projects) = page(&app, "/mail/projects").await;
    assert!(projects.contains("class=\"sibling confirmed\""), "{projects}");
    // A pair never suggested can still be recorded (created when missing), then dismissed.
    let (status, answer) =
        super::ui_post(&app, &route(far_id, api_id), json!({"status": "dismissed"}), Some(&token))
            .await;
    assert_eq!((status, answer["status"].clone()), (200, json!("dismissed")), "{answer}");
    for (path, body, status, says) in [
        (route(api_id, web_id), json!({"status": "maybe"}), 400, "status:"),
        (route(api_id, api_id), json!({"status": "confirmed"}), 400, "other_id:"),
        (route(api_id, 999_999), json!({"status": "confirmed"}), 404, "other_id:"),
        (
            "/mail/api/projects/x/siblings/1".to_string(),
            json!({"status": "confirmed"}),
            400,
            "project_id:",
        ),
        (route(api_id, web_id), json!({"state": "confirmed"}), 400, "unknown field"),
    ] {
        let (got, answer) = super::ui_post(&app, &path, body, Some(&token)).await;
        assert_eq!(got, status, "{path}: {answer}");
        assert!(answer["error"].as_str().expect("error").contains(says), "{answer}");
    }
    let (status, _) =
        super::ui_post(&app, &route(api_id, web_id), json!({"status": "dismissed"}), None).await;
    assert_eq!(status, 403, "the CSRF token is needed");
}

#[tokio::test]
async fn with_an_llm_its_sibling_score_replaces_the_heuristic() {
    use mailroom_testkit::{FakeLlm, FakeLlmMode, TestOptions};
    let llm = FakeLlm::start(FakeLlmMode::Reference).await;
    let app = TestApp::start_with(TestOptions {
        llm_base_url: Some(llm.base_url.clone()),
        ..TestOptions::default()
    })
    .await;
    app.seed_pair("/work/shop-api", "BlueLake", "GreenCastle").await;
    app.seed_pair("/srv/shop-web", "RedStone", "PinkDog").await;
    // The LLM is asked after the heuristic; its answer shows once stored.
    let shown = page_once(&app, "/mail", "LLM: Both serve the same shop.").await;
    assert!(
        shown.contains("LLM: Both serve the same shop.") && shown.contains("93% alike"),
        "{shown}"
    );
    let asked = llm.requests();
    assert_eq!(asked.len(), 1, "one pair, one question");
    let prompt = asked[0].body.pointer("/messages/1/content").and_then(Value::as_str).unwrap_or("");
    assert!(prompt.contains("/work/shop-api") && prompt.contains("/srv/shop-web"), "{prompt}");
}
