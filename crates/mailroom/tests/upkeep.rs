//! `mailroom upkeep`: through the running server when one holds the data directory (its
//! run_upkeep tool), else on the database itself; what it did as text or JSON.

mod common;

use std::path::Path;
use std::process::Output;

use common::{KillOnDrop, mailroom, start, stop};
use mailroom_testkit::{RegisterCall, ReserveCall, seed_pair_at};
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
