//! One call must never stop the server (docs/compat/tools.md §1.9): each input below once
//! poisoned it or answered badly. Each test checks the answer, then that the server still
//! serves everyone else (`TestApp::assert_serves_everyone`).

use mailroom_testkit::{
    PolicyCall, RegisterCall, ReleaseCall, RenewCall, ReserveCall, SendCall, TestApp, git,
    sent_message_id,
};
use serde_json::{Value, json};

const PROJECT: &str = "/work/hostile";

/// The error text of a refused call.
async fn refused(app: &TestApp, tool: &str, arguments: Value) -> String {
    match app.call_tool(tool, arguments).await {
        Err(text) => text,
        Ok(answer) => panic!("{tool} should be refused, answered {answer}"),
    }
}

/// `extend_seconds: 10^12` once stored the year 33,715: the archive writer looped on it,
/// releases failed and every write in every project stopped once the queue filled.
#[tokio::test]
async fn an_extension_no_timestamp_can_hold_is_refused_and_everything_goes_on() {
    let app = TestApp::start().await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    ReserveCall::new(&slug, "BlueLake", &["src/**"]).ok(&app).await;
    for extend in [1_000_000_000_000_i64, i64::MAX] {
        let renew =
            json!({"project_key": slug, "agent_name": "BlueLake", "extend_seconds": extend});
        let text = refused(&app, "renew_file_reservations", renew).await;
        assert!(text.contains("extend_seconds must be between 60 and 315360000"), "{text}");
    }
    // As a JSON client writes 1e12: a float, refused as not an integer (as the reference's
    // pydantic refuses it), naming the argument.
    let renew = json!({"project_key": slug, "agent_name": "BlueLake", "extend_seconds": 1e12});
    let text = refused(&app, "renew_file_reservations", renew).await;
    assert!(text.contains("extend_seconds") && text.contains("valid integer"), "{text}");
    let renewed = RenewCall::new(&slug, "BlueLake").extend(3600).ok(&app).await;
    assert_eq!(renewed["renewed"], 1, "{renewed}");
    let listed = app.read_resource(&format!("resource://file_reservations/{slug}")).await;
    assert!(listed.is_ok(), "{listed:?}");
    assert_eq!(ReleaseCall::new(&slug, "BlueLake").ok(&app).await["released"], 1);
    app.assert_serves_everyone("a renewal by 10^12 seconds").await;
}

/// TTLs outside 1 s..=ten years are refused naming the argument as the caller spelled it,
/// before anything is created.
#[tokio::test]
async fn durations_out_of_range_are_refused_naming_the_field() {
    let app = TestApp::start().await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    let reserve = |ttl: i64| json!({"project_key": slug, "agent_name": "BlueLake", "paths": ["a/**"], "ttl_seconds": ttl});
    for ttl in [1_000_000_000_000_000, -5, 0] {
        let text = refused(&app, "file_reservation_paths", reserve(ttl)).await;
        assert!(text.contains("ttl_seconds must be between 1 and"), "{ttl}: {text}");
    }
    let session = json!({"human_key": "/work/new-session", "program": "codex-cli", "model": "gpt-5",
        "agent_name": "RedStone", "file_reservation_paths": ["b/**"],
        "file_reservation_ttl_seconds": 1_000_000_000_000_000_i64});
    let text = refused(&app, "macro_start_session", session).await;
    assert!(text.contains("file_reservation_ttl_seconds must be between"), "{text}");
    let projects = app.read_resource("resource://projects").await.expect("projects");
    assert!(!projects.to_string().contains("new-session"), "nothing created: {projects}");
    let contact = json!({"project_key": slug, "from_agent": "BlueLake", "to_agent": "GreenCastle",
        "ttl_seconds": 1_000_000_000_000_000_i64});
    let text = refused(&app, "request_contact", contact).await;
    assert!(text.contains("ttl_seconds must be between 60 and"), "{text}");
    let summary = json!({"project_key": slug, "since_hours": 1e300});
    let text = refused(&app, "summarize_recent", summary).await;
    assert!(text.contains("since_hours must be between 0 and"), "{text}");
    let purge = json!({"project_key": slug, "max_age_days": i64::MAX, "dry_run": true});
    let text = refused(&app, "purge_old_messages", purge).await;
    assert!(text.contains("max_age_days must be between 0 and"), "{text}");
    let listed = app.read_resource(&format!("resource://file_reservations/{slug}")).await;
    assert_eq!(listed.expect("listed"), json!([]), "no reservation was granted");
    app.assert_serves_everyone("durations out of range").await;
}

