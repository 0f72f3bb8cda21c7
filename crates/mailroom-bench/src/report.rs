//! Reports: the JSON object of a run, its text table and Markdown page, head-to-head
//! comparisons of two runs, and budget checks.

use std::collections::BTreeMap;
use std::fmt::Write;

use anyhow::{Context, Result, bail};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::engine::RunConfig;
use crate::monitor::MonitorReport;
use crate::push::PushFigures;
use crate::stats::Summary;
use crate::table::{Layout, render};

/// One run: its parameters and its figures (`--json` prints this object).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Report {
    pub tool: String,
    pub version: String,
    pub url: String,
    pub implementation: String,
    pub scenario: String,
    pub via: String,
    pub concurrency: usize,
    /// `None` when the run was bounded by a request count only.
    pub duration_s: Option<f64>,
    /// Requests per second asked for; `None` for closed-loop.
    pub rate: Option<f64>,
    pub request_limit: Option<u64>,
    pub timeout_ms: u64,
    #[serde(flatten)]
    pub summary: Summary,
    /// Completed requests in each whole second of the run.
    #[serde(default)]
    pub timeline_rps: Vec<u64>,
    /// What the setup phase created (project, agents, seeded messages).
    #[serde(default)]
    pub setup: Option<Value>,
    /// The mixed scenario's groups (writers, readers, celebrity), each with its figures.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<GroupReport>,
    /// The baseline server measured just before, with the same load (`--baseline-url`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub baseline: Option<BaselineFigures>,
    /// The standing data created before the run (`--dataset`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub dataset: Option<Value>,
    /// The target process's RSS, CPU and open files over the run (`--pid`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub monitor: Option<MonitorReport>,
    /// The push scenario's notifications and send rates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub push: Option<PushFigures>,
}

/// The baseline server's figures under the same load, and the run's share of its throughput.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineFigures {
    pub url: String,
    pub rps: f64,
    pub p50_ms: f64,
    pub p99_ms: f64,
    pub errors: u64,
    /// The run's requests per second divided by the baseline's.
    pub ratio: f64,
}

impl BaselineFigures {
    pub(crate) fn new(baseline: &Report, run_rps: f64) -> Self {
        let s = &baseline.summary;
        let ratio = if s.rps > 0.0 { (run_rps / s.rps * 1000.0).round() / 1000.0 } else { 0.0 };
        Self {
            url: baseline.url.clone(),
            rps: s.rps,
            p50_ms: s.p50_ms,
            p99_ms: s.p99_ms,
            errors: s.errors,
            ratio,
        }
    }

    fn line(&self) -> String {
        format!(
            "baseline server {}: {:.1} req/s, p50 {:.2} ms, p99 {:.2} ms ({} errors); this run = {:.2}× baseline",
            self.url, self.rps, self.p50_ms, self.p99_ms, self.errors, self.ratio
        )
    }
}

/// The headers of a run's figures (in every table of the lab), as [`figure_cells`] gives them.
pub(crate) const FIGURES: [&str; 9] =
    ["requests", "errors", "req/s", "mean ms", "p50 ms", "p95 ms", "p99 ms", "p99.9 ms", "max ms"];

pub(crate) fn figure_cells(s: &Summary) -> impl Iterator<Item = String> {
    let latencies = [s.mean_ms, s.p50_ms, s.p95_ms, s.p99_ms, s.p999_ms, s.max_ms];
    [s.requests.to_string(), s.errors.to_string(), format!("{:.1}", s.rps)]
        .into_iter()
        .chain(latencies.map(|ms| format!("{ms:.2}")))
}

/// One group of workers in a mixed run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct GroupReport {
    pub name: String,
    pub concurrency: usize,
    #[serde(flatten)]
    pub summary: Summary,
}

