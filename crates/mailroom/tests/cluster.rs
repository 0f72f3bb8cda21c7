//! Three `mailroom serve` processes on one PostgreSQL database behind HAProxy, started by
//! `scripts/cluster` with the deployment example's `deploy/cluster/haproxy.cfg`
//! (docs/scale-out.md): they serve as one server (an MCP session opened on one is accepted by
//! the others, a subscription on one hears a send made through another, a web page cached on
//! one shows mail sent through another, a webhook is posted once per message however many
//! instances there are), and kill -9 of an ordinary instance and of the
//! archive's leader during a send storm loses no acknowledged message, in the database or in
//! the archive, which `mailroom archive verify` finds clean. Requests through the balancer
//! carry the cluster's bearer token, which they need: the balancer names their client, so no
//! instance takes them for local ones.

mod common;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use common::receiver::{Receiver, SECRET, received, unique_ids};
use mailroom_testkit::{
    RedisServer, RegisterWebhookCall, SearchCall, SendCall, postgres_server, sent_message_id,
};
use serde_json::{Value, json};

const PROJECT: &str = "/work/cluster";
const INSTANCES: usize = 3;

/// The cluster: its directory, the balancer's URL and each instance's URL.
struct Cluster {
    dir: PathBuf,
    database_url: String,
    balancer: String,
    /// A client that sends the cluster's bearer token with every request.
    authorised: reqwest::Client,
    instances: Vec<String>,
    _temp: tempfile::TempDir,
}

