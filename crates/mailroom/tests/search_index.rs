//! The search index as a server keeps it, in `<data dir>/search-index`: searches through it
//! find what the database's own full-text search finds (a server with `SEARCH_INDEX_ENABLED=false`
//! on the same data), a message is found as soon as its send has answered, the index survives
//! SIGKILL (kept, not rebuilt) and a missing one is rebuilt while searches keep answering.

mod common;

use std::path::Path;
use std::time::{Duration, Instant};

use common::{signal, start, start_with, stop};
use mailroom_testkit::{
    PolicyCall, ProjectCall, RegisterCall, SearchCall, SendCall, sent_message_id,
};
use serde_json::Value;

const PROJECT: &str = "work-search";
const WORDS: [&str; 10] =
    ["deploy", "auth", "token", "cache", "merge", "review", "build", "gamma", "beta", "queue"];
const QUERIES: [&str; 9] = [
    "deploy",
    "\"build queue\"",
    "cache OR merge",
    "review NOT build",
    "gamma AND beta",
    "POL-358",
    "dep*",
    "subject:deploy",
    "deploy @",
];

async fn seed(url: &str) {
    ProjectCall::new("/work/search").ok_at(url).await;
    for name in ["BlueLake", "GreenCastle"] {
        RegisterCall::new(PROJECT, name).program("test").model("m").ok_at(url).await;
    }
    PolicyCall::new(PROJECT, "GreenCastle", "open").ok_at(url).await;
}

/// Sends message `n` (its words drawn from `n`); returns its id.
async fn send(url: &str, n: usize) -> i64 {
    let word = |k: usize| WORDS[(n * 7 + k * 3 + n / 5) % WORDS.len()];
    let subject = format!("{} {} {n}", word(0), word(1));
    let body = format!("{} {} {} POL-{}", word(2), word(3), word(4), 350 + n % 10);
    let sent =
        SendCall::new(PROJECT, "BlueLake", "GreenCastle", &subject).body(&body).ok_at(url).await;
    sent_message_id(&sent)
}

/// Each query's result ids, in order.
async fn search_all(url: &str) -> Vec<Vec<i64>> {
    let mut all = Vec::new();
    for query in QUERIES {
        let found = SearchCall::new(PROJECT, query).arg("limit", 25).ok_at(url).await;
        let ids = found["result"]
            .as_array()
            .map(|r| r.iter().map(|m| m["id"].as_i64().unwrap_or(0)).collect());
        all.push(ids.unwrap_or_default());
    }
    all
}

fn meta(dir: &Path) -> Value {
    let text = std::fs::read_to_string(dir.join("search-index/meta.json")).unwrap_or_default();
    serde_json::from_str(&text).unwrap_or(Value::Null)
}

/// The id through which the index holds every message.
fn indexed_through(dir: &Path) -> i64 {
    let payload = meta(dir)["payload"].as_str().unwrap_or("{}").to_string();
    serde_json::from_str::<Value>(&payload)
        .map(|p| p["messages"].as_i64().unwrap_or(0))
        .unwrap_or(0)
}

async fn wait_indexed(dir: &Path, through: i64) {
    let deadline = Instant::now() + Duration::from_secs(60);
    while indexed_through(dir) < through {
        assert!(Instant::now() < deadline, "the index never reached message {through}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_index_answers_as_the_database_survives_sigkill_and_is_rebuilt_when_missing() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path();
    let (server, url) = start(data);
    seed(&url).await;
    let mut last = 0;
    for n in 0..150 {
        last = send(&url, n).await;
    }
    // Right after the sends, most of them are still the tail.
    let early = search_all(&url).await;
    wait_indexed(data, last).await;
    let indexed = search_all(&url).await;
    assert_eq!(early, indexed, "the tail ranks as the index does");
    signal(&server, "-KILL");
    let mut server = server;
    server.wait().expect("the killed server");
    let kept = meta(data);

    let (plain, url) = start_with(data, &[("SEARCH_INDEX_ENABLED", "false")]);
    let database = search_all(&url).await;
    stop(plain);
    assert_eq!(indexed, database, "the index finds what the database finds");
    assert!(
        database[0].len() >= 20 && !database[1].is_empty() && !database[5].is_empty(),
        "{database:?}"
    );

    // Restarted after SIGKILL: the index is kept as it was (no rebuild), and answers alike.
    let (server, url) = start(data);
    tokio::time::sleep(Duration::from_millis(1500)).await;
    assert_eq!(meta(data), kept, "the index was not rebuilt");
    assert_eq!(search_all(&url).await, database);
    // A new message is found as soon as its send answered.
    let fresh = send(&url, 999).await;
    let found = SearchCall::new(PROJECT, "POL-359").arg("limit", 100).ok_at(&url).await;
    assert!(
        found["result"].as_array().is_some_and(|r| r.iter().any(|m| m["id"] == fresh)),
        "{found}"
    );
    stop(server);

    // Missing: rebuilt, and searches answer alike meanwhile and after.
    std::fs::remove_dir_all(data.join("search-index")).expect("remove the index");
    let (server, url) = start(data);
    let during = search_all(&url).await;
    wait_indexed(data, fresh).await;
    let after = search_all(&url).await;
    assert_eq!(during, after);
    assert_eq!(after[0].len(), database[0].len());
    stop(server);
}
