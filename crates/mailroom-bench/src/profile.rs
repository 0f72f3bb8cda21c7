//! Load profiles built from steady runs: the ramp (the benchmark plan's concurrency scaling,
//! BENCHMARKS.md, "Concurrency scaling").

use serde_json::{Value, json};

use crate::report::{FIGURES, Report, figure_cells};
use crate::table::{Layout, render};

/// The benchmark plan's concurrency levels (BENCHMARKS.md, "Current state").
pub const RAMP_LEVELS: [usize; 6] = [10, 25, 50, 100, 200, 500];

/// Throughput below this share of the best earlier level counts as a collapse. Generous,
/// because on a shared machine throughput moves ±20 % between levels without breaking.
const COLLAPSE: f64 = 0.5;

/// A recovery second within this share of the baseline counts as recovered.
const THROUGHPUT_DROP: f64 = 0.10;

/// The index of the first level where the server broke: any error, or throughput below half
/// the best of the levels before it. `None` if it held at every level.
pub fn breaking_point(reports: &[Report]) -> Option<usize> {
    let mut best: f64 = 0.0;
    for (index, report) in reports.iter().enumerate() {
        let summary = &report.summary;
        if summary.errors > 0 || summary.rps < best * COLLAPSE {
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
                "throughput fell below half the best lower level".into()
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

/// One row per level: latency against concurrency, and the verdict.
fn ramp_rows(reports: &[Report], layout: Layout) -> String {
    let headers: Vec<&str> =
        std::iter::once("connections").chain(FIGURES).chain(["× baseline"]).collect();
    let rows = reports
        .iter()
        .map(|report| {
            let ratio =
                report.baseline.as_ref().map_or("—".into(), |b| format!("{:.2}×", b.ratio));
            std::iter::once(report.concurrency.to_string())
                .chain(figure_cells(&report.summary))
                .chain([ratio])
                .collect()
        })
        .collect();
    render(layout, &headers, rows) + "\n" + &verdict(reports) + "\n"
}

/// The ramp as a table.
pub fn ramp_table(reports: &[Report]) -> String {
    let head = reports.first().map_or(String::new(), |first| {
        format!("ramp: {} → {} ({})\n\n", first.scenario, first.url, first.implementation)
    });
    head + &ramp_rows(reports, Layout::Text)
}

/// The ramp's Markdown page.
pub fn ramp_markdown(reports: &[Report]) -> String {
    let head = reports.first().map_or(String::new(), |first| {
        format!(
            "# mailroom bench ramp: {}\n\nTarget: {} ({}), via {}\n\n",
            first.scenario, first.url, first.implementation, first.via
        )
    });
    head + &ramp_rows(reports, Layout::Markdown)
}

/// Latency (p50, p95, p99) against concurrency, as an SVG chart.
pub fn ramp_chart(reports: &[Report]) -> String {
    let line = |name, pick: fn(&Report) -> f64| crate::chart::Series {
        name,
        points: reports.iter().map(|r| (r.concurrency as f64, pick(r))).collect(),
    };
    let series = [
        line("p50", |r| r.summary.p50_ms),
        line("p95", |r| r.summary.p95_ms),
        line("p99", |r| r.summary.p99_ms),
    ];
    let title = reports
        .first()
        .map_or(String::new(), |r| format!("{}: latency against concurrency", r.scenario));
    crate::chart::line_chart(&title, "connections", "latency (ms)", &series)
}

/// The spike: the baseline load multiplied by this factor (the 14-fold jump of the spike test
/// in an earlier Agent Mail load report; README's "Load lab").
pub const SPIKE_FACTOR: usize = 14;

/// Seconds into the recovery phase until throughput is back within 10 % of the baseline's
/// median second and stays there; `None` if it never does. The baseline's first second is
/// left out of its median (it includes the ramp-up of the connections).
pub fn recovery_seconds(baseline: &Report, recovery: &Report) -> Option<usize> {
    let mut seconds: Vec<u64> = baseline.timeline_rps.iter().skip(1).copied().collect();
    if seconds.is_empty() {
        seconds = baseline.timeline_rps.clone();
    }
    seconds.sort_unstable();
    let reference = *seconds.get(seconds.len() / 2)? as f64;
    let healthy = |count: &u64| *count as f64 >= reference * (1.0 - THROUGHPUT_DROP);
    let timeline = &recovery.timeline_rps;
    let first_bad_from_end = timeline.iter().rposition(|count| !healthy(count));
    match first_bad_from_end {
        None => Some(0),
        Some(last_bad) if last_bad + 1 < timeline.len() => Some(last_bad + 1),
        Some(_) => None,
    }
}

/// The spike's JSON: the three phases and the recovery time.
pub fn spike_json(phases: &[Report; 3]) -> Value {
    json!({
        "profile": "spike",
        "spike_factor": SPIKE_FACTOR,
        "recovery_s": recovery_seconds(&phases[0], &phases[2]),
        "baseline": phases[0], "spike": phases[1], "recovery": phases[2],
    })
}

/// One row per phase, and the recovery time.
fn spike_rows(phases: &[Report; 3], layout: Layout) -> String {
    let headers: Vec<&str> = ["phase", "load"].into_iter().chain(FIGURES).collect();
    let rows = ["baseline", "spike", "recovery"]
        .iter()
        .zip(phases)
        .map(|(name, report)| {
            let load = match report.rate {
                Some(rate) => format!("{rate} req/s"),
                None => format!("{} connections", report.concurrency),
            };
            [name.to_string(), load].into_iter().chain(figure_cells(&report.summary)).collect()
        })
        .collect();
    let recovery = match recovery_seconds(&phases[0], &phases[2]) {
        Some(seconds) => format!("recovered to the baseline's throughput after {seconds} s"),
        None => "did not recover to the baseline's throughput within the recovery phase".into(),
    };
    render(layout, &headers, rows) + "\n" + &recovery + "\n"
}

/// The spike as a table.
pub fn spike_table(phases: &[Report; 3]) -> String {
    let head = format!("spike ×{SPIKE_FACTOR}: {} → {}\n\n", phases[0].scenario, phases[0].url);
    head + &spike_rows(phases, Layout::Text)
}

/// The spike's Markdown page.
pub fn spike_markdown(phases: &[Report; 3]) -> String {
    let head = format!("# mailroom bench spike ×{SPIKE_FACTOR}: {}\n\n", phases[0].scenario);
    head + &spike_rows(phases, Layout::Markdown)
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
    fn recovery_is_when_throughput_returns_and_stays() {
        let mut baseline = level(10, 100.0, 0);
        baseline.timeline_rps = vec![40, 100, 98, 102, 100];
        let mut recovery = level(10, 100.0, 0);
        recovery.timeline_rps = vec![20, 95, 50, 91, 100, 99];
        assert_eq!(recovery_seconds(&baseline, &recovery), Some(3));
        recovery.timeline_rps = vec![100, 99];
        assert_eq!(recovery_seconds(&baseline, &recovery), Some(0));
        recovery.timeline_rps = vec![100, 10];
        assert_eq!(recovery_seconds(&baseline, &recovery), None);
        baseline.timeline_rps.clear();
        assert_eq!(recovery_seconds(&baseline, &recovery), None);
    }

    #[test]
    fn the_breaking_point_is_the_first_error_or_collapse() {
        let held = [level(10, 100.0, 0), level(25, 200.0, 0), level(50, 120.0, 0)];
        assert_eq!(breaking_point(&held), None);
        let collapsed = [level(10, 100.0, 0), level(25, 200.0, 0), level(50, 90.0, 0)];
        assert_eq!(breaking_point(&collapsed), Some(2));
        let errors = [level(10, 100.0, 0), level(25, 300.0, 3)];
        assert_eq!(breaking_point(&errors), Some(1));
        assert!(ramp_table(&errors).contains("breaking point: 25 connections (3 errors)"));
        assert_eq!(ramp_json(&errors)["breaking_point"], 25);
    }
}
