//! Reservations on mail-archive paths against deliveries (docs/compat/tools.md §6.7): another
//! agent's reservation on a surface a send would write blocks it with a returned
//! FILE_RESERVATION_CONFLICT error and nothing written; the holder's own mail, reservations
//! outside the archive layout and a server with enforcement off are not blocked.

use mailroom_core::model::time::Timestamp;
use mailroom_testkit::{
    ContactRequestCall, ContactResponseCall, InboxCall, PolicyCall, ProjectCall, RegisterCall,
    ReleaseCall, ReplyCall, ReserveCall, SendCall, TestApp, TestOptions, sent_message_id,
    sql_quote,
};
use serde_json::{Value, json};

fn reserve(slug: &str, agent: &str, paths: &[&str]) -> ReserveCall {
    ReserveCall::new(slug, agent, paths).exclusive(true).ttl(3600)
}

/// Two agents who accept each other's mail; returns the slug.
async fn pair(app: &TestApp, path: &str) -> String {
    let slug = app.seed_pair(path, "BlueLake", "GreenCastle").await;
    PolicyCall::new(&slug, "BlueLake", "open").ok(app).await;
    slug
}

/// The highest message id and archive-queue id ever handed out (AUTOINCREMENT sequences on
/// SQLite, the tables' id sequences on PostgreSQL, so a row written and already processed
/// still counts).
async fn sequences(app: &TestApp) -> (i64, i64) {
    let postgres = app.core.config().postgres.is_some();
    let seq = |table: &str| {
        if postgres {
            format!("SELECT CASE WHEN is_called THEN last_value ELSE 0 END FROM {table}_id_seq")
        } else {
            format!(
                "SELECT coalesce(max(seq), 0) FROM sqlite_sequence WHERE name = {}",
                sql_quote(table)
            )
        }
    };
    (app.query_i64(&seq("messages")).await, app.query_i64(&seq("archive_queue")).await)
}

fn month() -> String {
    let (year, month) = Timestamp::now().year_month();
    format!("{year:04}/{month:02}")
}

#[tokio::test]
async fn a_reserved_archive_surface_blocks_other_senders_and_writes_nothing() {
    let app = TestApp::start().await;
    let slug = pair(&app, "/work/enforce-a").await;
    reserve(&slug, "GreenCastle", &["messages/**"]).ok(&app).await;
    app.archive_flushed().await;
    let before = sequences(&app).await;

    let blocked = SendCall::new(&slug, "BlueLake", "GreenCastle", "Hi").ok(&app).await;
    let keys: Vec<&String> = blocked.as_object().expect("object").keys().collect();
    assert_eq!(keys, ["error"], "{blocked}");
    let error = &blocked["error"];
    assert_eq!(error["type"], "FILE_RESERVATION_CONFLICT");
    assert_eq!(error["message"], "Conflicting active file_reservations prevent message write.");
    let conflicts = error["conflicts"].as_array().expect("conflicts");
    assert_eq!(conflicts.len(), 1, "{error}");
    assert_eq!(conflicts[0]["surface"], format!("messages/{}/*.md", month()));
    assert_eq!(conflicts[0]["holder"], "GreenCastle");
    assert_eq!(conflicts[0]["path_pattern"], "messages/**");
    assert_eq!(conflicts[0]["exclusive"], true);
    assert!(conflicts[0]["expires_ts"].as_str().and_then(Timestamp::parse_iso).is_some());
    assert_eq!(sequences(&app).await, before, "no message row, nothing queued for the archive");
    let inbox = InboxCall::new(&slug, "GreenCastle").ok(&app).await;
    assert_eq!(inbox, json!([]));

    // The holder's own mail goes through its reservation.
    let own = SendCall::new(&slug, "GreenCastle", "BlueLake", "Mine").ok(&app).await;
    assert_eq!(own["count"], 1, "{own}");
    let id = sent_message_id(&own);

    // A reply lands in the same canonical directory: blocked, and said so beside the thread.
    let reply = ReplyCall::new(&slug, "BlueLake", id).body("Thanks").ok(&app).await;
    assert_eq!(reply["count"], 0, "{reply}");
    assert_eq!(reply["deliveries"], json!([]));
    assert_eq!(reply["thread_id"], id.to_string());
    assert_eq!(reply["error"]["type"], "FILE_RESERVATION_CONFLICT");

    // Once released, mail flows again.
    ReleaseCall::new(&slug, "GreenCastle").ok(&app).await;
    let sent = SendCall::new(&slug, "BlueLake", "GreenCastle", "Hi").ok(&app).await;
    assert_eq!(sent["count"], 1, "{sent}");
}

#[tokio::test]
async fn a_reserved_inbox_blocks_only_mail_into_it() {
    let app = TestApp::start().await;
    let slug = pair(&app, "/work/enforce-b").await;
    let inbox = format!("agents/GreenCastle/inbox/{}/*.md", month());
    reserve(&slug, "GreenCastle", &[&inbox]).ok(&app).await;

    let blocked = SendCall::new(&slug, "BlueLake", "GreenCastle", "Hi").ok(&app).await;
    assert_eq!(blocked["error"]["conflicts"][0]["surface"], inbox, "{blocked}");
    let other = SendCall::new(&slug, "GreenCastle", "BlueLake", "Yo").ok(&app).await;
    assert_eq!(other["count"], 1, "{other}");
}

