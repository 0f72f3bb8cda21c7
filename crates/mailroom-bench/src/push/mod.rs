//! The push scenario: many agents, each told of its new mail the moment it arrives, and the
//! latency from a send's reply to that agent's notification (issue 37's "push at scale").
//!
//! Setup registers `subscribers` agents through the target's tools. The same send load, each
//! message to one random agent, then runs with nobody listening, with every agent listening,
//! each in its own MCP session with its GET event stream open and its inbox subscribed
//! (`streams.rs`) or watching its signal file (`signals.rs`, for servers that write the
//! reference's signal files), and with nobody listening again. The send rates, measured in
//! one run, say what listening costs the senders; `ledger.rs` matches notifications to sends.

mod ledger;
mod signals;
mod streams;

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use anyhow::{Result, bail};
use serde::{Deserialize, Serialize};
use serde_json::json;
use tokio::task::JoinHandle;
use tokio::time::{Instant, sleep};

pub use ledger::{Ledger, Tally};

use crate::engine::{Outcome, RunConfig, drive};
use crate::report::{GroupReport, Report};
use crate::scenario::{Choice, Picker, Plan, Setup, send_plan};
use crate::stats::Summary;
use crate::target::Implementation;

/// How often awaited notifications are checked against the deadline.
const SWEEP_EVERY: Duration = Duration::from_millis(50);
/// Signal files are watched once none has been written for this long (the signals of the
/// sends made with nobody listening are written all the same)…
const SIGNALS_QUIET: Duration = Duration::from_millis(500);
/// …or after this long at most.
const SIGNALS_SETTLE_LIMIT: Duration = Duration::from_secs(60);

/// The push scenario's parameters.
#[derive(Debug, Clone, PartialEq)]
pub struct PushOptions {
    /// Agents listening for their mail.
    pub subscribers: usize,
    /// Watch the signal files under this directory (the server's `NOTIFICATIONS_SIGNALS_DIR`,
    /// as this machine sees it) instead of MCP event streams.
    pub signals_dir: Option<PathBuf>,
    /// A notification not come this long after its send's reply is missed.
    pub deadline: Duration,
}

impl Default for PushOptions {
    fn default() -> Self {
        Self { subscribers: 1_000, signals_dir: None, deadline: Duration::from_secs(5) }
    }
}

/// A latency distribution, in milliseconds.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct Latencies {
    pub p50_ms: f64,
    pub p90_ms: f64,
    pub p99_ms: f64,
    pub max_ms: f64,
}

impl From<&Summary> for Latencies {
    fn from(s: &Summary) -> Self {
        Self { p50_ms: s.p50_ms, p90_ms: s.p90_ms, p99_ms: s.p99_ms, max_ms: s.max_ms }
    }
}

/// What a push run measured beside its send figures.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct PushFigures {
    /// `mcp-stream` or `signal-file`.
    pub notifier: String,
    pub subscribers: usize,
    pub deadline_ms: u64,
    #[serde(flatten)]
    pub tally: Tally,
    /// From a send's reply being read to its agent's notification (0 when it came first).
    pub notify: Latencies,
    /// From a send's request being written to its agent's notification.
    pub notify_from_request: Latencies,
    /// Send rates with nobody listening and with every agent listening, and the second over
    /// the first.
    pub send_rps_unsubscribed: f64,
    pub send_rps_subscribed: f64,
    pub send_rate_ratio: f64,
    /// This client's CPU over each phase, in percent of one core (if it nears 100 % a core,
    /// the client, not the server, sets the pace).
    pub client_cpu_percent_unsubscribed: f64,
    pub client_cpu_percent_subscribed: f64,
}

impl PushFigures {
    /// The lines the text table and the Markdown page print.
    pub(crate) fn lines(&self) -> Vec<String> {
        let t = &self.tally;
        let latency = |l: &Latencies| {
            format!(
                "p50 {:.2} ms, p90 {:.2} ms, p99 {:.2} ms, max {:.2} ms",
                l.p50_ms, l.p90_ms, l.p99_ms, l.max_ms
            )
        };
        vec![
            format!(
                "push: {} subscribers by {}; notified {} ({} before the reply), missed {} \
                 (deadline {} ms), late {}, unexpected {}, failed sends {}, streams lost {}",
                self.subscribers,
                self.notifier,
                t.delivered,
                t.before_reply,
                t.missed,
                self.deadline_ms,
                t.late,
                t.unexpected,
                t.failed_sends,
                t.streams_lost
            ),
            format!("notify latency from the send's reply: {}", latency(&self.notify)),
            format!(
                "notify latency from the send's request: {}",
                latency(&self.notify_from_request)
            ),
            format!(
                "send rate: {:.1} req/s with nobody listening, {:.1} req/s with {} listening \
                 ({:.3}×); client CPU {:.0} % and {:.0} % of a core",
                self.send_rps_unsubscribed,
                self.send_rps_subscribed,
                self.subscribers,
                self.send_rate_ratio,
                self.client_cpu_percent_unsubscribed,
                self.client_cpu_percent_subscribed
            ),
        ]
    }
}