impl Report {
    pub(crate) fn new(
        config: &RunConfig,
        workers: usize,
        setup: Option<Value>,
        summary: Summary,
        timeline_rps: Vec<u64>,
    ) -> Self {
        let target = &config.target;
        Self {
            tool: "mailroom bench".into(),
            version: env!("CARGO_PKG_VERSION").into(),
            url: format!("http://{}{}", target.authority, target.prefix),
            implementation: target.implementation.to_string(),
            scenario: config.scenario.to_string(),
            via: config.via.to_string(),
            concurrency: workers,
            duration_s: config.duration.map(|d| d.as_secs_f64()),
            rate: config.rate,
            request_limit: config.requests,
            timeout_ms: u64::try_from(config.timeout.as_millis()).unwrap_or(u64::MAX),
            summary,
            timeline_rps,
            setup,
            groups: Vec::new(),
            monitor: None,
            dataset: None,
            baseline: None,
            push: None,
        }
    }

    /// "send via mcp", "health".
    fn label(&self) -> String {
        if matches!(self.scenario.as_str(), "health" | "ready" | "tools-list") {
            self.scenario.clone()
        } else {
            format!("{} via {}", self.scenario, self.via)
        }
    }

    fn mode(&self) -> String {
        let load = match self.rate {
            Some(rate) => format!("fixed rate {rate} req/s (latency from intended send time)"),
            None => "closed-loop".into(),
        };
        let bound = match (self.duration_s, self.request_limit) {
            (Some(d), Some(n)) => format!("{d} s or {n} requests"),
            (Some(d), None) => format!("{d} s"),
            (None, Some(n)) => format!("{n} requests"),
            (None, None) => String::new(),
        };
        format!("{} connections, {bound}, {load}", self.concurrency)
    }

    fn monitor_line(&self) -> Option<String> {
        let m = self.monitor.as_ref()?;
        Some(format!(
            "process {}: RSS {} → peak {} MB (growth {} MB/hour, second half {} MB/hour; \
             anonymous peak {} MB, growth {} MB/hour, second half {} MB/hour, second half's \
             floor {} MB/hour; file-backed \
             peak {} MB), CPU {} % of a core, open files peak {} (growth {}/hour), {} samples",
            m.pid,
            m.rss_first_mb,
            m.rss_peak_mb,
            m.rss_growth_mb_per_hour,
            m.rss_growth_late_mb_per_hour,
            m.rss_anon_peak_mb,
            m.rss_anon_growth_mb_per_hour,
            m.rss_anon_growth_late_mb_per_hour,
            m.rss_anon_floor_growth_late_mb_per_hour,
            m.rss_file_peak_mb,
            m.cpu_percent_mean,
            m.open_files_peak,
            m.open_files_growth_per_hour,
            m.samples.len()
        ))
    }

    /// The figures of the run and, in a mixed run, of each of its groups.
    fn figures(&self, layout: Layout) -> String {
        if self.groups.is_empty() {
            return render(layout, &FIGURES, vec![figure_cells(&self.summary).collect()]);
        }
        let headers: Vec<&str> = std::iter::once("group").chain(FIGURES).collect();
        // A push run's phases ran one after another: its figures are the listening phase's,
        // already a row, not a whole.
        let whole = self
            .push
            .is_none()
            .then(|| (format!("all ({} connections)", self.concurrency), &self.summary));
        let groups = self.groups.iter().map(|group| {
            (format!("{} ({} connections)", group.name, group.concurrency), &group.summary)
        });
        let rows = whole
            .into_iter()
            .chain(groups)
            .map(|(name, summary)| std::iter::once(name).chain(figure_cells(summary)).collect())
            .collect();
        render(layout, &headers, rows)
    }

    /// The table printed on stdout.
    pub fn table(&self) -> String {
        let s = &self.summary;
        let mut out = String::new();
        let _ = writeln!(out, "{} → {} ({})", self.label(), self.url, self.implementation);
        let _ = writeln!(out, "{}", self.mode());
        let _ = writeln!(out);
        out.push_str(&self.figures(Layout::Text));
        if !s.error_breakdown.is_empty() {
            let kinds: Vec<String> =
                s.error_breakdown.iter().map(|(kind, n)| format!("{kind}: {n}")).collect();
            let _ = writeln!(out, "errors by kind: {}", kinds.join(", "));
        }
        if let Some(line) = self.monitor_line() {
            let _ = writeln!(out, "{line}");
        }
        if let Some(baseline) = &self.baseline {
            let _ = writeln!(out, "{}", baseline.line());
        }
        for line in self.push.iter().flat_map(PushFigures::lines) {
            let _ = writeln!(out, "{line}");
        }
        out
    }

