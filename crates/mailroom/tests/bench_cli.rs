//! `mailroom bench` end to end: a run against a real server and the baseline server, the
//! JSON it prints, `compare`, and `check`'s exit codes. Speed is never asserted.

mod common;

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Child, Stdio};

use common::{mailroom, ok, start, stop};
use mailroom_bench::Report;

/// A run's `--json` output, read as the lab's own report type (every figure is required).
fn bench_json(args: &[&str]) -> Report {
    let output =
        mailroom().arg("bench").args(args).args(["--json", "-q"]).output().expect("run bench");
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    serde_json::from_slice(&output.stdout).expect("one report object on stdout")
}

fn start_baseline() -> (Child, String) {
    let mut child = mailroom()
        .args(["bench", "baseline-server", "--port", "0"])
        .stdout(Stdio::piped())
        .spawn()
        .expect("spawn baseline server");
    let mut line = String::new();
    BufReader::new(child.stdout.take().expect("stdout")).read_line(&mut line).expect("line");
    let url = line.split_whitespace().find(|w| w.starts_with("http://")).expect("url").to_string();
    (child, url)
}

fn check(budgets: &Path, result: &Path) -> Option<i32> {
    let output = mailroom()
        .args(["bench", "check", "--budgets"])
        .arg(budgets)
        .arg(result)
        .output()
        .expect("run check");
    output.status.code()
}

#[test]
fn runs_compares_and_checks_budgets() {
    let dir = tempfile::tempdir().expect("temp dir");
    let (server, url) = start(&dir.path().join("data"));
    let (mut baseline, baseline_url) = start_baseline();

    let send = bench_json(&["--url", &url, "--scenario", "send", "-c", "3", "--requests", "30"]);
    assert_eq!((send.summary.requests, send.summary.errors), (30, 0), "{send:?}");
    assert_eq!(send.scenario, "send");

    let out = dir.path().join("results");
    let out_arg = out.to_str().expect("utf-8 path");
    let health = bench_json(&["--url", &url, "-c", "2", "--requests", "20", "--out", out_arg]);
    assert_eq!(health.summary.errors, 0, "{health:?}");
    let result = out.join("mailroom-health-c2.json");
    assert!(out.join("mailroom-health-c2.md").exists());
    let chart = std::fs::read_to_string(out.join("mailroom-health-c2.svg")).expect("chart");
    assert!(chart.starts_with("<svg"), "{chart}");

    let ratio = bench_json(&[
        "--url",
        &url,
        "--scenario",
        "tools-list",
        "-c",
        "2",
        "--requests",
        "20",
        "--baseline-url",
        &baseline_url,
    ]);
    let baseline_figures = ratio.baseline.as_ref().expect("baseline figures");
    assert_eq!(baseline_figures.errors, 0, "{ratio:?}");
    assert!(baseline_figures.ratio > 0.0, "{ratio:?}");

    let ceiling = bench_json(&["--url", &baseline_url, "-c", "2", "--requests", "20"]);
    assert_eq!((ceiling.summary.requests, ceiling.summary.errors), (20, 0), "{ceiling:?}");
    let ceiling_file = dir.path().join("baseline.json");
    std::fs::write(&ceiling_file, serde_json::to_string(&ceiling).expect("json")).expect("write");

    let compared = mailroom()
        .args(["bench", "compare"])
        .args([&result, &ceiling_file])
        .output()
        .expect("compare");
    let table = String::from_utf8_lossy(&compared.stdout);
    assert!(compared.status.success() && table.contains("| Throughput (req/s) |"), "{table}");

    let budgets = dir.path().join("budgets.toml");
    std::fs::write(&budgets, "[health]\nmax_errors = 0\nmax_p50_ms = 60000\n").expect("write");
    assert_eq!(check(&budgets, &result), Some(0));
    std::fs::write(&budgets, "[health]\nmin_rps = 1e12\n").expect("write");
    assert_eq!(check(&budgets, &result), Some(1), "an impossible floor is a regression");
    std::fs::write(&budgets, "[health]\nmin_rsp = 1\n").expect("write");
    assert_eq!(check(&budgets, &result), Some(2), "a typo is an error, not a pass");
    // The repository's own budgets and targets files parse.
    for file in ["budgets.toml", "targets.toml"] {
        let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../benches").join(file);
        assert_ne!(check(&shipped, &result), Some(2), "{file}");
    }

    // Search at scale: the dataset's first project is searched, for its rare word (one
    // message in 1,000).
    let search = bench_json(&[
        "--url",
        &url,
        "--scenario",
        "search",
        "--dataset",
        "1x2x500",
        "--search-term",
        "quasar",
        "-c",
        "2",
        "--requests",
        "20",
    ]);
    assert_eq!((search.summary.requests, search.summary.errors), (20, 0), "{search:?}");
    let setup = search.setup.as_ref().expect("setup");
    let project = search.dataset.as_ref().expect("dataset")["projects"][0].clone();
    assert_eq!(setup["search"], serde_json::json!({"project": project, "term": "quasar"}));
    let project = project.as_str().expect("slug");
    let found = mailroom_testkit::tool_at(
        &url,
        "search_messages",
        serde_json::json!({"project_key": project, "query": "quasar", "limit": 20}),
    );
    let found = tokio::runtime::Runtime::new().expect("runtime").block_on(found);
    let hits = found["result"].as_array().or(found.as_array()).map(Vec::len);
    assert_eq!(hits, Some(1), "one message in 1,000 is rare: {found}");

    baseline.kill().expect("kill baseline");
    let _ = baseline.wait();
    stop(server);
}

