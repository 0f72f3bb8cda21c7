//! `GET /metrics` (docs/compat/http.md §4): counters that move by what was done, with the
//! right labels; the gauges read at scrape time; the upkeep counter's API; the same access
//! rules as every other read. (tests/clients/prometheus_metrics.py reads the text with the
//! Prometheus client's own parser.)

use std::collections::BTreeMap;

use mailroom_server::http::metrics::UpkeepOutcome;
use mailroom_testkit::{InboxCall, SendCall, TestApp};
use serde_json::json;

use crate::security::{Remote, start};

/// One scrape's samples: name, labels, value.
struct Scrape(Vec<(String, BTreeMap<String, String>, f64)>);

impl Scrape {
    /// Scrapes `app` as a local client.
    async fn of(app: &TestApp) -> Self {
        let response =
            app.client.get(format!("{}/metrics", app.base_url)).send().await.expect("scrape");
        assert_eq!(response.status(), 200);
        let content_type = response.headers()["content-type"].to_str().expect("content type");
        assert_eq!(content_type, "text/plain; version=0.0.4");
        Self::parse(&response.text().await.expect("text"))
    }

    /// The samples of the text format; comments and blank lines skipped.
    fn parse(text: &str) -> Self {
        let samples = text
            .lines()
            .filter(|line| !line.is_empty() && !line.starts_with('#'))
            .map(|line| sample(line).unwrap_or_else(|| panic!("not a sample: {line}")))
            .collect();
        Self(samples)
    }

    /// The value of the sample with exactly these labels; 0 when there is none (a series is
    /// made on first use).
    fn value(&self, name: &str, labels: &[(&str, &str)]) -> f64 {
        let labels: BTreeMap<String, String> =
            labels.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect();
        let found = self.0.iter().find(|(n, l, _)| n == name && *l == labels);
        found.map_or(0.0, |(_, _, value)| *value)
    }

    fn has(&self, name: &str) -> bool {
        self.0.iter().any(|(n, _, _)| n == name)
    }
}

/// `name{label="value",…} number`, label values with the format's escapes.
fn sample(line: &str) -> Option<(String, BTreeMap<String, String>, f64)> {
    let end = line.find(['{', ' '])?;
    let (name, mut rest) = line.split_at(end);
    let mut labels = BTreeMap::new();
    if let Some(inner) = rest.strip_prefix('{') {
        rest = inner;
        while !rest.starts_with('}') {
            let (key, after) = rest.split_once("=\"")?;
            let mut value = String::new();
            let mut chars = after.char_indices();
            let close = loop {
                match chars.next()? {
                    (i, '"') => break i,
                    (_, '\\') => value.push(match chars.next()?.1 {
                        'n' => '\n',
                        other => other,
                    }),
                    (_, c) => value.push(c),
                }
            };
            labels.insert(key.to_string(), value);
            rest = after[close + 1..].trim_start_matches(',');
        }
        rest = &rest[1..];
    }
    Some((name.to_string(), labels, rest.trim().parse().ok()?))
}