impl Cluster {
    /// Starts the cluster, each instance with `settings` too.
    async fn start(settings: &[(&str, &str)]) -> Self {
        assert!(
            Command::new("haproxy").arg("-v").output().is_ok_and(|o| o.status.success()),
            "haproxy is not installed (scripts/test-prerequisites installs it)"
        );
        let database_url = postgres_server::fresh_database_url().await;
        let temp = tempfile::tempdir().expect("temp dir");
        let dir = temp.path().join("cluster");
        let output = script()
            .args(["start"])
            .arg(&dir)
            .arg(INSTANCES.to_string())
            .env("DATABASE_URL", &database_url)
            .env("LOG_LEVEL", "info")
            .envs(settings.iter().copied())
            .output()
            .expect("scripts/cluster start");
        assert!(
            output.status.success(),
            "scripts/cluster start: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let read =
            |name: &str| std::fs::read_to_string(dir.join(name)).expect(name).trim().to_string();
        let balancer = read("url");
        let token = read("token");
        assert!(token.len() >= 32, "scripts/cluster made a token: {token:?}");
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("authorization", format!("Bearer {token}").parse().expect("header"));
        let authorised =
            reqwest::Client::builder().default_headers(headers).build().expect("client");
        let instances = (1..=INSTANCES)
            .map(|k| format!("http://127.0.0.1:{}", read(&format!("i{k}.port"))))
            .collect();
        Self { dir, database_url, balancer, authorised, instances, _temp: temp }
    }

    /// The instance (1-based) that leads now, by its `mailroom_archive_leader` gauge; waits up
    /// to 30 s for one to lead.
    async fn leader(&self) -> usize {
        for _ in 0..300 {
            for (index, url) in self.instances.iter().enumerate() {
                if leads(url).await {
                    return index + 1;
                }
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("no instance leads");
    }

    fn run(&self, args: &[&str]) {
        let status = script().args(&args[..1]).arg(&self.dir).args(&args[1..]).status();
        assert!(status.is_ok_and(|s| s.success()), "scripts/cluster {args:?}");
    }

    /// Stops every instance with SIGTERM (the leader commits the archive's queue first).
    fn stop(&self) {
        self.run(&["stop"]);
    }

    /// [`verify_clean`] on the cluster's database and archive.
    fn verify_clean(&self) -> String {
        verify_clean(&self.database_url, &self.dir.join("archive"), &self.dir.join("verify"))
    }

    fn log(&self, instance: usize) -> String {
        std::fs::read_to_string(self.dir.join(format!("i{instance}.log"))).unwrap_or_default()
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = script().arg("stop").arg(&self.dir).status();
    }
}

/// Whether the server at `url` leads, by its `mailroom_archive_leader` gauge (false when it
/// does not answer).
async fn leads(url: &str) -> bool {
    let Ok(response) = reqwest::get(format!("{url}/metrics")).await else { return false };
    let text = response.text().await.unwrap_or_default();
    text.lines().any(|l| l == "mailroom_archive_leader 1")
}

fn script() -> Command {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let mut command = Command::new(root.join("scripts/cluster"));
    command.env("MAILROOM_BIN", env!("CARGO_BIN_EXE_mailroom"));
    command
}

/// Opens an MCP session at `url`; its id.
async fn initialize(client: &reqwest::Client, url: &str) -> String {
    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": {"name": "cluster-test", "version": "0"}}});
    let response = client
        .post(format!("{url}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .json(&body)
        .send()
        .await
        .expect("initialize");
    assert_eq!(response.status(), 200);
    response.headers()["mcp-session-id"].to_str().expect("session id").to_string()
}

/// One request in `session` at `url`: its HTTP status and JSON answer.
async fn in_session(
    client: &reqwest::Client,
    url: &str,
    session: &str,
    method: &str,
    params: Value,
) -> (u16, Value) {
    let response = client
        .post(format!("{url}/mcp"))
        .header("accept", "application/json, text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-06-18")
        .json(&json!({"jsonrpc": "2.0", "id": 2, "method": method, "params": params}))
        .send()
        .await
        .expect("request");
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// Waits for the next `notifications/resources/updated` on an event stream; its URI.
async fn next_update(events: &mut reqwest::Response, buffer: &mut String) -> String {
    let note = mailroom_testkit::next_event_data(events, buffer).await;
    assert_eq!(note["method"], "notifications/resources/updated", "{note}");
    note["params"]["uri"].as_str().expect("uri").to_string()
}

async fn open_pair(url: &str) -> String {
    mailroom_testkit::seed_pair_at(url, PROJECT, "BlueLake", "GreenCastle").await
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn three_instances_behind_the_balancer_serve_as_one() {
    // Rate limits in one Redis, four calls a minute per tool and client.
    let redis = RedisServer::start();
    let cluster = Cluster::start(&[
        ("HTTP_RATE_LIMIT_ENABLED", "true"),
        ("HTTP_RATE_LIMIT_BACKEND", "redis"),
        ("HTTP_RATE_LIMIT_REDIS_URL", &redis.url),
        ("HTTP_RATE_LIMIT_TOOLS_PER_MINUTE", "4"),
        ("HTTP_RATE_LIMIT_PER_MINUTE", "10000"),
    ])
    .await;
    let client = cluster.authorised.clone();
    let [a, b, c] = [0, 1, 2].map(|i| cluster.instances[i].clone());
    let slug = open_pair(&a).await;

    // Through the balancer a request is remote: without the token it is refused, although
    // the balancer reaches the instances from this machine; the same request made to an
    // instance directly from this machine is local and needs none.
    let tools = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"});
    for (url, expected) in [(&cluster.balancer, 401), (&a, 200)] {
        let response = reqwest::Client::new().post(format!("{url}/mcp")).json(&tools).send().await;
        assert_eq!(response.expect("tools/list").status(), expected, "{url}");
    }

    // A session opened through the balancer works through it, and on every instance directly
    // (the others find it in the database); ended on one, it is gone on all.
    let session = initialize(&client, &cluster.balancer).await;
    for url in [&cluster.balancer, &a, &b] {
        let (status, answer) = in_session(&client, url, &session, "tools/list", json!({})).await;
        assert_eq!(status, 200, "{url}: {answer}");
        assert!(answer["result"]["tools"].as_array().is_some_and(|t| t.len() > 10), "{answer}");
    }
    let ended = client
        .delete(format!("{b}/mcp"))
        .header("mcp-session-id", &session)
        .send()
        .await
        .expect("DELETE");
    assert_eq!(ended.status(), 204);
    // Every instance, the one that opened it among them, drops it once it hears.
    for url in [&a, &b, &c] {
        let mut status = 0;
        for _ in 0..50 {
            status = in_session(&client, url, &session, "tools/list", json!({})).await.0;
            if status == 404 {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert_eq!(status, 404, "{url} still serves the ended session");
    }

    // A client's calls through the balancer reach all three instances and count once, in
    // Redis, under the address HAProxy names: one it claims itself changes nothing.
    let health = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "health_check", "arguments": {}}});
    let call = |claimed: Option<&str>| {
        let request = client.post(format!("{}/mcp", cluster.balancer)).json(&health);
        let request = match claimed {
            Some(address) => request.header("x-forwarded-for", address),
            None => request,
        };
        async move { request.send().await.expect("health_check").status() }
    };
    for n in 0..4 {
        assert_eq!(call(None).await, 200, "call {n}");
    }
    assert_eq!(call(Some("203.0.113.9")).await, 429, "one bucket across the instances");

    // A project webhook, registered through instance A; each message is posted to it once
    // (checked at the end): by the leader alone, not by every instance.
    let log = cluster.dir.join("webhook.jsonl");
    let receiver = Receiver::start(0, "ok", &log);
    RegisterWebhookCall::new(&slug, &receiver.url("/all")).secret(SECRET).ok_at(&a).await;

    // A subscription on instance A hears a send made through instance B.
    let watcher = initialize(&client, &a).await;
    let inbox = format!("resource://inbox/GreenCastle?project={slug}");
    let (status, answer) =
        in_session(&client, &a, &watcher, "resources/subscribe", json!({"uri": inbox})).await;
    assert_eq!((status, &answer["result"]), (200, &json!({})), "{answer}");
    let mut events = client
        .get(format!("{a}/mcp"))
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &watcher)
        .send()
        .await
        .expect("GET the event stream");
    assert_eq!(events.status(), 200);
    let mut buffer = String::new();
    SendCall::new(&slug, "BlueLake", "GreenCastle", "sent through B").ok_at(&b).await;
    assert_eq!(next_update(&mut events, &mut buffer).await, inbox);
    drop(events);

    // A web page cached on instance C shows mail sent through instance A at once.
    let page = format!("{c}/mail/{slug}/inbox/GreenCastle");
    let before = reqwest::get(&page).await.expect("page").text().await.expect("text");
    assert!(before.contains("sent through B"), "the page shows the earlier mail");
    SendCall::new(&slug, "BlueLake", "GreenCastle", "sent through A").ok_at(&a).await;
    let mut shown = false;
    for _ in 0..50 {
        let after = reqwest::get(&page).await.expect("page").text().await.expect("text");
        if after.contains("sent through A") {
            shown = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(shown, "instance C's page never showed mail sent through A");

    // Both messages reach the webhook (once each, checked once every instance stopped).
    for _ in 0..300 {
        if unique_ids(&log).len() >= 2 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }

    // Exactly one instance writes the archive.
    let leader = cluster.leader().await;
    let leading =
        (1..=INSTANCES).filter(|k| cluster.log(*k).contains("leading: writing the archive"));
    assert_eq!(leading.collect::<Vec<_>>(), [leader]);
    cluster.stop();
    let posts = received(&log);
    assert_eq!(unique_ids(&log).len(), 2, "{posts:?}");
    assert!(posts.iter().all(|p| p["duplicate"] == false), "posted more than once: {posts:?}");
    drop(receiver);
    cluster.verify_clean();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn killing_an_instance_and_the_leader_during_a_send_storm_loses_nothing() {
    let cluster = Cluster::start(&[]).await;
    let slug = open_pair(&cluster.instances[0]).await;
    let first_leader = cluster.leader().await;
    let ordinary = (1..=INSTANCES).find(|k| *k != first_leader).expect("another instance");

    // Senders through the balancer until told to stop; each keeps the ids of the sends that
    // were answered (acknowledged). Sends cut off by a kill may fail: they were never
    // acknowledged, so the client would retry them.
    let stop = Arc::new(AtomicBool::new(false));
    let senders: Vec<_> = (0..8)
        .map(|sender| {
            let (url, slug, stop) = (cluster.balancer.clone(), slug.clone(), Arc::clone(&stop));
            let client = cluster.authorised.clone();
            tokio::spawn(async move {
                let (mut acknowledged, mut failed) = (Vec::new(), 0usize);
                let mut n = 0;
                while !stop.load(Ordering::SeqCst) {
                    n += 1;
                    let subject = format!("storm {sender}-{n}");
                    let call = SendCall::new(&slug, "BlueLake", "GreenCastle", &subject);
                    let params = json!({"name": "send_message", "arguments": call.arguments()});
                    let body = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params});
                    let answer = match client.post(format!("{url}/mcp")).json(&body).send().await {
                        Ok(response) => response.json::<Value>().await.ok(),
                        Err(_) => None,
                    };
                    match answer.map(|a| mailroom_testkit::tool_result(&a["result"])) {
                        Some(Ok(sent)) => acknowledged.push(sent_message_id(&sent)),
                        _ => failed += 1,
                    }
                }
                (acknowledged, failed)
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(2)).await;
    cluster.run(&["kill", &ordinary.to_string()]);
    tokio::time::sleep(Duration::from_secs(2)).await;
    cluster.run(&["kill", &first_leader.to_string()]);
    // The last instance takes over: it leads and archives what the dead leader left.
    tokio::time::sleep(Duration::from_secs(4)).await;
    stop.store(true, Ordering::SeqCst);
    let mut acknowledged = BTreeSet::new();
    let mut failed = 0;
    for sender in senders {
        let (ids, failures) = sender.await.expect("sender");
        acknowledged.extend(ids);
        failed += failures;
    }
    assert!(acknowledged.len() > 50, "the storm sent {} messages", acknowledged.len());
    let survivor = (1..=INSTANCES).find(|k| ![ordinary, first_leader].contains(k)).expect("one");
    assert_eq!(cluster.leader().await, survivor, "the surviving instance leads");
    assert!(cluster.log(survivor).contains("leading: writing the archive"));

    // Every acknowledged message is in the database.
    let stored: BTreeSet<i64> =
        postgres_server::query_i64s(&cluster.database_url, "SELECT id FROM messages")
            .await
            .into_iter()
            .collect();
    let missing: Vec<_> = acknowledged.difference(&stored).collect();
    assert!(
        missing.is_empty(),
        "{} acknowledged but not stored ({failed} failed sends, {} stored): {:?}",
        missing.len(),
        stored.len(),
        missing.iter().take(20).collect::<Vec<_>>()
    );

    // The survivor commits the whole queue when it stops; then every message is in the
    // archive (nothing left queued) and the archive matches the database.
    cluster.stop();
    let report = cluster.verify_clean();
    let checked: usize = report
        .split("checked ")
        .nth(1)
        .and_then(|rest| rest.split(' ').next())
        .and_then(|n| n.parse().ok())
        .unwrap_or_else(|| panic!("no message count in {report}"));
    assert!(checked >= acknowledged.len(), "{checked} messages checked: {report}");
}

/// Each instance keeps a search index of its own, fed from the shared database; all of them
/// find the same messages in the same order, at once (each index's tail) and once each has
/// taken them in.
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn every_instance_searches_its_own_index_alike() {
    let cluster = Cluster::start(&[]).await;
    let slug = open_pair(&cluster.instances[0]).await;
    let words = ["deploy", "review", "cache", "token", "merge"];
    for n in 0..60 {
        let subject = format!("{} {} {n}", words[n % 5], words[(n / 5) % 5]);
        let body = format!("{} and {}", words[(n * 3) % 5], words[(n + 2) % 5]);
        let url = &cluster.instances[n % INSTANCES];
        SendCall::new(&slug, "BlueLake", "GreenCastle", &subject).body(&body).ok_at(url).await;
    }
    let queries = ["deploy", "review OR cache", "\"deploy and\"", "token NOT merge"];
    let searched = |url: String| {
        let slug = slug.clone();
        async move {
            let mut all = Vec::new();
            for query in queries {
                let found = SearchCall::new(&slug, query).ok_at(&url).await;
                let ids: Vec<Value> = found["result"].as_array().cloned().unwrap_or_default();
                all.push(ids.iter().map(|m| m["id"].clone()).collect::<Vec<_>>());
            }
            all
        }
    };
    let first = searched(cluster.instances[0].clone()).await;
    assert!(first.iter().all(|ids| !ids.is_empty()), "{first:?}");
    for url in &cluster.instances[1..] {
        assert_eq!(searched(url.clone()).await, first, "{url}, at once");
    }
    let last =
        postgres_server::query_i64s(&cluster.database_url, "SELECT max(id) FROM messages").await;
    for (k, url) in cluster.instances.iter().enumerate() {
        let meta = cluster.dir.join(format!("i{}/search-index/meta.json", k + 1));
        let indexed = || -> i64 {
            let meta: Value = std::fs::read_to_string(&meta)
                .ok()
                .and_then(|text| serde_json::from_str(&text).ok())
                .unwrap_or(Value::Null);
            let payload: Value = serde_json::from_str(meta["payload"].as_str().unwrap_or("{}"))
                .unwrap_or(Value::Null);
            payload["messages"].as_i64().unwrap_or(0)
        };
        for _ in 0..100 {
            if indexed() >= last[0] {
                break;
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        assert!(indexed() >= last[0], "instance {} never indexed message {}", k + 1, last[0]);
        assert_eq!(searched(url.clone()).await, first, "{url}, indexed");
    }
    cluster.stop();
}

/// A leader that cannot write the archive (where its `STORAGE_ROOT` should have the archive's
/// lock file there is a directory: a volume that is not what it should be) steps aside after
/// a few failed terms, and a server that can write it takes the lead and commits what was
/// sent through either.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_leader_that_cannot_write_the_archive_steps_aside() {
    let database_url = postgres_server::fresh_database_url().await;
    let temp = tempfile::tempdir().expect("temp dir");
    let broken = temp.path().join("broken");
    std::fs::create_dir_all(broken.join("archive.lock")).expect("mkdir");
    let archive = temp.path().join("archive");
    let start = |name: &str, root: &Path| {
        let data = temp.path().join(name);
        std::fs::create_dir_all(&data).expect("mkdir");
        let root = root.to_str().expect("utf-8 path");
        let env = [("DATABASE_URL", database_url.as_str()), ("STORAGE_ROOT", root)];
        let (server, url) = common::start_with(&data, &env);
        (common::KillOnDrop(Some(server)), url)
    };
    // Alone, the first server leads from its start, and fails to write.
    let (first_server, first) = start("first", &broken);
    assert!(leads(&first).await, "the first server leads");
    let (second_server, second) = start("second", &archive);
    let mut moved = false;
    for _ in 0..600 {
        if leads(&second).await {
            moved = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(moved, "the lead never moved to the server that can write the archive");
    assert!(!leads(&first).await, "the first server stepped aside");

    // Mail sent through each is committed by the new leader.
    let slug = open_pair(&second).await;
    SendCall::new(&slug, "BlueLake", "GreenCastle", "through the first").ok_at(&first).await;
    SendCall::new(&slug, "BlueLake", "GreenCastle", "through the second").ok_at(&second).await;
    drop(first_server);
    common::stop(second_server.take());
    let scratch = temp.path().join("scratch");
    let report = verify_clean(&database_url, &archive, &scratch);
    assert!(report.contains("checked 2 "), "{report}");

    // A command run for one call on the shared database never leads: with no server
    // running, what it sends waits in the queue for the servers' leader.
    let as_blue = ["--project", slug.as_str(), "--agent", "BlueLake"];
    let send = ["mail", "send", "--to", "GreenCastle", "--subject", "from a shell", "--body", "b"];
    let output = mailroom_on(&database_url, &archive, &scratch, &[&send[..], &as_blue].concat());
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let output = mailroom_on(&database_url, &archive, &scratch, &["archive", "verify"]);
    let report = String::from_utf8_lossy(&output.stdout);
    assert!(report.contains("still queued"), "the command wrote the archive: {report}");
    let (server, _) = start("third", &archive);
    common::stop(server.take());
    let report = verify_clean(&database_url, &archive, &scratch);
    assert!(report.contains("checked 3 "), "{report}");
}

/// `mailroom ARGS --data-dir SCRATCH` on a database and an archive.
fn mailroom_on(database_url: &str, archive: &Path, scratch: &Path, args: &[&str]) -> Output {
    std::fs::create_dir_all(scratch).expect("mkdir");
    common::mailroom()
        .args(args)
        .arg("--data-dir")
        .arg(scratch)
        .env("DATABASE_URL", database_url)
        .env("STORAGE_ROOT", archive)
        .env_remove("AGENT_NAME")
        .output()
        .expect("mailroom runs")
}

/// `mailroom archive verify` on a database and an archive (with a scratch data directory):
/// no difference and nothing left queued. Its report.
fn verify_clean(database_url: &str, archive: &Path, scratch: &Path) -> String {
    let output = mailroom_on(database_url, archive, scratch, &["archive", "verify"]);
    let report = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(
        output.status.success() && report.contains("no differences"),
        "archive verify: {report}\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(!report.contains("still queued"), "archive work left queued: {report}");
    report
}
