//! End-to-end runs of the load lab against a live in-process mailroom: each must complete
//! with zero errors and sane counts. Speed is not asserted.

use std::time::Duration;

use mailroom_bench::{
    DatasetScale, Implementation, MixedLoad, Report, RunConfig, Scenario, Target, Via,
};
use mailroom_testkit::{InboxCall, TestApp};

async fn bench(app: &TestApp, scenario: Scenario, via: Via, requests: u64) -> Report {
    let target = Target::parse(&app.base_url, Implementation::Mailroom).expect("target");
    let mut config = RunConfig::new(target, scenario);
    config.via = via;
    config.concurrency = 4;
    config.duration = Some(Duration::from_secs(60));
    config.requests = Some(requests);
    config.seed_messages = 5;
    mailroom_bench::run(&config).await.expect("run")
}

fn assert_clean(report: &Report, requests: u64) {
    let s = &report.summary;
    assert_eq!((s.requests, s.ok, s.errors), (requests, requests, 0), "{}", report.table());
    assert!(s.error_breakdown.is_empty());
    assert!(s.rps > 0.0 && s.p50_ms > 0.0 && s.p50_ms <= s.p99_ms && s.p99_ms <= s.max_ms);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn health_tools_list_and_ready_run_clean() {
    let app = TestApp::start().await;
    for scenario in [Scenario::Health, Scenario::Ready, Scenario::ToolsList] {
        let report = bench(&app, scenario, Via::Mcp, 40).await;
        assert_clean(&report, 40);
        assert_eq!(report.concurrency, 4);
        assert!(report.setup.is_none());
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sends_arrive_and_inboxes_read_clean() {
    let app = TestApp::start().await;
    let report = bench(&app, Scenario::Send, Via::Mcp, 30).await;
    assert_clean(&report, 30);
    let setup = report.setup.clone().expect("setup");
    let (project, receiver) = (
        setup["project"].as_str().expect("test value"),
        setup["receiver"].as_str().expect("test value"),
    );
    // Every acknowledged send is in the receiver's inbox.
    let inbox = InboxCall::new(project, receiver).limit(100).ok(&app).await;
    assert_eq!(inbox.as_array().map(Vec::len), Some(30));

    let rest = bench(&app, Scenario::Send, Via::Rest, 10).await;
    assert_clean(&rest, 10);

    let inbox = bench(&app, Scenario::Inbox, Via::Mcp, 30).await;
    assert_clean(&inbox, 30);
    assert_eq!(inbox.setup.expect("setup")["seeded_messages"], 5);

    let search = bench(&app, Scenario::Search, Via::Mcp, 20).await;
    assert_clean(&search, 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sequential_uses_one_client_and_fixed_rate_paces() {
    let app = TestApp::start().await;
    let target = Target::parse(&app.base_url, Implementation::Mailroom).expect("target");
    let mut config = RunConfig::new(target.clone(), Scenario::Sequential);
    config.concurrency = 8;
    config.duration = None;
    config.requests = Some(15);
    let report = mailroom_bench::run(&config).await.expect("run");
    assert_clean(&report, 15);
    assert_eq!(report.concurrency, 1);

    // 200 req/s for 0.25 s from 5 connections: the schedule has exactly 50 slots.
    let mut config = RunConfig::new(target, Scenario::Health);
    config.concurrency = 5;
    config.rate = Some(200.0);
    config.duration = Some(Duration::from_millis(250));
    let report = mailroom_bench::run(&config).await.expect("run");
    assert_clean(&report, 50);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reserve_runs_clean() {
    let app = TestApp::start().await;
    let report = bench(&app, Scenario::Reserve, Via::Mcp, 20).await;
    assert_clean(&report, 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mixed_runs_writers_readers_and_celebrities_together() {
    let app = TestApp::start().await;
    let target = Target::parse(&app.base_url, Implementation::Mailroom).expect("target");
    let mut config = RunConfig::new(target, Scenario::Mixed);
    config.mixed =
        MixedLoad { writers: 2, readers: 3, celebrity_readers: 2, inboxes: 3, celebrities: 2 };
    config.seed_messages = 2;
    config.duration = Some(Duration::from_millis(300));
    let report = mailroom_bench::run(&config).await.expect("run");
    let s = &report.summary;
    assert_eq!(s.errors, 0, "{}", report.table());
    assert_eq!(report.concurrency, 7);
    let names: Vec<&str> = report.groups.iter().map(|g| g.name.as_str()).collect();
    assert_eq!(names, ["writers", "readers", "celebrity"]);
    assert!(report.groups.iter().all(|g| g.summary.requests > 0 && g.summary.errors == 0));
    let sum: u64 = report.groups.iter().map(|g| g.summary.requests).sum();
    assert_eq!(sum, s.requests);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_monitor_samples_the_server_process() {
    // The server runs in this test process, so its pid is ours.
    let app = TestApp::start().await;
    let target = Target::parse(&app.base_url, Implementation::Mailroom).expect("target");
    let mut config = RunConfig::new(target, Scenario::Health);
    config.concurrency = 2;
    config.duration = Some(Duration::from_millis(300));
    config.monitor_pid = Some(std::process::id());
    config.monitor_interval = Duration::from_millis(50);
    let report = mailroom_bench::run(&config).await.expect("run");
    let monitor = report.monitor.expect("monitor report");
    assert!(monitor.samples.len() >= 3, "{monitor:?}");
    assert!(monitor.rss_peak_mb > 0.0 && monitor.open_files_peak > 0);
    assert!(monitor.samples.windows(2).all(|w| w[0].t_s < w[1].t_s));
}

/// A server that closes every connection after one answer (`Connection: close`), as servers
/// do when their keep-alive timeout passes between two requests.
async fn closing_server() -> String {
    use hyper::server::conn::http1;
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    tokio::spawn(async move {
        while let Ok((stream, _)) = listener.accept().await {
            tokio::spawn(async move {
                let service = hyper::service::service_fn(|_request| async {
                    let body = http_body_util::Full::new(bytes::Bytes::from_static(b"ok"));
                    Ok::<_, std::convert::Infallible>(hyper::Response::new(body))
                });
                let io = hyper_util::rt::TokioIo::new(stream);
                let _ = http1::Builder::new().keep_alive(false).serve_connection(io, service).await;
            });
        }
    });
    url
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn requests_the_server_never_saw_are_resent_not_counted() {
    let url = closing_server().await;
    let target = Target::parse(&url, Implementation::Mailroom).expect("target");
    let mut config = RunConfig::new(target, Scenario::Health);
    config.concurrency = 2;
    config.rate = Some(40.0);
    config.duration = Some(Duration::from_millis(250));
    let report = mailroom_bench::run(&config).await.expect("run");
    assert_clean(&report, 10);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_dataset_fills_every_inbox() {
    let app = TestApp::start().await;
    let target = Target::parse(&app.base_url, Implementation::Mailroom).expect("target");
    let scale: DatasetScale = "2x3x2".parse().expect("scale");
    let dataset = mailroom_bench::dataset::populate(&target, scale).await.expect("populate");
    assert_eq!((dataset["agents"].as_u64(), dataset["messages"].as_u64()), (Some(6), Some(12)));
    let projects = dataset["projects"].as_array().expect("projects");
    assert_eq!(projects.len(), 2);
    for project in projects {
        let project = project.as_str().expect("slug");
        let agents = app
            .read_resource(&format!("resource://agents/{project}"))
            .await
            .expect("agents resource");
        let agents = agents["agents"].as_array().expect("agents");
        assert_eq!(agents.len(), 3);
        for agent in agents {
            let name = agent["name"].as_str().expect("name");
            let inbox = InboxCall::new(project, name).ok(&app).await;
            assert_eq!(inbox.as_array().map(Vec::len), Some(2), "{agent}");
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dead_target_reports_connect_errors() {
    // Bind then drop a listener so the port is (almost certainly) closed.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}", listener.local_addr().expect("address"));
    drop(listener);
    let target = Target::parse(&url, Implementation::Mailroom).expect("target");
    let mut config = RunConfig::new(target, Scenario::Health);
    config.concurrency = 2;
    config.duration = None;
    config.requests = Some(6);
    let report = mailroom_bench::run(&config).await.expect("run");
    assert_eq!(report.summary.errors, 6);
    assert_eq!(report.summary.error_breakdown.get("connect"), Some(&6));
}

/// A push run of `requests` listened-to sends (half as many before and after, with nobody
/// listening) to `subscribers` agents.
async fn push(
    app: &TestApp,
    subscribers: usize,
    signals_dir: Option<std::path::PathBuf>,
) -> Report {
    let target = Target::parse(&app.base_url, Implementation::Mailroom).expect("target");
    let mut config = RunConfig::new(target, Scenario::Push);
    config.concurrency = 4;
    config.duration = Some(Duration::from_secs(60));
    config.requests = Some(40);
    config.push =
        mailroom_bench::PushOptions { subscribers, signals_dir, deadline: Duration::from_secs(20) };
    mailroom_bench::run(&config).await.expect("push run")
}

/// Every listened-to send is matched to its agent's notification, none missed or unexpected;
/// the phases are reported with their send rates.
fn assert_every_send_notified(report: &Report, notifier: &str) {
    let push = report.push.as_ref().expect("push figures");
    assert_eq!(push.notifier, notifier);
    let phases: Vec<(&str, u64, u64)> =
        report.groups.iter().map(|g| (g.name.as_str(), g.summary.ok, g.summary.errors)).collect();
    let want = [
        ("nobody listening, before", 20, 0),
        ("listening", 40, 0),
        ("nobody listening, after", 20, 0),
    ];
    assert_eq!(phases, want, "{}", report.table());
    let tally = &push.tally;
    assert_eq!(tally.delivered, 40, "{}", report.table());
    assert_eq!(
        (tally.missed, tally.late, tally.unexpected, tally.failed_sends, tally.streams_lost),
        (0, 0, 0, 0, 0)
    );
    assert!(push.notify.p50_ms <= push.notify.p99_ms && push.notify.p99_ms <= push.notify.max_ms);
    assert!(push.send_rps_subscribed > 0.0 && push.send_rps_unsubscribed > 0.0);
    assert!(report.table().contains("missed 0"), "{}", report.table());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_matches_every_send_to_its_streams_notification() {
    let app = TestApp::start().await;
    let report = push(&app, 12, None).await;
    assert_every_send_notified(&report, "mcp-stream");
    // The sessions were ended: a second run starts with nobody listening, and is as clean.
    let again = push(&app, 12, None).await;
    assert_every_send_notified(&again, "mcp-stream");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_matches_every_send_to_its_signal_file() {
    let signals = tempfile::tempdir().expect("signals dir");
    let app = TestApp::start_with(mailroom_testkit::TestOptions::signals(signals.path())).await;
    let report = push(&app, 12, Some(signals.path().to_path_buf())).await;
    assert_every_send_notified(&report, "signal-file");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn push_counts_a_notification_that_never_comes_as_missed() {
    // Signals are off: the watched files are never written, so every send is missed.
    let signals = tempfile::tempdir().expect("signals dir");
    let app = TestApp::start().await;
    let target = Target::parse(&app.base_url, Implementation::Mailroom).expect("target");
    let mut config = RunConfig::new(target, Scenario::Push);
    config.concurrency = 2;
    config.duration = Some(Duration::from_secs(60));
    config.requests = Some(6);
    config.push = mailroom_bench::PushOptions {
        subscribers: 3,
        signals_dir: Some(signals.path().to_path_buf()),
        deadline: Duration::from_millis(200),
    };
    let report = mailroom_bench::run(&config).await.expect("push run");
    let tally = &report.push.expect("push figures").tally;
    // Each agent is sent one message, then leaves the draw when it is missed.
    assert_eq!((tally.delivered, tally.missed), (0, 3), "{tally:?}");
    assert_eq!(report.groups[1].summary.ok, 3);
}
