//! Webhooks end to end, between real processes: the built `mailroom` and a receiver in
//! Python (`tests/webhooks/receiver.py`) that checks each request's Standard Webhooks
//! signature and records its webhook-id. Deliveries arrive signed and once each; with the
//! receiver down they queue up, visible in webhook_deliveries and /metrics, and all arrive
//! once it is back; a stop, a SIGKILL and a restart of mailroom lose none, and a request cut
//! short by the SIGKILL is made again with its webhook-id; a receiver that dies mid-delivery
//! and comes back gets everything; a receiver that hangs (with a backlog larger than the
//! worker's page) or fails holds up no other webhook; an outcome the store refuses to
//! record is not posted again at once. Outcomes are recorded after the receiver answered, so
//! tests wait for records and metrics (bounded by PATIENCE), never for time. And the
//! operator's `mailroom webhooks` commands, with a server running and with none.

mod common;

use std::collections::HashSet;
use std::path::Path;
use std::time::{Duration, Instant};

use common::receiver::{Receiver, SECRET, received, unique_ids};
use common::{KillOnDrop, json as cli_json, ok, run, signal, start_with, stop};
use mailroom_testkit::{
    DeliveriesCall, PolicyCall, ProjectCall, RegisterCall, RegisterWebhookCall, SendCall, rpc_at,
    sent_message_id, tool_at, tool_result,
};
use serde_json::{Value, json};

const PROJECT: &str = "work-hooks";
/// Retries a few tenths of a second apart, so a test waits for no real backoff.
const FAST_RETRIES: [(&str, &str); 3] = [
    ("WEBHOOK_RETRY_BASE_MS", "50"),
    ("WEBHOOK_RETRY_MAX_MS", "300"),
    ("WEBHOOK_MAX_ATTEMPTS", "1000"),
];
/// The longest a test waits for deliveries (they take well under a second when nothing is
/// wrong: the deadline only keeps a broken build from hanging the suite).
const PATIENCE: Duration = Duration::from_secs(60);