/// A `since_ts` whose offset carries it past 9999-12-31 (or before 0001-01-01) is refused:
/// compared as stored text, it would have matched every message instead of none.
#[tokio::test]
async fn since_ts_past_what_can_be_stored_is_refused() {
    let app = TestApp::start().await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    SendCall::new(&slug, "BlueLake", "GreenCastle", "s").body("b").ok(&app).await;
    for since in ["9999-12-31T23:59:59-05:00", "0001-01-01T00:30:00+01:00"] {
        let inbox = json!({"project_key": slug, "agent_name": "GreenCastle", "since_ts": since});
        let text = refused(&app, "fetch_inbox", inbox).await;
        assert!(text.contains(&format!("since_ts '{since}' is not")), "{text}");
    }
    let inbox = json!({"project_key": slug, "agent_name": "GreenCastle",
        "since_ts": "9999-12-31T23:59:59+00:00"});
    assert_eq!(app.tool_ok("fetch_inbox", inbox).await, json!([]), "nothing after the last time");
    app.assert_serves_everyone("since_ts out of range").await;
}

/// A reservation names files of the project: no absolute path, no way out of it.
#[tokio::test]
async fn patterns_outside_the_project_are_refused() {
    let app = TestApp::start().await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    let cases = [
        ("../../etc/passwd", "paths[0] '../../etc/passwd' leaves the project's directory"),
        ("/etc/passwd", "paths[0] '/etc/passwd' is an absolute path"),
        ("C:\\Windows\\x", "is an absolute path"),
        ("src/../../x", "leaves the project's directory"),
    ];
    for (pattern, said) in cases {
        let paths = json!(["src/ok.py", pattern]);
        let said = said.replace("paths[0]", "paths[1]");
        let reserve = json!({"project_key": slug, "agent_name": "BlueLake", "paths": paths});
        let text = refused(&app, "file_reservation_paths", reserve).await;
        assert!(text.contains(&said), "{pattern}: {text}");
    }
    let listed = app.read_resource(&format!("resource://file_reservations/{slug}")).await;
    assert_eq!(listed.expect("listed"), json!([]), "not even the valid path was granted");
    app.assert_serves_everyone("patterns outside the project").await;
}

/// A project key is a directory: not the root, no control character, at most 255 bytes.
#[tokio::test]
async fn project_keys_that_name_no_project_directory_are_refused() {
    let app = TestApp::start().await;
    let long = format!("/{}", "a".repeat(5000));
    let cases = [
        ("/", "is the file system's root"),
        ("/tmp/../..", "is the file system's root"),
        ("/tmp/a\u{0}b", "must not contain control characters (found U+0000)"),
        (long.as_str(), "human_key is 5001 bytes long; at most 255"),
    ];
    for (key, said) in cases {
        let text = refused(&app, "ensure_project", json!({"human_key": key})).await;
        assert!(text.contains(said), "{key:.40}: {text}");
        let session = json!({"human_key": key, "program": "codex-cli", "model": "gpt-5"});
        let text = refused(&app, "macro_start_session", session).await;
        assert!(text.contains(said), "{key:.40}: {text}");
    }
    let (status, body) = app.post("/api/project/ensure", json!({"human_key": "/"})).await;
    assert_eq!(status, 400, "{body}");
    let inbox = json!({"project_key": long, "agent_name": "BlueLake"});
    let text = refused(&app, "fetch_inbox", inbox).await;
    assert!(text.len() < 400, "a lookup does not echo a 5,000-byte key: {text:.400}");
    let projects = app.read_resource("resource://projects").await.expect("projects");
    assert_eq!(projects, json!([]), "no project was created");
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    let inbox = json!({"project_key": slug, "agent_name": "x".repeat(5000)});
    let text = refused(&app, "fetch_inbox", inbox).await;
    assert!(text.contains("agent_name is 5000 bytes long; at most 128"), "{text:.300}");
    app.assert_serves_everyone("project keys out of range").await;
}

/// Work a caller can make large is bounded: the query's length and words, the names an error
/// lists; a refusal by contact policy names who refused.
#[tokio::test]
async fn queries_and_refusals_stay_bounded_and_name_who_refused() {
    let app = TestApp::start().await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    let search = |query: String| json!({"project_key": slug, "query": query});
    let text = refused(&app, "search_messages", search("x ".repeat(50_000))).await;
    assert!(text.contains("query is 100000 characters long; at most 1024"), "{text}");
    let text = refused(&app, "search_messages", search(vec!["w"; 65].join(" "))).await;
    assert!(text.contains("query has 65 words; at most 64"), "{text}");
    app.tool_ok("search_messages", search(vec!["w"; 64].join(" "))).await;
    let crowd: Vec<String> = (0..10_000).map(|i| format!("Nobody{i}")).collect();
    let send = json!({"project_key": slug, "sender_name": "BlueLake", "to": crowd,
        "subject": "s", "body_md": "b"});
    let text = refused(&app, "send_message", send).await;
    assert!(text.len() < 1000, "{} bytes: {text:.300}", text.len());
    assert!(text.contains("Nobody19 and 9980 more"), "{text}");
    let mut names = vec!["GreenCastle".to_string()];
    for name in ["RedStone", "GoldFox", "BlackBear", "SilverOwl"] {
        RegisterCall::new(&slug, name).program("p").model("m").ok(&app).await;
        PolicyCall::new(&slug, name, "open").ok(&app).await;
        names.push(name.to_string());
    }
    PolicyCall::new(&slug, "GoldFox", "block_all").ok(&app).await;
    let send = json!({"project_key": slug, "sender_name": "BlueLake", "to": names,
        "subject": "s", "body_md": "b"});
    let text = refused(&app, "send_message", send).await;
    assert!(text.contains("Recipient is not accepting messages. ('GoldFox'"), "{text}");
    app.assert_serves_everyone("bounded queries and refusals").await;
}

