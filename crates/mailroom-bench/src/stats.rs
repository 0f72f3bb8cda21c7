//! The lab's statistics: latency histograms, error kinds, and the pacing of fixed-rate runs.
//!
//! Everything here is pure (times are `Duration`s since the run started), so the engine's
//! arithmetic is unit-tested on synthetic latencies without a wall clock.

use std::collections::BTreeMap;
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::{Deserialize, Serialize};

/// Latencies are recorded in microseconds, from 1 µs to 10 minutes, with 3 significant
/// digits (HdrHistogram's usual precision: ±0.1 %).
const LOWEST_MICROS: u64 = 1;
const HIGHEST_MICROS: u64 = 600_000_000;
const SIGNIFICANT_DIGITS: u8 = 3;

/// Why one request did not count as a success.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Failure {
    /// The server answered with a non-2xx status.
    Status(u16),
    /// No complete answer within the request timeout.
    Timeout,
    /// The TCP connection (or the HTTP handshake) could not be made.
    Connect,
    /// The connection broke while the request was in flight.
    Io,
    /// An MCP tool answered `isError: true`.
    ToolError,
    /// The JSON-RPC answer carried an `error` member.
    JsonRpcError,
    /// A 2xx answer whose body was not what the scenario expects.
    BadBody,
}

impl Failure {
    /// The key used in `error_breakdown`.
    pub fn key(self) -> String {
        match self {
            Failure::Status(code) => format!("status_{code}"),
            Failure::Timeout => "timeout".into(),
            Failure::Connect => "connect".into(),
            Failure::Io => "io".into(),
            Failure::ToolError => "tool_error".into(),
            Failure::JsonRpcError => "jsonrpc_error".into(),
            Failure::BadBody => "bad_body".into(),
        }
    }

    /// Whether the server answered at all (its latency is then part of the histogram, as in
    /// wrk and hey); transport failures have no meaningful latency.
    fn answered(self) -> bool {
        matches!(
            self,
            Failure::Status(_) | Failure::ToolError | Failure::JsonRpcError | Failure::BadBody
        )
    }
}

/// One worker's (or a whole run's) outcomes: a latency histogram and error counts.
#[derive(Debug, Clone)]
pub struct Recorder {
    histogram: Histogram<u64>,
    ok: u64,
    errors: BTreeMap<String, u64>,
    /// Completed requests per second of the run (index = whole seconds since the start).
    seconds: Vec<u64>,
}

impl Default for Recorder {
    fn default() -> Self {
        Self::new()
    }
}

impl Recorder {
    /// An empty recorder.
    pub fn new() -> Self {
        // The bounds are constants that hdrhistogram accepts (low ≥ 1, high ≥ 2·low, 3 digits).
        let histogram =
            Histogram::new_with_bounds(LOWEST_MICROS, HIGHEST_MICROS, SIGNIFICANT_DIGITS)
                .expect("valid histogram bounds");
        Self { histogram, ok: 0, errors: BTreeMap::new(), seconds: Vec::new() }
    }

    /// Records a success that took `latency`.
    pub fn record_ok(&mut self, latency: Duration) {
        self.ok += 1;
        self.record_latency(latency);
    }

    /// Records a failure; answered failures also record their latency.
    pub fn record_failure(&mut self, failure: Failure, latency: Duration) {
        *self.errors.entry(failure.key()).or_insert(0) += 1;
        if failure.answered() {
            self.record_latency(latency);
        }
    }

    /// Counts a request completed at `done` (since the start) in the per-second timeline.
    pub fn record_completion(&mut self, done: Duration) {
        let second = usize::try_from(done.as_secs()).unwrap_or(usize::MAX);
        if second >= self.seconds.len() {
            // A run's length bounds this; a wildly late clock must not allocate unboundedly.
            if second > 366 * 24 * 3600 {
                return;
            }
            self.seconds.resize(second + 1, 0);
        }
        self.seconds[second] += 1;
    }

