//! The web UI at `/mail`: every page answers, bad requests get clear errors, foreign hosts are
//! refused, and hostile content is neutralised on every page.

mod archive_views;
mod deletion;

use mailroom_testkit::{
    InboxCall, PolicyCall, ReadCall, ReleaseCall, ReserveCall, SendCall, TestApp, git,
    sent_message_id,
};
use serde_json::{Value, json};

/// GETs a page; returns status, the headers we check, and the body.
async fn page(app: &TestApp, path: &str) -> (u16, reqwest::header::HeaderMap, String) {
    let response =
        app.client.get(format!("{}{path}", app.base_url)).send().await.expect("get page");
    let status = response.status().as_u16();
    let headers = response.headers().clone();
    (status, headers, response.text().await.expect("body"))
}

/// BlueLake's high-importance mail to GreenCastle, the messages these pages show.
fn mail(slug: &str, subject: &str) -> SendCall {
    SendCall::new(slug, "BlueLake", "GreenCastle", subject).importance("high")
}

#[tokio::test]
async fn every_page_answers_with_the_security_headers() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/web", "BlueLake", "GreenCastle").await;
    let first = mail(&slug, "Plan for the migration")
        .body("**Step one**: back up.")
        .thread("T-9")
        .ok(&app)
        .await;
    mail(&slug, "Re: Plan for the migration")
        .body("Done; see `db.sql`.")
        .thread("T-9")
        .ok(&app)
        .await;
    let routine = SendCall::new(&slug, "BlueLake", "GreenCastle", "Routine note");
    routine.body("normal importance").ok(&app).await;
    app.archive_flushed().await;
    let id = sent_message_id(&first);
    let migration = ReserveCall::new(&slug, "BlueLake", &["src/db/**"]).ttl(3600).exclusive(true);
    migration.reason("the migration").ok(&app).await;
    let notes = ReserveCall::new(&slug, "GreenCastle", &["docs/a.md"]).ttl(3600).exclusive(false);
    notes.reason("notes").ok(&app).await;
    ReleaseCall::new(&slug, "GreenCastle").paths(&["docs/a.md"]).ok(&app).await;
    let pages = [
        ("/mail", "Plan for the migration"),
        ("/mail/", "Plan for the migration"),
        ("/mail/unified-inbox?filter_importance=high", "Plan for the migration"),
        ("/mail/projects", "/work/web"),
        (&format!("/mail/{slug}"), "GreenCastle"),
        (&format!("/mail/{slug}?q=migration"), "2 results"),
        (&format!("/mail/{slug}/search?q=%22back%20up%22"), "1 result"),
        (&format!("/mail/{slug}/inbox/GreenCastle"), "page 1 of 1"),
        (&format!("/mail/{slug}/message/{id}"), "<strong>Step one</strong>"),
        (&format!("/mail/{slug}/thread/T-9"), "<code>db.sql</code>"),
        (&format!("/mail/{slug}/file_reservations"), "<code>src/db/**</code>"),
    ];
    for (path, expected) in pages {
        let (status, headers, body) = page(&app, path).await;
        assert_eq!(status, 200, "{path}: {body}");
        assert!(body.contains(expected), "{path} lacks {expected:?}: {body}");
        let csp = headers.get("content-security-policy").expect("CSP").to_str().expect("text");
        assert!(csp.contains("script-src 'self'") && csp.contains("frame-ancestors 'none'"));
        assert_eq!(headers.get("x-content-type-options").expect("nosniff"), "nosniff");
        assert!(headers["content-type"].to_str().expect("type").starts_with("text/html"));
    }
    let (_, _, everything) = page(&app, "/mail").await;
    let (_, _, high) = page(&app, "/mail/unified-inbox?filter_importance=HIGH").await;
    assert!(everything.contains("Routine note") && !high.contains("Routine note"), "{high}");
    let (_, _, detail) = page(&app, &format!("/mail/{slug}/message/{id}")).await;
    assert!(detail.contains("Archived in commit <code>"), "the commit is shown: {detail}");
    let (_, _, reservations) = page(&app, &format!("/mail/{slug}/file_reservations")).await;
    let (active, past) = reservations.split_once("id=\"past\"").expect("both tables");
    assert!(active.contains("In force (1)") && active.contains("the migration"), "{active}");
    assert!(past.contains("docs/a.md") && past.contains("shared"), "{past}");
    let (status, _, locks) = page(&app, "/mail/api/locks").await;
    assert_eq!(status, 200);
    let locks: Value = serde_json::from_str(&locks).expect("locks JSON");
    assert!(locks.is_object(), "{locks}");
    let (status, headers, css) = page(&app, "/mail/static/app.css").await;
    assert_eq!(
        (status, headers["content-type"].to_str().expect("type")),
        (200, "text/css; charset=utf-8")
    );
    assert!(css.contains("prefers-color-scheme: dark"));
    let (status, _, js) = page(&app, "/mail/static/app.js").await;
    assert!(status == 200 && js.contains("keydown"));

    let (status, _, json) = page(&app, "/mail/api/unified-inbox?limit=1").await;
    assert_eq!(status, 200);
    let json: Value = serde_json::from_str(&json).expect("json");
    assert_eq!(json["messages"].as_array().map(Vec::len), Some(1), "{json}");
    assert_eq!(json["messages"][0]["recipients"], json!(["GreenCastle"]));
    assert_eq!(json["projects"][0]["slug"], slug);
    let (_, _, json) = page(&app, "/mail/api/unified-inbox?include_projects=false").await;
    let json: Value = serde_json::from_str(&json).expect("json");
    assert_eq!(json["projects"], json!([]));
    assert_eq!(json["messages"].as_array().map(Vec::len), Some(3));
}