/// The ledger shared by the sending workers and the listeners, on one clock.
#[derive(Debug)]
pub(crate) struct SharedLedger {
    origin: Instant,
    ledger: Mutex<Ledger>,
}

impl SharedLedger {
    fn new(agents: usize, deadline: Duration) -> Self {
        let seed = std::process::id().into();
        Self { origin: Instant::now(), ledger: Mutex::new(Ledger::new(agents, deadline, seed)) }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Ledger> {
        self.ledger.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn since(&self, at: Instant) -> Duration {
        at.saturating_duration_since(self.origin)
    }

    /// A notification for `agent` came at `at`.
    pub(crate) fn notified(&self, agent: usize, at: Instant) {
        let at = self.since(at);
        self.lock().notified(agent, at);
    }

    /// `agent`'s stream ended.
    pub(crate) fn stream_lost(&self, agent: usize) {
        self.lock().stream_lost(agent);
    }
}

impl Picker for SharedLedger {
    fn pick(&self) -> Choice {
        let now = self.since(Instant::now());
        self.lock().pick(now)
    }

    fn answered(&self, call: usize, done: Instant, ok: bool) {
        let done = self.since(done);
        self.lock().answered(call, done, ok);
    }
}

/// The sends of the phase with nobody listening: one random agent each, as the listened-to
/// phase draws them, with nothing awaited.
#[derive(Debug)]
struct AnyAgent {
    agents: usize,
    rng: Mutex<fastrand::Rng>,
}

impl Picker for AnyAgent {
    fn pick(&self) -> Choice {
        let mut rng = self.rng.lock().unwrap_or_else(|p| p.into_inner());
        Choice::Call(rng.usize(..self.agents))
    }

    fn answered(&self, _call: usize, _done: Instant, _ok: bool) {}
}

/// Tasks that end when this is dropped (the listeners, the sweeper).
#[derive(Default)]
pub(crate) struct Tasks(Vec<JoinHandle<()>>);

impl Tasks {
    pub(crate) fn push(&mut self, task: JoinHandle<()>) {
        self.0.push(task);
    }
}

impl Drop for Tasks {
    fn drop(&mut self) {
        for task in &self.0 {
            task.abort();
        }
    }
}

/// Runs the push scenario: setup; the send load with nobody listening for half the duration;
/// the listeners and the same load with every agent listening; the notifications still
/// awaited; the listeners gone, the load with nobody listening for the other half.
pub(crate) async fn run(config: &RunConfig, workers: usize) -> Result<Report> {
    let options = &config.push;
    let target = &config.target;
    if options.subscribers == 0 {
        bail!("--subscribers: the push scenario needs at least one subscribed agent");
    }
    if options.signals_dir.is_none() && target.implementation == Implementation::PythonReference {
        bail!(
            "the Python reference offers no resource subscriptions; start it with \
             NOTIFICATIONS_ENABLED=true and watch its signal files with --signals-dir"
        );
    }
    let mut setup = Setup::connect(target).await?;
    let fixture = setup.fixture(options.subscribers).await?;
    let (calls, expect) = send_plan(target, config.via, &fixture)?;

    // Nobody listening, then everyone, then nobody again, the first and last half as long:
    // a drift over the run (the database growing, the archive catching up) weighs on both.
    let rng = Mutex::new(fastrand::Rng::with_seed(std::process::id().into()));
    let anyone: Arc<dyn Picker> = Arc::new(AnyAgent { agents: fixture.receivers.len(), rng });
    let unlistened = Plan { calls: calls.clone(), expect, picker: Some(anyone) };
    let half = halved(config);
    let before = measured(&half, workers, ("nobody listening", unlistened.clone())).await;

    let ledger = Arc::new(SharedLedger::new(fixture.receivers.len(), options.deadline));
    let (mut tasks, sessions) = match &options.signals_dir {
        Some(dir) => {
            signals::settle(dir, &fixture.project, SIGNALS_QUIET, SIGNALS_SETTLE_LIMIT).await;
            (signals::watch(dir, &fixture.project, &fixture.receivers, &ledger)?, None)
        }
        None => {
            let (tasks, sessions) =
                streams::subscribe(target, &fixture.project, &fixture.receivers, &ledger).await?;
            (tasks, Some(sessions))
        }
    };
    tasks.push(tokio::spawn(sweep(ledger.clone())));
    let plan = Plan { calls, expect, picker: Some(ledger.clone()) };
    let listened = measured(config, workers, ("listening", plan)).await;
    // The notifications still awaited have until their deadline.
    let waited = Instant::now();
    while ledger.lock().outstanding() > 0 && waited.elapsed() <= options.deadline {
        sleep(Duration::from_millis(10)).await;
    }
    drop(tasks);
    if let Some(sessions) = sessions {
        sessions.end().await?;
    }
    let after = measured(&half, workers, ("nobody listening", unlistened)).await;

    let (tally, from_reply, from_request) = {
        let mut ledger = ledger.lock();
        ledger.finish();
        let (from_reply, from_request) = ledger.latencies();
        (ledger.tally().clone(), from_reply, from_request)
    };
    let unlistened_rps = (before.outcome.total.rps + after.outcome.total.rps) / 2.0;
    let listened_rps = listened.outcome.total.rps;
    let ratio = if unlistened_rps > 0.0 {
        (listened_rps / unlistened_rps * 1000.0).round() / 1000.0
    } else {
        0.0
    };
    let figures = PushFigures {
        notifier: if options.signals_dir.is_some() { "signal-file" } else { "mcp-stream" }.into(),
        subscribers: fixture.receivers.len(),
        deadline_ms: u64::try_from(options.deadline.as_millis()).unwrap_or(u64::MAX),
        tally,
        notify: Latencies::from(&from_reply),
        notify_from_request: Latencies::from(&from_request),
        send_rps_unsubscribed: (unlistened_rps * 1000.0).round() / 1000.0,
        send_rps_subscribed: listened_rps,
        send_rate_ratio: ratio,
        client_cpu_percent_unsubscribed: (before.client_cpu + after.client_cpu) / 2.0,
        client_cpu_percent_subscribed: listened.client_cpu,
    };
    let setup = json!({"project": fixture.project, "sender": fixture.sender,
                       "subscribers": fixture.receivers.len()});
    let Outcome { total, timeline, monitor, .. } = listened.outcome;
    let mut report = Report::new(config, workers, Some(setup), total.clone(), timeline);
    report.monitor = monitor;
    let phases = [
        ("nobody listening, before", before.outcome.total),
        ("listening", total),
        ("nobody listening, after", after.outcome.total),
    ];
    report.groups = phases
        .into_iter()
        .map(|(name, summary)| GroupReport { name: name.into(), concurrency: workers, summary })
        .collect();
    report.push = Some(figures);
    Ok(report)
}

/// `config` with half its duration (and half its request count).
fn halved(config: &RunConfig) -> RunConfig {
    let mut half = config.clone();
    half.duration = config.duration.map(|d| d / 2);
    half.requests = config.requests.map(|n| n.div_ceil(2));
    half
}

/// One phase's outcome and this client's CPU over it.
struct Phase {
    outcome: Outcome,
    /// Percent of one core.
    client_cpu: f64,
}

/// Drives one phase, timing this process's CPU over it.
async fn measured(config: &RunConfig, workers: usize, (name, plan): (&str, Plan)) -> Phase {
    let cpu = || crate::monitor::sample(std::process::id(), 0.0).map(|s| s.cpu_s);
    let (before, started) = (cpu(), Instant::now());
    let outcome = drive(config, &[(name.to_string(), workers, plan)], workers).await;
    let seconds = started.elapsed().as_secs_f64();
    let client_cpu = match (before, cpu()) {
        (Some(before), Some(after)) if seconds > 0.0 => {
            ((after - before) / seconds * 1000.0).round() / 10.0
        }
        _ => 0.0,
    };
    Phase { outcome, client_cpu }
}

/// Counts overdue notifications as missed while the run lasts.
async fn sweep(ledger: Arc<SharedLedger>) {
    loop {
        sleep(SWEEP_EVERY).await;
        let now = ledger.since(Instant::now());
        ledger.lock().sweep(now);
    }
}