#[tokio::test]
async fn reservations_outside_the_mail_archive_never_block_mail() {
    let app = TestApp::start().await;
    let slug = pair(&app, "/work/enforce-c").await;
    // `**` and `*` cover everything, but name no mail-archive directory.
    let paths = ["src/**", "**", "*", "docs/messages/**"];
    reserve(&slug, "GreenCastle", &paths).ok(&app).await;
    let sent = SendCall::new(&slug, "BlueLake", "GreenCastle", "Hi").ok(&app).await;
    assert_eq!(sent["count"], 1, "{sent}");
}

#[tokio::test]
async fn with_enforcement_off_reserved_surfaces_do_not_block() {
    let options = TestOptions { reservations_enforcement_off: true, ..TestOptions::default() };
    let app = TestApp::start_with(options).await;
    let slug = pair(&app, "/work/enforce-d").await;
    reserve(&slug, "GreenCastle", &["messages/**"]).ok(&app).await;
    let sent = SendCall::new(&slug, "BlueLake", "GreenCastle", "Hi").ok(&app).await;
    assert_eq!(sent["count"], 1, "{sent}");
}

#[tokio::test]
async fn a_delivery_first_releases_expired_reservations_and_archives_them() {
    let app = TestApp::start().await;
    let slug = pair(&app, "/work/enforce-e").await;
    // An exclusive reservation on the mail archive that expired without being released, as a
    // server stopped before its sweep leaves it.
    let inserted = app
        .execute_sql(
            "INSERT INTO file_reservations (project_id, agent_id, path_pattern, \"exclusive\", \
             reason, created_ts, expires_ts) SELECT project_id, id, 'messages/**', 1, 'lapsed', \
             '2020-01-01 00:00:00.000000', '2020-01-01 01:00:00.000000' FROM agents \
             WHERE name = 'GreenCastle'",
        )
        .await;
    assert_eq!(inserted, 1, "insert");
    let id = app.query_i64("SELECT max(id) FROM file_reservations").await;

    let sent = SendCall::new(&slug, "BlueLake", "GreenCastle", "Hi").ok(&app).await;
    assert_eq!(sent["count"], 1, "{sent}");
    let released = app
        .query_string(&format!("SELECT released_ts FROM file_reservations WHERE id = {id}"))
        .await;
    assert!(released.is_some(), "the sweep released it");
    app.archive_flushed().await;
    let artifact = app
        .archive_root()
        .join("projects")
        .join(&slug)
        .join("file_reservations")
        .join(format!("id-{id}.json"));
    let record: Value =
        serde_json::from_str(&std::fs::read_to_string(&artifact).expect("artifact")).expect("json");
    assert_eq!(record["path_pattern"], "messages/**");
    assert!(record["released_ts"].is_string(), "{record}");
}

#[tokio::test]
async fn a_blocked_project_is_listed_beside_the_deliveries_that_went_through() {
    let app = TestApp::start().await;
    let home = pair(&app, "/work/enforce-f").await;
    let away = ProjectCall::new("/work/enforce-g").ok(&app).await;
    let away = away["slug"].as_str().expect("slug").to_string();
    for name in ["RedFox", "SilverHawk"] {
        RegisterCall::new(&away, name).program("p").model("m").ok(&app).await;
    }
    let request = ContactRequestCall::new(&home, "BlueLake", "RedFox").to_project(&away);
    request.ok(&app).await;
    let response = ContactResponseCall::new(&away, "RedFox", "BlueLake", true);
    response.from_project(&home).ok(&app).await;
    reserve(&away, "SilverHawk", &["messages/**"]).ok(&app).await;
    let remote = format!("project:{away}#RedFox");

    let both = json!({"project_key": home, "sender_name": "BlueLake",
                      "to": ["GreenCastle", remote], "subject": "Both", "body_md": "x"});
    let sent = app.tool_ok("send_message", both).await;
    assert_eq!(sent["count"], 1, "{sent}");
    assert_eq!(sent["deliveries"][0]["project"], "/work/enforce-f");
    let errors = sent["delivery_errors"].as_array().expect("delivery_errors");
    assert_eq!(errors.len(), 1, "{sent}");
    assert_eq!(errors[0]["project"], "/work/enforce-g");
    assert_eq!(errors[0]["error"]["type"], "FILE_RESERVATION_CONFLICT");
    assert_eq!(errors[0]["error"]["conflicts"][0]["holder"], "SilverHawk");

    let blocked = SendCall::new(&home, "BlueLake", &remote, "Away").body("x").ok(&app).await;
    assert_eq!(blocked["error"]["type"], "FILE_RESERVATION_CONFLICT", "{blocked}");
    // The sender is not registered there, so its outbox is no surface of that delivery.
    let surfaces: Vec<&str> = blocked["error"]["conflicts"]
        .as_array()
        .expect("conflicts")
        .iter()
        .filter_map(|c| c["surface"].as_str())
        .collect();
    assert_eq!(surfaces, [format!("messages/{}/*.md", month())]);
}