#[tokio::test]
async fn an_agent_inbox_is_paged_and_shows_unread_mail() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/pages", "BlueLake", "GreenCastle").await;
    for i in 0..5 {
        let (subject, body) = (format!("Message number {i}"), format!("**Opening** words {i}"));
        mail(&slug, &subject).body(&body).thread("T-1").ok(&app).await;
    }
    ReadCall::new(&slug, "GreenCastle", 5).ok(&app).await;
    let path = format!("/mail/{slug}/inbox/GreenCastle?limit=2");
    let (_, _, first) = page(&app, &path).await;
    assert!(first.contains("page 1 of 3") && first.contains("Message number 4"), "{first}");
    assert!(first.contains("?page=2") && !first.contains("Newer"), "{first}");
    assert_eq!(first.matches("class=\"unread\"").count(), 1, "message 5 was read: {first}");
    for action in ["mark-all-read", "mark-read", "delete-messages"] {
        let form = format!("action=\"/mail/{slug}/inbox/GreenCastle/{action}\"");
        assert!(first.contains(&form), "the {action} button posts to its route: {first}");
    }
    assert!(first.contains("<div class=\"excerpt\">Opening words 4</div>"), "an excerpt: {first}");
    let (_, _, overview) = page(&app, &format!("/mail/{slug}")).await;
    assert!(overview.contains("<div class=\"excerpt\">Opening words 0</div>"), "{overview}");
    let (_, _, last) = page(&app, &format!("{path}&page=3")).await;
    assert!(last.contains("Message number 0") && last.contains("Newer"), "{last}");
    assert!(!last.contains("Message number 4"));
}

#[tokio::test]
async fn bad_requests_get_clear_errors() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/errors", "BlueLake", "GreenCastle").await;
    let long = "x".repeat(8000);
    let cases = [
        ("/mail/no-such-project", 404, "not found"),
        ("/mail/no-such-project/inbox/BlueLake", 404, "not found"),
        (&format!("/mail/{long}"), 400, "at most 255 are allowed"),
        (&format!("/mail/{slug}/inbox/NoSuchAgent"), 404, "NoSuchAgent"),
        (&format!("/mail/{slug}/message/abc"), 400, "whole number"),
        (&format!("/mail/{slug}/message/99999"), 404, "Message not found"),
        (&format!("/mail/{slug}/message/-1"), 404, "Message not found"),
        (&format!("/mail/{slug}/inbox/GreenCastle?page=x"), 400, "page must be a whole number"),
        (&format!("/mail/{slug}/inbox/GreenCastle?page=0"), 400, "at least 1"),
        ("/mail?limit=lots", 400, "limit must be a whole number"),
        ("/mail/static/..%2F..%2Fetc%2Fpasswd", 404, "No such file"),
        ("/mail/static/secret.txt", 404, "No such file"),
    ];
    for (path, status, text) in cases {
        let (got, headers, body) = page(&app, path).await;
        assert_eq!(got, status, "{path}: {body}");
        assert!(body.contains(text), "{path}: {body}");
        assert!(headers.contains_key("content-security-policy"), "{path}");
    }
    let (status, _, body) = page(&app, "/mail/api/unified-inbox?limit=x").await;
    assert_eq!(status, 400);
    assert!(body.contains("limit must be a whole number"), "{body}");
    // An oversized limit is clamped, not refused.
    assert_eq!(page(&app, "/mail?limit=999999999").await.0, 200);
    assert_eq!(page(&app, &format!("/mail/{slug}/inbox/GreenCastle?limit=999999")).await.0, 200);
}