    /// The Markdown page `--out` writes beside the JSON.
    pub fn markdown(&self) -> String {
        let s = &self.summary;
        let mut out = String::new();
        let _ = writeln!(out, "# mailroom bench: {}\n", self.label());
        let _ = writeln!(out, "| Parameter | Value |\n|---|---|");
        let _ = writeln!(out, "| Target | {} ({}) |", self.url, self.implementation);
        let _ = writeln!(out, "| Load | {} |", self.mode());
        let _ = writeln!(out, "| Request timeout | {} ms |", self.timeout_ms);
        if let Some(setup) = &self.setup {
            let _ = writeln!(out, "| Setup | `{setup}` |");
        }
        if let Some(dataset) = &self.dataset {
            let _ = writeln!(out, "| Dataset | {} |", dataset["scale"]);
        }
        let _ = writeln!(out);
        out.push_str(&self.figures(Layout::Markdown));
        if !s.error_breakdown.is_empty() {
            let _ = writeln!(out, "\n| Error kind | Count |\n|---|---|");
            for (kind, count) in &s.error_breakdown {
                let _ = writeln!(out, "| {kind} | {count} |");
            }
        }
        if let Some(line) = self.monitor_line() {
            let _ = writeln!(out, "\n{line}");
        }
        if let Some(baseline) = &self.baseline {
            let _ = writeln!(out, "\n{}", baseline.line());
        }
        if let Some(push) = &self.push {
            let _ = writeln!(out, "\n{}", push.lines().join("  \n"));
        }
        if !self.timeline_rps.is_empty() {
            let seconds: Vec<String> = self.timeline_rps.iter().map(u64::to_string).collect();
            let _ = writeln!(out, "\nThroughput per second: {}", seconds.join(", "));
        }
        out
    }
}

impl Report {
    /// Throughput over time, one point per second, as an SVG chart.
    pub fn throughput_chart(&self) -> String {
        let points = self
            .timeline_rps
            .iter()
            .enumerate()
            .map(|(s, n)| ((s + 1) as f64, *n as f64))
            .collect();
        let title =
            format!("{}: throughput over time ({} connections)", self.label(), self.concurrency);
        let series = [crate::chart::Series { name: "req/s", points }];
        crate::chart::line_chart(&title, "seconds", "requests per second", &series)
    }
}

/// The benchmark plan's head-to-head table: each figure of A and B, and A ÷ B.
pub fn compare(a: &Report, b: &Report) -> String {
    let head = |r: &Report| format!("{} {}", r.implementation, r.label());
    let rows: [(&str, f64, f64); 8] = [
        ("Throughput (req/s)", a.summary.rps, b.summary.rps),
        ("Latency mean (ms)", a.summary.mean_ms, b.summary.mean_ms),
        ("Latency p50 (ms)", a.summary.p50_ms, b.summary.p50_ms),
        ("Latency p95 (ms)", a.summary.p95_ms, b.summary.p95_ms),
        ("Latency p99 (ms)", a.summary.p99_ms, b.summary.p99_ms),
        ("Latency p99.9 (ms)", a.summary.p999_ms, b.summary.p999_ms),
        ("Latency max (ms)", a.summary.max_ms, b.summary.max_ms),
        ("Errors", a.summary.errors as f64, b.summary.errors as f64),
    ];
    let mut out = String::new();
    let _ = writeln!(out, "A: {} ({}), {}", head(a), a.url, a.mode());
    let _ = writeln!(out, "B: {} ({}), {}\n", head(b), b.url, b.mode());
    let _ = writeln!(out, "| Metric | A | B | A ÷ B |\n|---|---|---|---|");
    for (name, x, y) in rows {
        let ratio = if y > 0.0 { format!("{:.2}×", x / y) } else { "—".into() };
        let _ = writeln!(out, "| {name} | {x} | {y} | {ratio} |");
    }
    out
}

/// Budgets: per scenario, limits a run must stay within. Read from a TOML subset:
/// `[section]` headers (a scenario name, or `default` for every scenario) and
/// `key = number` lines; `#` starts a comment.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Budgets {
    sections: BTreeMap<String, BTreeMap<String, f64>>,
}

