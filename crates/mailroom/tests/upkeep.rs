//! `mailroom upkeep`: through the running server when one holds the data directory (its
//! run_upkeep tool), else on the database itself; what it did as text or JSON.

mod common;

use std::path::Path;
use std::process::Output;

use common::{KillOnDrop, mailroom, start, stop};
use mailroom_testkit::{RegisterCall, ReserveCall, SendCall, seed_pair_at};
use serde_json::Value;

const PROJECT: &str = "/work/upkeep-cli";

fn upkeep(data: &Path, args: &[&str]) -> Output {
    mailroom().arg("upkeep").args(args).arg("--data-dir").arg(data).output().expect("run upkeep")
}

fn text(output: &Output) -> String {
    format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    )
}

fn back_date(data: &Path, sql: &str) {
    let db = rusqlite::Connection::open(data.join("mailroom.sqlite3")).expect("database");
    db.execute(sql, []).expect("back-date");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_the_server_and_without_one() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let (server, url) = start(&data);
    let server = KillOnDrop(Some(server));
    let slug = seed_pair_at(&url, PROJECT, "BlueLake", "GreenCastle").await;
    RegisterCall::new(&slug, "RedStone").ok_at(&url).await;
    ReserveCall::new(&slug, "RedStone", &["src/**"]).ok_at(&url).await;
    back_date(&data, "UPDATE file_reservations SET expires_ts = '2020-01-01 00:00:00.000000'");

    // The server holds the data directory: the command asks it.
    let swept = upkeep(&data, &["reservations"]);
    assert!(swept.status.success(), "{}", text(&swept));
    assert!(text(&swept).contains("reservations  1 released in 1 project(s)"), "{}", text(&swept));
    stop(server.take());

    // No server: the command opens the database itself. Every agent idle for years.
    back_date(&data, "UPDATE agents SET last_active_ts = '2020-01-01 00:00:00.000000'");
    let waiting = upkeep(&data, &["retire"]);
    assert!(text(&waiting).contains("retire        skipped: "), "{}", text(&waiting));
    let retired = upkeep(&data, &["retire", "--json", "--force"]);
    assert!(retired.status.success(), "{}", text(&retired));
    let reports: Value = serde_json::from_slice(&retired.stdout).expect("JSON");
    let mut names: Vec<_> = reports[0]["retired"]
        .as_array()
        .expect("retired")
        .iter()
        .map(|r| r["agent"].as_str().unwrap_or_default().to_string())
        .collect();
    names.sort();
    assert_eq!(names, ["BlueLake", "GreenCastle", "RedStone"]);
    let again = upkeep(&data, &["retire", "--force"]);
    assert!(again.status.success(), "{}", text(&again));
    assert!(text(&again).contains("retire        0 agent(s)"), "{}", text(&again));
    let all = text(&upkeep(&data, &[]));
    assert!(all.contains("reservations  0 released") && all.contains("fds           "), "{all}");
}

#[test]
fn a_data_directory_without_a_database_is_an_error() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("nothing here");
    let output = upkeep(&data, &[]);
    assert_eq!(output.status.code(), Some(1));
    assert!(text(&output).contains("holds no mailroom database"), "{}", text(&output));
    assert!(!data.exists(), "nothing created");
    let bad = upkeep(&data, &["vacuum"]);
    assert_eq!(bad.status.code(), Some(2), "clap refuses an unknown task: {}", text(&bad));
}

/// `ACK_ESCALATION_*` in `file_reservation` mode: an overdue acknowledgement becomes a
/// reservation on the recipient's inbox month, held by the named operations agent (made on
/// demand); a second scan refreshes it instead of piling up another, and the recipient's
/// acknowledgement ends the escalations.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn overdue_acknowledgements_escalate_to_one_reservation() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let (server, url) = start(&data);
    let server = KillOnDrop(Some(server));
    let slug = seed_pair_at(&url, PROJECT, "BlueLake", "GreenCastle").await;
    let sent = SendCall::new(&slug, "BlueLake", "GreenCastle", "sign here")
        .ack_required(true)
        .ok_at(&url)
        .await;
    let message_id = sent["deliveries"][0]["payload"]["id"].as_i64().expect("id");
    stop(server.take());
    back_date(&data, "UPDATE messages SET created_ts = '2026-03-05 10:00:00.000000'");

    let scan = || {
        mailroom()
            .args(["upkeep", "acks", "--json", "--data-dir"])
            .arg(&data)
            .env("ACK_ESCALATION_ENABLED", "true")
            .env("ACK_ESCALATION_MODE", "file_reservation")
            .env("ACK_ESCALATION_CLAIM_HOLDER_NAME", "ops-escalation")
            .env("ACK_ESCALATION_CLAIM_EXCLUSIVE", "true")
            .output()
            .expect("run upkeep")
    };
    let first = scan();
    assert!(first.status.success(), "{}", text(&first));
    let report: Value = serde_json::from_slice(&first.stdout).expect("JSON");
    let escalated = &report[0]["escalated"][0];
    assert_eq!(escalated["message_id"], message_id, "{report}");
    assert_eq!(escalated["holder"], "ops-escalation");
    assert_eq!(escalated["path_pattern"], "agents/GreenCastle/inbox/2026/03/*.md");
    assert_eq!(escalated["exclusive"], true);
    assert!(scan().status.success());

    let db = rusqlite::Connection::open(data.join("mailroom.sqlite3")).expect("database");
    let holder: (String, String) = db
        .query_row("SELECT program, model FROM agents WHERE name = 'ops-escalation'", [], |r| {
            Ok((r.get(0)?, r.get(1)?))
        })
        .expect("the holder was registered");
    assert_eq!(holder, ("ops".to_owned(), "system".to_owned()));
    let held: i64 = db
        .query_row(
            "SELECT COUNT(*) FROM file_reservations WHERE reason = 'ack-overdue' \
             AND released_ts IS NULL",
            [],
            |r| r.get(0),
        )
        .expect("count");
    assert_eq!(held, 1, "the second scan refreshed the reservation, not added one");

    // Off by default: the same scan without the settings only reports.
    let plain = upkeep(&data, &["acks", "--json"]);
    let report: Value = serde_json::from_slice(&plain.stdout).expect("JSON");
    assert_eq!(report[0]["overdue"].as_array().map(Vec::len), Some(1));
    assert_eq!(report[0]["escalated"], serde_json::json!([]));

    // Acknowledged: nothing is overdue, nothing escalates.
    let acked = mailroom()
        .args(["mail", "ack", &message_id.to_string(), "--project", PROJECT])
        .args(["--agent", "GreenCastle", "--data-dir"])
        .arg(&data)
        .output()
        .expect("mail ack");
    assert!(acked.status.success(), "{}", text(&acked));
    let after: Value = serde_json::from_slice(&scan().stdout).expect("JSON");
    assert_eq!(after[0]["overdue"], serde_json::json!([]), "{after}");
    assert_eq!(after[0]["escalated"], serde_json::json!([]));

    let bad = mailroom()
        .args(["upkeep", "acks", "--data-dir"])
        .arg(&data)
        .env("ACK_ESCALATION_MODE", "page-someone")
        .output()
        .expect("run upkeep");
    assert!(!bad.status.success());
    assert!(text(&bad).contains("ACK_ESCALATION_MODE must be log or file_reservation"));
}