    /// Completed requests in each second of a run that lasted `elapsed`. A final partial
    /// second is kept only if the run covered most of it, so short runs still have a timeline
    /// and no second is grossly under-counted.
    pub fn timeline(&self, elapsed: Duration) -> Vec<u64> {
        let whole = elapsed.as_secs_f64().round() as usize;
        let mut timeline = self.seconds.clone();
        timeline.resize(whole, 0);
        timeline
    }

    fn record_latency(&mut self, latency: Duration) {
        let micros = u64::try_from(latency.as_micros()).unwrap_or(u64::MAX);
        // Values beyond the highest trackable one are clamped rather than dropped.
        self.histogram.saturating_record(micros.max(LOWEST_MICROS));
    }

    /// Adds another recorder's outcomes to this one.
    pub fn merge(&mut self, other: &Recorder) {
        // Both histograms share the same bounds, so adding cannot fail; clamp if it ever did.
        if self.histogram.add(&other.histogram).is_err() {
            for value in other.histogram.iter_recorded() {
                self.histogram
                    .saturating_record_n(value.value_iterated_to(), value.count_at_value());
            }
        }
        self.ok += other.ok;
        if other.seconds.len() > self.seconds.len() {
            self.seconds.resize(other.seconds.len(), 0);
        }
        for (mine, theirs) in self.seconds.iter_mut().zip(&other.seconds) {
            *mine += theirs;
        }
        for (key, count) in &other.errors {
            *self.errors.entry(key.clone()).or_insert(0) += count;
        }
    }

    /// Failures so far.
    pub fn errors(&self) -> u64 {
        self.errors.values().sum()
    }

    /// The figures of a run that lasted `elapsed`.
    pub fn summary(&self, elapsed: Duration) -> Summary {
        let errors = self.errors();
        let requests = self.ok + errors;
        let seconds = elapsed.as_secs_f64();
        let empty = self.histogram.is_empty();
        let at = |quantile: f64| {
            if empty { 0.0 } else { micros_to_ms(self.histogram.value_at_quantile(quantile)) }
        };
        Summary {
            requests,
            ok: self.ok,
            errors,
            error_breakdown: self.errors.clone(),
            elapsed_s: round3(seconds),
            rps: if seconds > 0.0 { round3(requests as f64 / seconds) } else { 0.0 },
            mean_ms: if empty { 0.0 } else { round3(self.histogram.mean() / 1000.0) },
            p50_ms: at(0.50),
            p90_ms: at(0.90),
            p95_ms: at(0.95),
            p99_ms: at(0.99),
            p999_ms: at(0.999),
            max_ms: if empty { 0.0 } else { micros_to_ms(self.histogram.max()) },
        }
    }
}

fn micros_to_ms(micros: u64) -> f64 {
    round3(micros as f64 / 1000.0)
}

fn round3(value: f64) -> f64 {
    (value * 1000.0).round() / 1000.0
}

/// A run's figures; latencies in milliseconds (of answered requests), rates per second.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Summary {
    pub requests: u64,
    pub ok: u64,
    pub errors: u64,
    pub error_breakdown: BTreeMap<String, u64>,
    pub elapsed_s: f64,
    pub rps: f64,
    pub mean_ms: f64,
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p95_ms: f64,
    pub p99_ms: f64,
    pub p999_ms: f64,
    pub max_ms: f64,
}

/// When one worker of a fixed-rate run should send its requests.
///
/// The global rate `R` is shared by `N` workers: worker `i` sends its `k`-th request at
/// `(i + k·N) / R` seconds, so together they send one request every `1/R` seconds, evenly
/// interleaved (wrk2's per-connection schedule). Times are computed from the start, never
/// accumulated, so the schedule does not drift.
#[derive(Debug, Clone)]
pub struct Pacer {
    worker: u64,
    workers: u64,
    rate: f64,
    next: u64,
}

impl Pacer {
    /// The schedule of worker `worker` (0-based) of `workers`, at `rate` requests per second
    /// in total; `rate` must be positive.
    pub fn new(worker: usize, workers: usize, rate: f64) -> Self {
        Self { worker: worker as u64, workers: workers.max(1) as u64, rate, next: 0 }
    }

