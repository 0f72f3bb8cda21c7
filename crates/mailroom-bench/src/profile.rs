//! Load profiles built from steady runs: the ramp (seed 000 §4.5's concurrency scaling).

use std::fmt::Write;

use serde_json::{Value, json};

use crate::report::Report;

/// Seed 000 §3.1's concurrency levels.
pub const RAMP_LEVELS: [usize; 6] = [10, 25, 50, 100, 200, 500];

/// Throughput this far below the best earlier level counts as breaking.
const THROUGHPUT_DROP: f64 = 0.10;

/// The index of the first level where the server broke: any error, or throughput more than
/// 10 % below the best of the levels before it. `None` if it held at every level.
pub fn breaking_point(reports: &[Report]) -> Option<usize> {
    let mut best: f64 = 0.0;
    for (index, report) in reports.iter().enumerate() {
        let summary = &report.summary;
        if summary.errors > 0 || summary.rps < best * (1.0 - THROUGHPUT_DROP) {
            return Some(index);
        }
        best = best.max(summary.rps);
    }
    None
}

fn verdict(reports: &[Report]) -> String {
    match breaking_point(reports) {
        None => "held at every level".into(),
        Some(index) => {
            let broken = &reports[index];
            let why = if broken.summary.errors > 0 {
                format!("{} errors", broken.summary.errors)
            } else {
                "throughput fell more than 10 % below the best lower level".into()
            };
            format!("breaking point: {} connections ({why})", broken.concurrency)
        }
    }
}

/// The ramp's JSON: every level's report and the breaking point.
pub fn ramp_json(reports: &[Report]) -> Value {
    json!({
        "profile": "ramp",
        "breaking_point": breaking_point(reports).map(|index| reports[index].concurrency),
        "runs": reports,
    })
}

/// One row per level: latency against concurrency.
pub fn ramp_table(reports: &[Report]) -> String {
    let mut out = String::new();
    if let Some(first) = reports.first() {
        let _ =
            writeln!(out, "ramp: {} → {} ({})\n", first.scenario, first.url, first.implementation);
    }
    let _ = writeln!(
        out,
        "{:>11} {:>10} {:>8} {:>11} {:>8} {:>8} {:>8} {:>8}",
        "connections", "requests", "errors", "req/s", "p50", "p95", "p99", "max"
    );
    for report in reports {
        let s = &report.summary;
        let _ = writeln!(
            out,
            "{:>11} {:>10} {:>8} {:>11.1} {:>8.2} {:>8.2} {:>8.2} {:>8.2}",
            report.concurrency, s.requests, s.errors, s.rps, s.p50_ms, s.p95_ms, s.p99_ms, s.max_ms
        );
    }
    let _ = writeln!(out, "\n{}   (latency in ms)", verdict(reports));
    out
}

/// The ramp's Markdown page.
pub fn ramp_markdown(reports: &[Report]) -> String {
    let mut out = String::new();
    if let Some(first) = reports.first() {
        let _ = writeln!(out, "# mailroom bench ramp: {}\n", first.scenario);
        let _ =
            writeln!(out, "Target: {} ({}), via {}\n", first.url, first.implementation, first.via);
    }
    let _ = writeln!(out, "| Connections | Requests | Errors | req/s | p50 | p95 | p99 | max |");
    let _ = writeln!(out, "|---|---|---|---|---|---|---|---|");
    for report in reports {
        let s = &report.summary;
        let _ = writeln!(
            out,
            "| {} | {} | {} | {:.1} | {:.2} ms | {:.2} ms | {:.2} ms | {:.2} ms |",
            report.concurrency, s.requests, s.errors, s.rps, s.p50_ms, s.p95_ms, s.p99_ms, s.max_ms
        );
    }
    let _ = writeln!(out, "\n{}", verdict(reports));
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::stats::Summary;

    fn level(concurrency: usize, rps: f64, errors: u64) -> Report {
        let text = json!({
            "tool": "mailroom bench", "version": "0", "url": "http://x:1", "implementation": "mailroom",
            "scenario": "health", "via": "mcp", "concurrency": concurrency, "duration_s": 1.0,
            "rate": null, "request_limit": null, "timeout_ms": 5000,
        });
        let mut report: Report = serde_json::from_value(merge(
            text,
            &Summary { rps, errors, requests: 10, ..Summary::default() },
        ))
        .expect("report");
        report.concurrency = concurrency;
        report
    }

    fn merge(mut base: Value, summary: &Summary) -> Value {
        if let (Some(base), Value::Object(extra)) = (base.as_object_mut(), json!(summary)) {
            base.extend(extra);
        }
        base
    }

    #[test]
    fn the_breaking_point_is_the_first_error_or_collapse() {
        let held = [level(10, 100.0, 0), level(25, 200.0, 0), level(50, 195.0, 0)];
        assert_eq!(breaking_point(&held), None);
        let collapsed = [level(10, 100.0, 0), level(25, 200.0, 0), level(50, 170.0, 0)];
        assert_eq!(breaking_point(&collapsed), Some(2));
        let errors = [level(10, 100.0, 0), level(25, 300.0, 3)];
        assert_eq!(breaking_point(&errors), Some(1));
        assert!(ramp_table(&errors).contains("breaking point: 25 connections (3 errors)"));
        assert_eq!(ramp_json(&errors)["breaking_point"], 25);
    }
}