#[tokio::test]
async fn counters_move_by_what_was_done() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/metrics", "BlueLake", "GreenCastle").await;
    let before = Scrape::of(&app).await;
    for subject in ["one", "two"] {
        SendCall::new(&slug, "BlueLake", "GreenCastle", subject).ok(&app).await;
    }
    InboxCall::new(&slug, "GreenCastle").ok(&app).await;
    let missing = InboxCall::new(&slug, "RedStone").call(&app).await;
    assert!(missing.is_err(), "{missing:?}");
    let inbox = json!({"project_slug": slug, "agent_name": "GreenCastle"});
    assert_eq!(app.post("/api/inbox", inbox).await.0, 200);
    assert_eq!(app.post("/api/inbox", json!({"no": "such field"})).await.0, 400);
    assert_eq!(app.get("/no/such/route").await.0, 404);
    // A route of each of the other tables: a probe, a page, an OAuth stub.
    assert_eq!(app.get("/health").await.0, 200);
    assert_eq!(app.get(&format!("/mail/{slug}")).await.0, 200);
    assert_eq!(app.get("/.well-known/oauth-authorization-server").await.0, 404);
    let after = Scrape::of(&app).await;
    let moved = |name: &str, labels: &[(&str, &str)]| {
        after.value(name, labels) - before.value(name, labels)
    };

    let send = [("tool", "send_message")];
    let fetch = [("tool", "fetch_inbox")];
    assert_eq!(moved("mailroom_tool_calls_total", &send), 2.0);
    assert_eq!(moved("mailroom_tool_calls_total", &fetch), 2.0);
    assert_eq!(moved("mailroom_tool_duration_seconds_count", &send), 2.0);
    assert!(moved("mailroom_tool_duration_seconds_sum", &send) > 0.0);
    let not_found = [("kind", "NOT_FOUND"), ("tool", "fetch_inbox")];
    assert_eq!(moved("mailroom_tool_errors_total", &not_found), 1.0);
    assert_eq!(moved("mailroom_tool_errors_total", &[("kind", "NOT_FOUND"), send[0]]), 0.0);

    let route = |route, status| [("route", route), ("status", status)];
    assert_eq!(moved("mailroom_http_requests_total", &route("/mcp", "2xx")), 4.0);
    assert_eq!(moved("mailroom_http_requests_total", &route("/api/inbox", "2xx")), 1.0);
    assert_eq!(moved("mailroom_http_requests_total", &route("/api/inbox", "4xx")), 1.0);
    assert_eq!(moved("mailroom_http_requests_total", &route("unmatched", "4xx")), 1.0);
    assert_eq!(moved("mailroom_http_requests_total", &route("/health", "2xx")), 1.0);
    assert_eq!(moved("mailroom_http_requests_total", &route("/mail/{project}", "2xx")), 1.0);
    let oauth = route("/.well-known/oauth-authorization-server", "4xx");
    assert_eq!(moved("mailroom_http_requests_total", &oauth), 1.0);
    // The first scrape; the second is counted once it is answered.
    assert_eq!(moved("mailroom_http_requests_total", &route("/metrics", "2xx")), 1.0);
    let mcp = [("route", "/mcp")];
    assert_eq!(moved("mailroom_http_request_duration_seconds_count", &mcp), 4.0);
    let inf = [("le", "+Inf"), ("route", "/mcp")];
    assert_eq!(
        after.value("mailroom_http_request_duration_seconds_bucket", &inf),
        after.value("mailroom_http_request_duration_seconds_count", &mcp)
    );

    // Each send is one write job at least; every job is in one observed batch.
    assert!(moved("mailroom_store_batch_size_sum", &[]) >= 2.0);
    assert!(moved("mailroom_store_batch_size_count", &[]) >= 1.0);
    assert!(after.value("mailroom_database_bytes", &[("file", "database")]) > 0.0);
    assert!(after.has("mailroom_database_bytes"));
    for zero in ["forbidden", "unauthorized"] {
        assert_eq!(after.value("mailroom_access_refusals_total", &[("reason", zero)]), 0.0);
        assert!(after.0.iter().any(|(_, l, _)| l.get("reason").map(String::as_str) == Some(zero)));
    }
}

#[tokio::test]
async fn gauges_are_read_when_scraped() {
    let app = TestApp::start().await;
    let slug = app.seed_pair("/work/gauges", "BlueLake", "GreenCastle").await;
    SendCall::new(&slug, "BlueLake", "GreenCastle", "archived").ok(&app).await;
    app.archive_flushed().await;
    let scrape = Scrape::of(&app).await;
    assert_eq!(scrape.value("mailroom_archive_queue_depth", &[]), 0.0);
    assert_eq!(scrape.value("mailroom_archive_lag_seconds", &[]), 0.0);
    assert_eq!(scrape.value("mailroom_mcp_sessions", &[]), 0.0, "stateless calls open none");
    let database_bytes = [("file", "database")];
    if app.core.config().postgres.is_some() {
        // The database's size as PostgreSQL counts it, between what it was just before a
        // scrape and just after (the server may write between them).
        let size = "SELECT pg_database_size(current_database())";
        let before = app.query_i64(size).await as f64;
        let reported = Scrape::of(&app).await.value("mailroom_database_bytes", &database_bytes);
        let after = app.query_i64(size).await as f64;
        assert!(reported > 0.0, "a PostgreSQL database has a size: {reported}");
        assert!(
            before.min(after) <= reported && reported <= before.max(after),
            "reported {reported}, pg_database_size {before} then {after}"
        );
    } else {
        let database =
            std::fs::metadata(app.data_path().join("mailroom.sqlite3")).expect("db").len();
        assert_eq!(scrape.value("mailroom_database_bytes", &database_bytes), database as f64);
    }

    let initialize = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize",
        "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                   "clientInfo": {"name": "it", "version": "0"}}});
    let response = app
        .client
        .post(format!("{}/mcp", app.base_url))
        .header("accept", "application/json, text/event-stream")
        .json(&initialize)
        .send()
        .await
        .expect("initialize");
    assert!(response.headers().contains_key("mcp-session-id"));
    let scrape = Scrape::of(&app).await;
    assert_eq!(scrape.value("mailroom_mcp_sessions", &[]), 1.0);
    // Alone on SQLite, or the one server on its PostgreSQL database: it leads (the lease is
    // taken within a second).
    let mut leads = scrape.value("mailroom_archive_leader", &[]);
    for _ in 0..50 {
        if leads == 1.0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
        leads = Scrape::of(&app).await.value("mailroom_archive_leader", &[]);
    }
    assert_eq!(leads, 1.0);
}