const BUDGET_KEYS: [&str; 9] = [
    "min_rps",
    "min_baseline_ratio",
    "max_p50_ms",
    "max_p95_ms",
    "max_p99_ms",
    "max_p999_ms",
    "max_max_ms",
    "max_errors",
    "max_error_rate",
];

impl Budgets {
    /// Parses budgets; unknown keys are errors, so a typo cannot silently disable a check.
    pub fn parse(text: &str) -> Result<Self> {
        let mut budgets = Budgets::default();
        let mut section = String::from("default");
        for (index, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or_default().trim();
            let at = || format!("budgets line {}: '{}'", index + 1, raw.trim());
            if line.is_empty() {
                continue;
            }
            if let Some(name) = line.strip_prefix('[').and_then(|l| l.strip_suffix(']')) {
                section = name.trim().trim_matches('"').to_string();
                continue;
            }
            let (key, value) =
                line.split_once('=').with_context(|| format!("{}: expected key = number", at()))?;
            let key = key.trim();
            if !BUDGET_KEYS.contains(&key) {
                bail!("{}: unknown budget '{key}' (known: {})", at(), BUDGET_KEYS.join(", "));
            }
            let value: f64 = value
                .trim()
                .replace('_', "")
                .parse()
                .with_context(|| format!("{}: not a number", at()))?;
            budgets.sections.entry(section.clone()).or_default().insert(key.to_string(), value);
        }
        Ok(budgets)
    }

    /// The limits that apply to `scenario`: `default`, overridden by its own section.
    fn for_scenario(&self, scenario: &str) -> BTreeMap<String, f64> {
        let mut limits = self.sections.get("default").cloned().unwrap_or_default();
        if let Some(own) = self.sections.get(scenario) {
            limits.extend(own.clone());
        }
        limits
    }

