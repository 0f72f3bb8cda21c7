//! The operator's metrics: `GET /metrics` in Prometheus's text format (docs/compat/http.md §4).
//! Requests and latency by route, calls, latency and errors by tool, refusals, the database
//! writer's batch sizes, upkeep runs, webhook delivery attempts, and gauges read when scraped:
//! the database's size, the archive's queue and lag, the webhook queue, the MCP sessions.
//!
//! The hot paths touch atomics only. A request's route is found by its path in a matchit
//! table of the route tables' patterns (the router axum itself routes with), a tool's series
//! in a map of the registry's tool names, both built at start-up and read without allocating;
//! a series is made in its family on first use (`OnceLock`), so a scrape lists what was used.

use std::collections::HashMap;
use std::future::Future;
use std::pin::Pin;
use std::sync::OnceLock;
use std::task::{Context, Poll, ready};
use std::time::{Duration, Instant};

use axum::extract::State;
use axum::http::{Request, StatusCode, header};
use axum::response::{IntoResponse, Response};
use foldhash::fast::RandomState;
use mailroom_core::ops::webhooks::AttemptOutcome;
use prometheus::{
    Gauge, Histogram, HistogramOpts, HistogramVec, IntCounter, IntCounterVec, IntGauge,
    IntGaugeVec, Opts, Registry, TextEncoder,
};
use tower::Service;

use crate::state::AppState;

/// Latency buckets, in seconds: from half a millisecond (a cached read) to ten seconds.
const LATENCY_BUCKETS: [f64; 14] =
    [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0];

/// The `status` label of a response: its class.
const STATUS_CLASSES: [&str; 5] = ["1xx", "2xx", "3xx", "4xx", "5xx"];

/// The `route` label of a request no route matched (a route's is its pattern, starting `/`).
const UNMATCHED: &str = "unmatched";

/// The rate-limit buckets (`http/security`), listed at zero from the start.
const RATE_LIMIT_BUCKETS: [&str; 3] = ["tools", "resources", "other"];

/// Why the request check refused a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// 401: no valid bearer token or JWT.
    Unauthorized,
    /// 403: the roles do not allow it.
    Forbidden,
    /// 429: this rate-limit bucket (`tools`, `resources` or `other`) was empty.
    RateLimited(&'static str),
}

/// How an upkeep run ended (`mailroom_upkeep_runs_total`'s `outcome`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum UpkeepOutcome {
    Ok,
    Failed,
}

impl UpkeepOutcome {
    fn label(self) -> &'static str {
        match self {
            Self::Ok => "ok",
            Self::Failed => "failed",
        }
    }
}

/// The outcomes of a webhook delivery attempt (`mailroom_webhook_deliveries_total`'s `outcome`).
const WEBHOOK_OUTCOMES: [&str; 3] = ["delivered", "retried", "failed"];

/// Every family, registered once at start-up, and the series the hot paths use.
pub struct Metrics {
    registry: Registry,
    requests: IntCounterVec,
    request_seconds: HistogramVec,
    /// Each route's pattern and series, by index; index 0 is [`UNMATCHED`].
    routes: Vec<(String, RouteSeries)>,
    /// A path to its route's index.
    route_table: matchit::Router<usize>,
    tool_calls: IntCounterVec,
    tool_seconds: HistogramVec,
    tool_errors: IntCounterVec,
    tools: HashMap<&'static str, ToolSeries, RandomState>,
    access_refusals: IntCounterVec,
    rate_limit_refusals: IntCounterVec,
    upkeep_runs: IntCounterVec,
    webhook_deliveries: IntCounterVec,
    webhook_queue_depth: IntGauge,
    database_bytes: IntGauge,
    wal_bytes: IntGauge,
    archive_queue_depth: IntGauge,
    archive_lag_seconds: Gauge,
    mcp_sessions: IntGauge,
    archive_leader: IntGauge,
}

/// A route's series, made on its first request.
#[derive(Default)]
struct RouteSeries {
    /// Responses by status class ([`STATUS_CLASSES`]).
    responses: [OnceLock<IntCounter>; 5],
    seconds: OnceLock<Histogram>,
}

/// A tool's series, made on its first call.
#[derive(Default)]
struct ToolSeries {
    calls: OnceLock<IntCounter>,
    seconds: OnceLock<Histogram>,
}