#[tokio::test]
async fn upkeep_runs_are_counted_by_task_and_outcome() {
    let app = TestApp::start().await;
    let metrics = &app.state.metrics;
    metrics.record_upkeep_run("reservation_sweep", UpkeepOutcome::Ok);
    metrics.record_upkeep_run("reservation_sweep", UpkeepOutcome::Ok);
    metrics.record_upkeep_run("reservation_sweep", UpkeepOutcome::Failed);
    let scrape = Scrape::of(&app).await;
    let runs = |outcome| [("outcome", outcome), ("task", "reservation_sweep")];
    assert_eq!(scrape.value("mailroom_upkeep_runs_total", &runs("ok")), 2.0);
    assert_eq!(scrape.value("mailroom_upkeep_runs_total", &runs("failed")), 1.0);
}

const TOKEN: &str = "metrics-token";

/// `/metrics` is a read like a page: it needs the token (or JWT) from a remote client, is
/// open to every role, and passes the Origin and Host checks; refusals are counted.
#[tokio::test]
async fn metrics_are_read_behind_the_request_check() {
    let app = start(&[("HTTP_BEARER_TOKEN", TOKEN)]).await;
    let anonymous = Remote { app: &app, client_ip: "203.0.113.5", token: None };
    assert_eq!(anonymous.get("/metrics").await, 401);
    let reader = Remote { token: Some(TOKEN), ..anonymous };
    assert_eq!(reader.get("/metrics").await, 200, "a reader may read it");
    let rebound = app
        .client
        .get(format!("{}/metrics", app.base_url))
        .header("host", "attacker.example")
        .send()
        .await
        .expect("get");
    assert_eq!(rebound.status(), 421, "a rebound name is refused");
    let foreign = app
        .client
        .get(format!("{}/metrics", app.base_url))
        .header("origin", "https://attacker.example")
        .header("authorization", format!("Bearer {TOKEN}"))
        .send()
        .await
        .expect("get");
    assert_eq!(foreign.status(), 403, "a page of another site is refused");
    let scrape = Scrape::of(&app).await;
    let unauthorized = [("reason", "unauthorized")];
    assert_eq!(scrape.value("mailroom_access_refusals_total", &unauthorized), 1.0);
    let refused = [("route", "/metrics"), ("status", "4xx")];
    assert_eq!(scrape.value("mailroom_http_requests_total", &refused), 3.0);
}

#[tokio::test]
async fn rate_limit_refusals_are_counted_by_bucket() {
    let app =
        start(&[("HTTP_RATE_LIMIT_ENABLED", "true"), ("HTTP_RATE_LIMIT_PER_MINUTE", "1")]).await;
    let remote = Remote { app: &app, client_ip: "192.0.2.20", token: None };
    assert_eq!(remote.get("/metrics").await, 200);
    assert_eq!(remote.get("/metrics").await, 429);
    let scrape = Scrape::of(&app).await;
    assert_eq!(scrape.value("mailroom_rate_limit_refusals_total", &[("bucket", "other")]), 1.0);
    assert_eq!(scrape.value("mailroom_rate_limit_refusals_total", &[("bucket", "tools")]), 0.0);
}

#[test]
fn samples_parse_with_escapes_and_braces() {
    let line = r#"x_total{route="/mail/{project}",text="a\"b\\c"} 3"#;
    let (name, labels, value) = sample(line).expect("sample");
    assert_eq!((name.as_str(), value), ("x_total", 3.0));
    assert_eq!(labels["route"], "/mail/{project}");
    assert_eq!(labels["text"], r#"a"b\c"#);
    assert_eq!(sample("y 0.5").map(|s| s.2), Some(0.5));
    assert!(sample("z{a=\"1\"} NaN").expect("nan").2.is_nan());
}