/// Waits until `done` holds, polling; fails the test with `what` after [`PATIENCE`].
async fn wait_for(what: &str, mut done: impl AsyncFnMut() -> bool) {
    let started = Instant::now();
    while !done().await {
        assert!(started.elapsed() < PATIENCE, "gave up waiting for {what}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// A port nothing listens on now.
fn free_port() -> u16 {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    listener.local_addr().expect("address").port()
}

/// The project with BlueLake writing to GreenCastle and RedStone.
async fn seed(url: &str) {
    ProjectCall::new("/work/hooks").ok_at(url).await;
    for name in ["BlueLake", "GreenCastle", "RedStone"] {
        RegisterCall::new(PROJECT, name).program("test").model("m").ok_at(url).await;
        PolicyCall::new(PROJECT, name, "open").ok_at(url).await;
    }
}

/// BlueLake's `count` messages to GreenCastle (cc RedStone when `cc`); their ids.
async fn send(url: &str, count: usize, cc: bool) -> Vec<i64> {
    let mut ids = Vec::new();
    for i in 0..count {
        let mut call = SendCall::new(PROJECT, "BlueLake", "GreenCastle", &format!("note {i}"));
        if cc {
            call = call.arg("cc", json!(["RedStone"]));
        }
        ids.push(sent_message_id(&call.ok_at(url).await));
    }
    ids
}

/// A `/metrics` sample's value (0 when absent).
async fn metric(url: &str, series: &str) -> f64 {
    let text = reqwest::get(format!("{url}/metrics")).await.expect("metrics").text().await;
    let text = text.expect("metrics text");
    let line = text.lines().find(|l| l.starts_with(series) && l[series.len()..].starts_with(' '));
    line.and_then(|l| l.rsplit(' ').next()).and_then(|v| v.parse().ok()).unwrap_or(0.0)
}

/// Waits until a metric reads `value` (it is counted after the outcome is recorded).
async fn wait_for_metric(url: &str, series: &str, value: f64) {
    wait_for(&format!("{series} = {value}"), async || metric(url, series).await == value).await;
}

/// Waits until `log` holds `count` validly signed deliveries; giving up, the test's failure
/// shows the project's deliveries (attempts, last errors) and what the receiver recorded, so a
/// failure under load says why.
async fn wait_for_deliveries(url: &str, log: &Path, count: usize) {
    let started = Instant::now();
    while unique_ids(log).len() < count {
        if started.elapsed() >= PATIENCE {
            let view = DeliveriesCall::new(PROJECT).status("all").ok_at(url).await;
            panic!(
                "gave up waiting for {count} deliveries; the receiver recorded {:#?}; the \
                 deliveries: {view:#}",
                received(log)
            );
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

/// Waits until the deliveries `call` views (with every status) count `[pending, failed,
/// delivered]`.
async fn wait_for_counts(url: &str, call: DeliveriesCall, expected: Value) {
    let call = call.status("all");
    wait_for(&format!("deliveries {expected}"), async || {
        let counts = &call.ok_at(url).await["counts"];
        json!([counts["pending"], counts["failed"], counts["delivered"]]) == expected
    })
    .await;
}

/// A tool call's error text (the test fails if it succeeds).
async fn tool_error(url: &str, name: &str, arguments: Value) -> String {
    let params = json!({"name": name, "arguments": arguments});
    let response = rpc_at(&reqwest::Client::new(), url, "tools/call", params).await;
    tool_result(&response["result"]).expect_err(name)
}

fn start(data: &Path, extra: &[(&str, &str)]) -> (KillOnDrop, String) {
    let env: Vec<(&str, &str)> = FAST_RETRIES.iter().chain(extra).copied().collect();
    let (server, url) = start_with(data, &env);
    (KillOnDrop(Some(server)), url)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn deliveries_arrive_signed_once_each_for_the_project_and_for_one_agent() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (server, url) = start(dir.path(), &[]);
    seed(&url).await;
    let log = dir.path().join("received.jsonl");
    let receiver = Receiver::start(0, "ok", &log);

    // A project webhook with a generated secret, shown once and never listed.
    let project_hook = RegisterWebhookCall::new(PROJECT, &receiver.url("/all")).ok_at(&url).await;
    assert!(project_hook["secret"].as_str().expect("secret").starts_with("whsec_"));
    assert_eq!(project_hook["agent"], Value::Null);
    // The receiver checks signatures with SECRET: the project webhook is registered again
    // with it (a second one for the same URL is refused until the first is removed).
    let again = tool_error(
        &url,
        "register_webhook",
        json!({"project_key": PROJECT, "url": receiver.url("/all"), "secret": SECRET}),
    )
    .await;
    assert!(again.contains("already posts"), "{again}");
    let removed = tool_at(
        &url,
        "remove_webhook",
        json!({"project_key": PROJECT, "webhook_id": project_hook["id"]}),
    )
    .await;
    assert_eq!(removed["removed"], true);
    RegisterWebhookCall::new(PROJECT, &receiver.url("/all")).secret(SECRET).ok_at(&url).await;
    // By name: `localhost` passes the client's resolver, which keeps loopback for it only.
    let by_name = receiver.url("/green").replace("127.0.0.1", "localhost");
    let agent_hook = RegisterWebhookCall::new(PROJECT, &by_name)
        .agent("GreenCastle")
        .secret(SECRET)
        .ok_at(&url)
        .await;
    assert_eq!(agent_hook["agent"], "GreenCastle");
    // Each scope lists its own: the project's, and GreenCastle's with its agent_name.
    let listed = tool_at(&url, "list_webhooks", json!({"project_key": PROJECT})).await;
    assert_eq!(listed["webhooks"].as_array().expect("webhooks").len(), 1);
    assert!(!listed.to_string().contains("whsec_"), "a secret was listed: {listed}");
    let green = json!({"project_key": PROJECT, "agent_name": "GreenCastle"});
    let listed = tool_at(&url, "list_webhooks", green).await;
    assert_eq!(listed["webhooks"][0]["id"], agent_hook["id"]);
    assert!(!listed.to_string().contains("whsec_"), "a secret was listed: {listed}");

    // URLs that are not https:// to a public host or loopback http:// are refused, naming
    // the field.
    let metadata = "https://169.254.169.254/latest/meta-data";
    for bad in ["http://example.com/hook", "ftp://127.0.0.1/", "not a url", metadata] {
        let error =
            tool_error(&url, "register_webhook", json!({"project_key": PROJECT, "url": bad})).await;
        assert!(error.contains("url must be an https:// URL"), "{bad}: {error}");
    }

    // Five messages to GreenCastle, cc RedStone: ten deliveries for the project's webhook,
    // five for GreenCastle's.
    let ids = send(&url, 5, true).await;
    wait_for("15 deliveries", async || unique_ids(&log).len() >= 15).await;
    let requests = received(&log);
    assert_eq!(requests.len(), 15, "each delivery arrives once: {requests:#?}");
    assert!(requests.iter().all(|r| r["duplicate"] == false));
    let mut seen: HashSet<(String, i64, String)> = HashSet::new();
    for request in &requests {
        let body = &request["body"];
        assert_eq!(body["type"], "message.delivered");
        assert_eq!(body["data"]["project"], PROJECT);
        assert_eq!(body["data"]["message"]["sender"], "BlueLake");
        let recipient = body["data"]["recipient"].as_str().expect("recipient").to_owned();
        let message = body["data"]["message"]["id"].as_i64().expect("message id");
        assert!(ids.contains(&message));
        let path = request["path"].as_str().expect("path").to_owned();
        if path == "/green" {
            assert_eq!(recipient, "GreenCastle");
        }
        assert!(seen.insert((path, message, recipient)), "twice: {request}");
    }
    // mailroom records each outcome after the receiver answered: wait for the records.
    wait_for_counts(&url, DeliveriesCall::new(PROJECT), json!([0, 0, 10])).await;
    wait_for_counts(&url, DeliveriesCall::new(PROJECT).agent("GreenCastle"), json!([0, 0, 5]))
        .await;
    wait_for_metric(&url, r#"mailroom_webhook_deliveries_total{outcome="delivered"}"#, 15.0).await;
    wait_for_metric(&url, "mailroom_webhook_queue_depth", 0.0).await;
    drop(receiver);
    stop(server.take());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_the_receiver_down_deliveries_queue_visibly_and_all_arrive_once_it_is_back() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (server, url) = start(dir.path(), &[]);
    seed(&url).await;
    let port = free_port();
    let hook_url = format!("http://127.0.0.1:{port}/in");
    RegisterWebhookCall::new(PROJECT, &hook_url).secret(SECRET).ok_at(&url).await;

    send(&url, 6, false).await;
    wait_for("failed attempts of every delivery", async || {
        let view = DeliveriesCall::new(PROJECT).status("pending").ok_at(&url).await;
        let deliveries = view["deliveries"].as_array().cloned().unwrap_or_default();
        deliveries.len() == 6
            && deliveries
                .iter()
                .all(|d| d["attempts"].as_i64() >= Some(2) && d["last_error"].is_string())
    })
    .await;
    assert_eq!(metric(&url, "mailroom_webhook_queue_depth").await, 6.0);
    // An attempt is counted after it is recorded: wait for the count.
    let retried = r#"mailroom_webhook_deliveries_total{outcome="retried"}"#;
    wait_for("12 retries counted", async || metric(&url, retried).await >= 12.0).await;
    let listed = tool_at(&url, "list_webhooks", json!({"project_key": PROJECT})).await;
    assert_eq!(listed["webhooks"][0]["pending"], 6);

    let log = dir.path().join("received.jsonl");
    let receiver = Receiver::start(port, "ok", &log);
    wait_for_deliveries(&url, &log, 6).await;
    wait_for("an empty queue", async || {
        DeliveriesCall::new(PROJECT).ok_at(&url).await["counts"]["pending"] == 0
    })
    .await;
    assert_eq!(unique_ids(&log).len(), 6);
    assert!(received(&log).iter().all(|r| r["duplicate"] == false));
    drop(receiver);
    stop(server.take());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn queued_deliveries_survive_a_stop_and_a_sigkill_of_mailroom() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (server, url) = start(dir.path(), &[]);
    seed(&url).await;
    let port = free_port();
    let hook_url = format!("http://127.0.0.1:{port}/in");
    RegisterWebhookCall::new(PROJECT, &hook_url).secret(SECRET).ok_at(&url).await;

    // Sent with the receiver down, then a graceful stop.
    send(&url, 5, false).await;
    stop(server.take());
    // Restarted on the same data: five more, then SIGKILL while everything is queued.
    let (server, url) = start(dir.path(), &[]);
    send(&url, 5, false).await;
    let mut killed = server.take();
    signal(&killed, "-KILL");
    killed.wait().expect("wait for the killed server");

    let log = dir.path().join("received.jsonl");
    let receiver = Receiver::start(port, "ok", &log);
    let (server, url) = start(dir.path(), &[]);
    wait_for_deliveries(&url, &log, 10).await;
    wait_for_counts(&url, DeliveriesCall::new(PROJECT), json!([0, 0, 10])).await;
    assert_eq!(received(&log).len(), 10, "none twice: nothing was in flight at the kill");
    drop(receiver);
    stop(server.take());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hanging_and_a_failing_receiver_hold_up_no_other_webhook() {
    let dir = tempfile::tempdir().expect("temp dir");
    // A minute's timeout: a delivery stuck behind the hanging receiver would wait that long.
    let settings = [
        ("WEBHOOK_TIMEOUT_MS", "120000"),
        ("WEBHOOK_CONCURRENCY", "4"),
        ("WEBHOOK_MAX_ATTEMPTS", "3"),
    ];
    let (server, url) = start(dir.path(), &settings);
    seed(&url).await;
    let hanging = Receiver::start(0, "hang", &dir.path().join("hang.jsonl"));
    let failing = Receiver::start(0, "fail", &dir.path().join("fail.jsonl"));
    let healthy = Receiver::start(0, "ok", &dir.path().join("ok.jsonl"));
    for receiver in [&hanging, &failing] {
        RegisterWebhookCall::new(PROJECT, &receiver.url("/in")).secret(SECRET).ok_at(&url).await;
    }
    let failing_hook =
        tool_at(&url, "list_webhooks", json!({"project_key": PROJECT})).await["webhooks"][1]["id"]
            .as_i64()
            .expect("id");
    // A backlog for the hanging receiver, many times the worker's page (WEBHOOK_CONCURRENCY
    // 4: eight), queued before the healthy webhook exists, so all of it is older.
    send(&url, 40, false).await;
    RegisterWebhookCall::new(PROJECT, &healthy.url("/in")).secret(SECRET).ok_at(&url).await;

    // Every send is answered while the hanging receiver holds its requests open.
    let ids = send(&url, 8, false).await;
    assert_eq!(ids.len(), 8);
    wait_for("the healthy receiver's 8", async || unique_ids(&healthy.log).len() >= 8).await;
    wait_for("the failing receiver's deliveries given up", async || {
        let view = DeliveriesCall::new(PROJECT).webhook(failing_hook).ok_at(&url).await;
        view["counts"]["failed"] == 48
    })
    .await;
    let view =
        DeliveriesCall::new(PROJECT).webhook(failing_hook).status("failed").ok_at(&url).await;
    for delivery in view["deliveries"].as_array().expect("deliveries") {
        assert_eq!(delivery["attempts"], 3);
        assert_eq!(delivery["last_error"], "HTTP 500");
    }
    wait_for_metric(&url, r#"mailroom_webhook_deliveries_total{outcome="failed"}"#, 48.0).await;
    // The hanging receiver got its first request and still holds it.
    wait_for("the hanging receiver's first request", async || !received(&hanging.log).is_empty())
        .await;
    // A send still goes through at once, and the healthy receiver gets it.
    send(&url, 1, false).await;
    wait_for("the healthy receiver's 9th", async || unique_ids(&healthy.log).len() >= 9).await;
    drop((hanging, failing.stop(), healthy));
    stop(server.take());
}

/// `mailroom webhooks ARGS --project PROJECT`.
fn webhooks<'a>(args: &[&'a str]) -> Vec<&'a str> {
    [&["webhooks"][..], args, &["--project", PROJECT]].concat()
}

/// A command that must fail with exit code 1; its stderr.
fn refused(data: &Path, args: &[&str]) -> String {
    let output = run(data, args, "");
    assert_eq!(output.status.code(), Some(1), "{args:?}");
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// The number of webhooks `webhooks list` shows.
/// The webhooks `list` shows: the project-wide ones, or with `agent` that agent's.
fn webhook_count(data: &Path, agent: Option<&str>) -> usize {
    let mut args = vec!["list"];
    args.extend(agent.map(|a| ["--agent", a]).into_iter().flatten());
    cli_json(data, &webhooks(&args))["webhooks"].as_array().map_or(0, Vec::len)
}

/// `mailroom webhooks add | list | remove | deliveries` against a running server, then on the
/// data directory itself: the secret shown once, a bad URL refused naming `--url`, a
/// delivery to a receiver that is down listed as pending with its last error.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operators_commands_with_and_without_a_server() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path();
    let (server, url) = start(data, &[]);
    seed(&url).await;
    let down = format!("http://127.0.0.1:{}/in", free_port());

    let added = cli_json(data, &webhooks(&["add", "--url", &down]));
    assert!(added["secret"].as_str().expect("secret").starts_with("whsec_"), "{added}");
    assert_eq!(added["agent"], Value::Null);
    let text = ok(data, &webhooks(&["add", "--url", &down, "--agent", "GreenCastle"]));
    assert!(
        text.starts_with("registered webhook ") && text.contains(" for GreenCastle: "),
        "{text}"
    );
    assert!(
        text.contains("\nsecret: whsec_") && text.contains("will not be shown again"),
        "{text}"
    );
    let green_hook = text.split_whitespace().nth(2).expect("id").to_owned();

    let error = refused(data, &webhooks(&["add", "--url", "http://example.com/hook"]));
    assert!(error.starts_with("mailroom: --url: url must be an https:// URL"), "{error}");
    let error = refused(data, &webhooks(&["add", "--url", &down, "--secret", "whsec_no*base64"]));
    assert!(error.starts_with("mailroom: --secret: ") && !error.contains("no*base64"), "{error}");
    assert_eq!(webhook_count(data, None), 1, "nothing registered by a refused add");
    assert_eq!(webhook_count(data, Some("GreenCastle")), 1);
    let listed = ok(data, &webhooks(&["list"]));
    assert!(listed.starts_with("id  agent") && listed.contains("(all)"), "{listed}");
    assert_eq!(listed.matches(&down).count(), 1, "the project-wide one only: {listed}");
    assert!(!listed.contains("whsec_"), "a secret was listed: {listed}");
    let green = ok(data, &webhooks(&["list", "--agent", "GreenCastle"]));
    assert!(green.contains("GreenCastle") && !green.contains("(all)"), "{green}");
    assert!(!cli_json(data, &webhooks(&["list"])).to_string().contains("whsec_"));

    // One message to GreenCastle: a delivery for each webhook, both failing to connect.
    send(&url, 1, false).await;
    let tried = |agent: Option<&'static str>| {
        let mut args = vec!["deliveries"];
        args.extend(agent.map(|a| ["--agent", a]).into_iter().flatten());
        let view = cli_json(data, &webhooks(&args));
        let deliveries = view["deliveries"].as_array().cloned().unwrap_or_default();
        deliveries.len() == 1
            && deliveries.iter().all(|d| {
                d["status"] == "pending"
                    && d["attempts"].as_i64() >= Some(1)
                    && d["last_error"].is_string()
            })
    };
    wait_for("each webhook's delivery tried and failed", async || {
        tried(None) && tried(Some("GreenCastle"))
    })
    .await;
    let table = ok(data, &webhooks(&["deliveries"]));
    assert!(table.starts_with("pending 1, failed 0, delivered 0\ndelivery"), "{table}");
    assert!(table.contains("last error") && table.contains("next attempt"), "{table}");
    assert_eq!(table.matches("msg_").count(), 1, "{table}");
    let one = cli_json(
        data,
        &webhooks(&["deliveries", "--agent", "GreenCastle", "--all", "--webhook", &green_hook]),
    );
    assert_eq!(one["deliveries"].as_array().map(Vec::len), Some(1), "{one}");
    assert_eq!(one["deliveries"][0]["recipient"], "GreenCastle");

    assert!(
        refused(data, &webhooks(&["remove", &green_hook])).contains("not found"),
        "an agent's webhook is not removed as a project-wide one"
    );
    assert_eq!(
        ok(data, &webhooks(&["remove", "--agent", "GreenCastle", &green_hook])),
        format!("removed webhook {green_hook}\n")
    );
    assert_eq!(webhook_count(data, Some("GreenCastle")), 0);
    assert_eq!(webhook_count(data, None), 1);
    stop(server.take());

    // No server: the command opens the data directory itself; the queued delivery waits,
    // its last error kept.
    let listed = cli_json(data, &webhooks(&["list"]));
    assert_eq!(listed["webhooks"][0]["pending"], 1, "{listed}");
    let view = cli_json(data, &webhooks(&["deliveries"]));
    assert!(view["deliveries"][0]["last_error"].is_string(), "{view}");
    let error = refused(data, &webhooks(&["add", "--url", "ftp://127.0.0.1/"]));
    assert!(error.starts_with("mailroom: --url: "), "{error}");
    let offline = cli_json(data, &webhooks(&["add", "--url", "https://hooks.example.com/in"]));
    assert_eq!(offline["url"], "https://hooks.example.com/in");
    assert_eq!(webhook_count(data, None), 2);
    let id = offline["id"].to_string();
    assert_eq!(ok(data, &webhooks(&["remove", &id])), format!("removed webhook {id}\n"));
    assert_eq!(webhook_count(data, None), 1);
}

/// With `MAILROOM_TOOL_AUTH` the webhook tools want a token of an agent of the project: the
/// commands send the one the data directory's database keeps, unless given one; a wrong one
/// is refused.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_operators_commands_prove_an_agent_of_the_project_when_the_server_asks() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path();
    let (server, url) = start(data, &[("MAILROOM_TOOL_AUTH", "true")]);
    ProjectCall::new("/work/hooks").ok_at(&url).await;
    RegisterCall::new(PROJECT, "BlueLake").program("test").model("m").ok_at(&url).await;
    let anonymous = tool_error(&url, "list_webhooks", json!({"project_key": PROJECT})).await;
    assert!(anonymous.contains("registration_token"), "the server asks: {anonymous}");

    let added = cli_json(data, &webhooks(&["add", "--url", "https://hooks.example.com/in"]));
    assert!(added["id"].is_i64(), "{added}");
    assert_eq!(webhook_count(data, None), 1);
    // An agent's webhook needs that agent's proof: its stored token is sent.
    let mine = ["add", "--url", "https://hooks.example.com/blue", "--agent", "BlueLake"];
    assert_eq!(cli_json(data, &webhooks(&mine))["agent"], "BlueLake");
    assert_eq!(webhook_count(data, Some("BlueLake")), 1);
    let wrong = refused(data, &webhooks(&["list", "--registration-token", "not-a-token"]));
    assert!(wrong.contains("not the token of any of its agents"), "{wrong}");
    stop(server.take());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_attempt_the_store_refuses_to_record_is_not_posted_again_at_once() {
    let dir = tempfile::tempdir().expect("temp dir");
    // The hold after a refused record is the retry base: ten minutes, longer than the test.
    let settings = [("WEBHOOK_RETRY_BASE_MS", "600000"), ("WEBHOOK_RETRY_MAX_MS", "600000")];
    let (server, url) = start(dir.path(), &settings);
    seed(&url).await;
    let refused = Receiver::start(0, "ok", &dir.path().join("refused.jsonl"));
    let healthy = Receiver::start(0, "ok", &dir.path().join("ok.jsonl"));
    let refused_hook =
        RegisterWebhookCall::new(PROJECT, &refused.url("/in")).secret(SECRET).ok_at(&url).await;
    // The store refuses to record any attempt of that webhook's deliveries (a real refusal,
    // as a full disk or a read-only database would give).
    let db = rusqlite::Connection::open(dir.path().join("mailroom.sqlite3")).expect("database");
    db.busy_timeout(Duration::from_secs(10)).expect("busy timeout");
    db.execute_batch(&format!(
        "CREATE TRIGGER refuse_records BEFORE UPDATE ON webhook_deliveries
         WHEN old.webhook_id = {} BEGIN SELECT RAISE(ABORT, 'refused'); END;",
        refused_hook["id"]
    ))
    .expect("trigger");

    send(&url, 1, false).await;
    wait_for("the first post", async || !received(&refused.log).is_empty()).await;
    // Meanwhile another webhook is registered, a message sent, and its delivery recorded:
    // the worker went round many times, and did not post the refused one again.
    let healthy_hook =
        RegisterWebhookCall::new(PROJECT, &healthy.url("/in")).secret(SECRET).ok_at(&url).await;
    let healthy_id = healthy_hook["id"].as_i64().expect("id");
    send(&url, 1, false).await;
    wait_for("the healthy delivery recorded", async || {
        let view = DeliveriesCall::new(PROJECT).webhook(healthy_id).status("all").ok_at(&url).await;
        view["counts"]["delivered"] == 1
    })
    .await;
    wait_for("both messages posted", async || unique_ids(&refused.log).len() >= 2).await;
    let posts = received(&refused.log);
    assert_eq!(posts.len(), 2, "posted again at once: {posts:#?}");
    drop((refused, healthy));
    stop(server.take());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_delivery_cut_short_by_a_sigkill_is_posted_again_with_its_webhook_id() {
    let dir = tempfile::tempdir().expect("temp dir");
    // The request the receiver holds must still be open when mailroom is killed.
    let settings = [("WEBHOOK_TIMEOUT_MS", "120000")];
    let (server, url) = start(dir.path(), &settings);
    seed(&url).await;
    let log = dir.path().join("received.jsonl");
    let receiver = Receiver::start(0, "hang-first", &log);
    RegisterWebhookCall::new(PROJECT, &receiver.url("/in")).secret(SECRET).ok_at(&url).await;
    send(&url, 3, false).await;
    wait_for("the first request, held open", async || !received(&log).is_empty()).await;
    let held = received(&log)[0]["webhook_id"].clone();
    let mut killed = server.take();
    signal(&killed, "-KILL");
    killed.wait().expect("wait for the killed server");

    // The attempt was never recorded: after the restart it is made again, same webhook-id.
    let (server, url) = start(dir.path(), &settings);
    wait_for("every delivery", async || unique_ids(&log).len() >= 3).await;
    wait_for("the held one again", async || {
        received(&log).iter().filter(|r| r["webhook_id"] == held).count() >= 2
    })
    .await;
    let again = received(&log).into_iter().filter(|r| r["webhook_id"] == held).nth(1);
    assert_eq!(again.expect("again")["duplicate"], true, "the receiver can tell");
    wait_for_counts(&url, DeliveriesCall::new(PROJECT), json!([0, 0, 3])).await;
    drop(receiver);
    stop(server.take());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_receiver_that_dies_mid_delivery_and_comes_back_gets_everything() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (server, url) = start(dir.path(), &[]);
    seed(&url).await;
    let log = dir.path().join("received.jsonl");
    // It dies, unanswered, on its third request.
    let receiver = Receiver::start_with(0, "ok", &log, &["--exit-after", "3"]);
    let port = receiver.port;
    RegisterWebhookCall::new(PROJECT, &receiver.url("/in")).secret(SECRET).ok_at(&url).await;
    send(&url, 10, false).await;
    wait_for("the receiver's death", async || received(&log).len() >= 3).await;
    receiver.stop();
    let died_on = received(&log)[2]["webhook_id"].clone();

    // Back on the same port: every delivery arrives, the unanswered one again.
    let receiver = Receiver::start(port, "ok", &log);
    wait_for("every delivery", async || unique_ids(&log).len() >= 10).await;
    wait_for_counts(&url, DeliveriesCall::new(PROJECT), json!([0, 0, 10])).await;
    let times = received(&log).iter().filter(|r| r["webhook_id"] == died_on).count();
    assert!(times >= 2, "the unanswered delivery was posted again");
    drop(receiver);
    stop(server.take());
}

/// A receiver that answers 410 Gone is not asked again: the delivery fails at its first
/// attempt. One that answers 503 with `Retry-After: 3600` is asked again no sooner than that
/// (the backoff alone would be 100 ms).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_gone_receiver_is_not_asked_again_and_a_busy_one_is_given_the_time_it_asks() {
    let dir = tempfile::tempdir().expect("temp dir");
    let settings = [("WEBHOOK_RETRY_BASE_MS", "100"), ("WEBHOOK_RETRY_MAX_MS", "86400000")];
    let (server, url) = start(dir.path(), &settings);
    seed(&url).await;
    let gone = Receiver::start(0, "gone", &dir.path().join("gone.jsonl"));
    let busy = Receiver::start(0, "busy", &dir.path().join("busy.jsonl"));
    let gone_hook =
        RegisterWebhookCall::new(PROJECT, &gone.url("/in")).secret(SECRET).ok_at(&url).await;
    let busy_hook =
        RegisterWebhookCall::new(PROJECT, &busy.url("/in")).secret(SECRET).ok_at(&url).await;
    let sent_at = mailroom_core::model::time::Timestamp::now().as_micros();
    send(&url, 1, false).await;
    let gone_view = DeliveriesCall::new(PROJECT).webhook(gone_hook["id"].as_i64().expect("id"));
    wait_for_counts(&url, gone_view.clone(), json!([0, 1, 0])).await;
    let failed = gone_view.status("all").ok_at(&url).await;
    assert_eq!(failed["deliveries"][0]["attempts"], 1, "{failed}");
    assert!(failed["deliveries"][0]["last_error"].as_str().unwrap_or("").contains("410"));

    let busy_view = DeliveriesCall::new(PROJECT).webhook(busy_hook["id"].as_i64().expect("id"));
    wait_for("the busy receiver's first answer recorded", async || {
        busy_view.clone().ok_at(&url).await["deliveries"][0]["attempts"] == 1
    })
    .await;
    let pending = busy_view.ok_at(&url).await;
    let next = pending["deliveries"][0]["next_attempt_ts"].as_str().expect("next attempt");
    let next = mailroom_core::model::time::Timestamp::parse_iso(next).expect("a time").as_micros();
    assert!(next - sent_at >= 3_000_000_000, "asked again before its Retry-After: {pending}");
    drop((gone, busy));
    stop(server.take());
}