    /// The intended send time of the next request, since the start of the run.
    pub fn next_intended(&mut self) -> Duration {
        let slot = self.worker + self.next * self.workers;
        self.next += 1;
        Duration::from_secs_f64(slot as f64 / self.rate)
    }
}

/// The latency of a request intended at `intended` that completed at `done` (both since the
/// start). Measuring from the intended time rather than from the actual send corrects for
/// coordinated omission: when the server stalls, the requests that should have been sent
/// during the stall are charged the time they waited.
pub fn corrected_latency(intended: Duration, done: Duration) -> Duration {
    done.saturating_sub(intended)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms(value: u64) -> Duration {
        Duration::from_millis(value)
    }

    #[test]
    fn percentiles_of_a_uniform_spread() {
        let mut recorder = Recorder::new();
        for value in 1..=1000 {
            recorder.record_ok(ms(value));
        }
        let summary = recorder.summary(Duration::from_secs(2));
        let check = |name: &str, got: f64, want: f64| {
            // HdrHistogram with 3 significant digits is within 0.1 % of the true value.
            assert!((got - want).abs() <= want * 0.001 + 0.001, "{name}: got {got}, want {want}");
        };
        check("p50", summary.p50_ms, 500.0);
        check("p90", summary.p90_ms, 900.0);
        check("p95", summary.p95_ms, 950.0);
        check("p99", summary.p99_ms, 990.0);
        check("p999", summary.p999_ms, 999.0);
        check("max", summary.max_ms, 1000.0);
        check("mean", summary.mean_ms, 500.5);
        assert_eq!(summary.requests, 1000);
        assert_eq!(summary.rps, 500.0);
    }

    #[test]
    fn failures_are_broken_down_and_only_answers_have_latency() {
        let mut recorder = Recorder::new();
        recorder.record_ok(ms(1));
        recorder.record_failure(Failure::Status(503), ms(2));
        recorder.record_failure(Failure::Status(503), ms(2));
        recorder.record_failure(Failure::ToolError, ms(3));
        recorder.record_failure(Failure::Timeout, ms(5000));
        recorder.record_failure(Failure::Connect, Duration::ZERO);
        let summary = recorder.summary(Duration::from_secs(1));
        assert_eq!((summary.requests, summary.ok, summary.errors), (6, 1, 5));
        let breakdown: Vec<(&str, u64)> =
            summary.error_breakdown.iter().map(|(k, v)| (k.as_str(), *v)).collect();
        assert_eq!(
            breakdown,
            [("connect", 1), ("status_503", 2), ("timeout", 1), ("tool_error", 1)]
        );
        // The timeout's 5 s is not a latency: the slowest answer took 3 ms.
        assert!((summary.max_ms - 3.0).abs() < 0.01, "max {}", summary.max_ms);
    }

    #[test]
    fn merging_adds_counts_and_histograms() {
        let mut total = Recorder::new();
        let mut fast = Recorder::new();
        let mut slow = Recorder::new();
        for _ in 0..90 {
            fast.record_ok(ms(1));
        }
        for _ in 0..10 {
            slow.record_ok(ms(100));
        }
        slow.record_failure(Failure::JsonRpcError, ms(100));
        total.merge(&fast);
        total.merge(&slow);
        let summary = total.summary(Duration::from_secs(1));
        assert_eq!((summary.requests, summary.ok, summary.errors), (101, 100, 1));
        assert_eq!(summary.p50_ms, 1.0);
        assert!((summary.p95_ms - 100.0).abs() < 0.1, "p95 {}", summary.p95_ms);
    }

    #[test]
    fn the_timeline_counts_completions_per_second() {
        let mut a = Recorder::new();
        let mut b = Recorder::new();
        for millis in [10, 500, 999, 1000, 2400] {
            a.record_completion(ms(millis));
        }
        b.record_completion(ms(1500));
        a.merge(&b);
        assert_eq!(a.timeline(ms(2600)), [3, 2, 1]);
        // 2.4 s: the third second is mostly missing, so it is left out.
        assert_eq!(a.timeline(ms(2400)), [3, 2]);
        assert_eq!(Recorder::new().timeline(ms(1900)), [0, 0]);
    }

    #[test]
    fn an_empty_run_reports_zeros() {
        let summary = Recorder::new().summary(Duration::ZERO);
        assert_eq!(summary, Summary::default());
    }

    #[test]
    fn workers_interleave_evenly_at_the_global_rate() {
        // 4 workers at 1000 rps: together, one request every millisecond, none twice.
        let mut pacers: Vec<Pacer> = (0..4).map(|i| Pacer::new(i, 4, 1000.0)).collect();
        let mut times: Vec<Duration> = pacers
            .iter_mut()
            .flat_map(|p| (0..250).map(|_| p.next_intended()).collect::<Vec<_>>())
            .collect();
        times.sort();
        for (k, time) in times.iter().enumerate() {
            let want = Duration::from_secs_f64(k as f64 / 1000.0);
            assert!(time.abs_diff(want) < Duration::from_nanos(10), "slot {k}: {time:?}");
        }
        // Each worker sends every 4 ms.
        let mut pacer = Pacer::new(1, 4, 1000.0);
        assert_eq!(pacer.next_intended(), ms(1));
        assert_eq!(pacer.next_intended(), ms(5));
    }

    #[test]
    fn the_schedule_does_not_drift_over_long_runs() {
        let mut pacer = Pacer::new(0, 1, 3.0);
        let mut last = Duration::ZERO;
        for _ in 0..=30_000 {
            last = pacer.next_intended();
        }
        // The 30 001st request of a 3 rps schedule is due at exactly 10 000 s.
        assert!(last.abs_diff(Duration::from_secs(10_000)) < Duration::from_micros(1));
    }

    /// Simulates one fixed-rate worker against a server that takes `service(k)` for request
    /// `k`; returns (corrected, naive) recorders. The worker sends at its intended time, or
    /// as soon as the previous answer arrives when it is late, exactly as the engine does.
    fn simulate(rate: f64, count: u64, service: impl Fn(u64) -> Duration) -> (Recorder, Recorder) {
        let mut pacer = Pacer::new(0, 1, rate);
        let (mut corrected, mut naive) = (Recorder::new(), Recorder::new());
        let mut free_at = Duration::ZERO;
        for k in 0..count {
            let intended = pacer.next_intended();
            let sent = intended.max(free_at);
            let done = sent + service(k);
            free_at = done;
            corrected.record_ok(corrected_latency(intended, done));
            naive.record_ok(done - sent);
        }
        (corrected, naive)
    }

    #[test]
    fn coordinated_omission_is_corrected() {
        // 100 rps for 10 s, 1 ms per request, but request 500 stalls the server for 1 s.
        let (corrected, naive) = simulate(100.0, 1000, |k| if k == 500 { ms(1000) } else { ms(1) });
        let naive = naive.summary(Duration::from_secs(10));
        let corrected = corrected.summary(Duration::from_secs(10));
        // Measured from the actual send, the stall looks like a single slow request...
        assert!(naive.p99_ms <= 1.01, "naive p99 {}", naive.p99_ms);
        assert!((naive.max_ms - 1000.0).abs() <= 1.0, "naive max {}", naive.max_ms);
        // ...but the ~100 requests that were due during the stall each waited for it.
        assert!(corrected.p90_ms >= 1.0 && corrected.p95_ms >= 450.0, "{corrected:?}");
        assert!(corrected.p99_ms >= 890.0, "corrected p99 {}", corrected.p99_ms);
        assert!((corrected.max_ms - 1000.0).abs() <= 1.0);
    }

    #[test]
    fn an_unloaded_server_measures_the_same_either_way() {
        let (corrected, naive) = simulate(100.0, 500, |_| ms(2));
        let d = Duration::from_secs(5);
        assert_eq!(corrected.summary(d), naive.summary(d));
    }
}