impl Metrics {
    /// Registers every family. `routes` are the route tables' patterns (axum's syntax), `tools`
    /// the tools served, `batch_sizes` the database writer's histogram.
    pub fn new(
        routes: impl IntoIterator<Item = String>,
        tools: &[&'static str],
        batch_sizes: Histogram,
    ) -> Result<Self, String> {
        let registry = Registry::new();
        let family = Families(&registry);
        let requests = family.counters(
            "mailroom_http_requests_total",
            "HTTP requests answered, by route pattern and status class.",
            &["route", "status"],
        )?;
        let request_seconds = family.latency(
            "mailroom_http_request_duration_seconds",
            "Time to answer an HTTP request (until its headers), by route pattern.",
            &["route"],
        )?;
        let tool_calls =
            family.counters("mailroom_tool_calls_total", "MCP tool calls, by tool.", &["tool"])?;
        let tool_seconds = family.latency(
            "mailroom_tool_duration_seconds",
            "Time to run an MCP tool call, authentication included, by tool.",
            &["tool"],
        )?;
        let tool_errors = family.counters(
            "mailroom_tool_errors_total",
            "MCP tool calls that failed, by tool and error type (docs/compat/errors.md).",
            &["tool", "kind"],
        )?;
        let access_refusals = family.counters(
            "mailroom_access_refusals_total",
            "Requests refused by the request check: unauthorized (401) or forbidden (403).",
            &["reason"],
        )?;
        let rate_limit_refusals = family.counters(
            "mailroom_rate_limit_refusals_total",
            "Requests refused with 429, by rate-limit bucket.",
            &["bucket"],
        )?;
        let upkeep_runs = family.counters(
            "mailroom_upkeep_runs_total",
            "Background upkeep runs, by task and outcome (ok or failed).",
            &["task", "outcome"],
        )?;
        let webhook_deliveries = family.counters(
            "mailroom_webhook_deliveries_total",
            "Webhook delivery attempts, by outcome: delivered, retried (failed, tried again \
             later) or failed (given up).",
            &["outcome"],
        )?;
        let webhook_queue_depth = family.gauge(
            "mailroom_webhook_queue_depth",
            "Webhook deliveries waiting for a first or further attempt.",
        )?;
        let database = family.gauges(
            "mailroom_database_bytes",
            "Size of the SQLite database on disk, by file (database, wal).",
            &["file"],
        )?;
        let archive_queue_depth = family.gauge(
            "mailroom_archive_queue_depth",
            "Archive rows queued and not yet committed to Git.",
        )?;
        let archive_lag_seconds = Gauge::with_opts(Opts::new(
            "mailroom_archive_lag_seconds",
            "How long the oldest queued archive row has waited (0 when none waits).",
        ))
        .map_err(|e| e.to_string())?;
        family.register(archive_lag_seconds.clone())?;
        let mcp_sessions = family.gauge("mailroom_mcp_sessions", "Open MCP sessions.")?;
        let archive_leader = family.gauge(
            "mailroom_archive_leader",
            "1 while this server writes the archive and runs the upkeep (always alone on \
             SQLite; the lease holder of servers sharing PostgreSQL), else 0.",
        )?;
        family.register(batch_sizes)?;
        // Listed at zero from the start: a refusal is rare, and its first one should show as
        // an increase.
        for reason in ["unauthorized", "forbidden"] {
            access_refusals.with_label_values(&[reason]);
        }
        for bucket in RATE_LIMIT_BUCKETS {
            rate_limit_refusals.with_label_values(&[bucket]);
        }
        for outcome in WEBHOOK_OUTCOMES {
            webhook_deliveries.with_label_values(&[outcome]);
        }
        let mut patterns: Vec<String> = routes.into_iter().collect();
        patterns.sort();
        patterns.dedup();
        let mut route_table = matchit::Router::new();
        for (index, pattern) in patterns.iter().enumerate() {
            route_table
                .insert(pattern.as_str(), index + 1)
                .map_err(|e| format!("metrics: route {pattern}: {e}"))?;
        }
        let routes = std::iter::once(UNMATCHED.to_string())
            .chain(patterns)
            .map(|pattern| (pattern, RouteSeries::default()))
            .collect();
        Ok(Self {
            registry,
            requests,
            request_seconds,
            routes,
            route_table,
            tool_calls,
            tool_seconds,
            tool_errors,
            tools: tools.iter().map(|tool| (*tool, ToolSeries::default())).collect(),
            access_refusals,
            rate_limit_refusals,
            upkeep_runs,
            webhook_deliveries,
            webhook_queue_depth,
            database_bytes: database.with_label_values(&["database"]),
            wal_bytes: database.with_label_values(&["wal"]),
            archive_queue_depth,
            archive_lag_seconds,
            mcp_sessions,
            archive_leader,
        })
    }

    /// The index of the route a request's path matches (0: none does).
    fn route_of(&self, path: &str) -> usize {
        self.route_table.at(path).map_or(0, |found| *found.value)
    }

    /// Counts a request's answer and its latency, by its route's index.
    fn record_request(&self, route: usize, status: StatusCode, elapsed: Duration) {
        let Some((pattern, series)) = self.routes.get(route) else { return };
        let class = usize::from(status.as_u16() / 100).clamp(1, 5) - 1;
        let labels = [pattern.as_str(), STATUS_CLASSES[class]];
        let responses = &series.responses[class];
        responses.get_or_init(|| self.requests.with_label_values(&labels)).inc();
        let latency = || self.request_seconds.with_label_values(&[pattern.as_str()]);
        series.seconds.get_or_init(latency).observe(elapsed.as_secs_f64());
    }

    /// Counts a tool call the dispatcher ran, its latency and, when it failed, its error
    /// type (`kind`).
    pub fn record_tool_call(&self, tool: &'static str, elapsed: Duration, error: Option<&str>) {
        let seconds = elapsed.as_secs_f64();
        match self.tools.get(tool) {
            Some(series) => {
                series.calls.get_or_init(|| self.tool_calls.with_label_values(&[tool])).inc();
                let latency = || self.tool_seconds.with_label_values(&[tool]);
                series.seconds.get_or_init(latency).observe(seconds);
            }
            None => {
                self.tool_calls.with_label_values(&[tool]).inc();
                self.tool_seconds.with_label_values(&[tool]).observe(seconds);
            }
        }
        if let Some(kind) = error {
            self.tool_errors.with_label_values(&[tool, kind]).inc();
        }
    }

    /// Counts a request the request check refused.
    pub fn record_refusal(&self, refusal: Refusal) {
        match refusal {
            Refusal::Unauthorized => self.access_refusals.with_label_values(&["unauthorized"]),
            Refusal::Forbidden => self.access_refusals.with_label_values(&["forbidden"]),
            Refusal::RateLimited(bucket) => self.rate_limit_refusals.with_label_values(&[bucket]),
        }
        .inc();
    }

    /// Counts one run of a background upkeep task (`mailroom_upkeep_runs_total{task,outcome}`).
    /// `task` names the task in snake case (a fixed name: each one is a series).
    pub fn record_upkeep_run(&self, task: &'static str, outcome: UpkeepOutcome) {
        self.upkeep_runs.with_label_values(&[task, outcome.label()]).inc();
    }

    /// Counts one webhook delivery attempt (`mailroom_webhook_deliveries_total{outcome}`).
    pub fn record_webhook_attempt(&self, outcome: &AttemptOutcome) {
        let label = match outcome {
            AttemptOutcome::Delivered => WEBHOOK_OUTCOMES[0],
            AttemptOutcome::Retry { .. } => WEBHOOK_OUTCOMES[1],
            AttemptOutcome::Failed { .. } => WEBHOOK_OUTCOMES[2],
        };
        self.webhook_deliveries.with_label_values(&[label]).inc();
    }

    /// The text of a scrape: the gauges read now, then every family.
    async fn scrape(&self, state: &AppState) -> Result<String, String> {
        self.mcp_sessions.set(gauge_value(state.sessions.len() as u64));
        self.archive_leader.set(i64::from(state.core.leads()));
        match state.core.webhook_queue_depth().await {
            Ok(depth) => self.webhook_queue_depth.set(depth),
            Err(e) => tracing::warn!(error = %e.message, "metrics: webhook queue unavailable"),
        }
        match state.core.storage_facts().await {
            Ok(facts) => {
                self.database_bytes.set(gauge_value(facts.database_bytes));
                self.wal_bytes.set(gauge_value(facts.wal_bytes));
                self.archive_queue_depth.set(gauge_value(facts.archive_queue));
                let lag = facts.archive_oldest_wait.unwrap_or_default();
                self.archive_lag_seconds.set(lag.as_secs_f64());
            }
            // Everything else still tells the operator something; the lag is unknown.
            Err(e) => {
                tracing::warn!(error = %e.message, "metrics: storage facts unavailable");
                self.archive_lag_seconds.set(f64::NAN);
            }
        }
        TextEncoder::new().encode_to_string(&self.registry.gather()).map_err(|e| e.to_string())
    }
}

fn gauge_value(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// Registers families in one registry, naming the one that fails.
struct Families<'a>(&'a Registry);

impl Families<'_> {
    fn register<C: prometheus::core::Collector + 'static>(&self, c: C) -> Result<(), String> {
        self.0.register(Box::new(c)).map_err(|e| format!("metrics: {e}"))
    }

    fn counters(&self, name: &str, help: &str, labels: &[&str]) -> Result<IntCounterVec, String> {
        let family =
            IntCounterVec::new(Opts::new(name, help), labels).map_err(|e| e.to_string())?;
        self.register(family.clone())?;
        Ok(family)
    }

    fn latency(&self, name: &str, help: &str, labels: &[&str]) -> Result<HistogramVec, String> {
        let options = HistogramOpts::new(name, help).buckets(LATENCY_BUCKETS.to_vec());
        let family = HistogramVec::new(options, labels).map_err(|e| e.to_string())?;
        self.register(family.clone())?;
        Ok(family)
    }

    fn gauges(&self, name: &str, help: &str, labels: &[&str]) -> Result<IntGaugeVec, String> {
        let family = IntGaugeVec::new(Opts::new(name, help), labels).map_err(|e| e.to_string())?;
        self.register(family.clone())?;
        Ok(family)
    }

    fn gauge(&self, name: &str, help: &str) -> Result<IntGauge, String> {
        let gauge = IntGauge::with_opts(Opts::new(name, help)).map_err(|e| e.to_string())?;
        self.register(gauge.clone())?;
        Ok(gauge)
    }
}

