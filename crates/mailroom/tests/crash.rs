//! Crash safety: a server killed with SIGKILL in the middle of a send storm loses no
//! acknowledged message — after a restart every one is in the database and in the archive —
//! and a mailbox cursor (fetch_inbox_events) kept across restarts and a SIGKILL resumes with
//! exactly the events after it.

mod common;

use std::sync::{Arc, Mutex};

use common::{signal, start};
use mailroom_testkit::{
    EventsCall, InboxCall, PolicyCall, ProjectCall, ReadCall, RegisterCall, SendCall, git,
    sent_message_id,
};
use serde_json::{Value, json};

/// Acknowledged sends to collect before the kill.
const ACKED_BEFORE_KILL: usize = 300;
const CLIENTS: usize = 8;

/// Sends until the request fails (the server died); returns the acknowledged ids.
async fn storm(client: reqwest::Client, url: String, acked: Arc<Mutex<Vec<i64>>>) {
    for i in 0.. {
        let body = json!({"project_slug": "work-crash", "sender_name": "BlueLake",
                          "recipient_names": ["GreenCastle"], "subject": format!("storm {i}"),
                          "body_md": format!("message {i} of the storm"), "thread_id": "STORM"});
        let Ok(response) = client.post(format!("{url}/api/message/send")).json(&body).send().await
        else {
            return;
        };
        if !response.status().is_success() {
            return;
        }
        let Ok(reply) = response.json::<Value>().await else { return };
        let id = sent_message_id(&reply);
        acked.lock().expect("ids").push(id);
    }
}