#[tokio::test]
async fn foreign_hosts_and_origins_are_refused() {
    let app = TestApp::start().await;
    let url = format!("{}/mail", app.base_url);
    let rebound = app.client.get(&url).header("host", "evil.example").send().await.expect("get");
    assert_eq!(rebound.status().as_u16(), 421);
    let foreign =
        app.client.get(&url).header("origin", "https://evil.example").send().await.expect("get");
    assert_eq!(foreign.status().as_u16(), 403);
    let local =
        app.client.get(&url).header("origin", "http://localhost:8765").send().await.expect("get");
    assert_eq!(local.status().as_u16(), 200);
}

/// Markup an attacker might put in a subject, body, project key, program or model string.
const CORPUS: &[&str] = &[
    "<script>alert('s')</script>",
    "<img src=x onerror=alert('i')>",
    "<svg onload=alert('v')><circle r=1></svg>",
    "<math><mtext><table><mglyph><style><img src=x onerror=alert('m')></style></mglyph></table></mtext></math>",
    "<a href=\"javascript:alert('j')\">click</a>",
    "[link](javascript:alert('l'))",
    "[data](data:text/html;base64,PHNjcmlwdD5hbGVydCgxKTwvc2NyaXB0Pg==)",
    "![svg](data:image/svg+xml;base64,PHN2ZyBvbmxvYWQ9YWxlcnQoMSk+)",
    "<p style=\"background:url(javascript:alert('c'))\">styled</p>",
    "<iframe src=\"https://evil.example\"></iframe>",
    "<object data=\"x\"></object><embed src=\"x\">",
    "<form action=\"https://evil.example\"><button>go</button></form>",
    "\"><script>alert('q')</script>",
    "'><img src=x onerror=alert('a')>",
    "<base href=\"https://evil.example/\">",
    "<meta http-equiv=\"refresh\" content=\"0;url=https://evil.example\">",
    "<link rel=stylesheet href=\"https://evil.example/x.css\">",
    "<<script>script>alert('n')<</script>/script>",
    "\u{202e}txt.exe \u{2067}right-to-left\u{2069}",
];

/// The tags the UI's own templates and the Markdown allow-list may produce.
const ALLOWED_TAGS: &[&str] = &[
    "select",
    "option",
    "!doctype",
    "html",
    "head",
    "meta",
    "title",
    "link",
    "script",
    "body",
    "header",
    "nav",
    "main",
    "footer",
    "kbd",
    "a",
    "h1",
    "h2",
    "h3",
    "h4",
    "h5",
    "h6",
    "p",
    "div",
    "span",
    "section",
    "aside",
    "ul",
    "ol",
    "li",
    "time",
    "strong",
    "em",
    "b",
    "i",
    "code",
    "pre",
    "blockquote",
    "table",
    "thead",
    "tbody",
    "tr",
    "th",
    "td",
    "hr",
    "br",
    "img",
    "article",
    "form",
    "input",
    "button",
    "abbr",
    "acronym",
    "del",
    "fieldset",
    "legend",
    "label",
    "textarea",
];

/// Every literal tag of a page (askama escapes `<` in text, so each one is real markup):
/// its name and attribute text, quotes respected.
fn tags(html: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut rest = html;
    while let Some(start) = rest.find('<') {
        let after = &rest[start + 1..];
        let mut quote = None;
        let mut end = after.len();
        for (i, c) in after.char_indices() {
            match (quote, c) {
                (None, '"' | '\'') => quote = Some(c),
                (Some(q), c) if c == q => quote = None,
                (None, '>') => {
                    end = i;
                    break;
                }
                _ => {}
            }
        }
        let inner = &after[..end];
        let name: String = inner
            .trim_start_matches('/')
            .chars()
            .take_while(|c| !c.is_whitespace() && *c != '/')
            .collect();
        found.push((name.to_ascii_lowercase(), inner.to_string()));
        rest = &after[end.min(after.len())..];
    }
    found
}