/// Rows an earlier version stored with a year past 9999 stay readable and releasable.
#[tokio::test]
async fn a_stored_year_past_9999_is_read_and_released() {
    let app = TestApp::start().await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    ReserveCall::new(&slug, "BlueLake", &["src/**"]).ok(&app).await;
    app.archive_flushed().await;
    // An old version's row.
    let sql = "UPDATE file_reservations SET expires_ts = '33715-03-01 10:00:00.000000'";
    assert_eq!(app.execute_sql(sql).await, 1, "an old version's row");
    let listed = app.read_resource(&format!("resource://file_reservations/{slug}")).await;
    let listed = listed.expect("the listing reads it");
    assert_eq!(listed[0]["expires_ts"], "9999-12-31T23:59:59.999999+00:00", "{listed}");
    assert_eq!(ReleaseCall::new(&slug, "BlueLake").ok(&app).await["released"], 1);
    app.assert_serves_everyone("a stored year past 9999").await;
}

/// A queued row the archive writer cannot render is set aside with its error after a few
/// tries: the work behind it is archived, `/ready` and `archive verify` report it.
#[tokio::test]
async fn work_the_archive_cannot_render_is_set_aside_and_the_queue_moves_on() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/corrupt", "BlueLake", "GreenCastle").await;
    let send = |subject: &str| SendCall::new(&slug, "BlueLake", "GreenCastle", subject).body("b");
    let broken = send("broken").ok(&app).await;
    let broken_id = sent_message_id(&broken);
    app.archive_flushed().await;
    let break_message =
        |id: i64| format!("UPDATE messages SET created_ts = 'not a time' WHERE id = {id}");
    assert_eq!(app.execute_sql(&break_message(broken_id)).await, 1, "a row no reader understands");
    let queue_again = format!(
        "INSERT INTO archive_queue (kind, ref_id, enqueued_ts)
         VALUES ('message', {broken_id}, '2026-01-01 00:00:00.000000')"
    );
    assert_eq!(app.execute_sql(&queue_again).await, 1, "queued again");
    let after = send("after").ok(&app).await;
    let after_id = sent_message_id(&after);
    let archive = app.core.archive().expect("archive");
    for _ in 0..600 {
        if archive.stats().set_aside == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(archive.stats().set_aside, 1, "{:?}", archive.stats());
    // The row queued by hand is not in the writer's count of queued work but its setting
    // aside is in its count of work done, so `archive_flushed` alone may return one row
    // early: wait for the queue itself to empty.
    let queued = || app.query_i64("SELECT COUNT(*) FROM archive_queue");
    for _ in 0..600 {
        if queued().await == 0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    assert_eq!(queued().await, 0, "the queue drains past the set-aside row");
    app.archive_flushed().await;
    let files = git(&app.archive_root(), &["ls-tree", "-r", "--name-only", "HEAD"]);
    let archived = |id: i64| files.lines().any(|f| f.ends_with(&format!("__{id}.md")));
    assert!(archived(after_id), "the message behind it is archived: {files}");
    let (status, ready) = app.get("/ready").await;
    let ready: Value = serde_json::from_str(&ready).expect("JSON");
    assert_eq!((status, &ready["status"]), (200, &json!("ready")), "{ready}");
    assert_eq!(ready["archive"]["set_aside"], 1, "{ready}");
    let config = app.core.config().clone();
    let report = tokio::task::spawn_blocking(move || {
        mailroom_core::archive::maintenance::verify(&config).expect("verify")
    })
    .await
    .expect("verify ran");
    let found: Vec<String> = report.differences.iter().map(ToString::to_string).collect();
    let set_aside = format!("(Message {broken_id}) was not archived: ");
    assert_eq!(found.len(), 1, "{found:#?}");
    assert!(found[0].starts_with("set aside: archive work") && found[0].contains(&set_aside));
    assert!(found[0].contains("bad timestamp"), "the error says why: {found:#?}");
    assert!(!found.iter().any(|d| d.contains(&format!("message {after_id}"))), "{found:#?}");
    let third = send("third").call(&app).await;
    assert!(third.is_ok(), "writes go on: {third:?}");
    // A row broken after it was archived is one difference of verify's, not its failure.
    app.archive_flushed().await;
    assert_eq!(app.execute_sql(&break_message(after_id)).await, 1, "broken after archiving");
    let config = app.core.config().clone();
    let report = tokio::task::spawn_blocking(move || {
        mailroom_core::archive::maintenance::verify(&config).expect("verify")
    })
    .await
    .expect("verify ran");
    let unreadable = format!("unreadable: message {after_id} cannot be rendered");
    assert!(report.differences.iter().any(|d| d.to_string().starts_with(&unreadable)));
}