/// The project `work-crash` with BlueLake writing to GreenCastle, on the server at `url`.
async fn seed(url: &str) {
    ProjectCall::new("/work/crash").ok_at(url).await;
    for name in ["BlueLake", "GreenCastle"] {
        RegisterCall::new("work-crash", name).program("test").model("m").ok_at(url).await;
    }
    PolicyCall::new("work-crash", "GreenCastle", "open").ok_at(url).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_message_survives_sigkill_in_the_database_and_the_archive() {
    let dir = tempfile::tempdir().expect("temp dir");
    let client = reqwest::Client::new();
    let (mut server, url) = start(dir.path());
    seed(&url).await;

    let acked = Arc::new(Mutex::new(Vec::new()));
    let clients: Vec<_> = (0..CLIENTS)
        .map(|_| tokio::spawn(storm(client.clone(), url.clone(), Arc::clone(&acked))))
        .collect();
    while acked.lock().expect("ids").len() < ACKED_BEFORE_KILL {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    signal(&server, "-KILL");
    server.wait().expect("wait for the killed server");
    for client in clients {
        client.await.expect("storm task");
    }
    let acked: Vec<i64> = acked.lock().expect("ids").clone();
    assert!(acked.len() >= ACKED_BEFORE_KILL);
    // A kill inside a commit's ref update leaves Git's lock on the branch behind. Plant one,
    // young, so every run checks that the next owner clears it rather than waiting for it to
    // age while its commits (and the stop's) are refused.
    let root = dir.path().join("archive");
    let head = std::fs::read_to_string(root.join(".git/HEAD")).expect("HEAD");
    let branch = head.trim().strip_prefix("ref: ").expect("HEAD names a branch");
    std::fs::write(root.join(".git").join(format!("{branch}.lock")), "").expect("plant lock");

    let (mut restarted, url) = start(dir.path());
    let inbox = InboxCall::new("work-crash", "GreenCastle").limit(1000).ok_at(&url).await;
    let stored: Vec<i64> =
        inbox.as_array().expect("inbox").iter().filter_map(|m| m["id"].as_i64()).collect();
    for id in &acked {
        assert!(stored.contains(id), "acknowledged message {id} is in the database");
    }
    // A graceful stop commits everything queued, including the replayed backlog.
    signal(&restarted, "-TERM");
    assert!(restarted.wait().expect("wait").success());

    let files = git(&root, &["ls-tree", "-r", "--name-only", "HEAD"]);
    let canonical: Vec<&str> =
        files.lines().filter(|f| f.starts_with("projects/work-crash/messages/2")).collect();
    for id in &acked {
        let suffix = format!("__{id}.md");
        assert!(canonical.iter().any(|f| f.ends_with(&suffix)), "message {id} is in the archive");
    }
    // The thread's digest of the month (messages/threads/YYYY/MM/).
    let digest = files
        .lines()
        .find(|f| {
            f.starts_with("projects/work-crash/messages/threads/") && f.ends_with("/STORM.md")
        })
        .expect("the thread's digest");
    let digest = git(&root, &["show", &format!("HEAD:{digest}")]);
    for id in &acked {
        let entries = digest.matches(&format!("__{id}.md)")).count();
        assert_eq!(entries, 1, "message {id} appears once in the thread digest");
    }
    // `git` fails the test when fsck finds an error. Objects written by the killed process
    // for a commit it never made may remain as "dangling": unreferenced, not broken.
    let fsck = git(&root, &["fsck", "--strict"]);
    assert!(fsck.lines().all(|l| l.starts_with("dangling ")), "fsck: {fsck}");
}

/// GreenCastle's events after `cursor`, read in pages of `limit`: `(kind, message id)` each,
/// the event ids, and the cursor after the last.
async fn events_after(
    url: &str,
    cursor: &str,
    limit: i64,
) -> (Vec<(String, i64)>, Vec<i64>, String) {
    let (mut events, mut ids, mut cursor) = (Vec::new(), Vec::new(), cursor.to_string());
    loop {
        let page = EventsCall::new("work-crash", "GreenCastle").cursor(&cursor).limit(limit);
        let page = page.ok_at(url).await;
        let list = page["events"].as_array().expect("events").clone();
        cursor = page["next_cursor"].as_str().expect("next_cursor").to_string();
        if list.is_empty() {
            return (events, ids, cursor);
        }
        for event in list {
            let kind = event["kind"].as_str().expect("kind").to_string();
            events.push((kind, event["message_id"].as_i64().expect("message id")));
            ids.push(event["id"].as_i64().expect("event id"));
        }
    }
}

fn delivered(ids: &[i64]) -> Vec<(String, i64)> {
    ids.iter().map(|id| ("delivered".to_string(), *id)).collect()
}

async fn send(url: &str, subject: &str) -> i64 {
    sent_message_id(
        &SendCall::new("work-crash", "BlueLake", "GreenCastle", subject).ok_at(url).await,
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_mailbox_cursor_resumes_exactly_across_a_restart_and_sigkill() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (server, url) = start(dir.path());
    seed(&url).await;
    let mut first = Vec::new();
    for i in 0..5 {
        first.push(send(&url, &format!("before {i}")).await);
    }
    let (events, _, cursor) = events_after(&url, "", 2).await;
    assert_eq!(events, delivered(&first));

    // A graceful restart: the cursor reads on with exactly what came after it.
    signal(&server, "-TERM");
    let mut server = server;
    assert!(server.wait().expect("wait").success());
    let (server, url) = start(dir.path());
    let second = [send(&url, "after restart 0").await, send(&url, "after restart 1").await];
    ReadCall::new("work-crash", "GreenCastle", second[0]).ok_at(&url).await;
    let (events, _, cursor) = events_after(&url, &cursor, 2).await;
    let mut want = delivered(&second);
    want.push(("read".to_string(), second[0]));
    assert_eq!(events, want);

    // SIGKILL in the middle of a send storm, then more mail after the restart.
    let acked = Arc::new(Mutex::new(Vec::new()));
    let storms: Vec<_> = (0..2)
        .map(|_| tokio::spawn(storm(reqwest::Client::new(), url.clone(), Arc::clone(&acked))))
        .collect();
    while acked.lock().expect("ids").len() < 40 {
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    signal(&server, "-KILL");
    let mut server = server;
    server.wait().expect("wait for the killed server");
    for task in storms {
        task.await.expect("storm task");
    }
    let acked: Vec<i64> = acked.lock().expect("ids").clone();
    let (mut restarted, url) = start(dir.path());
    let last = send(&url, "after the kill").await;
    let (events, event_ids, _) = events_after(&url, &cursor, 7).await;
    // Every message the database holds since the cursor, each delivered once, in order: those
    // acknowledged before the kill, any committed whose answer the kill cut off, and the last.
    let inbox = InboxCall::new("work-crash", "GreenCastle").limit(1000).ok_at(&url).await;
    let mut stored: Vec<i64> = (inbox.as_array().expect("inbox").iter())
        .filter_map(|m| m["id"].as_i64())
        .filter(|id| *id > second[1])
        .collect();
    stored.sort_unstable();
    assert_eq!(events, delivered(&stored), "exactly the stored deliveries, once each");
    assert!(event_ids.windows(2).all(|w| w[0] < w[1]), "oldest first: {event_ids:?}");
    for id in &acked {
        assert!(stored.contains(id), "acknowledged message {id} has its event");
    }
    assert_eq!(stored.last(), Some(&last));
    signal(&restarted, "-TERM");
    assert!(restarted.wait().expect("wait").success());
}