/// The network page's own drawing; SVG anywhere else is a failure.
const NETWORK_SVG_TAGS: &[&str] = &["svg", "defs", "marker", "path", "line", "g", "circle", "text"];

fn assert_neutral(path: &str, html: &str) {
    let lower = html.to_ascii_lowercase();
    let drawing = path.starts_with("/mail/archive/network");
    for (name, inner) in tags(html) {
        let ours = drawing && NETWORK_SVG_TAGS.contains(&name.as_str());
        assert!(ALLOWED_TAGS.contains(&name.as_str()) || ours, "{path}: tag <{inner}>");
        if inner.starts_with('/') {
            continue;
        }
        let attributes = inner.to_ascii_lowercase();
        for word in attributes.split(|c: char| c.is_whitespace() || c == '"' || c == '\'') {
            assert!(
                !(word.starts_with("on") && word.contains('=')),
                "{path}: handler in <{inner}>"
            );
        }
        assert!(!attributes.contains("javascript:"), "{path}: <{inner}>");
        assert!(!attributes.contains(" style="), "{path}: <{inner}>");
        if attributes.contains("data:") {
            assert!(name == "img" && attributes.contains("data:image/"), "{path}: <{inner}>");
            assert!(!attributes.contains("svg"), "{path}: <{inner}>");
        }
        if name == "script" {
            assert_eq!(inner, "script src=\"/mail/static/app.js\" defer", "{path}");
        }
        if name == "link" {
            assert!(inner.contains(" href=\"/mail/static/"), "{path}: <{inner}>");
        }
        if name == "form" {
            assert!(inner.contains("action=\"/mail/"), "{path}: <{inner}>");
        }
    }
    assert_eq!(lower.matches("<script").count(), 1, "{path}: one script, ours");
}

#[tokio::test]
async fn hostile_content_is_neutralised_on_every_page() {
    let app = TestApp::start().await;
    let human_key = "/work/<script>alert('p')</script>\"><img src=x onerror=alert(1)>";
    let slug = app.tool_ok("ensure_project", json!({"human_key": human_key})).await["slug"]
        .as_str()
        .expect("slug")
        .to_string();
    for (name, program) in [("BlueLake", CORPUS[0]), ("GreenCastle", CORPUS[1])] {
        app.tool_ok(
            "register_agent",
            json!({"project_key": slug, "program": program, "model": CORPUS[2], "name": name,
                   "task_description": CORPUS[3]}),
        )
        .await;
    }
    app.tool_ok(
        "set_contact_policy",
        json!({"project_key": slug, "agent_name": "GreenCastle", "policy": "open"}),
    )
    .await;
    app.tool_ok(
        "file_reservation_paths",
        json!({"project_key": slug, "agent_name": "BlueLake", "paths": ["src/<b>x</b>.rs"],
               "ttl_seconds": 3600, "exclusive": true, "reason": CORPUS[1]}),
    )
    .await;
    let body = CORPUS.join("\n\n");
    let mut ids = Vec::new();
    for (i, subject) in CORPUS.iter().enumerate() {
        let sent =
            mail(&slug, subject).body(&format!("{body}\n\n{subject}")).thread("T-x").ok(&app).await;
        ids.push(sent_message_id(&sent));
        if i == 0 {
            let long = "\u{5d0}".repeat(5000);
            mail(&slug, &long).body(&long).thread("T-x").ok(&app).await;
        }
    }
    // The thread's digest of this month (docs/compat/archive.md §4).
    let (year, month) = mailroom_core::model::time::Timestamp::now().year_month();
    let digest = format!("messages/threads/{year:04}/{month:02}/T-x.md");
    // Each page with the status it must answer; those marked `true` must show hostile text
    // (escaped), so a page that stopped rendering it cannot pass.
    let mut paths = vec![
        ("/mail".to_string(), 200, true),
        ("/mail/projects".to_string(), 200, true),
        (format!("/mail/{slug}"), 200, true),
        (format!("/mail/{slug}?q=script"), 200, true),
        (format!("/mail/{slug}/search?q=%3Cimg"), 200, true),
        (format!("/mail/{slug}/inbox/GreenCastle"), 200, true),
        (format!("/mail/{slug}/thread/T-x"), 200, true),
        (format!("/mail/{slug}?q=%3Cscript%3Ealert(1)%3C/script%3E"), 200, true),
        (format!("/mail/{slug}/message/%3Cscript%3E"), 400, true),
        (format!("/mail/{slug}/overseer/compose"), 200, false),
        (format!("/mail/{slug}/file_reservations"), 200, true),
        ("/mail/%3Cscript%3Ealert(1)%3C%2Fscript%3E".to_string(), 404, true),
        (format!("/mail/{slug}/attachments"), 200, false),
        ("/mail/archive/guide".to_string(), 200, false),
        ("/mail/archive/activity".to_string(), 200, false),
        (format!("/mail/archive/timeline?project={slug}"), 200, false),
        (format!("/mail/archive/network?project={slug}"), 200, false),
        (format!("/mail/archive/browser?project={slug}&path=agents/BlueLake"), 200, false),
        (format!("/mail/archive/browser?project={slug}&path={digest}"), 200, true),
        (
            format!(
                "/mail/archive/time-travel?project={slug}&agent=GreenCastle&timestamp=2100-01-01T00:00"
            ),
            200,
            true,
        ),
        ("/mail/archive/browser?path=%3Cscript%3E/..".to_string(), 400, true),
    ];
    // The archive's newest commit: its message lines carry the subjects.
    app.archive_flushed().await;
    let (_, _, activity) = page(&app, "/mail/archive/activity?limit=1").await;
    let sha = activity.split("/mail/archive/commit/").nth(1).and_then(|s| s.split('"').next());
    paths.push((format!("/mail/archive/commit/{}", sha.expect("a commit")), 200, true));
    // A message page escapes its subject (its body is sanitised, not escaped).
    let messages = ids.iter().zip(CORPUS);
    paths.extend(
        messages.map(|(id, subject)| {
            (format!("/mail/{slug}/message/{id}"), 200, subject.contains('<'))
        }),
    );
    for (path, expected, shows_hostile_text) in paths {
        let (status, _, html) = page(&app, &path).await;
        assert_eq!(status, expected, "{path}: {html}");
        if shows_hostile_text {
            assert!(html.contains("&#60;"), "{path} shows no escaped markup: {html}");
        }
        assert_neutral(&path, &html);
    }
}