/// The finished router behind the metrics: every answer counted by its route's pattern and
/// timed, the request check's refusals too. It wraps the router rather than being a layer on
/// it (a router's layer is cloned with each route's service for every request), and finds
/// the pattern itself: no boxed future, no allocation.
#[derive(Clone)]
pub struct Tracked<S> {
    inner: S,
    state: AppState,
}

impl<S> Tracked<S> {
    /// `inner`'s answers, counted in `state`'s metrics.
    pub fn new(inner: S, state: AppState) -> Self {
        Self { inner, state }
    }
}

impl<S, ReqBody, ResBody> Service<Request<ReqBody>> for Tracked<S>
where
    S: Service<Request<ReqBody>, Response = Response<ResBody>>,
    S::Future: Unpin,
{
    type Response = Response<ResBody>;
    type Error = S::Error;
    type Future = TrackedFuture<S::Future>;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        self.inner.poll_ready(cx)
    }

    fn call(&mut self, request: Request<ReqBody>) -> Self::Future {
        let started = Instant::now();
        let route = self.state.metrics.route_of(request.uri().path());
        let answer = self.inner.call(request);
        TrackedFuture { answer, state: self.state.clone(), route, started }
    }
}

/// A request's answer on its way, with what recording it needs.
pub struct TrackedFuture<F> {
    answer: F,
    state: AppState,
    route: usize,
    started: Instant,
}

