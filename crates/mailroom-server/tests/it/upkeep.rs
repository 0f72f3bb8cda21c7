//! The background upkeep, run now through run_upkeep: idle agents retire while a reader and a
//! sender stay; expired reservations are released in every project; overdue acknowledgements
//! are reported; a bad task is refused by name; and the server goes on serving everyone.

use mailroom_core::ops::agents::Registration;
use mailroom_testkit::{
    InboxCall, ReserveCall, SendCall, TestApp, TestOptions, WhoisCall, sql_time,
};
use serde_json::json;

const PROJECT: &str = "/work/upkeep";

/// `SQL` text for a moment `days` ago, in the database's own form.
fn days_ago(days: i64) -> String {
    sql_time(-days * 86_400)
}

#[tokio::test]
async fn idle_agents_retire_but_a_reader_and_a_sender_stay() {
    let app = TestApp::start().await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    // Registered before this server started: no call of RedStone's has been seen.
    let registration = Registration {
        project_key: slug.clone(),
        program: "codex-cli".into(),
        model: "gpt-5".into(),
        name: Some("RedStone".into()),
        ..Registration::default()
    };
    app.core.register_agent(registration.clone()).await.expect("register");
    let reader = Registration { name: Some("PurpleBear".into()), ..registration };
    app.core.register_agent(reader).await.expect("register");
    let sql = format!("UPDATE agents SET last_active_ts = {}", days_ago(3));
    assert_eq!(app.execute_sql(&sql).await, 4, "back-date every agent");
    // GreenCastle only reads its inbox (a tool); PurpleBear reads its inbox resource; BlueLake
    // sends; RedStone does nothing.
    InboxCall::new(&slug, "GreenCastle").ok(&app).await;
    app.read_resource(&format!("resource://inbox/PurpleBear?project={slug}"))
        .await
        .expect("the inbox resource");
    SendCall::new(&slug, "BlueLake", "GreenCastle", "still working").ok(&app).await;

    // Just started, the server has not watched a whole day of calls: retirement waits.
    let waiting = app.tool_ok("run_upkeep", json!({"task": "retire"})).await;
    assert!(
        waiting["reports"][0]["skipped"].as_str().is_some_and(|s| s.contains("force")),
        "{waiting}"
    );
    let answer = app.tool_ok("run_upkeep", json!({"task": "retire", "force": true})).await;
    let report = &answer["reports"][0];
    assert_eq!(report["task"], "retire", "{answer}");
    assert_eq!(report["threshold_seconds"], 86_400);
    let retired: Vec<_> =
        report["retired"].as_array().expect("retired").iter().map(|r| r["agent"].clone()).collect();
    assert_eq!(retired, [json!("RedStone")], "{answer}");
    assert_eq!(report["kept_busy"], 2, "the two readers: {answer}");
    let whois = WhoisCall::new(&slug, "RedStone").ok(&app).await;
    assert!(whois["retired_at"].is_string(), "{whois}");
    let reader = WhoisCall::new(&slug, "GreenCastle").ok(&app).await;
    assert!(reader.get("retired_at").is_none_or(serde_json::Value::is_null), "{reader}");
    app.assert_serves_everyone("after retiring").await;
}

#[tokio::test]
async fn expired_reservations_are_released_and_overdue_acks_reported() {
    let app = TestApp::start().await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    SendCall::new(&slug, "BlueLake", "GreenCastle", "sign here").ack_required(true).ok(&app).await;
    let sql = format!("UPDATE messages SET created_ts = {}", days_ago(1));
    assert_eq!(app.execute_sql(&sql).await, 1, "age the message");
    // Expired after the send (a delivery sweeps its project too).
    ReserveCall::new(&slug, "BlueLake", &["src/**", "docs/**"]).ok(&app).await;
    let sql = format!(
        "UPDATE file_reservations SET expires_ts = {} WHERE path_pattern = 'src/**'",
        days_ago(1)
    );
    assert_eq!(app.execute_sql(&sql).await, 1, "expire one");

    // `all` means the tasks enabled here: this test server enables only the descriptor check.
    let all = app.tool_ok("run_upkeep", json!({})).await;
    assert_eq!(all["reports"].as_array().map(Vec::len), Some(1), "{all}");
    assert_eq!(all["reports"][0]["task"], "fds");
    assert!(all["reports"][0]["open"].as_u64().is_some_and(|open| open > 0), "{all}");
    let mut reports = Vec::new();
    for task in ["retire", "reservations", "acks"] {
        let answer = app.tool_ok("run_upkeep", json!({"task": task, "force": true})).await;
        reports.push(answer["reports"][0].clone());
    }
    let answer = json!(reports);
    assert_eq!(reports[1]["released"], 1, "{answer}");
    assert_eq!(reports[1]["projects"], 1);
    let overdue = &reports[2]["overdue"];
    assert_eq!(overdue.as_array().map(Vec::len), Some(1), "{answer}");
    assert_eq!(overdue[0]["recipient"], "GreenCastle");
    assert_eq!(overdue[0]["subject"], "sign here");
    // The other reservation is still in force; the sweep again finds nothing.
    let again = app.tool_ok("run_upkeep", json!({"task": "reservations"})).await;
    assert_eq!(again["reports"][0]["released"], 0);
    let open =
        app.query_i64("SELECT COUNT(*) FROM file_reservations WHERE released_ts IS NULL").await;
    assert_eq!(open, 1);
}

#[tokio::test]
async fn an_unknown_task_is_refused_by_name() {
    let app = TestApp::start().await;
    let error = app.call_tool("run_upkeep", json!({"task": "vacuum"})).await.expect_err("refused");
    assert!(error.contains("task") && error.contains("vacuum"), "{error}");
    app.assert_serves_everyone("after a bad task").await;
}

#[tokio::test]
async fn the_schedule_sweeps_without_being_asked() {
    let upkeep = mailroom_core::ops::upkeep::UpkeepConfig {
        reservations_interval_seconds: 1,
        retire_enabled: false,
        ..Default::default()
    };
    let app =
        TestApp::start_with(TestOptions { upkeep: Some(upkeep), ..TestOptions::default() }).await;
    let slug = app.seed_pair(PROJECT, "BlueLake", "GreenCastle").await;
    ReserveCall::new(&slug, "BlueLake", &["src/**"]).ok(&app).await;
    let sql = format!("UPDATE file_reservations SET expires_ts = {}", days_ago(1));
    assert_eq!(app.execute_sql(&sql).await, 1, "expire it");
    let released =
        || app.query_i64("SELECT COUNT(*) FROM file_reservations WHERE released_ts IS NOT NULL");
    // The sweep runs every second; give a loaded machine a minute.
    for _ in 0..600 {
        if released().await == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    assert_eq!(released().await, 1, "the scheduled sweep released the expired reservation");
}