/// A page's CSRF cookie value (every page answer sets one for a browser that has none).
async fn csrf_token(app: &TestApp) -> String {
    let response = app.client.get(format!("{}/mail", app.base_url)).send().await.expect("get");
    let cookie = response.headers()["set-cookie"].to_str().expect("cookie").to_string();
    assert!(cookie.contains("SameSite=Strict") && cookie.contains("Path=/mail"), "{cookie}");
    let pair = cookie.split(';').next().expect("pair");
    pair.strip_prefix("mailroom_csrf=").expect("token").to_string()
}

/// POSTs JSON to a UI route with (or without) the CSRF token.
async fn ui_post(app: &TestApp, path: &str, body: Value, token: Option<&str>) -> (u16, Value) {
    let mut request = app.client.post(format!("{}{path}", app.base_url)).json(&body);
    if let Some(token) = token {
        request = request
            .header("cookie", format!("mailroom_csrf={token}"))
            .header("x-csrf-token", token);
    }
    let response = request.send().await.expect("post");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

#[tokio::test]
async fn state_changes_need_the_csrf_token() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/csrf", "BlueLake", "GreenCastle").await;
    let path = format!("/mail/{slug}/inbox/GreenCastle/mark-all-read");
    let (status, body) = ui_post(&app, &path, json!({}), None).await;
    assert_eq!(status, 403, "{body}");
    assert!(body["error"].as_str().expect("error").contains("CSRF"), "{body}");
    let token = csrf_token(&app).await;
    let forged = app
        .client
        .post(format!("{}{path}", app.base_url))
        .header("cookie", format!("mailroom_csrf={token}"))
        .header("x-csrf-token", "f".repeat(64))
        .send()
        .await
        .expect("post");
    assert_eq!(forged.status().as_u16(), 403, "a header that is not the cookie's token");
    let (status, body) = ui_post(&app, &path, json!({}), Some(&token)).await;
    assert_eq!((status, body["success"].clone()), (200, json!(true)), "{body}");
    let foreign = app
        .client
        .post(format!("{}{path}", app.base_url))
        .header("origin", "https://evil.example")
        .header("cookie", format!("mailroom_csrf={token}"))
        .header("x-csrf-token", &token)
        .send()
        .await
        .expect("post");
    assert_eq!(foreign.status().as_u16(), 403, "another origin is refused before the token");
}