/// `mailroom bench archive-growth ARGS` on `data`; its stdout, after asserting the exit code.
fn archive_growth(data: &Path, args: &[&str], code: i32) -> String {
    let output = mailroom()
        .args(["bench", "archive-growth", "--data-dir"])
        .arg(data)
        .args(args)
        .env("LOG_LEVEL", "warn")
        .output()
        .expect("run archive-growth");
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(code), "{stderr}");
    String::from_utf8_lossy(&output.stdout).into_owned() + &stderr
}

/// The messages in the database, and the message copies in the archive's work tree.
fn generated(data: &Path) -> (i64, usize) {
    let db = rusqlite::Connection::open(data.join("mailroom.sqlite3")).expect("database");
    let messages = db.query_row("SELECT count(*) FROM messages", [], |r| r.get(0)).expect("count");
    let archive = data.join("archive/projects");
    let copies = ["/messages/2", "/inbox/", "/outbox/"];
    let is_copy = |p: &std::path::PathBuf| copies.iter().any(|c| p.to_string_lossy().contains(c));
    let files = walk(&archive).filter(is_copy).count();
    (messages, files)
}

fn walk(dir: &Path) -> impl Iterator<Item = std::path::PathBuf> {
    let mut pending = vec![dir.to_path_buf()];
    std::iter::from_fn(move || {
        while let Some(path) = pending.pop() {
            if path.is_dir() {
                pending.extend(
                    std::fs::read_dir(&path).expect("dir").map(|e| e.expect("entry").path()),
                );
            } else {
                return Some(path);
            }
        }
        None
    })
}

/// The generator writes through the real database and archive writer, continues a data
/// directory where it stopped (the same mix, the same projects), refuses another shape, and
/// what it wrote verifies clean.
#[test]
fn archive_growth_fills_resumes_and_verifies() {
    let dir = tempfile::tempdir().expect("temp dir");
    let data = dir.path().join("data");
    let small = ["--projects", "2", "--agents", "5", "--probe-rounds", "1", "--probe-size", "7"];
    let out = archive_growth(&data, &[&["--messages", "60"], &small[..]].concat(), 0);
    assert!(out.contains("60 messages:"), "{out}");
    assert!(out.contains("probe: 7 messages sent"), "{out}");
    let (messages, files) = generated(&data);
    assert_eq!(messages, 67, "60 generated and 7 of the probe");
    // A canonical copy and an outbox copy per message, an inbox copy per recipient.
    assert!(files >= 67 * 3, "{files} message files");

    let out = archive_growth(&data, &[&["--messages", "150"], &small[..]].concat(), 0);
    assert!(out.contains("150 messages:") && !out.contains("60 messages:"), "{out}");
    let state: serde_json::Value =
        serde_json::from_slice(&std::fs::read(data.join("archive-growth.json")).expect("state"))
            .expect("json");
    assert_eq!(state["messages"], 157, "{state}");
    assert_eq!(generated(&data).0, 157, "continued from 67, nothing sent twice");

    let other = archive_growth(&data, &["--messages", "200", "--agents", "6"], 1);
    assert!(other.contains("--projects 2 --agents 5"), "{other}");
    assert_eq!(generated(&data).0, 157, "nothing written on refusal");

    let verified = ok(&data, &["archive", "verify"]);
    assert!(verified.contains("no differences: checked 157 messages"), "{verified}");
}