impl<F, ResBody, E> Future for TrackedFuture<F>
where
    F: Future<Output = Result<Response<ResBody>, E>> + Unpin,
{
    type Output = F::Output;

    fn poll(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<Self::Output> {
        let this = &mut *self;
        let answer = ready!(Pin::new(&mut this.answer).poll(cx));
        if let Ok(response) = &answer {
            let elapsed = this.started.elapsed();
            this.state.metrics.record_request(this.route, response.status(), elapsed);
        }
        Poll::Ready(answer)
    }
}

/// `GET /metrics`: the Prometheus text exposition format (version 0.0.4).
pub async fn scrape(State(state): State<AppState>) -> Response {
    match state.metrics.scrape(&state).await {
        Ok(text) => ([(header::CONTENT_TYPE, prometheus::TEXT_FORMAT)], text).into_response(),
        Err(e) => {
            tracing::error!(error = %e, "metrics: encoding failed");
            (StatusCode::INTERNAL_SERVER_ERROR, "metrics encoding failed\n").into_response()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INBOX: &str = "/mail/{project}/inbox/{agent}";

    fn metrics() -> Metrics {
        let options = HistogramOpts::new("mailroom_store_batch_size", "Jobs per batch.");
        let batch_sizes = Histogram::with_opts(options).expect("histogram");
        let routes = ["/mcp", INBOX, "/mcp"].map(String::from);
        Metrics::new(routes, &["whois"], batch_sizes).expect("metrics")
    }

    fn text(metrics: &Metrics) -> String {
        TextEncoder::new().encode_to_string(&metrics.registry.gather()).expect("text")
    }

    fn assert_lines(text: &str, lines: &[&str]) {
        for line in lines {
            assert!(text.lines().any(|l| l == *line), "{line} not in:\n{text}");
        }
    }

    #[test]
    fn requests_count_by_the_pattern_their_path_matches() {
        let metrics = metrics();
        assert_eq!(metrics.routes[metrics.route_of("/mcp")].0, "/mcp");
        assert_eq!(metrics.routes[metrics.route_of("/mail/p/inbox/Blue%20Lake")].0, INBOX);
        for path in ["/elsewhere", "/mcp/x", "/mail/p/inbox", ""] {
            assert_eq!(metrics.route_of(path), 0, "{path}");
        }
        let three_ms = Duration::from_millis(3);
        for (path, status) in [
            ("/mcp", StatusCode::OK),
            ("/mcp", StatusCode::CREATED),
            ("/mail/a/inbox/B", StatusCode::INTERNAL_SERVER_ERROR),
            ("/elsewhere", StatusCode::NOT_FOUND),
        ] {
            metrics.record_request(metrics.route_of(path), status, three_ms);
        }
        let text = text(&metrics);
        assert_lines(
            &text,
            &[
                r#"mailroom_http_requests_total{route="/mcp",status="2xx"} 2"#,
                r#"mailroom_http_requests_total{route="/mail/{project}/inbox/{agent}",status="5xx"} 1"#,
                r#"mailroom_http_requests_total{route="unmatched",status="4xx"} 1"#,
                r#"mailroom_http_request_duration_seconds_bucket{route="/mcp",le="0.0025"} 0"#,
                r#"mailroom_http_request_duration_seconds_bucket{route="/mcp",le="0.005"} 2"#,
                r#"mailroom_http_request_duration_seconds_count{route="unmatched"} 1"#,
            ],
        );
        assert!(!text.contains(r#"status="3xx""#), "a series is made on first use:\n{text}");
    }

    /// The route tables' patterns, duplicates and all, make one table (axum accepted them).
    #[test]
    fn every_route_of_the_tables_has_its_place() {
        let patterns = crate::http::route_patterns("/mcp");
        let options = HistogramOpts::new("mailroom_store_batch_size", "Jobs per batch.");
        let batch_sizes = Histogram::with_opts(options).expect("histogram");
        let metrics = Metrics::new(patterns.clone(), &[], batch_sizes).expect("metrics");
        for pattern in patterns.iter().filter(|p| !p.contains('{')) {
            assert_eq!(&metrics.routes[metrics.route_of(pattern)].0, pattern);
        }
    }

    #[test]
    fn tool_calls_errors_refusals_and_upkeep() {
        let metrics = metrics();
        let ms = Duration::from_millis(1);
        metrics.record_tool_call("whois", ms, None);
        metrics.record_tool_call("whois", ms, Some("NOT_FOUND"));
        metrics.record_tool_call("not_catalogued", ms, Some("INVALID_ARGUMENT"));
        metrics.record_refusal(Refusal::Unauthorized);
        metrics.record_refusal(Refusal::RateLimited("tools"));
        metrics.record_upkeep_run("sweep", UpkeepOutcome::Failed);
        metrics.record_webhook_attempt(&AttemptOutcome::Delivered);
        let retry = AttemptOutcome::Retry { next_attempt_us: 0, error: "HTTP 500".into() };
        metrics.record_webhook_attempt(&retry);
        metrics.record_webhook_attempt(&retry);
        assert_lines(
            &text(&metrics),
            &[
                r#"mailroom_tool_calls_total{tool="whois"} 2"#,
                r#"mailroom_tool_duration_seconds_count{tool="whois"} 2"#,
                r#"mailroom_tool_errors_total{kind="NOT_FOUND",tool="whois"} 1"#,
                r#"mailroom_tool_calls_total{tool="not_catalogued"} 1"#,
                r#"mailroom_tool_errors_total{kind="INVALID_ARGUMENT",tool="not_catalogued"} 1"#,
                r#"mailroom_access_refusals_total{reason="unauthorized"} 1"#,
                r#"mailroom_access_refusals_total{reason="forbidden"} 0"#,
                r#"mailroom_rate_limit_refusals_total{bucket="tools"} 1"#,
                r#"mailroom_rate_limit_refusals_total{bucket="resources"} 0"#,
                r#"mailroom_upkeep_runs_total{outcome="failed",task="sweep"} 1"#,
                r#"mailroom_webhook_deliveries_total{outcome="delivered"} 1"#,
                r#"mailroom_webhook_deliveries_total{outcome="retried"} 2"#,
                r#"mailroom_webhook_deliveries_total{outcome="failed"} 0"#,
                "# TYPE mailroom_store_batch_size histogram",
            ],
        );
    }
}