#[tokio::test]
async fn the_overseer_writes_past_contact_policies_with_its_banner() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/oversee", "BlueLake", "GreenCastle").await;
    PolicyCall::new(&slug, "BlueLake", "block_all").ok(&app).await;
    let token = csrf_token(&app).await;
    let path = format!("/mail/{slug}/overseer/send");
    let send = |recipients: Value, subject: &str, body: &str| json!({"recipients": recipients, "subject": subject, "body_md": body, "thread_id": "OPS-1"});
    let refusals = [
        (send(json!([]), "s", "b"), "recipients"),
        (send(json!(["NoSuchAgent"]), "s", "b"), "recipients: none of NoSuchAgent"),
        (send(json!(["BlueLake"]), "", "b"), "subject"),
        (send(json!(["BlueLake"]), &"s".repeat(201), "b"), "subject"),
        (send(json!(["BlueLake"]), "s", ""), "body_md"),
        (json!({"recipients": ["BlueLake"], "subject": "s", "body": "b"}), "unknown field `body`"),
    ];
    for (body, expected) in refusals {
        let (status, answer) = ui_post(&app, &path, body, Some(&token)).await;
        assert_eq!(status, 400, "{answer}");
        assert!(answer["error"].as_str().expect("error").contains(expected), "{answer}");
    }
    let body = send(
        json!(["BlueLake", "GreenCastle", "BlueLake", "Ghost"]),
        "Stop the deploy",
        "Roll back **now**.",
    );
    let (status, sent) = ui_post(&app, &path, body, Some(&token)).await;
    assert_eq!(status, 200, "{sent}");
    assert_eq!(sent["success"], true);
    assert_eq!(sent["recipients"], json!(["BlueLake", "GreenCastle"]), "existing, de-duplicated");
    assert!(sent["sent_at"].is_string() && sent["message_id"].is_i64(), "{sent}");

    // The agent blocking everyone still has it, as high importance with the banner.
    let inbox = InboxCall::new(&slug, "BlueLake").include_bodies(true).ok(&app).await;
    let message = &inbox[0];
    assert_eq!(
        (message["from"].as_str(), message["importance"].as_str()),
        (Some("HumanOverseer"), Some("high"))
    );
    assert_eq!(message["thread_id"], "OPS-1");
    let body = message["body_md"].as_str().expect("body");
    assert!(
        body.contains("MESSAGE FROM THE HUMAN OVERSEER") && body.ends_with("Roll back **now**.")
    );
    let agents = app.tool_ok("list_agents", json!({"project_key": slug})).await;
    let overseer = agents["agents"]
        .as_array()
        .and_then(|list| list.iter().find(|a| a["name"] == "HumanOverseer"))
        .cloned()
        .expect("the overseer is an agent of the project");
    assert_eq!(
        (overseer["program"].as_str(), overseer["model"].as_str()),
        (Some("WebUI"), Some("Human"))
    );

    app.archive_flushed().await;
    let log = git(&app.archive_root(), &["log", "--format=%B"]);
    // Its own commit's subject, or (batched with the overseer's new profile) a line of the
    // batch commit.
    let line = "Human Overseer message: Stop the deploy";
    assert!(log.lines().any(|l| l == line || l == format!("- {line}")), "{log}");

    // Mark read: the ids given, then all.
    let id = sent["message_id"].as_i64().expect("id");
    let mark = format!("/mail/{slug}/inbox/GreenCastle/mark-read");
    let (status, marked) =
        ui_post(&app, &mark, json!({"message_ids": [id, 424242]}), Some(&token)).await;
    assert_eq!(status, 200, "{marked}");
    assert_eq!(
        (marked["marked_count"].clone(), marked["requested_count"].clone()),
        (json!(1), json!(2))
    );
    let (status, marked) = ui_post(&app, &mark, json!({"message_ids": []}), Some(&token)).await;
    assert_eq!(status, 400, "{marked}");
    let (_, marked) = ui_post(&app, &mark, json!({"message_ids": [id]}), Some(&token)).await;
    assert_eq!(marked["marked_count"], 0, "already read");
    let all = format!("/mail/{slug}/inbox/BlueLake/mark-all-read");
    let (_, marked) = ui_post(&app, &all, json!({}), Some(&token)).await;
    assert_eq!(
        (marked["marked_count"].clone(), marked["agent"].clone()),
        (json!(1), json!("BlueLake"))
    );
    let (_, _, inbox_page) = page(&app, &format!("/mail/{slug}/inbox/BlueLake")).await;
    assert!(!inbox_page.contains("class=\"unread\""), "{inbox_page}");
    let (status, _, compose) = page(&app, &format!("/mail/{slug}/overseer/compose")).await;
    assert_eq!(status, 200);
    assert!(
        compose.contains("value=\"GreenCastle\"") && !compose.contains("value=\"HumanOverseer\"")
    );
}

