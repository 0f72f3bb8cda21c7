//! `mailroom archive verify|rebuild` on data written by a real server: damage found and
//! named, repaired by a rebuild, and a lost database reconstructed from the archive.

mod common;

use std::path::Path;
use std::process::Output;

use common::{mailroom, start, stop};
use mailroom_testkit::{InboxCall, SearchCall, SendCall, git, seed_pair_at};
use serde_json::Value;

const SLUG: &str = "work-cli";

fn archive(data_dir: &Path, args: &[&str]) -> Output {
    mailroom()
        .arg("archive")
        .args(args)
        .arg("--data-dir")
        .arg(data_dir)
        .env("LOG_LEVEL", "warn")
        .output()
        .expect("run mailroom archive")
}

/// Asserts the exit code and returns stdout followed by stderr.
fn expect_exit(output: &Output, code: i32) -> String {
    let text = format!(
        "{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
    assert_eq!(output.status.code(), Some(code), "{text}");
    text
}

/// (id, subject, body) of an agent's inbox, newest first.
async fn inbox(url: &str, agent: &str) -> Vec<(i64, String, String)> {
    let messages = InboxCall::new(SLUG, agent).include_bodies(true).ok_at(url).await;
    let text = |m: &Value, key: &str| m[key].as_str().unwrap_or_default().to_owned();
    let messages = messages.as_array().expect("inbox").iter();
    messages
        .map(|m| (m["id"].as_i64().expect("id"), text(m, "subject"), text(m, "body_md")))
        .collect()
}

/// A project, two agents and two messages of one thread, written by a real server.
async fn seed(url: &str) {
    seed_pair_at(url, "/work/cli", "BlueLake", "GreenCastle").await;
    for (subject, body) in [("Schema plan", "Migrate the ledger table."), ("Rollout", "Friday.")] {
        SendCall::new(SLUG, "BlueLake", "GreenCastle", subject)
            .body(body)
            .thread("PLAN-1")
            .ok_at(url)
            .await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn verify_finds_damage_rebuild_repairs_it_and_reconstruct_restores_a_lost_database() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path();
    let root = data.join("archive");
    let (server, url) = start(data);
    seed(&url).await;
    let sent = inbox(&url, "GreenCastle").await;
    assert_eq!(sent.len(), 2);
    stop(server);

    let clean = expect_exit(&archive(data, &["verify"]), 0);
    assert!(clean.contains("no differences: checked 2 messages and 2 agents"), "{clean}");

    let files = git(&root, &["ls-tree", "-r", "--name-only", "HEAD"]);
    let inbox_copy = files
        .lines()
        .find(|f| f.contains("/agents/GreenCastle/inbox/") && f.ends_with("__1.md"))
        .expect("inbox copy of message 1")
        .to_owned();
    git(&root, &["rm", "-q", &inbox_copy]);
    git(&root, &["commit", "-qm", "lose an inbox copy"]);
    let damaged = expect_exit(&archive(data, &["verify"]), 1);
    assert!(damaged.contains(&format!("missing: {inbox_copy} (inbox copy of message 1)")));
    assert!(damaged.contains("1 difference: "), "{damaged}");

    let rebuilt = expect_exit(&archive(data, &["rebuild"]), 0);
    assert!(rebuilt.contains("wrote 1 files"), "{rebuilt}");
    let log = git(&root, &["log", "-1", "--format=%s"]);
    assert_eq!(log.trim(), "chore: rebuild archive from database");
    expect_exit(&archive(data, &["verify"]), 0);

    // Verify reads beside a running server; rebuild refuses to write under it.
    let (server, _) = start(data);
    expect_exit(&archive(data, &["verify"]), 0);
    let refused = expect_exit(&archive(data, &["rebuild"]), 1);
    assert!(refused.contains("Another mailroom server is already running"), "{refused}");
    stop(server);

    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(data.join(format!("mailroom.sqlite3{suffix}")));
    }
    expect_exit(&archive(data, &["verify"]), 2);
    let restored = expect_exit(&archive(data, &["rebuild", "--reconstruct-database"]), 0);
    assert!(restored.contains("2 agents (2 from profiles"), "{restored}");
    assert!(restored.contains("2 messages (0 read from a mailbox copy), 2 recipient rows"));
    let exists = expect_exit(&archive(data, &["rebuild", "--reconstruct-database"]), 1);
    assert!(exists.contains("--force"), "{exists}");
    let forced = expect_exit(&archive(data, &["rebuild", "--reconstruct-database", "--force"]), 0);
    let moved = forced
        .lines()
        .find_map(|line| line.strip_prefix("moved the previous database to "))
        .unwrap_or_else(|| panic!("{forced}"));
    assert!(Path::new(moved).is_file() && moved.contains(".pre-reconstruct-"), "{moved}");
    expect_exit(&archive(data, &["verify"]), 0);

    let (server, url) = start(data);
    assert_eq!(inbox(&url, "GreenCastle").await, sent, "same ids, subjects and bodies");
    let hits = SearchCall::new(SLUG, "ledger").ok_at(&url).await;
    assert_eq!(hits["result"][0]["id"], 1, "{hits}");
    assert_eq!(hits["result"].as_array().map(Vec::len), Some(1));
    stop(server);
}