    /// Every budget `report` exceeds, as readable lines; empty when it passes.
    pub fn check(&self, report: &Report) -> Vec<String> {
        let s = &report.summary;
        let error_rate = if s.requests > 0 { s.errors as f64 / s.requests as f64 } else { 0.0 };
        let mut violations = Vec::new();
        for (key, limit) in self.for_scenario(&report.scenario) {
            let (value, is_min) = match key.as_str() {
                "min_rps" => (s.rps, true),
                "min_baseline_ratio" => match &report.baseline {
                    Some(baseline) => (baseline.ratio, true),
                    None => {
                        violations.push(format!(
                            "{}: min_baseline_ratio needs a result measured with --baseline-url",
                            report.scenario
                        ));
                        continue;
                    }
                },
                "max_p50_ms" => (s.p50_ms, false),
                "max_p95_ms" => (s.p95_ms, false),
                "max_p99_ms" => (s.p99_ms, false),
                "max_p999_ms" => (s.p999_ms, false),
                "max_max_ms" => (s.max_ms, false),
                "max_errors" => (s.errors as f64, false),
                _ => (error_rate, false),
            };
            let broken = if is_min { value < limit } else { value > limit };
            if broken {
                violations.push(format!("{}: {key} = {limit}, measured {value}", report.scenario));
            }
        }
        if s.requests == 0 {
            violations.push(format!("{}: the run completed no requests", report.scenario));
        }
        violations
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn report(scenario: &str, rps: f64, p99: f64, errors: u64) -> Report {
        Report {
            tool: "mailroom bench".into(),
            version: "0".into(),
            url: "http://127.0.0.1:1".into(),
            implementation: "mailroom".into(),
            scenario: scenario.into(),
            via: "mcp".into(),
            concurrency: 10,
            duration_s: Some(5.0),
            rate: None,
            request_limit: None,
            timeout_ms: 5000,
            summary: Summary { requests: 1000, errors, rps, p99_ms: p99, ..Summary::default() },
            timeline_rps: vec![],
            setup: None,
            groups: vec![],
            monitor: None,
            dataset: None,
            baseline: None,
            push: None,
        }
    }

    const BUDGETS: &str = "
# floors
[default]
max_errors = 0

[health]
min_rps = 1_000   # at least
max_p99_ms = 10.5
";

    #[test]
    fn budgets_parse_and_check() {
        let budgets = Budgets::parse(BUDGETS).expect("test value");
        assert!(budgets.check(&report("health", 2000.0, 3.0, 0)).is_empty());
        let violations = budgets.check(&report("health", 900.0, 11.0, 2));
        assert_eq!(violations.len(), 3, "{violations:?}");
        assert!(violations[0].contains("max_errors = 0, measured 2"));
        // A scenario without a section still gets the defaults.
        assert_eq!(budgets.check(&report("send", 1.0, 900.0, 1)).len(), 1);

        let ratios = Budgets::parse("[health]\nmin_baseline_ratio = 0.8").expect("budgets");
        let mut run = report("health", 800.0, 1.0, 0);
        let missing = ratios.check(&run);
        assert!(missing[0].contains("--baseline-url"), "{missing:?}");
        let mut ceiling = report("health", 1000.0, 1.0, 0);
        run.baseline = Some(BaselineFigures::new(&ceiling, run.summary.rps));
        assert!(ratios.check(&run).is_empty());
        ceiling.summary.rps = 1100.0;
        run.baseline = Some(BaselineFigures::new(&ceiling, run.summary.rps));
        assert_eq!(ratios.check(&run), ["health: min_baseline_ratio = 0.8, measured 0.727"]);
    }

    #[test]
    fn budget_typos_are_errors() {
        let error = Budgets::parse("[health]\nmin_rsp = 3").expect_err("an error").to_string();
        assert!(error.contains("line 2") && error.contains("min_rsp"), "{error}");
        assert!(Budgets::parse("min_rps = fast").is_err());
    }

    #[test]
    fn reports_round_trip_through_json_with_flat_figures() {
        let original = report("inbox", 123.5, 4.0, 0);
        let json = serde_json::to_value(&original).expect("test value");
        for key in [
            "requests",
            "errors",
            "error_breakdown",
            "rps",
            "p50_ms",
            "p95_ms",
            "p99_ms",
            "p999_ms",
            "max_ms",
        ] {
            assert!(json.get(key).is_some(), "missing {key}");
        }
        let back: Report = serde_json::from_value(json).expect("test value");
        assert_eq!(back.summary, original.summary);
    }

    /// The table's and the Markdown page's figures are the same cells, one row per group.
    #[test]
    fn text_and_markdown_show_the_same_rows() {
        let mut run = report("mixed", 150.0, 4.0, 1);
        let writers = Summary { requests: 600, rps: 90.0, p99_ms: 2.5, ..Summary::default() };
        run.groups = vec![GroupReport { name: "writers".into(), concurrency: 3, summary: writers }];
        let text_rows: Vec<Vec<String>> = run
            .table()
            .lines()
            .filter(|line| line.contains("connections)"))
            .map(|line| {
                line.split("  ")
                    .map(str::trim)
                    .filter(|c| !c.is_empty())
                    .map(str::to_string)
                    .collect()
            })
            .collect();
        let markdown_rows: Vec<Vec<String>> = run
            .markdown()
            .lines()
            .filter(|line| line.contains("connections) |"))
            .map(|line| line.trim_matches(['|', ' ']).split(" | ").map(str::to_string).collect())
            .collect();
        let whole = ["all (10 connections)", "1000", "1", "150.0", "0.00", "0.00", "0.00", "4.00"];
        assert_eq!(text_rows[0][..8], whole, "{text_rows:?}");
        assert_eq!(text_rows[1][..4], ["writers (3 connections)", "600", "0", "90.0"]);
        assert_eq!(text_rows, markdown_rows);
    }

    #[test]
    fn comparisons_show_ratios() {
        let table = compare(&report("health", 2000.0, 2.0, 0), &report("health", 500.0, 8.0, 0));
        assert!(table.contains("| Throughput (req/s) | 2000 | 500 | 4.00× |"), "{table}");
        assert!(table.contains("| Latency p99 (ms) | 2 | 8 | 0.25× |"), "{table}");
        assert!(table.contains("| Errors | 0 | 0 | — |"), "{table}");
    }
}