#[tokio::test]
async fn pages_hear_of_changes_and_streams_end_at_shutdown() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/live", "BlueLake", "GreenCastle").await;
    let mut events =
        app.client.get(format!("{}/mail/api/events", app.base_url)).send().await.expect("events");
    assert_eq!(events.status().as_u16(), 200);
    assert_eq!(events.headers()["content-type"], "text/event-stream");
    let opened = events.chunk().await.expect("chunk").expect("opened");
    assert!(String::from_utf8_lossy(&opened).starts_with("retry:"));
    mail(&slug, "Live news").body("body").thread("T-live").ok(&app).await;
    let mut seen = String::new();
    while !seen.contains("event: change") {
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(10), events.chunk())
            .await
            .expect("a change within 10 s")
            .expect("chunk")
            .expect("open stream");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    assert!(seen.contains("\ndata: "), "{seen}");
    // A stream still open does not hold the graceful shutdown.
    tokio::time::timeout(std::time::Duration::from_secs(20), app.stop())
        .await
        .expect("the server stops with an event stream open");
    let rest = tokio::time::timeout(std::time::Duration::from_secs(5), events.chunk()).await;
    assert!(matches!(rest, Ok(Ok(None)) | Ok(Err(_))), "the stream ended: {rest:?}");
}

#[tokio::test]
async fn agents_retire_and_projects_archive_from_the_ui() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/life", "BlueLake", "GreenCastle").await;
    let token = csrf_token(&app).await;
    let agents = app.tool_ok("list_agents", json!({"project_key": slug})).await;
    let list = agents["agents"].as_array().expect("agents");
    let blue = list.iter().find(|a| a["name"] == "BlueLake").expect("BlueLake");
    let (agent_id, project_id) = (blue["id"].as_i64().expect("id"), blue["project_id"].clone());

    let (status, retired) =
        ui_post(&app, "/mail/api/retire-agent", json!({"agent_id": agent_id}), Some(&token)).await;
    assert_eq!(status, 200, "{retired}");
    assert_eq!(retired, json!({"success": true, "agent_id": agent_id, "status": "retired"}));
    let (_, _, project_page) = page(&app, &format!("/mail/{slug}")).await;
    assert!(project_page.contains("(retired)") && project_page.contains("Unretire"));
    let (_, back) =
        ui_post(&app, "/mail/api/unretire-agent", json!({"agent_id": agent_id}), Some(&token))
            .await;
    assert_eq!(back["status"], "active");

    let (status, archived) =
        ui_post(&app, "/mail/api/archive-project", json!({"project_id": project_id}), Some(&token))
            .await;
    assert_eq!((status, archived["status"].clone()), (200, json!("archived")), "{archived}");
    let (_, _, projects) = page(&app, "/mail/projects").await;
    assert!(projects.contains("· archived") && projects.contains("Unarchive"), "{projects}");
    let body = json!({"project_id": project_id});
    let (_, active) = ui_post(&app, "/mail/api/unarchive-project", body, Some(&token)).await;
    assert_eq!(active["status"], "active");

    let refusals = [
        ("/mail/api/retire-agent", json!({"agent_id": 999_999}), 404, "agent_id"),
        ("/mail/api/archive-project", json!({"project_id": 999_999}), 404, "project_id"),
        ("/mail/api/retire-agent", json!({"agent": 1}), 400, "unknown field"),
        ("/mail/api/unarchive-project", json!({"project_id": "x"}), 400, "invalid type"),
    ];
    for (path, body, expected, text) in refusals {
        let (status, answer) = ui_post(&app, path, body, Some(&token)).await;
        assert_eq!(status, expected, "{path}: {answer}");
        assert!(answer["error"].as_str().expect("error").contains(text), "{path}: {answer}");
    }
    let (status, _) =
        ui_post(&app, "/mail/api/retire-agent", json!({"agent_id": agent_id}), None).await;
    assert_eq!(status, 403, "no CSRF token, no change");
}
